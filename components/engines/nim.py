"""NVIDIA NIM (LLM 2.0) on NVIDIA GPUs.

An explicit NIM_MODEL_PROFILE from `models[].nim.profile`: a profile id from the container's own
list, never an invented one. The image-pull secret (`nim.imagePullSecret`, a dockerconfigjson for
nvcr.io) is separate from any model credential. The server runs with no credential at all: an
`hf://` model is downloaded by the platform's preparation init containers (the Hugging Face token
read from its mounted file) and NIM serves that directory (NIM_MODEL_PATH, a local directory, which
model-free NIM takes); `nim.modelPath` names a directory prepared some other way. NIM 2.0.12 needs an
NGC key only for Production Branch models and NIMs before 2.0.10, and takes it only as the
NGC_API_KEY environment variable, which a file-only credential policy does not allow: models from
NGC are refused unless prepared (stacks/rules/engines.py). The image's entrypoint is an action
dispatcher (`<image> nim-serve [vLLM flags]`), so the arguments start with the action. Metrics at
/v1/metrics, health at /v1/health/live and /v1/health/ready.

With `addons.nimOperator.enabled` the model is a NIMService (apps.nvidia.com/v1alpha1) instead; the
operator builds the Deployment and Service and injects its `authSecret` itself. The NIMService CRD
(v3.1.2) has no service-account field: the operator runs the pods under an account it creates.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from stacks.awaits import await_operator
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.config.base import absolute_path_problem
from stacks.engine_facts import EFA_UNVERIFIED, OPENAI_PATHS, Autoscalers, Dialect, EngineFacts, Groups, ModelFacts
from stacks.errors import Problem
from stacks.resolved import CACHE_ROOT, ModelEntry, ResolvedStack
from stacks.versions import IMAGES, overridden

from ..storage.cache import HF_SCHEME
from . import vllm
from .group import add_efa_env, leader_zone_affinity
from .spec import EngineSpec, WorkloadSpec, no_problems
from .workload import (
    HOME,
    EngineContainer,
    deployment,
    hpa_scaling,
    metadata,
    platform_model,
    pod_labels,
    probes,
    server_pods,
)
from .workload import manifests as workload_manifests

# NIM 2.0 forwards vLLM's flags after `nim-serve`.
DIALECT = Dialect(
    engine="NIM's vLLM",
    owned={**vllm.FLAGS, **vllm.NO_OFFLOAD},
    streamed={},
    refused=None,
    exact=vllm.EXACT,
    underscores=True,
)

FACTS = EngineFacts(
    title="NIM 2.0.12",
    port=8000,
    health_path="/v1/health/live",
    ready_path="/v1/health/ready",
    metrics_path="/v1/metrics",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller="nim-operator",
    platform_workload=True,
    # No picker_engine: NIM serves its metrics at /v1/metrics without the `vllm:` prefix
    # (num_requests_waiting, gpu_cache_usage_perc; docs.nvidia.com/nim/large-language-models
    # observability), which none of the llm-d router's built-in engine configs reads.
    picker_engine=None,
    picker_adapter_metric=None,
    metrics=vllm.METRICS,
    # The NIM Operator's NIMService multiNode forms the group.
    groups=Groups(
        builder="operator",
        refused=None,
        tensor_spans_nodes=False,
        head_rule=None,
        # Across nodes the NIMService's multiNode takes both sizes (checks below hold them to the group).
        fixed_sizes="on one node the NIM profile (nim.profile) fixes the parallel sizes over the replica's GPUs",
    ),
    # Who owns the count depends on the operator (addons.nimOperator): its checks say.
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    lora_from_prefix=False,
    lora_flags=False,
    canary=True,
    revisions=True,
    efa_stack=EFA_UNVERIFIED,
    # NIM chooses its own cache layout under NIM_CACHE_PATH with the weights; none placed apart.
    compile_cache_env={},
    serving_role=None,
    kv_offload=None,
    # Not offered on shared GPUs: how it behaves within one slice (its memory sizing, its profiles) is not
    # verified here; it runs on whole GPUs.
    gpu_sharing=(),
    json_output=None,  # no structured-output form established at its pinned version
)
NIM_API_VERSION = "apps.nvidia.com/v1alpha1"
RUN_AS = 1000
MPI_START_TIMEOUT_SECONDS = 6000
# NIM's own cache (the manifest it generates for the model, small): the pod's home volume, so it
# never writes into the shared model cache.
NIM_CACHE = f"{HOME}/.cache/nim"


def nim_env(spec: WorkloadSpec, *, operator: bool = False) -> list[dict[str, Any]]:
    """With the operator, NIM fetches the source itself (its NIMCache/storage); as a Deployment it
    serves the directory the preparation init containers filled, or `nim.modelPath`."""
    m = spec.model
    assert m.nim is not None
    env = [
        {"name": "NIM_MODEL_PROFILE", "value": m.nim.profile},
        {"name": "NIM_SERVER_PORT", "value": str(FACTS.port)},
    ]
    if operator:
        source = m.nim.model_path or (m.model if "://" in m.model else None)
    else:
        env.append({"name": "NIM_CACHE_PATH", "value": NIM_CACHE})
        source = m.nim.model_path or spec.cache.model_dir
    if source:
        env.append({"name": "NIM_MODEL_PATH", "value": source})
    return env


def serve_args(spec: WorkloadSpec) -> list[str]:
    """vLLM-format flags NIM 2.0 takes after `nim-serve` (or in NIM_PASSTHROUGH_ARGS)."""
    args = ["--served-model-name", spec.served.served_model_name]
    if spec.model.max_model_len:
        args += ["--max-model-len", str(spec.model.max_model_len)]
    return [*args, *spec.model.engine_args]


def container(spec: WorkloadSpec) -> EngineContainer:
    m = spec.model
    assert m.nim is not None
    return EngineContainer(
        # The image's entrypoint dispatches on its first argument: the nim-serve action, then the
        # vLLM flags it forwards.
        command=None,
        args=["nim-serve", *serve_args(spec)],
        env=nim_env(spec),
        image_pull_secrets=[m.nim.image_pull_secret],
        # The server reads a prepared directory: the token is the preparation step's alone.
        uses_hf_token=False,
        append_engine_args=False,
        run_as_user=RUN_AS,
    )


def _cache_storage(spec: WorkloadSpec) -> dict[str, Any]:
    """The NIMService storage block: the shared cache claim when the storage concern made one."""
    for volume in spec.cache.volumes:
        claim = volume.get("persistentVolumeClaim")
        if claim:
            return {"pvc": {"name": claim["claimName"], "create": False}}
    return {"emptyDir": {"sizeLimit": "200Gi"}}


def nim_service(spec: WorkloadSpec) -> dict[str, Any]:
    """The NIMService custom resource the NIM Operator reconciles into a Deployment and Service."""
    m = spec.model
    assert m.nim is not None
    f = FACTS
    image = spec.image
    tag = f"{image.tag}@{image.digest}" if image.digest else image.tag
    pr = probes(spec)
    body: dict[str, Any] = {
        "image": {
            "repository": image.repository,
            "tag": tag,
            "pullPolicy": "IfNotPresent",
            "pullSecrets": [m.nim.image_pull_secret],
        },
        # The operator requires it and injects it as NGC_API_KEY from the Secret (not a file).
        "authSecret": m.secrets.ngc_api_key,
        "storage": _cache_storage(spec),
        "env": [
            *nim_env(spec, operator=True),
            {"name": "NIM_PASSTHROUGH_ARGS", "value": " ".join(serve_args(spec))},
        ],
        "resources": copy.deepcopy(dict(spec.served.serving_resources)),
        "tolerations": spec.placement.tolerations,
        "nodeSelector": spec.placement.node_selector,
        "labels": pod_labels(spec),
        "userID": RUN_AS,
        "groupID": RUN_AS,
        "expose": {"service": {"type": "ClusterIP", "port": f.port, "name": spec.served.service}},
        "metrics": {"enabled": True},
        "startupProbe": {"enabled": True, "probe": _numeric_port(pr["startupProbe"], f.port)},
        "readinessProbe": {"enabled": True, "probe": _numeric_port(pr["readinessProbe"], f.port)},
        "livenessProbe": {"enabled": True, "probe": _numeric_port(pr["livenessProbe"], f.port)},
    }
    if m.autoscaling.owner == "hpa":
        body["scale"] = {"enabled": True, "hpa": hpa_scaling(m, spec.facts)}
    replicas = spec.served.pods[0].replicas
    if replicas is not None:  # (None: the NIMService's own HPA owns the count; the CRD refuses both)
        body["replicas"] = replicas
    group = spec.served.group
    if group.multi_node:
        body |= multi_node(spec)
        # The spec's resources and env are every pod's, as a container's are its own.
        add_efa_env(body)
    if m.accelerators_per_replica > 1:
        body["storage"]["sharedMemorySizeLimit"] = "16Gi"
    return {
        "apiVersion": NIM_API_VERSION,
        "kind": "NIMService",
        # The NIM Operator sets the condition NIM_SERVICE_READY once the deployment is ready
        # (api/apps/v1alpha1/nimservice_types.go at v3.1.2, NIMServiceConditionReady).
        "metadata": metadata(
            spec, annotations=await_operator("condition=NIM_SERVICE_READY", spec.served.await_seconds)
        ),
        "spec": body,
    }


def multi_node(spec: WorkloadSpec) -> dict[str, Any]:
    """A replica across nodes: `multiNode` (NIM Operator v3.1.2 nimservice_types.go), which the
    operator renders as a LeaderWorkerSet of `pipeline` pods (RecreateGroupOnPodRestart,
    LeaderCreated, maxSurge 0) and launches with MPI; NIM's `tensor` is the GPUs of one node and
    `pipeline` the number of nodes (stacks/rules/groups.py holds `parallelism` to that). `resources`
    is per pod. `affinity` reaches every pod: the group in its leader's zone. With EFA, the node's
    devices and libfabric's provider on every pod, as the LWS groups get them."""
    group = spec.served.group
    out: dict[str, Any] = {
        "multiNode": {
            "backendType": "lws",
            "parallelism": {"pipeline": group.nodes, "tensor": group.per_node},
            # The operator's default (300 s) is shorter than loading a multi-node model's shards;
            # the upstream multi-node sample waits 6000 s.
            "mpi": {"mpiStartTimeout": MPI_START_TIMEOUT_SECONDS},
        },
        "affinity": {"podAffinity": leader_zone_affinity(spec)},
    }
    return out


def _numeric_port(probe: dict[str, Any], port: int) -> dict[str, Any]:
    return {**probe, "httpGet": {**probe["httpGet"], "port": port}}


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    if spec.served.workload[1] == "NIMService":
        return [nim_service(spec)]
    return workload_manifests(spec, container(spec))


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    """A NIMService when the NIM Operator runs NIM (it reconciles the Deployment and Service), else
    the platform's own Deployment."""
    if addons.nim_operator.enabled:
        return NIM_API_VERSION, "NIMService", model.name
    return deployment(model)


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    """An `hf://` model is prepared by the platform from its repository; `nim.modelPath` names weights
    prepared some other way, and an NGC model is NIM's to fetch."""
    image = overridden(IMAGES["model-free-nim"], model.image)
    elsewhere = model.nim is not None and bool(model.nim.model_path)
    hub = model.model.startswith(HF_SCHEME) and not elsewhere
    return platform_model(
        model,
        FACTS,
        image=image,
        dialect=DIALECT,
        workload=workload(model, addons),
        hub_repo=model.model.removeprefix(HF_SCHEME) if hub else None,
        prepared=not elsewhere,
    )


# ---- the refusals only NIM has ---------------------------------------------------------------------------

# Where the NIM Operator mounts a NIMService's storage (NIM_CACHE_PATH; the operator's own samples at
# v3.1.2 use /model-store).
NIM_OPERATOR_ROOT = "/model-store"
# NIM Operator v3.1.2 NIMService multiNode: tensor is the GPUs of one node, pipeline the node count
# (nimservice_types.go: the LWS size is `parallelism.pipeline`), autoscaling is forbidden beside it (the
# CRD's CEL rule), and every pod of the group reads one model cache (the operator's multi-node sample
# mounts its NIMCache from a ReadWriteMany claim).
SHARED_CACHES = ("efs", "fsx")
NIM_SERVICE_KEDA = (
    "a NIMService has no scale subresource and the NIM Operator reconciles its Deployment; use owner: hpa (the "
    "NIMService's own spec.scale.hpa) or none, or run NIM without addons.nimOperator"
)


def _credentials(entry: ModelEntry, operator: bool) -> Iterable[Problem]:
    """NIM 2.0.12 takes an NGC key only as the NGC_API_KEY environment variable (and needs one only for
    Production Branch models and NIMs before 2.0.10). As a Deployment it runs with no credential: `hf://`
    models are prepared by the platform, others must be prepared (nim.modelPath). The NIM Operator is the
    one path that takes the key, as its required authSecret."""
    model = entry.config
    assert model.nim is not None  # the config requires it for engine: nim
    if not operator and model.nim.model_path is None and not model.model.startswith(HF_SCHEME):
        yield Problem(
            entry.key("model"),
            f"{model.model} comes from NGC, and NIM takes an NGC key only as an environment variable, which the "
            f"file-only credential policy does not allow; prepare the model (e.g. NIM's download-to-cache into the "
            f"model cache) and set nim.modelPath, or serve an hf:// model, which the platform downloads itself",
        )
    if not operator and model.secrets.ngc_api_key is not None:
        yield Problem(
            entry.key("secrets", "ngcApiKey"),
            "a NIM Deployment runs with no NGC key (hf:// models are prepared by the platform, others come from "
            "nim.modelPath); the key is only the NIM Operator's authSecret: remove it, or set "
            "addons.nimOperator.enabled",
        )
    if operator and model.secrets.ngc_api_key is None:
        yield Problem(
            entry.key("secrets", "ngcApiKey"),
            "a NIMService (addons.nimOperator.enabled) requires authSecret: set secrets.ngcApiKey to an existing "
            "Secret holding NGC_API_KEY, or turn the operator off to run NIM on a prepared model without a credential",
        )
    if model.secrets.ngc_api_key is not None and model.secrets.ngc_api_key == model.nim.image_pull_secret:
        yield Problem(
            entry.key("nim", "imagePullSecret"),
            "the image-pull secret (a dockerconfigjson for nvcr.io) and the runtime model credential are different "
            "Secrets with different roles; name two Secrets",
        )


def _serving(entry: ModelEntry, operator: bool) -> Iterable[Problem]:
    """What the NIM Operator's NIMService cannot do: a canary of another revision (it fetches an hf://
    model itself, without the revision), nor be a KEDA target (no scale subresource)."""
    model = entry.config
    if model.canary is not None and operator:
        yield Problem(
            entry.key("canary"),
            "the NIM Operator's NIMService fetches an hf:// model itself without its revision, so a second "
            "NIMService would not serve the canary's revision; remove canary, or run NIM as the platform's "
            "Deployment (addons.nimOperator.enabled: false)",
        )
    if model.autoscaling.owner == "keda" and operator:
        yield Problem(
            entry.key("autoscaling", "owner"), f"KEDA cannot scale {model.name} (engine nim): {NIM_SERVICE_KEDA}"
        )


def _multi_node(entry: ModelEntry, stack: ResolvedStack, operator: bool) -> Iterable[Problem]:
    served = stack.placed(entry)
    model = entry.config
    if served is None or model.nodes_per_replica < 2:
        return
    group = served.group
    if not operator:
        yield Problem(
            entry.key("nodesPerReplica"),
            f"model {model.name}: a NIM across nodes is the NIM Operator's NIMService multiNode (a LeaderWorkerSet "
            f"it builds); {stack.ask_for('nimOperator')}",
        )
    if (group.tensor, group.pipeline) != (group.per_node, group.nodes):
        yield Problem(
            entry.key("parallelism"),
            f"model {model.name}: NIM's multiNode takes tensor as the GPUs of one node and pipeline as the node "
            f"count: tensor {group.per_node} x pipeline {group.nodes} here, not tensor {group.tensor} x pipeline "
            f"{group.pipeline}; leave parallelism unset",
        )
    if model.autoscaling.owner != "none":
        yield Problem(
            entry.key("autoscaling", "owner"),
            f"model {model.name}: the NIMService CRD forbids autoscaling beside multiNode; set autoscaling.owner: "
            f"none and replicas",
        )
    if stack.platform.storage.model_cache not in SHARED_CACHES:
        yield Problem(
            entry.key("nodesPerReplica"),
            f"model {model.name}: every pod of a multi-node NIM reads one model cache, which needs a ReadWriteMany "
            f"claim: storage.modelCache efs or fsx (it is {stack.platform.storage.model_cache})",
        )


def checks(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """`nim.modelPath` is read inside the pod: a directory of the model cache's mount (`/models` for the
    platform's Deployment, `/model-store` for a NIMService), never a path that walks out of it."""
    model = entry.config
    assert model.nim is not None  # the config requires it for engine: nim
    if model.canary is not None and model.nim.model_path is not None:
        yield Problem(
            entry.key("canary"),
            f"a NIM canary needs the platform to prepare the canary's revision, but nim.modelPath "
            f"({model.nim.model_path}) is one directory for both; serve an hf:// model without nim.modelPath",
        )
    if model.autoscaling.owner == "aibrix":
        yield Problem(
            entry.key("autoscaling", "owner"),
            f"{model.name} would have two scaler owners: an AIBrix PodAutoscaler (autoscaling.owner: aibrix) and the "
            f"NIM Operator (it reconciles the NIMService's Deployment); set autoscaling.owner: none and let the NIM "
            f"Operator scale it",
        )
    if not stack.platform.known:
        return  # whether the operator runs is the platform's: checked at preview
    operator = stack.platform.addons.nim_operator.enabled
    yield from _credentials(entry, operator)
    yield from _serving(entry, operator)
    yield from _multi_node(entry, stack, operator)
    path = model.nim.model_path
    root = NIM_OPERATOR_ROOT if operator else CACHE_ROOT
    if path is not None and (why := absolute_path_problem(path, root)) is not None:
        yield Problem(entry.key("nim", "modelPath"), f"{why}; give the prepared model's directory under {root}/")


SPEC = EngineSpec(
    no_traces="NIM's model-free image documents no OTLP trace export the platform can set",
    facts=FACTS,
    model_facts=model_facts,
    pods=server_pods,
    manifests=manifests,
    checks=checks,
    warnings=no_problems,
)
