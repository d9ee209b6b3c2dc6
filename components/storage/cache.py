"""How a serving pod reaches its model's weights: the cache volume, where it is mounted, and what
fills it. Pure functions; the engine modules put the result into their pod specs.

Per `storage.modelCache`:
- efs / fsx: the namespace's shared ReadWriteMany claim `model-cache`, filled once (the first pod
  takes the lock) and reused by every replica and restart.
- local: an emptyDir on the node's RAID0 instance store, sized to the model (weights plus
  `storage.local.headroomPercent`, plus compiled artifacts on Neuron) with a matching
  ephemeral-storage request, so the scheduler only
  places the pod where the NVMe has room; every new pod (so every new node) refills it.
- none: an emptyDir on the node's root volume, or `storage.existingClaim` when given.
Engines that load Hugging Face weights (everything but NIM and Ollama, which fetch their own) get the
preparation init containers of `prepare.py`; every pod runs as the read-only bucket reader.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stacks.config.models import ModelSection
from stacks.config.pools import NodePoolSection
from stacks.config.storage import StorageSection
from stacks.resolved import WRITER_SERVICE_ACCOUNT, ImageTable, ResolvedModel
from stacks.sizing import BYTES_PER_PARAMETER, local_cache_gib

from ..naming import labels, physical
from . import prepare

if TYPE_CHECKING:  # annotations only: this module stays importable without the Pulumi SDK
    import pulumi

    from ..scheduling import Placement

CACHE_ROOT = "/models"
# Compiled Neuron artifacts: a separate tree, so weights and compiler output never mix. `_` cannot
# start a model name (DNS label), so it cannot collide with a model directory.
COMPILED_ROOT = f"{CACHE_ROOT}/_neuron"
CACHE_VOLUME = "model-cache"
# The `hf://` scheme NIM model sources use: the preparation step downloads the repo behind it.
HF_SCHEME = "hf://"


def hub_id(model: ModelSection) -> str:
    """The Hugging Face repo the preparation step downloads (`hf://org/name` for NIM, `org/name`)."""
    return model.model.removeprefix(HF_SCHEME)


# A deliberately conservative read rate for the startup budget: a floor to size a probe, not a
# performance claim about any storage choice.
ASSUMED_READ_MIBPS = 100
STARTUP_BASE_SECONDS = 180
NEURON_COMPILE_SECONDS = 2700
STARTUP_PERIOD_SECONDS = 10


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
    # Seconds a startup probe should allow before the first successful check (startup_probe()).
    startup_seconds: int = STARTUP_BASE_SECONDS
    # Whether writers of the cache (preparation, Ollama's pull) must run as root: an FSx for Lustre
    # file system's root directory belongs to root, and fsGroup does not apply to it. Elsewhere they
    # run as the pod's user: EFS access points enforce their own POSIX identity, emptyDirs are open.
    writes_as_root: bool = False


def model_dir(model: ModelSection) -> str:
    """Weights live per model and revision, so a new revision never mixes with an old one."""
    return f"{CACHE_ROOT}/{model.name}/{model.revision or 'latest'}"


def compiled_dir(model: ModelSection) -> str:
    return f"{COMPILED_ROOT}/{model.name}/{model.revision or 'latest'}"


def bucket_prefix(model: ModelSection) -> str:
    """Where a model's weights sit in the model bucket: `<name>/<revision>/`, mirroring the cache."""
    return f"{model.name}/{model.revision or 'latest'}"


def streamed(model: ModelSection) -> bool:
    """The engine streams this model's safetensors from the bucket (`models[].loadFormat`)."""
    return model.load_format == "runai-streamer"


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


def weight_bytes(model: ModelSection) -> int | None:
    """Bytes of weights from parameters and dtype, or None when the stack file does not say."""
    if model.parameter_count is None or model.dtype is None:
        return None
    return int(model.parameter_count * BYTES_PER_PARAMETER[model.dtype])


def startup_budget_seconds(size_bytes: int | None, neuron: bool = False, read_mibps: int = ASSUMED_READ_MIBPS) -> int:
    """Seconds to allow a server to load `size_bytes` of weights (plus a Neuron compile on first
    start) before its startup probe gives up. Unknown size: the base allowance only."""
    seconds = STARTUP_BASE_SECONDS
    if size_bytes:
        seconds += math.ceil(size_bytes / 2**20 / read_mibps)
    if neuron:
        seconds += NEURON_COMPILE_SECONDS
    return seconds


def model_startup_seconds(model: ModelSection, neuron: bool) -> int:
    """The cache's startup budget for this model (CacheMount.startup_seconds): its weights read at the
    conservative rate, plus a Neuron compile on a Neuron pool (a streamed model is never compiled here)."""
    return startup_budget_seconds(weight_bytes(model), neuron=neuron and not streamed(model))


def probe_seconds(seconds: int, period: int = STARTUP_PERIOD_SECONDS) -> int:
    """What a startup probe allowing `seconds` really waits: whole periods, at least one."""
    return period * max(1, math.ceil(seconds / period))


def startup_probe(path: str, port: int | str, seconds: int, period: int = STARTUP_PERIOD_SECONDS) -> dict[str, Any]:
    """An HTTP startup probe that tolerates `seconds` of loading; liveness starts only after it."""
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": probe_seconds(seconds, period) // period,
    }


def _volume(ctx: CacheContext, model: ModelSection, pool: NodePoolSection) -> tuple[dict[str, Any], str | None]:
    """The cache volume and, for node-local caches, the ephemeral storage to request (the size
    stacks/sizing.py counts, so the fit rule checks what the pod asks for)."""
    storage = ctx.storage
    if storage.model_cache in ("efs", "fsx"):
        return {"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": ctx.claim_name}}, None
    if storage.model_cache == "none" and storage.existing_claim is not None:
        return {"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": storage.existing_claim.name}}, None
    gib = local_cache_gib(model, pool, storage.local.headroom_percent)
    if gib is None:
        return {"name": CACHE_VOLUME, "emptyDir": {}}, None
    return {"name": CACHE_VOLUME, "emptyDir": {"sizeLimit": f"{gib}Gi"}}, f"{gib}Gi"


def writes_as_root(storage: StorageSection) -> bool:
    return storage.model_cache == "fsx"


def cache_mount(ctx: CacheContext, served: ResolvedModel, images: ImageTable) -> CacheMount:
    """The cache for this model under this stack's storage choice: the volume and, for a model whose
    weights the platform prepares (`ResolvedModel.prepared`; an engine that fetches its own gets the
    volume only), the preparation steps in the stack's images."""
    model, pool = served.config, served.pool.config
    storage = ctx.storage
    if streamed(model):
        return stream_mount(ctx, model, images)
    volume, ephemeral = _volume(ctx, model, pool)
    mount = {"name": CACHE_VOLUME, "mountPath": CACHE_ROOT}
    weights = model_dir(model)
    neuron = pool.accelerator == "neuron"
    compiled = compiled_dir(model) if neuron else None
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
            bucket_prefix=bucket_prefix(model),
            token_secret=token,
            images=images,
            imported=storage.model_cache == "fsx",
            as_root=writes_as_root(storage),
        )
    return CacheMount(
        model_dir=weights,
        volumes=volumes,
        volume_mounts=[mount],
        init_containers=inits,
        env=env,
        compiled_dir=compiled,
        ephemeral_storage=ephemeral,
        service_account=ctx.reader_service_account,
        startup_seconds=model_startup_seconds(model, neuron),
        writes_as_root=writes_as_root(storage),
    )


def stream_mount(ctx: CacheContext, model: ModelSection, images: ImageTable) -> CacheMount:
    """A streamed model: no cache volume and no copy; the engine reads `s3://<bucket>/<name>/<revision>/`
    as the bucket reader with the stack's region, after one read-only init container waits for the fill
    Job's marker. Config and tokenizer files land in the engine's writable home (the engine module
    names the directory)."""
    if ctx.bucket is None or ctx.region is None:
        raise ValueError(f"model {model.name} streams from the model bucket, but this stack wires no bucket")
    prefix = bucket_prefix(model)
    step_env = prepare.step_env(
        model_id=hub_id(model),
        revision=model.revision or "main",
        model_dir=model_dir(model),
        attempts=ctx.storage.preparation.attempts,
        lock_timeout_seconds=ctx.storage.preparation.lock_timeout_seconds,
    )
    wait = prepare.bucket_wait(env=step_env, bucket=ctx.bucket, bucket_prefix=prefix, images=images)
    return CacheMount(
        model_dir=model_dir(model),
        init_containers=[wait],
        env=[{"name": "MODEL_BUCKET", "value": ctx.bucket}, {"name": "AWS_REGION", "value": ctx.region}],
        service_account=ctx.reader_service_account,
        stream_uri=f"s3://$(MODEL_BUCKET)/{prefix}/",
        # Streaming reads at S3's rate, which the conservative floor already underestimates.
        startup_seconds=model_startup_seconds(model, neuron=False),
    )


def stream_fill_job(
    ctx: CacheContext,
    model: ModelSection,
    workload: str,
    namespace: str,
    images: ImageTable,
    placement: Placement,
) -> dict[str, Any]:
    """The one-time Job that fills a streamed model's bucket prefix from Hugging Face (prepare.py
    `fill_job`), as the writer account, with scratch room for the download sized like a local cache."""
    size = weight_bytes(model)
    headroom = ctx.storage.local.headroom_percent
    staging = max(1, math.ceil(size * (1 + headroom / 100) / 2**30)) if size else None
    return prepare.fill_job(
        name=fill_job_name(workload),
        namespace=namespace,
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
        bucket_prefix=bucket_prefix(model),
        token_secret=model.secrets.hugging_face_token,
        service_account=WRITER_SERVICE_ACCOUNT,
        images=images,
        staging_gib=staging,
        node_selector=placement.node_selector,
        tolerations=placement.tolerations,
    )


def streamed_prefixes(models: Iterable[ResolvedModel]) -> dict[str, tuple[str, ...]]:
    """Model namespace -> the bucket prefixes of its streamed models (and their canaries): what the
    bucket writer may fill, and where its account is bound."""
    found: dict[str, set[str]] = {}
    for m in models:
        for w in (m, m.canary):
            if w is not None and streamed(w.config):
                found.setdefault(w.namespace, set()).add(bucket_prefix(w.config))
    return {ns: tuple(sorted(ps)) for ns, ps in sorted(found.items())}
