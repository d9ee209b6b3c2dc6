"""KEDA 2.20.2 as a model's autoscaling owner (`autoscaling.owner: keda`).

- `keda_values`: the keda chart (kedacore/charts v2.20.2). Its metrics server registers
  external.metrics.k8s.io beside prometheus-adapter, which serves only custom.metrics.k8s.io (the
  platform gives the adapter no external rules, and keeps KEDA's metrics server on: without it KEDA's
  HPAs read nothing). The `*/scale` RBAC is narrowed from the chart's every-kind default to the kinds
  the platform scales: LeaderWorkerSets and Dynamo's scaling adapters (Deployments are built in).
- `scaled_objects`: one ScaledObject per target (`ResolvedModel.keda_targets`: the workload, or a
  Dynamo graph's DynamoGraphDeploymentScalingAdapter). A model on the HTTP add-on's request count
  (`ResolvedModel.scaling`, `signal: requests`) has the add-on's external-push trigger alone; the others
  a Prometheus trigger on the cluster total
  of the engine's queue gauge for this model (`sum(...)`: a query returning several series is an error
  to KEDA, not a sum) and the per-replica `threshold` (KEDA's default AverageValue metric type divides
  the total by the replicas). The HPA KEDA creates is named after the target, with the annotation that
  lets KEDA adopt an `owner: hpa` HPA of that name (a model moving from `hpa` to `keda`).
"""

from __future__ import annotations

from typing import Any

from stacks.metrics import Metric
from stacks.naming import MANAGED_BY
from stacks.resolved import KEDA_NAMESPACE, MODEL_LABEL, ResolvedModel

from ..monitoring.collection import REVISION_TARGET_LABEL, model_filter
from .wake import push_trigger

API_VERSION = "keda.sh/v1alpha1"
# KEDA polls each trigger this often (seconds; its default is 30): a queue builds up fast.
POLLING_SECONDS = 15
# The HPA's behaviour: model servers take minutes to start, so up at once, down slowly (the
# chart's CRD bounds the window to 3600 s).
HPA_BEHAVIOR = {
    "scaleUp": {"stabilizationWindowSeconds": 0},
    "scaleDown": {"stabilizationWindowSeconds": 600},
}
# The kinds besides Deployments and StatefulSets whose scale subresource KEDA may patch; the chart's
# template prints `<kind>/scale`, so `kind` is the resource's plural (templates/manager/clusterrole.yaml).
SCALED_REF_KINDS = [
    {"apiGroup": "leaderworkerset.x-k8s.io", "kind": "leaderworkersets"},
    {"apiGroup": "nvidia.com", "kind": "dynamographdeploymentscalingadapters"},
]
# KEDA's default name for the HPA it creates is `keda-hpa-<ScaledObject>` (controllers/keda/hpa.go);
# the webhook refuses names that exceed 63 characters with it.
HPA_PREFIX = "keda-hpa-"
# KEDA adopts an existing HPA of the same name instead of refusing the ScaledObject at admission ("the
# workload ... is already managed by the hpa"): a model moving from `owner: hpa` to `keda` goes through in
# one `pulumi up` (docs/concepts_scaling-deployments.md, Transferring ownership of an existing HPA).
TRANSFER_ANNOTATION = "scaledobject.keda.sh/transfer-hpa-ownership"


def keda_values() -> dict[str, Any]:
    """The keda chart's values: the chart's secure defaults (non-root, read-only root file system,
    every capability dropped, the runtime's seccomp profile), its CRDs installed and upgraded as
    templates, the narrowed scale RBAC, and its metrics server kept (the HPAs it creates read it)."""
    # The images are distroless `nonroot` (uid/gid 65532); the chart sets runAsNonRoot and leaves the
    # ids commented out (values.yaml podSecurityContext.<component>).
    nonroot = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532}
    return {
        "podSecurityContext": {"operator": nonroot, "metricServer": nonroot, "webhooks": nonroot},
        "crds": {"install": True},
        "rbac": {"enabledCustomScaledRefKinds": True, "scaledRefKinds": SCALED_REF_KINDS},
        "metricsServer": {"enabled": True},
        "webhooks": {"enabled": True},
    }


def queue_series(served: ResolvedModel) -> Metric:
    """The gauge a model scales on (`autoscaling.metric`, else its engine's queue depth)."""
    found = served.facts.scaling_series(served.config.autoscaling.metric)
    if found is None:  # refused by stacks/rules/engines.py before anything is built
        raise ValueError(f"engine {served.engine} exports no gauge to scale {served.name} on")
    return found


def queue_query(served: ResolvedModel) -> str:
    """The cluster total of the model's gauge over its own pods: the namespace and the model label the
    PodMonitor keeps; with a canary, the stable revision's pods only (the canary runs unscaled)."""
    selector = model_filter(served)
    if served.canary is not None:
        selector += f',{REVISION_TARGET_LABEL}="{served.config.revision}"'
    return f"sum({queue_series(served).series(selector)})"


def prometheus_trigger(served: ResolvedModel, server: str) -> dict[str, Any]:
    return {
        "type": "prometheus",
        "name": "queue",
        "metadata": {
            "serverAddress": server,
            "query": queue_query(served),
            "threshold": served.config.autoscaling.target_value,
        },
    }


def triggers(served: ResolvedModel, server: str | None, wake: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The wake trigger first (0 to 1, and for `signal: requests` 1 to N too), then the engine's gauge
    unless the model scales on the add-on's request count."""
    assert served.scaling is not None, "a KEDA-scaled model has a signal"
    if served.scaling.requests:
        return list(wake or [])
    if server is None:  # refused by stacks/rules/scaling.py before anything is built
        raise ValueError(f"model {served.name}: KEDA's prometheus trigger has no Prometheus to query")
    return [*(wake or []), prometheus_trigger(served, server)]


def scaled_object(
    served: ResolvedModel, target: tuple[str, str, str], server: str | None, wake: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One ScaledObject on `target`; `wake` adds the triggers that bring a model back from zero."""
    scaling = served.config.autoscaling
    api_version, kind, name = target
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
        # A Dynamo graph's configured worker count where it sets one: its adapter starts at one replica.
        "minReplicaCount": served.min_replicas,
        "maxReplicaCount": scaling.max_replicas,
        "pollingInterval": POLLING_SECONDS,
        # The HPA is named after the target, as `owner: hpa` names its own (components/engines/workload.py).
        "advanced": {"horizontalPodAutoscalerConfig": {"name": hpa_name(target), "behavior": HPA_BEHAVIOR}},
        "triggers": triggers(served, server, wake),
    }
    if scaling.to_zero:
        # Only the step to zero waits this long after the last activity (N to 1 follows the HPA's
        # behaviour); a new model waits as long before its first scale-down.
        spec["cooldownPeriod"] = scaling.idle_seconds
        spec["initialCooldownPeriod"] = scaling.idle_seconds
    return {
        "apiVersion": API_VERSION,
        "kind": "ScaledObject",
        "metadata": {
            "name": name,
            "namespace": served.namespace,
            "labels": {MODEL_LABEL: served.name, **MANAGED_BY},
            "annotations": {TRANSFER_ANNOTATION: "true"},
        },
        "spec": spec,
    }


def hpa_name(target: tuple[str, str, str]) -> str:
    """The HPA KEDA creates and keeps for a target: the target's name (what an `owner: hpa` HPA of the
    same workload is called, so KEDA takes that one over; pulumi then deletes the old object, and KEDA
    recreates it on its next reconcile)."""
    return target[2]


def scaled_objects(served: ResolvedModel, server: str | None) -> list[dict[str, Any]]:
    """The model's ScaledObjects, one per target (none unless KEDA owns its replicas); a model reached
    through the HTTP add-on's interceptor (it scales to zero, or on the add-on's request count) has its
    push trigger (components/autoscaling/wake.py)."""
    wakes = [push_trigger(served)] if served.wake is not None else None
    return [scaled_object(served, target, server, wakes) for target in served.keda_targets]


__all__ = ["HPA_PREFIX", "KEDA_NAMESPACE", "hpa_name", "keda_values", "queue_query", "scaled_objects"]
