"""Ray Serve on KubeRay: one RayService (ray.io/v1) per model.

- The head group runs on CPU (`num-gpus: "0"`, no GPU toleration), so it never holds a GPU node.
- Ray Serve's own replica autoscaling (`deployment_config.autoscaling_config`: `min_replicas` and
  `max_replicas` from `models[].rayServe.minWorkers/maxWorkers`, and an explicit
  `target_ongoing_requests` from `rayServe.targetOngoingRequests`) is the single scaler owner of the
  model: no HPA or AIBrix PodAutoscaler may target a RayService's pods (stacks/rules/serving.py;
  RayService and RayCluster have no scale subresource anyway).
- One GPU worker group, N x those bounds for a replica of N nodes, each worker with its node's
  share of `acceleratorsPerReplica` GPUs; KubeRay's in-tree autoscaler
  (`enableInTreeAutoscaling: true`, its default options) adds and removes workers within them as
  Serve's replicas ask for GPUs, and Karpenter the nodes.
- `serveConfigV2` (a YAML string) serves the model through Ray Serve's LLM API:
  `import_path: ray.serve.llm:build_openai_app` with one `llm_configs` entry whose
  `model_loading_config.model_source` is the Hugging Face id and whose `engine_kwargs.revision`
  pins the revision (vLLM engine argument).
- Code and dependencies reach every worker: the `rayproject/ray-llm` image carries Ray Serve LLM
  and vLLM on head and workers alike, and any extra `rayServe.pip` packages go into the LLM
  config's `runtime_env`, which Ray applies to the replica and to the engine workers.

Head and worker pods carry the model's selector label (`Endpoint.selector`); the workers get the
model cache from the storage concern (volume, mounts, preparation init containers, the
`model-reader` service account and the ephemeral-storage request of a node-local cache).

A replica across nodes (`nodesPerReplica` N > 1) is N worker pods, one per node, each one Ray node
with its node's share of the GPUs (`rayStartParams.num-gpus` and the `nvidia.com/gpu` request), so
the worker group is N x the Serve replicas (KubeRay's LLM sample: raise `replicas` to the node count
and set `engine_kwargs: {tensor_parallel_size, pipeline_parallel_size}`). The engine's placement group
is one `{CPU: 1, GPU: 1}` bundle per rank (Ray replicates `bundle_per_worker` tensor x pipeline times)
with strategy PACK, which fills one node's GPUs before spilling to the next: the tensor group of
consecutive ranks stays inside a node and the pipeline stages cross nodes (Ray Serve LLM's
cross-node-parallelism guide). STRICT_PACK cannot span nodes, SPREAD would scatter one tensor group
over several nodes, and STRICT_SPREAD needs a node per GPU. The executor is Ray's own:
Ray Serve LLM sets `distributed_executor_backend: ray` and rejects any other (vllm_models.py), so it
is not set here. On a pool with EFA each worker pod requests its node's EFA devices with libfabric's
EFA provider for NCCL, as a LeaderWorkerSet group's pods do (components/engines/group.py).

KubeRay names the Serve Service `<rayservice name>-serve-svc` (GenerateServeServiceName,
ray-operator/controllers/ray/utils/util.go at v1.7.0) on port 8000 (DefaultServingPort).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

import yaml

from stacks.awaits import await_operator
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.config.models import RayServe
from stacks.engine_facts import (
    EFA_UNVERIFIED,
    OPENAI_PATHS,
    Autoscalers,
    DerivedName,
    Dialect,
    EngineFacts,
    Groups,
    ModelFacts,
)
from stacks.errors import Problem, duplicates
from stacks.fit import Requests
from stacks.groups import ReplicaGroup
from stacks.metrics import Metric, Signal
from stacks.naming import COMPONENT_LABEL
from stacks.resolved import ModelEntry, PodShape, ResolvedStack
from stacks.versions import IMAGES, Image, overridden

from . import workers
from .group import add_efa_env
from .spec import EngineSpec, WorkloadSpec, no_problems, repo_id
from .workers import worker_resources
from .workload import HF_TOKEN_DIR, HF_TOKEN_KEY, ZONE, hf_token, unique_volumes

API_VERSION = "ray.io/v1"
SERVE_PORT = 8000
RAY_VERSION = "2.58.0"
# KubeRay v1.7.0's longest RayService name (ray-operator/controllers/ray/utils/constant.go,
# validation.go): MaxRayServiceNameLength = MaxRayClusterNameLength (53, so `<cluster>-serve-svc` fits
# 63) - 6 (the suffix GenerateRayClusterName appends) = 47.
RAY_SERVICE_MAX = 53 - 6

# Ray Serve's own series: the proxy's latency is in MILLISECONDS.
METRICS: dict[Signal, Metric] = {
    "e2e": Metric("ray_serve_http_request_latency_ms", "histogram", "ms", "HTTP request latency at the proxy"),
    "requests": Metric("ray_serve_num_http_requests_total", "counter", "requests", "HTTP requests"),
    "queue": Metric("ray_serve_deployment_queued_queries", "gauge", "requests", "queries waiting"),
}

DIALECT = Dialect(
    engine="Ray Serve 2.58",
    owned={},
    streamed={},
    refused="Ray Serve takes no engineArgs: the platform builds its LLM config and would drop them; remove engineArgs",
)

FACTS = EngineFacts(
    title="Ray Serve 2.58",
    port=SERVE_PORT,
    health_path="/-/healthz",
    ready_path="/-/healthz",
    metrics_path="/metrics",
    metrics_port=8080,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller="kuberay",
    platform_workload=False,
    picker_engine=None,
    picker_adapter_metric=None,
    metrics=METRICS,
    # N worker pods per replica in a PACK placement group: tensor within a node, pipeline across nodes.
    groups=Groups(builder="operator", refused=None, tensor_spans_nodes=False, head_rule=None, fixed_sizes=None),
    autoscalers=Autoscalers(
        built_in="Ray Serve's replica autoscaling with the KubeRay autoscaler (rayServe.minWorkers/maxWorkers/"
        "targetOngoingRequests; a RayService has no scale subresource for another scaler)",
        keda="a RayService has no scale subresource; Ray Serve scales its replicas itself (rayServe."
        "minWorkers/maxWorkers/targetOngoingRequests) and the KubeRay autoscaler adds the workers",
        to_zero=None,
    ),
    streams=False,
    lora=False,
    # Ray Serve LLM's lora_config: each adapter a subfolder of one prefix, served as `<model>:<adapter>`.
    lora_from_prefix=True,
    lora_flags=False,
    canary=False,
    revisions=True,
    efa_stack=EFA_UNVERIFIED,
    # Ray's workers run inside the RayService's pods, whose caches the platform does not place.
    compile_cache_env={},
    serving_role=None,
    kv_offload=None,
    # Not on shared GPUs: KubeRay's pods request whole GPUs (rayStartParams num-gpus).
    gpu_sharing=(),
    json_output=None,  # no structured-output form established at its pinned version
)


def ray_block(model: ModelSection) -> RayServe:
    return model.ray_serve or RayServe()


def ray_image(model: ModelSection) -> Image:
    return overridden(IMAGES["ray-llm"], model.image)


def service(model: ModelSection) -> str:
    """KubeRay's Serve Service (GenerateServeServiceName)."""
    return f"{model.name}-serve-svc"


def autoscaling_config(block: RayServe) -> dict[str, Any]:
    """Ray Serve's replica autoscaling, the model's one scaler: the bounds and an explicit target.
    Ray Serve LLM deep-merges this over its defaults (`maybe_apply_llm_deployment_config_defaults`),
    whose `target_ongoing_requests` of 1e9 would otherwise stay and never scale up."""
    target = float(block.target_ongoing_requests)
    return {
        "min_replicas": block.min_workers,
        "max_replicas": block.max_workers,
        "target_ongoing_requests": int(target) if target.is_integer() else target,
    }


def llm_config(spec: WorkloadSpec) -> dict[str, Any]:
    model = spec.model
    block = ray_block(model)
    group = spec.served.group
    engine_kwargs: dict[str, Any] = {"tensor_parallel_size": group.tensor}
    if group.pipeline > 1:
        engine_kwargs["pipeline_parallel_size"] = group.pipeline
    if model.max_model_len:
        engine_kwargs["max_model_len"] = model.max_model_len
    if model.trust_remote_code:
        engine_kwargs["trust_remote_code"] = True
    config: dict[str, Any] = {
        # The directory the workers' preparation init containers filled (pinned revision): with a
        # repo id, vLLM would download the model again into HF_HOME on every worker.
        "model_loading_config": {"model_id": spec.served.served_model_name, "model_source": spec.cache.model_dir},
        "engine_kwargs": engine_kwargs,
        "deployment_config": {"autoscaling_config": autoscaling_config(block)},
    }
    if group.multi_node:
        # One bundle per rank, packed node by node (module docstring): Ray reads an omitted CPU or GPU
        # key as 0, so both are given.
        config["placement_group_config"] = {"bundle_per_worker": {"CPU": 1, "GPU": 1}, "strategy": "PACK"}
    runtime_env: dict[str, Any] = {"env_vars": {}}
    if model.secrets.hugging_face_token:
        runtime_env["env_vars"]["HF_TOKEN_PATH"] = f"{HF_TOKEN_DIR}/{HF_TOKEN_KEY}"
    if model.adapters:
        config["lora_config"] = lora_config(model)
        engine_kwargs.update(lora_engine_kwargs(model))
        if spec.cache.region:
            # Ray Serve LLM's S3 filesystem needs the bucket's Region (its LoRA guide sets AWS_REGION).
            runtime_env["env_vars"]["AWS_REGION"] = spec.cache.region
    if block.pip:
        runtime_env["pip"] = list(block.pip)
    config["runtime_env"] = runtime_env
    return config


def lora_config(model: ModelSection) -> dict[str, Any]:
    """Ray Serve LLM's `lora_config` (LoraConfig in ray/llm/_internal/serve/core/configs/llm_config.py):
    the prefix whose subfolders are the adapters (every adapter's parent, one by the rules), and at most
    all of them resident on a replica. A replica downloads an adapter on its first request for
    `<model_id>:<subfolder>` (ray/llm/_internal/common/utils/lora_utils.py get_lora_model_ids,
    LoraModelLoader) as the worker pod's service account, `model-reader`."""
    parent, _ = model.adapters[0].folder()
    return {"dynamic_lora_loading_path": parent.rstrip("/"), "max_num_adapters_per_replica": len(model.adapters)}


def lora_engine_kwargs(model: ModelSection) -> dict[str, Any]:
    """vLLM's LoRA switches for the adapters (Ray Serve LLM passes engine_kwargs to vLLM as they are): on,
    the largest adapter rank (vLLM's default 16 refuses a larger adapter), and room for every adapter in
    one batch (vLLM's default max_loras is 1)."""
    ranks = [a.rank for a in model.adapters if a.rank is not None]
    kwargs: dict[str, Any] = {"enable_lora": True, "max_loras": len(model.adapters)}
    if ranks:
        kwargs["max_lora_rank"] = max(ranks)
    return kwargs


def serve_config(spec: WorkloadSpec) -> str:
    """serveConfigV2: a YAML string, as the RayService CRD requires."""
    document = {
        "applications": [
            {
                "name": "llm",
                "route_prefix": "/",
                "import_path": "ray.serve.llm:build_openai_app",
                "args": {"llm_configs": [llm_config(spec)]},
            }
        ]
    }
    return yaml.safe_dump(document, sort_keys=False)


def _secret_parts(spec: WorkloadSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Hugging Face token as a file: the same volume and mount as every engine's pods."""
    volumes, mounts, _ = hf_token(spec)
    return volumes, mounts


def pod_labels(spec: WorkloadSpec, role: str | None = None) -> dict[str, str]:
    """Head and workers carry the model's selector label (the network policies let the gateway, the
    scraper and the cluster's own peers reach exactly these pods) and their role."""
    return {**spec.labels, **spec.served.selector, **({COMPONENT_LABEL: role} if role else {})}


# The head runs no model (num-gpus 0): the Serve controller, the GCS and the dashboard, on the CPU nodes.
HEAD_RESOURCES: dict[str, Any] = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi"}}


def pods(model: ModelSection, requests: Requests, group: ReplicaGroup) -> tuple[PodShape, ...]:
    """The RayService's head (one per model, on the CPU nodes) and its GPU workers (a replica's `nodes`
    Ray nodes), each worker its node's share of the GPUs with 2 CPUs and 8Gi per GPU unless `resources`
    says otherwise; Ray sizes its own scheduling from the container's CPU limit, so the limit is the
    request."""
    worker = worker_resources(model, requests.ephemeral_mib)
    worker["limits"]["cpu"] = worker["requests"]["cpu"]
    return (
        workers.shape("head", 1, 1, HEAD_RESOURCES, per_replica=False, pool=False),
        # Ray Serve's autoscaler starts at minWorkers replicas (the group's replicas, below).
        workers.shape("worker", group.nodes, ray_block(model).min_workers, worker, per_replica=True, pool=True),
    )


def _head(spec: WorkloadSpec) -> dict[str, Any]:
    ports = [
        {"containerPort": 6379, "name": "gcs"},
        {"containerPort": 8265, "name": "dashboard"},
        {"containerPort": 10001, "name": "client"},
        {"containerPort": SERVE_PORT, "name": "serve"},
        {"containerPort": 8080, "name": "metrics"},
    ]
    return {
        "rayStartParams": {"num-cpus": "0", "num-gpus": "0", "dashboard-host": "0.0.0.0"},
        "template": {
            "metadata": {"labels": pod_labels(spec, "head")},
            "spec": {
                "containers": [
                    {
                        "name": "ray-head",
                        "image": ray_image(spec.model).ref,
                        "ports": ports,
                        "resources": copy.deepcopy(dict(spec.served.pod("head").resources)),
                    }
                ]
            },
        },
    }


def _workers(spec: WorkloadSpec) -> dict[str, Any]:
    model = spec.model
    block = ray_block(model)
    # Each worker pod is one Ray node of a replica's `nodes`: the node's share of the GPUs.
    nodes = spec.served.group.nodes
    gpus = str(spec.served.group.per_node)
    volumes, mounts = _secret_parts(spec)
    resources = copy.deepcopy(dict(spec.served.pod("worker").resources))
    container: dict[str, Any] = {
        "name": "ray-worker",
        "image": ray_image(model).ref,
        "resources": resources,
        "volumeMounts": [*spec.cache.volume_mounts, *mounts],
        "env": list(spec.cache.env),
    }
    if spec.served.group.multi_node:
        add_efa_env(container)
    pod_spec = spec.placement.place(
        {
            "containers": [container],
            "volumes": unique_volumes([*spec.cache.volumes, *volumes]),
            **({"initContainers": list(spec.cache.init_containers)} if spec.cache.init_containers else {}),
            # The preparation init containers read the model bucket as this account.
            **({"serviceAccountName": spec.pod_service_account} if spec.pod_service_account else {}),
        }
    )
    if spec.served.group.multi_node:
        pod_spec.setdefault("affinity", {})["podAffinity"] = head_zone_affinity()
    return {
        "groupName": "gpu",
        # Serve replicas x the nodes each spans (minWorkers/maxWorkers count replicas).
        "replicas": spec.served.pod("worker").pods,
        "minReplicas": nodes * block.min_workers,
        "maxReplicas": nodes * block.max_workers,
        "rayStartParams": {"num-gpus": gpus},
        "template": {"metadata": {"labels": pod_labels(spec, "worker")}, "spec": pod_spec},
    }


def head_zone_affinity() -> dict[str, Any]:
    """Workers of a Ray cluster whose replicas span nodes follow its head's Availability Zone (EFA does
    not cross zones): a required pod affinity to the head pod (KubeRay labels `ray.io/node-type: head`)
    of the worker's own cluster (`matchLabelKeys: [ray.io/cluster]`: the API server adds the worker's
    cluster name, which KubeRay generates, to the selector)."""
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"ray.io/node-type": "head"}},
                "matchLabelKeys": ["ray.io/cluster"],
                "topologyKey": ZONE,
            }
        ]
    }


def ray_service(spec: WorkloadSpec) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "RayService",
        "metadata": {
            "name": spec.model.name,
            "namespace": spec.served.namespace,
            "labels": pod_labels(spec),
            # KubeRay sets the condition Ready once the Serve endpoints take requests (ray.io/v1
            # RayServiceReady).
            "annotations": await_operator("condition=Ready", spec.served.await_seconds),
        },
        "spec": {
            "serveConfigV2": serve_config(spec),
            "rayClusterConfig": {
                "rayVersion": RAY_VERSION,
                "enableInTreeAutoscaling": True,
                "headGroupSpec": _head(spec),
                "workerGroupSpecs": [_workers(spec)],
            },
        },
    }


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return [ray_service(spec)]


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    """The RayService its operator reconciles (and generates the Services from); Ray Serve loads the
    directory the platform prepared."""
    del addons
    services = (service(model), f"{model.name}-head-svc")
    return ModelFacts(
        image=ray_image(model),
        service=service(model),
        port=SERVE_PORT,
        workload=(API_VERSION, "RayService", model.name),
        keda_targets=(),
        dialect=DIALECT,
        hub_repo=repo_id(model),
        prepared=True,
        platform_images=(),
        names=(
            *(
                DerivedName(
                    name=name,
                    what=f"Service the ray-serve operator creates ({name.removeprefix(model.name)})",
                    limit=63,
                    dns_1035=True,
                )
                for name in services
            ),
            DerivedName(
                name=model.name,
                what="RayService (KubeRay's MaxRayServiceNameLength)",
                limit=RAY_SERVICE_MAX,
                dns_1035=True,
            ),
        ),
        addons=(),
        keda_floor=None,
    )


def pip_name(requirement: str) -> str:
    """PEP 503 normalized project name of a requirement (`Foo_Bar[x]==1` -> `foo-bar`)."""
    name = re.split(r"[\[<>=!~]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def checks(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """Ray Serve's replica bounds are `rayServe.minWorkers/maxWorkers` (its `autoscaling_config`);
    `autoscaling.minReplicas/maxReplicas` belong to an HPA or PodAutoscaler, which a RayService never
    has, so bounds written there would be silently ignored."""
    del stack
    model, block = entry.config, ray_block(entry.config)
    yield from duplicates(block.pip, ["models", entry.index, "rayServe", "pip"], "package", pip_name)
    if block.min_workers > block.max_workers:
        yield Problem(
            entry.key("rayServe", "minWorkers"),
            f"minWorkers ({block.min_workers}) exceeds maxWorkers ({block.max_workers}); the GPU worker group "
            f"cannot satisfy both",
        )
    for field, key, own in (
        ("min_replicas", "minReplicas", "minWorkers"),
        ("max_replicas", "maxReplicas", "maxWorkers"),
    ):
        if field in model.autoscaling.model_fields_set:
            yield Problem(
                entry.key("autoscaling", key),
                f"model {model.name}: Ray Serve scales a RayService itself, so autoscaling.{key} would be ignored; "
                f"set its replica bound as rayServe.{own} and remove autoscaling.{key}",
            )


SPEC = EngineSpec(
    no_traces="Ray Serve's tracing hook needs a tracer module baked into the image",
    facts=FACTS,
    model_facts=model_facts,
    pods=pods,
    manifests=manifests,
    checks=checks,
    warnings=no_problems,
)
