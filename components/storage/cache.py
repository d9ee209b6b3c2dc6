"""How a serving pod reaches its model's weights: the cache volume, where it is mounted, and what
fills it. Pure functions over the resolved cache (`ResolvedModel.cache`, stacks/resolve/cache.py: the
claim or the node-local size, the model's directory and bucket prefix); the engine modules put the
result into their pod specs.

A model whose weights the platform prepares (`ResolvedModel.prepared`: every engine but Ollama,
Dynamo and a NIM with `nim.modelPath`, which fetch or bring their own) gets the preparation init
containers of `prepare.py`; every pod runs as the read-only bucket reader. A model with a compile cache
(`ResolvedModel.compile_cache`) gets its engine's compile-cache variables pointing into its keyed
directory on the shared claim (`with_compile_cache`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from stacks.config.models import ModelSection
from stacks.config.storage import StorageSection
from stacks.fastpath import COMPILE_DIR
from stacks.naming import labels, physical
from stacks.offload import KV_DIR
from stacks.resolved import CACHE_CLAIM, CACHE_ROOT, WRITER_SERVICE_ACCOUNT, ImageTable, ModelCache, ResolvedModel

from . import prepare

if TYPE_CHECKING:  # annotations only: this module stays importable without the Pulumi SDK
    import pulumi

    from ..scheduling import Placement

CACHE_VOLUME = "model-cache"
COMPILE_VOLUME = "compile-cache"
KV_VOLUME = "kv-cache"
# The `hf://` scheme NIM model sources use: the preparation step downloads the repo behind it.
HF_SCHEME = "hf://"


def hub_id(model: ModelSection) -> str:
    """The Hugging Face repo the preparation step downloads (`hf://org/name` for NIM, `org/name`)."""
    return model.model.removeprefix(HF_SCHEME)


@dataclass(frozen=True)
class CacheMount:
    """Volumes, mounts and init containers that give a pod its model under `model_dir`."""

    model_dir: str
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    env: list[dict[str, Any]] = field(default_factory=list)
    # Neuron pools: where the engine keeps compiled artifacts (NEURON_COMPILED_ARTIFACTS).
    compiled_dir: str | None = None
    # Add to the serving container's requests (local caches sized to the model), e.g. "22Gi".
    ephemeral_storage: str | None = None
    # The pod's serviceAccountName: read-only access to the model bucket through Pod Identity.
    service_account: str | None = None
    # `models[].loadFormat: runai-streamer`: the `s3://` URI the engine streams from (`$(MODEL_BUCKET)`
    # expands from the container's env), instead of `model_dir`.
    stream_uri: str | None = None
    # Whether writers of the cache (preparation, Ollama's pull) must run as root: an FSx for Lustre
    # file system's root directory belongs to root, and fsGroup does not apply to it. Elsewhere they
    # run as the pod's user: EFS access points enforce their own POSIX identity, emptyDirs are open.
    writes_as_root: bool = False
    # `compileCache`: the model's compile-cache directory on the shared claim (the engine writes there).
    compile_dir: str | None = None
    # `kvCacheOffload.shared`: the model's KV-cache file tier on the shared claim (the engine writes there).
    kv_dir: str | None = None
    # The stack's region, for what in the pod reads the bucket itself as the service account (an adapter
    # loader's S3 client: AIBrix's runtime sidecar, Ray Serve LLM's LoRA download).
    region: str | None = None


FILL_JOB_SUFFIX = "-to-bucket"


def fill_job_name(workload: str) -> str:
    """The one-time Job that fills a streamed model's bucket prefix, after the workload it serves (a
    canary, at its own revision, has its own: `<name>-canary-to-bucket`)."""
    return physical(f"{workload}{FILL_JOB_SUFFIX}")


@dataclass(frozen=True)
class CacheContext:
    """What the storage component hands the engines: the choice, and the shared pieces it created."""

    storage: StorageSection
    bucket: pulumi.Input[str] | None = None  # model bucket name
    claim_name: str | None = None  # the shared ReadWriteMany PVC (efs, fsx)
    reader_service_account: str | None = None  # has read-only S3 access through Pod Identity
    # The stack's region: a streaming engine's S3 client needs it (the Run:ai streamer reads AWS_REGION).
    region: str | None = None


def _volume(cache: ModelCache) -> tuple[dict[str, Any], str | None]:
    """The cache volume and, for a node-local cache, the ephemeral storage it takes (the size the pod's
    request counts, so the fit rule checks what the pod asks for)."""
    if cache.claim is not None:
        return {"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": cache.claim}}, None
    if cache.local_gib is None:
        return {"name": CACHE_VOLUME, "emptyDir": {}}, None
    return {"name": CACHE_VOLUME, "emptyDir": {"sizeLimit": f"{cache.local_gib}Gi"}}, f"{cache.local_gib}Gi"


def cache_mount(ctx: CacheContext, served: ResolvedModel, images: ImageTable) -> CacheMount:
    """The cache for this model under this stack's storage choice: the volume and, for a model whose
    weights the platform prepares (`ResolvedModel.prepared`; an engine that fetches its own gets the
    volume only), the preparation steps in the stack's images."""
    model, cache = served.config, served.cache
    storage = ctx.storage
    if cache.streamed:
        return with_kv_tier(with_compile_cache(stream_mount(ctx, served, images), served), served)
    volume, ephemeral = _volume(cache)
    mount = {"name": CACHE_VOLUME, "mountPath": CACHE_ROOT}
    weights = cache.model_dir
    compiled = cache.compiled_dir
    env = [{"name": "MODEL_DIR", "value": weights}]
    if compiled:
        env.append({"name": "NEURON_COMPILED_ARTIFACTS", "value": compiled})
    volumes = [volume]
    inits: list[dict[str, Any]] = []
    if served.prepared:
        token = model.secrets.hugging_face_token
        if token:
            volumes.append(prepare.token_volume(token))
        step_env = prepare.step_env(
            model_id=hub_id(model),
            revision=model.revision or "main",
            model_dir=weights,
            attempts=storage.preparation.attempts,
            lock_timeout_seconds=storage.preparation.lock_timeout_seconds,
        )
        inits = prepare.init_containers(
            env=step_env,
            cache_mount=mount,
            bucket=ctx.bucket,
            bucket_prefix=cache.bucket_prefix,
            token_secret=token,
            images=images,
            imported=storage.model_cache == "fsx",
            as_root=cache.writes_as_root,
        )
        inits += adapter_steps(storage, served, mount, images)
    mounted = CacheMount(
        model_dir=weights,
        volumes=volumes,
        volume_mounts=[mount],
        init_containers=inits,
        env=env,
        compiled_dir=compiled,
        ephemeral_storage=ephemeral,
        service_account=ctx.reader_service_account,
        writes_as_root=cache.writes_as_root,
        region=ctx.region,
    )
    return with_kv_tier(with_compile_cache(mounted, served), served)


def adapter_steps(
    storage: StorageSection, served: ResolvedModel, mount: dict[str, Any], images: ImageTable
) -> list[dict[str, Any]]:
    """One preparation step per adapter the engine loads itself (`models[].lora`), after the weights'."""
    dirs = dict(served.cache.adapter_dirs)
    return [
        prepare.adapter_container(
            name=adapter.name,
            source=adapter.artifact_url,
            revision=adapter.revision or "main",
            adapter_dir=dirs[adapter.name],
            cache_mount=mount,
            token_secret=served.config.secrets.hugging_face_token,
            images=images,
            attempts=storage.preparation.attempts,
            lock_timeout_seconds=storage.preparation.lock_timeout_seconds,
            as_root=served.cache.writes_as_root,
        )
        for adapter in served.config.adapters
        if adapter.name in dirs
    ]


def compile_cache_env(served: ResolvedModel) -> list[dict[str, Any]]:
    """The engine's compile-cache variables, each at its subdirectory of the model's compile key."""
    root = served.cache.compile_dir
    if root is None:
        return []
    return [{"name": var, "value": f"{root}/{sub}"} for var, sub in served.facts.compile_cache_env.items()]


def with_compile_cache(mount: CacheMount, served: ResolvedModel) -> CacheMount:
    """The mount with the model's compile cache (`ResolvedModel.compile_cache`): the engine's variables
    pointing under `cache.compile_dir` on the shared claim; a pod with no cache volume of its own (a model
    streamed from the bucket) mounts the claim's compile tree alone, at the same path."""
    if served.cache.compile_dir is None:
        return mount
    volumes, mounts = list(mount.volumes), list(mount.volume_mounts)
    if not any(v["name"] == CACHE_VOLUME for v in volumes):
        # Only the compile tree of the shared claim: a streamed model reads no weights from the cache.
        volumes.append({"name": COMPILE_VOLUME, "persistentVolumeClaim": {"claimName": CACHE_CLAIM}})
        mounts.append({"name": COMPILE_VOLUME, "mountPath": f"{CACHE_ROOT}/{COMPILE_DIR}", "subPath": COMPILE_DIR})
    return replace(
        mount,
        volumes=volumes,
        volume_mounts=mounts,
        env=[*mount.env, *compile_cache_env(served)],
        compile_dir=served.cache.compile_dir,
        writes_as_root=served.cache.writes_as_root,
    )


def with_kv_tier(mount: CacheMount, served: ResolvedModel) -> CacheMount:
    """The mount with the model's KV-cache file tier (`kvCacheOffload.shared`): its directory on the shared
    claim; a pod with no cache volume of its own (a model streamed from the bucket) mounts the claim's KV
    tree alone, at the same path. The engine module points the engine at the directory."""
    if served.cache.kv_dir is None:
        return mount
    volumes, mounts = list(mount.volumes), list(mount.volume_mounts)
    if not any(v["name"] == CACHE_VOLUME for v in volumes):
        volumes.append({"name": KV_VOLUME, "persistentVolumeClaim": {"claimName": CACHE_CLAIM}})
        mounts.append({"name": KV_VOLUME, "mountPath": f"{CACHE_ROOT}/{KV_DIR}", "subPath": KV_DIR})
    return replace(
        mount,
        volumes=volumes,
        volume_mounts=mounts,
        kv_dir=served.cache.kv_dir,
        writes_as_root=served.cache.writes_as_root,
    )


def stream_mount(ctx: CacheContext, served: ResolvedModel, images: ImageTable) -> CacheMount:
    """A streamed model: no cache volume and no copy; the engine reads `s3://<bucket>/<name>/<revision>/`
    as the bucket reader with the stack's region, after one read-only init container waits for the fill
    Job's marker. Config and tokenizer files land in the engine's writable home (the engine module
    names the directory)."""
    model, prefix = served.config, served.cache.bucket_prefix
    if ctx.bucket is None or ctx.region is None:
        raise ValueError(f"model {model.name} streams from the model bucket, but this stack wires no bucket")
    step_env = prepare.step_env(
        model_id=hub_id(model),
        revision=model.revision or "main",
        model_dir=served.cache.model_dir,
        attempts=ctx.storage.preparation.attempts,
        lock_timeout_seconds=ctx.storage.preparation.lock_timeout_seconds,
    )
    wait = prepare.bucket_wait(env=step_env, bucket=ctx.bucket, bucket_prefix=prefix, images=images)
    return CacheMount(
        model_dir=served.cache.model_dir,
        init_containers=[wait],
        env=[{"name": "MODEL_BUCKET", "value": ctx.bucket}, {"name": "AWS_REGION", "value": ctx.region}],
        service_account=ctx.reader_service_account,
        stream_uri=f"s3://$(MODEL_BUCKET)/{prefix}/",
        region=ctx.region,
    )


def stream_fill_job(
    ctx: CacheContext, served: ResolvedModel, images: ImageTable, placement: Placement
) -> dict[str, Any]:
    """The one-time Job that fills a streamed model's bucket prefix from Hugging Face (prepare.py
    `fill_job`), as the writer account, with scratch room for the download sized like a local cache."""
    model = served.config
    return prepare.fill_job(
        name=fill_job_name(served.service),
        namespace=served.namespace,
        # Not the model's labels: its Service, PodDisruptionBudget and policies must never select the Job.
        labels=labels("model-fill", model.name),
        env=prepare.step_env(
            model_id=hub_id(model),
            revision=model.revision or "main",
            model_dir=f"/staging/{model.name}",
            attempts=ctx.storage.preparation.attempts,
            lock_timeout_seconds=ctx.storage.preparation.lock_timeout_seconds,
        ),
        bucket=ctx.bucket,
        bucket_prefix=served.cache.bucket_prefix,
        token_secret=model.secrets.hugging_face_token,
        service_account=WRITER_SERVICE_ACCOUNT,
        images=images,
        staging_gib=served.cache.staging_gib,
        node_selector=placement.node_selector,
        tolerations=placement.tolerations,
    )


def streamed_prefixes(models: Iterable[ResolvedModel]) -> dict[str, tuple[str, ...]]:
    """Model namespace -> the bucket prefixes of its streamed models (and their canaries): what the
    bucket writer may fill, and where its account is bound."""
    found: dict[str, set[str]] = {}
    for m in models:
        for w in (m, m.canary):
            if w is not None and w.cache.streamed:
                found.setdefault(w.namespace, set()).add(w.cache.bucket_prefix)
    return {ns: tuple(sorted(ps)) for ns, ps in sorted(found.items())}
