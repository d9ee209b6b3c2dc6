"""NVIDIA Dynamo: one DynamoGraphDeployment (nvidia.com/v1beta1) per model, and optionally a
DynamoGraphDeploymentRequest.

The graph is a `components` list (v1beta1; `services` was the v1alpha1 map):
- aggregated: a Frontend and one worker role that does prefill and decode;
- disaggregated: a Frontend, a prefill role and a decode role. KV blocks move from prefill to
  decode workers, so both roles run the same backend, the same runtime image and the same model
  revision (stacks/rules/serving.py refuses a `dynamo.prefillRevision` that differs); both vLLM
  roles carry the same NIXL KV-transfer connector (the sender's and the receiver's end), as the
  upstream disaggregated examples do.

Every Frontend routes by KV (`DYN_ROUTER_MODE=kv`) and every worker publishes its KV cache events
(vLLM and SGLang `--kv-events-config` over ZMQ, TensorRT-LLM `--publish-kv-events`), so a request
goes to the worker that already holds the longest prefix of its prompt. Decode workers publish too:
the Frontend routes to the decode set directly (router-guide.md), and events from it are what
configuration-and-tuning.md asks for decode workers (the upstream disagg_router sample publishes from
the prefill role only).

The operator (installed by the dynamo-platform chart, see components/serving/platforms.py) turns
the DGD into pods and a ClusterIP Service `<dgd name>-frontend` on port 8000 for the Frontend.
Every pod template carries the model's selector label (`Endpoint.selector`); the workers get the
model cache from the storage concern (volume, mounts, preparation init containers, the
`model-reader` service account and the ephemeral-storage request of a node-local cache).

A replica across nodes (`nodesPerReplica` N > 1) is the worker component's `multinode: {nodeCount: N}`
(v1beta1 `components[].multinode.nodeCount`, minimum 2; multinode-deployments.md and the
disagg-multinode samples at the 1.4.0 cut e147ceea): `replicas` counts groups of N pods, each pod
requests its node's share of the GPUs (total = nodeCount x the container's GPU request) and the
tensor size is the whole group's, which the operator's injected `--nnodes/--node-rank` wiring
expects (stacks/rules/groups.py refuses a parallelism that says otherwise). The operator runs such a
graph through Grove, which the platform chart installs and enables when some Dynamo model spans nodes
(components/serving/values.py). On a pool with EFA each worker pod requests its node's EFA devices
with libfabric's EFA provider, and NIXL moves KV blocks over the LIBFABRIC backend, not UCX (NIXL's
default, which over EFA falls back to about TCP speed: efa-on-aws.mdx). Left out:
- `topologyConstraint.packDomain` (same-zone packing): it names a domain of a Grove ClusterTopology
  CR (`spec.topologyConstraint.clusterTopologyName`), which the platform does not create;
- `hostIPC`, which efa-on-aws.mdx asks for only as "required by some EFA setups" (not shown
  necessary). What it shows necessary is kept, with its reason as a scanner waiver on the graph: the
  prefill and decode workers that move KV blocks over NIXL's LIBFABRIC backend run privileged with
  IPC_LOCK ("IPC_LOCK alone is insufficient" for NIXL's `fi_mr_reg` of GPU memory);
- `LD_LIBRARY_PATH`: the doc's `/opt/amazon/efa/lib:...:${LD_LIBRARY_PATH}` is not expanded by the
  kubelet (only `$(VAR)` of earlier env entries is) and would drop the image's own path; an EFA image
  (`container/render.py --make-efa`, `docker build --target aws`, set as `models[].image`) sets it.

A DynamoGraphDeploymentRequest is NOT a read-only inspection: it launches profiling jobs on the
cluster's GPUs and, with `autoApply` (whose upstream default is true), creates a DGD of its own. A
second DGD for the same model would compete for the same GPUs and be a second owner of the
model's replicas, so the request is always rendered with `autoApply: false`: the profiler's
recommended graph is there to review, and applying it is a deliberate change to this stack file.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from stacks import flags
from stacks.awaits import await_operator
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.config.models import DynamoGraph
from stacks.engine_facts import (
    OPENAI_PATHS,
    Autoscalers,
    DerivedName,
    Dialect,
    EfaStack,
    EngineFacts,
    Groups,
    ModelFacts,
)
from stacks.errors import Problem
from stacks.feasibility import roles_over_the_pool
from stacks.fit import Requests
from stacks.groups import ReplicaGroup
from stacks.metrics import Metric, Signal
from stacks.naming import COMPONENT_LABEL, scanner_waivers
from stacks.resolved import ModelEntry, PodShape, ResolvedStack, scaling_adapter_name
from stacks.versions import IMAGES, Image, overridden

from .. import secretfiles
from ..secretfiles import SecretFile
from ..storage.prepare import TOKEN_VOLUME
from . import sglang, vllm, workers
from .group import EFA_ENV, add_efa_env
from .spec import EngineSpec, WorkloadSpec, repo_id
from .workers import worker_resources
from .workload import HF_TOKEN_DIR, HF_TOKEN_KEY, hf_token, unique_volumes

FRONTEND = "Frontend"
FRONTEND_PORT = 8000

# The Frontend's series (lib/runtime/src/metrics/prometheus_names.rs at 1.4), in seconds. 1.4 deprecates
# dynamo_frontend_queued_requests and _inflight_requests: the queue is the requests in the stages before a
# worker takes them (docs/autoscaling.md).
METRICS: dict[Signal, Metric] = {
    "ttft": Metric("dynamo_frontend_time_to_first_token_seconds", "histogram", "s", "time to first token"),
    "itl": Metric("dynamo_frontend_inter_token_latency_seconds", "histogram", "s", "inter-token latency"),
    "e2e": Metric("dynamo_frontend_request_duration_seconds", "histogram", "s", "request duration"),
    "tokens": Metric("dynamo_frontend_output_sequence_tokens", "histogram", "tokens", "output tokens per request"),
    "prompt_tokens": Metric("dynamo_frontend_input_sequence_tokens", "histogram", "tokens", "input tokens per request"),
    "queue": Metric(
        "dynamo_frontend_stage_requests",
        "gauge",
        "requests",
        "requests not yet at a worker",
        matchers='stage=~"preprocess|route|dispatch"',
    ),
    "running": Metric("dynamo_frontend_active_requests", "gauge", "requests", "requests in flight"),
}

# What Dynamo's workers add to their backend's flags for the graph roles (_worker_args below). Each
# worker's own parser (allow_abbrev=False) hands the flags it does not know to its backend's parser,
# which abbreviates.
FLAGS: dict[str, str] = {
    "--disaggregation-mode": flags.DISAGG,
    "--disaggregation-transfer-backend": flags.DISAGG,
    "--kv-transfer-config": flags.DISAGG,
    "--kv-events-config": flags.KV_EVENTS,
    "--publish-kv-events": flags.KV_EVENTS,
    "--no-publish-kv-events": flags.KV_EVENTS,
    "--publish-events-and-metrics": flags.KV_EVENTS,
    "--no-publish-events-and-metrics": flags.KV_EVENTS,
    "--no-enable-prefix-caching": flags.KV_CACHE,
    "--disable-radix-cache": flags.KV_CACHE,
    "--router-mode": flags.ROUTER,
    "--engine-config-json": flags.CONFIG,
    "--model-path": flags.MODEL,
    "--max-seq-len": flags.MAXLEN,
    "--context-length": flags.MAXLEN,
}
DIALECTS = {
    "vllm": Dialect(
        engine="Dynamo's vLLM worker",
        owned={**vllm.FLAGS, **vllm.NO_OFFLOAD, **FLAGS},
        streamed={},
        refused=None,
        exact=vllm.EXACT,
        underscores=True,
    ),
    "trtllm": Dialect(
        engine="Dynamo's TensorRT-LLM worker",
        owned={**vllm.FLAGS, **FLAGS},
        streamed={},
        refused=None,
        exact=vllm.EXACT,
        underscores=True,
    ),
    "sglang": Dialect(
        engine="Dynamo's SGLang worker",
        owned={**sglang.FLAGS, **sglang.NO_OFFLOAD, **FLAGS},
        streamed={},
        refused=None,
        exact=sglang.EXACT,
        not_secrets=sglang.NOT_SECRETS,
    ),
}

FACTS = EngineFacts(
    title="Dynamo 1.4",
    port=FRONTEND_PORT,
    health_path="/health",
    ready_path="/health",
    metrics_path="/metrics",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller="dynamo",
    platform_workload=False,
    # No picker_engine: the Frontend already routes (its --router-mode), and a picker in front of it
    # would score the Frontend pods, not the workers.
    picker_engine=None,
    picker_adapter_metric=None,
    metrics=METRICS,
    # The worker component's multinode.nodeCount; its tensor size is the whole group's, which the
    # operator's injected --nnodes/--node-rank wiring expects.
    groups=Groups(builder="operator", refused=None, tensor_spans_nodes=True, head_rule=None, fixed_sizes=None),
    autoscalers=Autoscalers(
        built_in="the Dynamo operator (it sets each DynamoGraphDeployment component's replicas)",
        # KEDA scales a graph through its scaling adapters (keda_targets).
        keda=None,
        to_zero="a Dynamo graph whose workers are all at zero drops the model from its frontend's /v1/models, "
        "so requests get 404 and nothing asks for a worker again (Dynamo 1.4 docs/autoscaling.md, "
        "Scale-to-Zero Limitation); keep minReplicas: 1",
    ),
    streams=False,
    lora=False,
    lora_from_prefix=False,
    lora_flags=False,
    canary=False,
    revisions=True,
    efa_stack=EfaStack(
        missing=True,
        why="ships without libfabric and aws-ofi-nccl (Dynamo's EFA guide: build the `aws` target with "
        "container/render.py --make-efa), so NIXL over LIBFABRIC cannot start and NCCL runs over TCP",
    ),
    # The operator builds the workers' pods; the platform mounts no cache of its own into them.
    compile_cache_env={},
    # Clients, the gateway and Prometheus reach the Frontend; only the graph's own pods reach the workers.
    serving_role="frontend",
    kv_offload=None,
    # Not on shared GPUs: the Dynamo operator's workers request whole GPUs.
    gpu_sharing=(),
    json_output=None,  # no structured-output form established at its pinned version
)
API_VERSION = "nvidia.com/v1beta1"

# Worker module and working directory of each backend inside its runtime image.
BACKENDS: dict[str, tuple[str, str]] = {
    "vllm": ("dynamo.vllm", "/workspace/examples/backends/vllm"),
    "sglang": ("dynamo.sglang", "/workspace/examples/backends/sglang"),
    "trtllm": ("dynamo.trtllm", "/workspace/examples/backends/trtllm"),
}
# Component names per role, as the upstream examples spell them (component `name` is free).
ROLE_NAMES = {"worker": "Worker", "prefill": "PrefillWorker", "decode": "DecodeWorker"}
# Both vLLM roles of a disaggregated graph carry the same KV connector: the prefill role hands its KV
# cache over it, the decode role receives through it (NIXL, kv_both, as both roles of
# examples/backends/vllm/deploy/disagg_router.yaml at the 1.4.0 cut e147ceea).
VLLM_KV_TRANSFER = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
# Over EFA both roles must pick NIXL's LIBFABRIC backend: UCX, the default, runs at about TCP speed
# there (efa-on-aws.mdx, "Configure NIXL backend").
VLLM_KV_TRANSFER_EFA = (
    '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["LIBFABRIC"]}}'
)
# The Frontend routes by KV (`DYN_ROUTER_MODE`, the env of `--router-mode`: dynamo/common/configuration/
# groups/router_args.py; the agg_router and disagg_router samples set it on the Frontend only). The
# router learns which worker holds which prefix from the workers' KV events, and in 1.4 no worker
# creates an events config of its own (vllm/args.py create_kv_events_config returns the user's or
# None): the engine publishes over ZMQ to the Dynamo worker in its pod, which forwards the events on
# Dynamo's event plane (ZMQ by default, so neither NATS nor etcd is involved).
ROUTER_MODE_ENV = {"name": "DYN_ROUTER_MODE", "value": "kv"}
# vLLM binds its publisher here and dynamo.vllm subscribes at 127.0.0.1 on the same port (vllm/main.py);
# 5557 is vLLM's KVEventsConfig default endpoint. Events need the prefix cache, which dynamo.vllm turns
# on when no flag says otherwise (vllm/args.py update_engine_config_with_dynamo).
VLLM_KV_EVENTS = '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557","enable_kv_cache_events":true}'
# SGLang's own KVEventsConfig (no enable_kv_cache_events field: a publisher other than "null" turns events
# on, sglang/args.py); dynamo.sglang subscribes at the pod's IP (sglang/publisher.py), so it binds `*`.
SGLANG_KV_EVENTS = '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}'
# TensorRT-LLM publishes through Dynamo's own flag (trtllm/backend_args.py, default off).
TRTLLM_KV_EVENTS = "--publish-kv-events"
SGLANG_NIXL_BACKEND = {"name": "SGLANG_DISAGGREGATION_NIXL_BACKEND", "value": "LIBFABRIC"}
# What efa-on-aws.mdx requires on every EFA worker (FI_PROVIDER, device RDMA for NIXL's GPU memory,
# no shared-memory transfer) and recommends (no fork safety), beside the NCCL sizes every group gets.
DYNAMO_EFA_ENV = (
    *EFA_ENV,
    {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"},
    {"name": "FI_EFA_ENABLE_SHM_TRANSFER", "value": "0"},
    {"name": "FI_EFA_ENABLE_SHM", "value": "0"},
    {"name": "FI_EFA_FORK_SAFE", "value": "0"},
)


def dynamo_block(model: ModelSection) -> DynamoGraph:
    return model.dynamo or DynamoGraph()


def roles(block: DynamoGraph) -> tuple[str, ...]:
    """The graph's worker roles: one that does prefill and decode, or the two of a disaggregated graph."""
    return ("prefill", "decode") if block.mode == "disaggregated" else ("worker",)


def dynamo_multinode(model: ModelSection) -> bool:
    """A graph whose workers span nodes (it needs the operator's Grove orchestrator)."""
    return model.nodes_per_replica > 1


def runtime_image(model: ModelSection) -> Image:
    """The pinned runtime image of the model's backend (catalog `dynamo-<backend>`), with the
    model's own image override applied field by field."""
    return overridden(IMAGES[f"dynamo-{dynamo_block(model).backend}"], model.image)


def graph_name(model: ModelSection) -> str:
    return model.name


# The worker role KEDA scales (`autoscaling.owner: keda`): an aggregated graph's workers, a disaggregated
# graph's decode workers (they hold the generating requests the frontend's queue waits for; the prefill
# workers stay at `dynamo.prefillWorkers`).
SCALED_ROLE = {"aggregated": "worker", "disaggregated": "decode"}
ADAPTER_KIND = "DynamoGraphDeploymentScalingAdapter"


def scaled_role(model: ModelSection) -> str | None:
    """The worker role a scaling adapter owns the replicas of; None when nothing scales the graph."""
    if model.autoscaling.owner != "keda":
        return None
    return SCALED_ROLE[dynamo_block(model).mode]


def scaled_count(model: ModelSection) -> tuple[str, int] | None:
    """The worker count the stack sets for the role KEDA scales, as (key under the model entry, count):
    `dynamo.decodeWorkers` of a disaggregated graph, `replicas` of an aggregated one; None when the stack
    leaves it unset (the adapter's floor is then `autoscaling.minReplicas`) or nothing scales the graph."""
    role = scaled_role(model)
    if role == "decode" and "decode_workers" in dynamo_block(model).model_fields_set:
        return "dynamo.decodeWorkers", dynamo_block(model).decode_workers
    if role == "worker" and "replicas" in model.model_fields_set:
        return "replicas", model.replicas
    return None


def scaling_adapters(model: ModelSection) -> tuple[tuple[str, str, str], ...]:
    """The DGDSAs the operator creates for the components with `scalingAdapter: {}`, as (apiVersion, kind,
    name)."""
    role = scaled_role(model)
    if role is None:
        return ()
    return ((API_VERSION, ADAPTER_KIND, scaling_adapter_name(graph_name(model), ROLE_NAMES[role])),)


def service(model: ModelSection) -> str:
    """The Service the operator creates for the Frontend: `<dgd name>-frontend`, port 8000
    (Dynamo docs, "Expose the Frontend")."""
    return component_service(model, FRONTEND)


def component_service(model: ModelSection, component: str) -> str:
    """The operator names each component's Service `<graph>-<component, lower case>`."""
    return f"{graph_name(model)}-{component.lower()}"


def over_efa(spec: WorkloadSpec) -> bool:
    """A multi-node graph on a pool with EFA: its pods own their nodes and talk over EFA."""
    return dynamo_multinode(spec.model) and spec.served.pool.efa_per_node > 0


def _worker_args(spec: WorkloadSpec, role: str) -> list[str]:
    model = spec.model
    block = dynamo_block(model)
    # The whole group's tensor size (nodeCount x each pod's GPUs): stacks/groups.py.
    tensor = spec.served.group.tensor
    args = ["--model", model.model]
    if model.revision:
        args += ["--revision", model.revision]
    if block.backend == "sglang":
        args = ["--model-path", model.model] + (["--revision", model.revision] if model.revision else [])
        args += ["--served-model-name", spec.served.served_model_name]
        if tensor > 1:
            args += ["--tensor-parallel-size", str(tensor)]
        if model.max_model_len:
            args += ["--context-length", str(model.max_model_len)]
        if role in ("prefill", "decode"):
            args += ["--disaggregation-mode", role, "--disaggregation-transfer-backend", "nixl"]
        args += ["--kv-events-config", SGLANG_KV_EVENTS]
    elif block.backend == "trtllm":
        args = ["--model-path", model.model, "--served-model-name", spec.served.served_model_name]
        if tensor > 1:
            args += ["--tensor-parallel-size", str(tensor)]
        if model.max_model_len:
            args += ["--max-seq-len", str(model.max_model_len)]
        args.append(TRTLLM_KV_EVENTS)
    else:
        args += ["--served-model-name", spec.served.served_model_name]
        if tensor > 1:
            args += ["--tensor-parallel-size", str(tensor)]
        if model.max_model_len:
            args += ["--max-model-len", str(model.max_model_len)]
        if role in ("prefill", "decode"):
            transfer = VLLM_KV_TRANSFER_EFA if over_efa(spec) else VLLM_KV_TRANSFER
            args += ["--disaggregation-mode", role, "--kv-transfer-config", transfer]
        args += ["--kv-events-config", VLLM_KV_EVENTS]
    if model.trust_remote_code:
        args.append("--trust-remote-code")
    return args + list(model.engine_args)


def _secret_volume(spec: WorkloadSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Hugging Face token as a file: the same volume and mount as every engine's pods."""
    volumes, mounts, _ = hf_token(spec)
    return volumes, mounts


def pod_labels(spec: WorkloadSpec, role: str | None = None) -> dict[str, str]:
    """Every pod of the graph carries the model's selector label (the network policies let the gateway,
    the scraper and the graph's own peers reach exactly these pods) and its role (frontend, worker,
    prefill, decode)."""
    return {**spec.labels, **spec.served.selector, **({COMPONENT_LABEL: role} if role else {})}


# NIXL registers GPU memory with libfabric's EFA provider (`fi_mr_reg`), which efa-on-aws.mdx says
# needs a privileged container ("IPC_LOCK alone is insufficient") with IPC_LOCK.
NIXL_EFA_SECURITY = {"privileged": True, "capabilities": {"add": ["IPC_LOCK"]}}
NIXL_EFA_WAIVERS = {
    "CKV_K8S_16": "the prefill and decode workers register GPU memory for NIXL's LIBFABRIC backend over EFA "
    "(fi_mr_reg), which Dynamo's efa-on-aws guide shows needs a privileged container: IPC_LOCK alone fails",
    "CKV_K8S_37": "IPC_LOCK, which NIXL's memory registration over EFA needs (Dynamo's efa-on-aws guide), with "
    "the privilege it requires",
}


def nixl_over_efa(spec: WorkloadSpec, role: str) -> bool:
    """A worker that moves KV blocks over NIXL's LIBFABRIC backend: a disaggregated role over EFA."""
    return role in ("prefill", "decode") and over_efa(spec)


def _worker(spec: WorkloadSpec, role: str) -> dict[str, Any]:
    model = spec.model
    block = dynamo_block(model)
    module, workdir = BACKENDS[block.backend]
    secret_volumes, secret_mounts = _secret_volume(spec)
    resources = copy.deepcopy(dict(spec.served.pod(role).resources))
    command = ["python3", "-m", module]
    token = model.secrets.hugging_face_token
    if token:
        # Dynamo's own download of the repo (Rust, modelexpress) reads the token only from HF_TOKEN,
        # not HF_TOKEN_PATH: export it from the mounted file into this process alone.
        key = [SecretFile("HF_TOKEN", token, HF_TOKEN_KEY, TOKEN_VOLUME, HF_TOKEN_DIR)]
        command = ["/bin/sh", "-c", secretfiles.exec_script(key, " ".join(command)), module]
    container: dict[str, Any] = {
        "name": "main",
        "image": runtime_image(model).ref,
        "command": command,
        "args": _worker_args(spec, role),
        "workingDir": workdir,
        "env": [
            *hf_token(spec)[2],
            {"name": "HF_HOME", "value": spec.cache.model_dir},
            *spec.cache.env,
        ],
        "resources": resources,
        "volumeMounts": [*spec.cache.volume_mounts, *secret_mounts],
    }
    if over_efa(spec):
        add_efa_env(container, DYNAMO_EFA_ENV)
        if block.backend == "sglang" and role in ("prefill", "decode"):
            container["env"].append(dict(SGLANG_NIXL_BACKEND))
        if nixl_over_efa(spec, role):
            container["securityContext"] = dict(NIXL_EFA_SECURITY)
    pod_spec = spec.placement.place(
        {
            "containers": [container],
            "volumes": unique_volumes([*spec.cache.volumes, *secret_volumes]),
            **({"initContainers": list(spec.cache.init_containers)} if spec.cache.init_containers else {}),
            # The preparation init containers read the model bucket as this account.
            **({"serviceAccountName": spec.pod_service_account} if spec.pod_service_account else {}),
        }
    )
    component: dict[str, Any] = {"name": ROLE_NAMES[role], "type": role}
    if dynamo_multinode(model):
        component["multinode"] = {"nodeCount": spec.served.group.nodes}
    replicas = spec.served.pod(role).replicas
    if replicas is None:
        # The adapter owns the count (role_replicas): `pulumi up` leaves it out.
        component["scalingAdapter"] = {}
    else:
        component["replicas"] = replicas
    return {**component, "podTemplate": {"metadata": {"labels": pod_labels(spec, role)}, "spec": pod_spec}}


# The Frontend is CPU-only: no GPU toleration, so it stays off the accelerator nodes.
FRONTEND_RESOURCES: dict[str, Any] = {
    "requests": {"cpu": "250m", "memory": "512Mi"},
    "limits": {"cpu": "1", "memory": "2Gi"},
}


def pods(model: ModelSection, requests: Requests, group: ReplicaGroup) -> tuple[PodShape, ...]:
    """The graph's Frontend pods (per graph, on the CPU nodes) and each worker role's pods (one group of
    `nodes` pods per replica of the role), each worker its node's share of the GPUs with 2 CPUs and 8Gi
    per GPU unless `resources` says otherwise, and the node disk the sizing gives the replica."""
    block = dynamo_block(model)
    worker = worker_resources(model, requests.ephemeral_mib)
    return (
        workers.shape("frontend", 1, block.frontend_replicas, FRONTEND_RESOURCES, per_replica=False, pool=False),
        *(
            workers.shape(role, group.nodes, role_replicas(model, role), worker, per_replica=True, pool=True)
            for role in roles(block)
        ),
    )


def role_replicas(model: ModelSection, role: str) -> int | None:
    """A worker role's replicas as the graph asks for them; None for the role a scaling adapter owns (the
    operator's webhook refuses direct edits of its count, so `pulumi up` leaves it out)."""
    if role == scaled_role(model):
        return None
    block = dynamo_block(model)
    return {"prefill": block.prefill_workers, "decode": block.decode_workers}.get(role, model.replicas)


def _frontend(spec: WorkloadSpec) -> dict[str, Any]:
    # The frontend is CPU-only: no GPU toleration, so it stays off the accelerator nodes.
    return {
        "name": FRONTEND,
        "type": "frontend",
        "replicas": spec.served.pod("frontend").replicas,
        "podTemplate": {
            "metadata": {"labels": pod_labels(spec, "frontend")},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": runtime_image(spec.model).ref,
                        "env": [dict(ROUTER_MODE_ENV)],
                        "resources": copy.deepcopy(dict(spec.served.pod("frontend").resources)),
                    }
                ]
            },
        },
    }


def graph_deployment(spec: WorkloadSpec) -> dict[str, Any]:
    model = spec.model
    block = dynamo_block(model)
    if block.mode == "disaggregated":
        workers = [_worker(spec, "prefill"), _worker(spec, "decode")]
    else:
        workers = [_worker(spec, "worker")]
    privileged = any(nixl_over_efa(spec, w["type"]) for w in workers)
    return {
        "apiVersion": API_VERSION,
        "kind": "DynamoGraphDeployment",
        "metadata": {
            "name": graph_name(model),
            "namespace": spec.served.namespace,
            "labels": pod_labels(spec),
            # The operator moves status.state to "successful" once every service is ready (the
            # DynamoGraphDeployment CRD's state enum: initializing, pending, successful, failed).
            "annotations": {
                **(scanner_waivers(NIXL_EFA_WAIVERS) if privileged else {}),
                **await_operator("jsonpath={.status.state}=successful", spec.served.await_seconds),
            },
        },
        "spec": {"backendFramework": block.backend, "components": [_frontend(spec), *workers]},
    }


def graph_request(spec: WorkloadSpec) -> dict[str, Any]:
    """A DGDR that profiles the model on this cluster's GPUs. Not read-only: it runs profiling
    jobs, and with autoApply it would create a second DGD (see the module docstring). The job runs
    the planner image; the workload is `dynamo.profileConcurrency`; the SLA targets are the
    model's own `slo` (seconds in the stack, milliseconds in the DGDR)."""
    model = spec.model
    block = dynamo_block(model)
    body: dict[str, Any] = {
        "model": model.model,
        "backend": block.backend,
        "image": spec.images["dynamo-planner"].ref,
        "autoApply": False,
        "workload": {"concurrency": block.profile_concurrency},
    }
    slo = model.slo
    sla = {
        key: round(seconds * 1000, 3)
        for key, seconds in (("ttft", slo.ttft_seconds if slo else None), ("itl", slo.itl_seconds if slo else None))
        if seconds is not None
    }
    if sla:
        body["sla"] = sla
    return {
        "apiVersion": API_VERSION,
        "kind": "DynamoGraphDeploymentRequest",
        "metadata": {
            "name": f"{graph_name(model)}-profile",
            "namespace": spec.served.namespace,
            "labels": dict(spec.labels),
        },
        "spec": body,
    }


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    objects = [graph_deployment(spec)]
    if dynamo_block(spec.model).request_profiling:
        objects.append(graph_request(spec))
    return objects


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    """A DynamoGraphDeployment its operator reconciles (and generates the Services from). The workers
    download the repository themselves (upstream's `fetch_model`, into HF_HOME on the cache volume), so
    the platform prepares nothing: a prepared copy beside theirs would only double the disk."""
    del addons
    block = dynamo_block(model)
    return ModelFacts(
        image=runtime_image(model),
        service=service(model),
        port=FRONTEND_PORT,
        workload=(API_VERSION, "DynamoGraphDeployment", graph_name(model)),
        keda_targets=scaling_adapters(model),
        dialect=DIALECTS[block.backend],
        hub_repo=repo_id(model),
        prepared=False,
        platform_images=("dynamo-planner",) if block.request_profiling else (),
        names=tuple(
            DerivedName(
                name=component_service(model, c),
                what=f"Service the dynamo operator creates (-{c.lower()})",
                limit=63,
                dns_1035=True,
            )
            for c in (FRONTEND, *(ROLE_NAMES[role] for role in roles(block)))
        ),
        # A graph across nodes runs through Grove ("no multinode orchestrator available" without it).
        addons=("dynamo.grove",) if dynamo_multinode(model) else (),
        # The operator creates the adapter at one replica whatever the graph asks (the component renders no
        # `replicas`: the adapter's webhook refuses edits of it), so the count asked is KEDA's floor.
        keda_floor=None if (counted := scaled_count(model)) is None else counted[1],
    )


# ---- the refusals only Dynamo has ----------------------------------------------------------------------

# Dynamo 1.4's admission webhook reads the runtime version from the image tag (X.Y.Z, optionally v);
# another tag is refused unless the component sets runtimeVersionOverride, which the platform does not.
RUNTIME_TAG = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+$")


def _disaggregation(entry: ModelEntry) -> Iterable[Problem]:
    """A disaggregated graph's roles load the same weights (KV blocks move between them); an aggregated
    graph has none of the roles' settings; TensorRT-LLM takes no revision and no disaggregation here."""
    model, block = entry.config, dynamo_block(entry.config)
    if block.backend == "trtllm" and model.revision:
        yield Problem(
            entry.key("revision"),
            "the TensorRT-LLM worker (dynamo.trtllm) takes no revision argument, so the pinned revision would be "
            "ignored; use backend vllm or sglang, or point model at a prepared local copy of that revision and drop "
            "revision",
        )
    if block.mode == "aggregated":
        for attr, key in (
            ("prefill_workers", "prefillWorkers"),
            ("decode_workers", "decodeWorkers"),
            ("prefill_revision", "prefillRevision"),
        ):
            if attr in block.model_fields_set:
                yield Problem(
                    entry.key("dynamo", key),
                    f"{key} only applies to dynamo.mode: disaggregated; an aggregated graph runs `replicas` workers "
                    f"that do prefill and decode",
                )
        return
    if block.backend == "trtllm":
        yield Problem(
            entry.key("dynamo", "backend"),
            "disaggregated TensorRT-LLM needs a cache-transceiver engine configuration per role, which the platform "
            "does not generate; use backend vllm or sglang for a disaggregated graph, or mode: aggregated",
        )
    if not model.revision:
        yield Problem(
            entry.key("revision"),
            "disaggregated serving moves KV blocks from prefill to decode workers, which must load the same "
            "weights: pin the model revision (the Hugging Face commit)",
        )
    if block.prefill_revision is not None and block.prefill_revision != model.revision:
        yield Problem(
            entry.key("dynamo", "prefillRevision"),
            f"prefill workers would load revision {block.prefill_revision} and decode workers {model.revision}; KV "
            f"cache transfer needs the same model revision on both roles: remove prefillRevision or make it equal "
            f"to revision",
        )


def _scaled_workers(entry: ModelEntry) -> Iterable[Problem]:
    """Under KEDA the worker count the graph asks for is the ScaledObject's floor, so it must agree with
    the autoscaler's bounds: a `minReplicas` of its own that differs, or a `maxReplicas` below it, would
    silently drop the count asked for."""
    model = entry.config
    counted = scaled_count(model)
    if counted is None:
        return
    key, count = counted
    scaling = model.autoscaling
    adapter = scaling_adapter_name(graph_name(model), ROLE_NAMES[SCALED_ROLE[dynamo_block(model).mode]])
    path = entry.key(*key.split("."))
    if "min_replicas" in scaling.model_fields_set and scaling.min_replicas != count:
        yield Problem(
            path,
            f"{key} {count} and autoscaling.minReplicas {scaling.min_replicas} both set the fewest workers KEDA keeps "
            f"(through the scaling adapter {adapter}); keep one: drop autoscaling.minReplicas (KEDA then keeps "
            f"{count}), or drop {key} (KEDA keeps {scaling.min_replicas})",
        )
    elif count > scaling.max_replicas:
        yield Problem(
            path,
            f"{key} {count} is more than autoscaling.maxReplicas {scaling.max_replicas}: KEDA never runs more than "
            f"maxReplicas workers through the scaling adapter {adapter}; raise autoscaling.maxReplicas to at least "
            f"{count} or lower {key}",
        )


def _planner(entry: ModelEntry) -> Iterable[Problem]:
    if entry.config.autoscaling.owner != "dynamo-planner":
        return
    yield Problem(
        entry.key("autoscaling", "owner"),
        "the platform does not deploy the Dynamo planner: the SLA planner scales only disaggregated graphs (this "
        f"one is {dynamo_block(entry.config).mode}), needs Prometheus and the profiling data of a run you review "
        "(dynamo.requestProfiling: true renders a DynamoGraphDeploymentRequest with autoApply: false); use "
        "autoscaling.owner: none with fixed dynamo.prefillWorkers/decodeWorkers (or replicas) meanwhile",
    )


def _parallelism(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """A Dynamo worker runs one tensor-parallel group over the replica's accelerators and takes no
    pipeline size (the generic rule checks tensor x pipeline is the replica's accelerators)."""
    model, served = entry.config, stack.placed(entry)
    given, total, nodes = model.parallelism, model.accelerators_per_replica, model.nodes_per_replica
    if served is None or (given.tensor is None and given.pipeline is None) or total % nodes:
        return
    tensor, pipeline = served.group.tensor, served.group.pipeline
    if tensor * pipeline == total and (tensor, pipeline) != (total, 1):
        yield Problem(
            entry.key("parallelism"),
            f"model {model.name} on pool {served.pool.name}: tensor {tensor} x pipeline {pipeline} is refused for "
            f"engine dynamo: a Dynamo worker runs one tensor-parallel group over the replica's {total} accelerators "
            f"(tensor = multinode.nodeCount {nodes} x {total // nodes} per pod) and takes no pipeline size; use "
            f"parallelism: {{tensor: {total}, pipeline: 1}}, or leave parallelism unset",
        )


def _roles_fit_the_pool(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """The prefill workers (fixed) and the decode workers (at maxReplicas under KEDA) hold their
    accelerators at once: the pool's accelerator limit or a static pool's nodes must hold both roles, or
    one waits for capacity the other never frees (each role alone is the fit rule's)."""
    served = stack.placed(entry)
    over = None if served is None else roles_over_the_pool(served)
    if over is None:
        return
    parts, _, _, where = over
    yield Problem(
        entry.key("dynamo"),
        f"model {entry.name}'s worker roles run at once, {parts} accelerators (a role KEDA scales at its "
        f"maxReplicas), over {where}; lower dynamo.prefillWorkers or autoscaling.maxReplicas (or "
        f"dynamo.decodeWorkers), or raise the pool's limits.accelerators (a static pool's replicas)",
    )


def warnings(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """A team's DynamoGraphDeploymentRequest (`requestProfiling`) runs profiling Jobs the operator sizes (candidate
    graphs on GPUs it chooses) in the model's namespace: the team's quota pays for them, and the quota rules
    (stacks/rules/quota.py, which count the platform's own helper pods) cannot say how much."""
    team = stack.team
    if team is None or team.quota is None or not dynamo_block(entry.config).request_profiling:
        return
    yield Problem(
        entry.key("dynamo", "requestProfiling"),
        f"the profiling the DynamoGraphDeploymentRequest of {entry.name} asks for runs Jobs the operator sizes "
        f"(candidate graphs on GPUs) in namespace {entry.namespace}, charged to team {team.name}'s quota beside "
        f"the replicas but not counted by the quota checks; leave the quota room for a profiling run's GPUs, or "
        f"profile where no team quota applies",
    )


def checks(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    yield from _disaggregation(entry)
    yield from _roles_fit_the_pool(entry, stack)
    yield from _planner(entry)
    yield from _scaled_workers(entry)
    yield from _parallelism(entry, stack)
    tag = entry.config.image.tag
    if tag is not None and not RUNTIME_TAG.match(tag):
        yield Problem(
            entry.key("image", "tag"),
            f"{tag!r}: Dynamo's admission webhook takes the runtime version from the image tag and refuses a tag "
            f"that is not X.Y.Z; tag the runtime image with its Dynamo version (e.g. 1.4.2) and pin the build with "
            f"image.digest",
        )


SPEC = EngineSpec(
    no_traces="Dynamo's runtime traces through its own operator's settings, which the platform does not manage yet",
    facts=FACTS,
    model_facts=model_facts,
    pods=pods,
    manifests=manifests,
    checks=checks,
    warnings=warnings,
)
