"""A replica across nodes: one LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, LWS v0.10.0) group of
`nodesPerReplica` pods, one per node, for the engines that serve a model over several nodes (vLLM
and SGLang; stacks/groups.py says which and how the accelerators split).

The group is built from the same pod template every engine gets (components/engines/workload.py), so
cache, security, placement and resources are the single-node ones, per pod, with what a group adds:
- LWS numbers the pods: it injects `LWS_LEADER_ADDRESS` (`<lws>-<group>.<lws>.<namespace>`, no
  `.svc` suffix, resolvable before the leader is Ready: the headless Service publishes not-ready
  addresses) and `LWS_WORKER_INDEX` (0 for the leader) into every container, and the engines'
  flags reference them as `$(VAR)`, which the kubelet expands without a shell;
- `restartPolicy: RecreateGroupOnPodRestart`: a collective cannot lose one rank and go on;
- `startupPolicy: LeaderCreated` (the default, as LWS's own vLLM sample and the NIM Operator use):
  `LeaderReady` would wait for the leader's readiness, and neither engine's leader serves /health
  before its workers have joined, so the workers would never be created;
- `rolloutStrategy` maxSurge 0 / maxUnavailable 1 (in whole groups) unless the stack sets
  `rollout.maxSurge`: a surge group needs `nodesPerReplica` spare accelerator nodes, which reserved
  capacity rarely has (workload.py `rolling_update`);
- probes, the serving port, the scrape annotations and the Service only on the leader: workers
  (vLLM `--headless`, SGLang ranks >= 1) serve no OpenAI API and export no metrics;
- every pod requests its node's EFA devices (`vpc.amazonaws.com/efa: <pool.efa_per_node>`, the
  device plugin does not share them) with libfabric's EFA provider selected for NCCL; no hugepages
  (Karpenter v1.14 does not model `hugepages-2Mi`: no instance type offers it, so such a pod is never
  provisioned);
- all pods of a group in one zone (EFA does not cross an Availability Zone): each worker has a
  required podAffinity to its own group's leader on `topology.kubernetes.io/zone`, matched by
  `matchLabelKeys: [group-key]`. Not LWS's `exclusive-topology` annotation on the zone key, which
  also forbids a second group in the zone (at most one group per AZ).
"""

from __future__ import annotations

from typing import Any

from stacks.awaits import await_operator
from stacks.config import ModelSection
from stacks.resolved import EFA_RESOURCE, LWS_WORKER_INDEX, MODEL_LABEL

from .spec import WorkloadSpec
from .workload import (
    HOSTNAME,
    ZONE,
    EngineContainer,
    autoscaler,
    deployment,
    disruption_budget,
    metadata,
    pod_template,
    rolling_update,
    scanner_annotations,
    selector,
    service,
)

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
WORKER_INDEX = LWS_WORKER_INDEX
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
NODE_RANK = "$(LWS_WORKER_INDEX)"

# NCCL over EFA through aws-ofi-nccl: libfabric's EFA provider, and the buffer and chunk sizes the EKS
# EFA guide's p5 NCCL test sets (awsdocs amazon-eks-user-guide ml/node-efa.adoc). FI_EFA_USE_HUGE_PAGE=0
# because the pod requests no hugepages (Karpenter does not model them). GPUDirect RDMA
# (FI_EFA_USE_DEVICE_RDMA) is left to libfabric, which turns it on where the device supports it.
EFA_ENV = (
    {"name": "FI_PROVIDER", "value": "efa"},
    {"name": "FI_EFA_USE_HUGE_PAGE", "value": "0"},
    {"name": "NCCL_BUFFSIZE", "value": "8388608"},
    {"name": "NCCL_P2P_NET_CHUNKSIZE", "value": "524288"},
)


def workload_ref(model: ModelSection) -> tuple[str, str, str]:
    """The workload a vLLM or SGLang model becomes, and what a scaler targets (the LWS scale
    subresource counts groups): a LeaderWorkerSet when a replica spans nodes, else a Deployment."""
    if model.nodes_per_replica > 1:
        return API_VERSION, KIND, model.name
    return deployment(model)


def leader_selector(spec: WorkloadSpec) -> dict[str, str]:
    """The leaders of the model's groups: the pods that serve, and the ones the Service selects."""
    return {**selector(spec), WORKER_INDEX: "0"}


def add_efa_env(container: dict[str, Any], env: tuple[dict[str, str], ...] = EFA_ENV) -> None:
    """The libfabric env on a container whose resources hold its node's EFA devices (the resolved pod's,
    stacks/resolve/models.py `with_efa`: a pod of a group across nodes on a pool with EFA); nothing
    otherwise. Shared by the LWS groups here and Dynamo's, Ray's and NIM's multi-node workers."""
    if EFA_RESOURCE in container["resources"].get("requests", {}):
        container["env"] = [*container.get("env", []), *(dict(e) for e in env)]


def _leader(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, Any]:
    template = pod_template(spec, engine)
    pod = template["spec"]
    add_efa_env(pod["containers"][0])
    # Groups spread over zones and hosts by their leaders; each worker follows its own leader.
    for constraint in pod["topologySpreadConstraints"]:
        constraint["labelSelector"] = {"matchLabels": leader_selector(spec)}
    return template


def _tree_copy(node: Any) -> Any:
    """A copy of the template's dicts and lists, sharing the leaves: a live render's template holds
    Pulumi Outputs (a role ARN, a volume's name), which cannot be deep-copied."""
    if isinstance(node, dict):
        return {k: _tree_copy(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_tree_copy(v) for v in node]
    return node


def _worker(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, Any]:
    template = _tree_copy(pod_template(spec, engine))
    template["metadata"].pop("annotations", None)  # workers export no metrics
    pod = template["spec"]
    container = pod["containers"][0]
    for key in ("ports", "startupProbe", "readinessProbe", "livenessProbe"):
        container.pop(key, None)
    add_efa_env(container)
    pod["topologySpreadConstraints"] = [c for c in pod["topologySpreadConstraints"] if c["topologyKey"] == HOSTNAME]
    pod.setdefault("affinity", {})["podAffinity"] = leader_zone_affinity(spec)
    return template


def leader_zone_affinity(spec: WorkloadSpec) -> dict[str, Any]:
    """A required pod affinity to the group's own leader on the zone key: every pod of a group in the
    leader's Availability Zone (EFA does not cross zones). The leader matches its own term, which the
    scheduler accepts for the first pod of a set."""
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {MODEL_LABEL: spec.served.name, WORKER_INDEX: "0"}},
                # The API server adds `group-key In [<this pod's>]` to the selector: its own leader only.
                "matchLabelKeys": [GROUP_KEY],
                "topologyKey": ZONE,
            }
        ]
    }


def leader_worker_set(spec: WorkloadSpec, leader: EngineContainer, worker: EngineContainer) -> dict[str, Any]:
    group = spec.served.group
    body: dict[str, Any] = {}
    replicas = spec.served.pod("leader").replicas
    if replicas is not None:  # (None: the autoscaler's, through the LWS scale subresource)
        body["replicas"] = replicas
    body |= {
        "startupPolicy": "LeaderCreated",
        "rolloutStrategy": {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": rolling_update(spec.model),
        },
        "leaderWorkerTemplate": {
            "size": group.nodes,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": _leader(spec, leader),
            "workerTemplate": _worker(spec, worker),
        },
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        # LWS sets the condition Available once every group is ready (leaderworkerset.x-k8s.io/v1
        # LeaderWorkerSetAvailable).
        "metadata": metadata(
            spec,
            annotations={
                **scanner_annotations(spec, leader),
                **await_operator("condition=Available", spec.served.await_seconds),
            },
        ),
        "spec": body,
    }


def manifests(spec: WorkloadSpec, leader: EngineContainer, worker: EngineContainer) -> list[dict[str, Any]]:
    """LeaderWorkerSet, the leaders' Service, a PodDisruptionBudget and (autoscaling.owner: hpa) an HPA
    on the LWS scale subresource, which counts groups and reads the leaders' metrics."""
    svc = service(spec)
    svc["spec"]["selector"] = leader_selector(spec)
    objs = [leader_worker_set(spec, leader, worker), svc, disruption_budget(spec)]
    if spec.model.autoscaling.owner == "hpa":
        objs.append(autoscaler(spec))
    return objs
