"""Pure builders for metrics collection: kube-prometheus-stack and DCGM-exporter values, a PodMonitor
per served model on the engine's real metrics path and port, neuron-monitor on Neuron nodes, and the
PrometheusRules for the SLOs a stack states. Metric names and units come from `stacks/metrics.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from stacks.awaits import await_service
from stacks.config import ModelSection
from stacks.config.addons import LiteLLM, MonitoringAddon
from stacks.engine_facts import EngineFacts

# What each node exporter asks for on every accelerator node: defined with the fit check's DaemonSet
# overhead (stacks/fit.py), so Karpenter's packing and the fit rule count the same figures.
from stacks.fit import EXPORTER_REQUESTS
from stacks.metrics import FLOW_CONTROL_METRICS, Metric, custom_metric, seconds_in
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL, scanner_waivers
from stacks.resolved import (
    LITELLM_NAMESPACE,
    MODEL_LABEL,
    MONITORING_NAMESPACE,
    REVISION_LABEL,
    TEAM_LABEL,
    Endpoint,
    ResolvedModel,
)
from stacks.versions import Image

from .. import peers
from ..gateway import picker
from ..peers import Pods
from ..scheduling import ACCELERATOR_LABEL, TAINT_KEYS

MONITORING_API = "monitoring.coreos.com/v1"
# The label the Grafana sidecar of kube-prometheus-stack watches for dashboards.
DASHBOARD_LABEL = {"grafana_dashboard": "1"}
# The target label a model's series carry (the pod label MODEL_LABEL, sanitised by Prometheus).
MODEL_TARGET_LABEL = "inference_platform_io_model"
# ... and the revision its pods serve (REVISION_LABEL): a canary's series differ from the stable's by it.
REVISION_TARGET_LABEL = "inference_platform_io_revision"
NEURON_MONITOR_PORT = 8000
# The node labels the price is looked up by: the instance type (kubelet's well-known label) and the
# capacity type Karpenter puts on every node it launches.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


def ksm_allowlist() -> list[str]:
    """kube-state-metrics' `metricLabelsAllowlist` (chart value): the labels the joins read."""
    return [
        f"namespaces=[{TEAM_LABEL}]",
        f"nodes=[{INSTANCE_TYPE_LABEL},{CAPACITY_TYPE_LABEL}]",
        f"pods=[{MODEL_LABEL}]",
    ]


def _meta(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": {**MANAGED_BY, "app.kubernetes.io/component": "monitoring", **labels},
    }


def _gpu_toleration(accelerator: str) -> dict[str, str]:
    return {"key": TAINT_KEYS[accelerator], "operator": "Exists", "effect": "NoSchedule"}


# The StorageClass Prometheus's and Alertmanager's volumes come from: encrypted gp3 through the EBS CSI
# driver the cluster installs as an EKS add-on (components/cluster.py).
MONITORING_STORAGE_CLASS = "gp3-encrypted"
# Prometheus deletes its oldest blocks beyond this share of its volume (WAL and head chunks count
# toward the size, so the rest is their headroom).
RETENTION_SHARE = 0.85
# Components kube-prometheus-stack scrapes, with their dashboards and alert rules, that an EKS cluster
# does not serve: the control plane's controller manager, scheduler and etcd run in AWS's account, and
# EKS's kube-proxy binds its metrics to 127.0.0.1. Left on, KubeControllerManagerDown,
# KubeSchedulerDown, etcdMembersDown and KubeProxyDown fire on a healthy cluster.
EKS_UNSERVED = {
    "kubeControllerManager": ["kubeControllerManager"],
    "kubeScheduler": ["kubeSchedulerAlerting", "kubeSchedulerRecording"],
    "kubeEtcd": ["etcd"],
    "kubeProxy": ["kubeProxy"],
}


def monitoring_storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": MONITORING_STORAGE_CLASS, "labels": dict(MANAGED_BY)},
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }


def _claim(gib: int) -> dict[str, Any]:
    """A StatefulSet's volumeClaimTemplate, as the Prometheus Operator's StorageSpec takes it."""
    return {
        "volumeClaimTemplate": {
            "spec": {
                "storageClassName": MONITORING_STORAGE_CLASS,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": f"{gib}Gi"}},
            }
        }
    }


def retention_size(mon: MonitoringAddon) -> str:
    """Prometheus's size limit (its units are powers of two: 42GB is 42 GiB), below the volume."""
    return f"{int(mon.storage_gib * RETENTION_SHARE)}GB"


def prometheus_stack_values(mon: MonitoringAddon) -> dict[str, Any]:
    """kube-prometheus-stack: Prometheus selects every PodMonitor/ServiceMonitor/PrometheusRule in the
    cluster (not only the chart's own), Grafana's sidecar loads dashboards labelled
    grafana_dashboard=1 from every namespace. Controllers run on the system nodes. Prometheus and
    Alertmanager keep their data on persistent volumes; Alertmanager reads its configuration from the
    stack's Secret when it names one; what EKS does not serve is neither scraped nor alerted on."""
    system = dict(SYSTEM_NODE_LABEL)
    alertmanager: dict[str, Any] = {"nodeSelector": system, "storage": _claim(mon.alertmanager_storage_gib)}
    if mon.alertmanager_config_secret:
        alertmanager |= {"useExistingSecret": True, "configSecret": mon.alertmanager_config_secret}
    return {
        # The operator's CRDs are the program's (prometheus-operator-crds, components/crds.py): the crds
        # subchart off, as the chart's README says when they are managed separately.
        "crds": {"enabled": False},
        "defaultRules": {"rules": {rule: False for rules in EKS_UNSERVED.values() for rule in rules}},
        **{component: {"enabled": False} for component in EKS_UNSERVED},
        "prometheus": {
            "prometheusSpec": {
                "retention": mon.retention,
                "retentionSize": retention_size(mon),
                "storageSpec": _claim(mon.storage_gib),
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "nodeSelector": system,
            }
        },
        "alertmanager": {"alertmanagerSpec": alertmanager},
        # Memory bounded (the scan's CKV_K8S_13, requests as the chart suggests); the admission
        # jobs run as the uid of their distroless image's nonroot user, not the chart's uid 2000.
        "prometheusOperator": {
            "nodeSelector": system,
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
            "admissionWebhooks": {
                "patch": {
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                    "securityContext": {"runAsUser": 65532, "runAsGroup": 65532},
                }
            },
        },
        "grafana": _grafana_values(mon, system),
        # The labels the cost rules join on (components/monitoring/cost.py): a namespace's team, a node's
        # instance and capacity type, a pod's model; kube-state-metrics exports no label it is not told to.
        **({"kube-state-metrics": {"metricLabelsAllowlist": ksm_allowlist()}} if mon.cost.enabled else {}),
    }


def _grafana_values(mon: MonitoringAddon, system: dict[str, str]) -> dict[str, Any]:
    """kube-prometheus-stack's `grafana` section: the stack's admin Secret when it names one, and the
    dashboard sidecar loading grafana_dashboard=1 ConfigMaps from every namespace."""
    return {
        "enabled": mon.grafana,
        **(
            {
                "admin": {
                    "existingSecret": mon.grafana_admin_secret,
                    "userKey": "admin-user",
                    "passwordKey": "admin-password",
                }
            }
            if mon.grafana_admin_secret
            else {}
        ),
        "nodeSelector": system,
        "sidecar": {
            "dashboards": {
                "enabled": True,
                "label": "grafana_dashboard",
                "labelValue": "1",
                "searchNamespace": "ALL",
            }
        },
    }


def adapter_rule(name: str) -> dict[str, Any]:
    """One custom-metrics rule: the engine gauge per pod, under its custom.metrics.k8s.io name."""
    return {
        "seriesQuery": f'{{__name__="{name}",namespace!="",pod!=""}}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "name": {"matches": f"^{re.escape(name)}$", "as": custom_metric(name)},
        "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
    }


def prometheus_adapter_values(url: str, port: int | None, engines: Iterable[EngineFacts]) -> dict[str, Any]:
    """prometheus-adapter serving custom.metrics.k8s.io to HorizontalPodAutoscalers: every engine
    gauge an autoscaler may read (`EngineFacts.gauges`, the same list the rules accept),
    per pod, so team stacks' HPAs are served too. The chart's default rules (container CPU and
    memory) are off: nothing here scales on them. Two replicas and a PDB on the system nodes: an
    unavailable APIService stalls every HPA in the cluster."""
    names = sorted({m.name for engine in engines for m in engine.gauges})
    return {
        "prometheus": {"url": url, "port": port if port is not None else "", "path": ""},
        "rules": {"default": False, "custom": [adapter_rule(n) for n in names]},
        "replicas": 2,
        "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
        "nodeSelector": dict(SYSTEM_NODE_LABEL),
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
    }


def dcgm_exporter_values() -> dict[str, Any]:
    """DCGM exporter on GPU nodes only, tolerating their taint; its ServiceMonitor is picked up by the
    Prometheus above (which selects every ServiceMonitor)."""
    return {
        "nodeSelector": {ACCELERATOR_LABEL: "nvidia"},
        "tolerations": [_gpu_toleration("nvidia")],
        "resources": {"requests": EXPORTER_REQUESTS["nvidia"]},
        "serviceMonitor": {"enabled": True},
    }


def neuron_monitor(img: Image, scraper: Pods, namespace: str = MONITORING_NAMESPACE) -> list[dict[str, Any]]:
    """neuron-monitor with its Prometheus exporter on every Neuron node, its PodMonitor, and its policy
    (only `scraper`'s pods may read it). Command, arguments, memory cap and privilege as AWS's own
    DaemonSet (aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml): the image's entrypoint serves
    /metrics on the port."""
    labels = {"app.kubernetes.io/name": "neuron-monitor"}
    return [
        _neuron_monitor_daemonset(img, namespace, labels),
        _neuron_monitor_pod_monitor(namespace, labels),
        _neuron_monitor_network_policy(namespace, labels, scraper),
    ]


def _neuron_monitor_daemonset(img: Image, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    """The DaemonSet on the Neuron nodes, tolerating their taint, with the scanner waivers its
    privilege needs."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            **_meta("neuron-monitor", namespace, **labels),
            # The one privileged container the platform runs, for the reason AWS's own has.
            "annotations": scanner_waivers(
                dict.fromkeys(
                    ("CKV_K8S_16", "CKV_K8S_20", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_37", "CKV_K8S_40"),
                    "neuron-monitor runs as root and privileged to read the Neuron devices and sysfs, "
                    "as AWS's own neuron-monitor DaemonSet does",
                )
                | {
                    "CKV_K8S_22": "a privileged container is not contained by a read-only root, so none is "
                    "claimed: it runs privileged, as AWS's own neuron-monitor DaemonSet does, to read the Neuron "
                    "devices and sysfs",
                }
            )
            # The provider waits for a pod on every Neuron node that exists: its image and its start.
            | await_service(),
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": {**labels, **MANAGED_BY}},
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": {ACCELERATOR_LABEL: "neuron"},
                    "tolerations": [_gpu_toleration("neuron")],
                    "containers": [_neuron_monitor_container(img)],
                },
            },
        },
    }


def _neuron_monitor_container(img: Image) -> dict[str, Any]:
    """The privileged neuron-monitor container serving /metrics on NEURON_MONITOR_PORT."""
    probe = {"httpGet": {"path": "/metrics", "port": NEURON_MONITOR_PORT}, "periodSeconds": 30, "timeoutSeconds": 10}
    return {
        "name": "neuron-monitor",
        "image": img.ref,
        "command": ["/opt/bin/entrypoint.sh"],
        "args": [
            "--port",
            str(NEURON_MONITOR_PORT),
            "--neuron-monitor-config",
            "/opt/aws/neuron/bin/neuron-monitor.conf",
        ],
        "env": [{"name": "GOMEMLIMIT", "value": "160MiB"}],
        "ports": [{"name": "metrics", "containerPort": NEURON_MONITOR_PORT}],
        "resources": {
            "requests": EXPORTER_REQUESTS["neuron"],
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "securityContext": {"privileged": True},
        "readinessProbe": probe,
        "livenessProbe": {**probe, "failureThreshold": 5},
    }


def _neuron_monitor_pod_monitor(namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": _meta("neuron-monitor", namespace),
        "spec": {
            "selector": {"matchLabels": labels},
            "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s"}],
        },
    }


def _neuron_monitor_network_policy(namespace: str, labels: dict[str, str], scraper: Pods) -> dict[str, Any]:
    """Scraped by Prometheus's pods, on its port; calls nothing."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("neuron-monitor", namespace),
        "spec": {
            "podSelector": {"matchLabels": labels},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [peers.rule([scraper], (NEURON_MONITOR_PORT,), namespace)],
            "egress": [],
        },
    }


def pod_monitor(served: Endpoint) -> dict[str, Any] | None:
    """Scrape the model's pods on the engine's own metrics port and path (vLLM/SGLang/TGI `/metrics`,
    NIM `/v1/metrics`, Dynamo frontend `/metrics`, Ray `/metrics` on 8080); none for Ollama."""
    if not served.metrics_path or not served.metrics_port:
        return None
    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": _meta(served.name, served.namespace, **{MODEL_LABEL: served.name}),
        "spec": {
            "selector": {"matchLabels": served.metrics_selector},
            # The revision tells a canary's series from the stable revision's (dashboards compare them).
            "podTargetLabels": [MODEL_LABEL, REVISION_LABEL],
            "podMetricsEndpoints": [
                {"portNumber": served.metrics_port, "path": served.metrics_path, "interval": "15s"}
            ],
        },
    }


def picker_pod_monitor(served: Endpoint) -> dict[str, Any] | None:
    """The model's endpoint picker's own metrics (`/metrics` on its `metrics` port, 9090), labelled
    with the model it picks for: its pods carry only the chart's labels, none of the model's."""
    if served.routing is None or not served.routing.picker:
        return None
    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": _meta(f"{served.name}-picker", served.namespace, **{MODEL_LABEL: served.name}),
        "spec": {
            "selector": {"matchLabels": picker.pod_labels(served)},
            "podMetricsEndpoints": [
                {
                    "port": "metrics",
                    "path": "/metrics",
                    "interval": "15s",
                    "relabelings": [
                        {"action": "replace", "targetLabel": MODEL_TARGET_LABEL, "replacement": served.name}
                    ],
                }
            ],
        },
    }


def litellm_pod_monitor(addon: LiteLLM) -> dict[str, Any]:
    """The LiteLLM proxy's `/metrics` (its Prometheus callback, open source since
    BerriAI/litellm#16689, Nov 2025; the router config turns it on with monitoring). Since 1.85
    the endpoint wants a LiteLLM key by default, and that stays on: Prometheus sends the master key
    from the proxy's own Secret (the monitor lives next to it, in the proxy's namespace) as a Bearer
    token."""
    from ..serving import litellm

    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": _meta(litellm.NAME, LITELLM_NAMESPACE),
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": litellm.NAME}},
            "podMetricsEndpoints": [
                {
                    "port": "http",
                    "path": litellm.METRICS_PATH,
                    "interval": "30s",
                    "authorization": {
                        "type": "Bearer",
                        "credentials": {
                            "name": addon.master_key_secret,
                            "key": litellm.MASTER_KEY_KEY,
                        },
                    },
                }
            ],
        },
    }


def model_filter(served: Endpoint) -> str:
    return f'namespace="{served.namespace}",{MODEL_TARGET_LABEL}="{served.name}"'


def _quantile(m: Metric, p: float, selector: str) -> str:
    return f"histogram_quantile({p}, sum by (le) (rate({m.name}_bucket{{{selector}}}[5m])))"


def slo_rules(model: ModelSection, served: ResolvedModel) -> list[dict[str, Any]]:
    """One alert per objective the stack states, on the engine's own metric; a threshold given in
    seconds is converted explicitly into the metric's unit (Ray Serve's latency is in ms)."""
    slo = model.slo
    if slo is None:
        return []
    selector = model_filter(served)
    rules: list[dict[str, Any]] = []
    for signal, target, label in (
        ("ttft", slo.ttft_seconds, "TimeToFirstToken"),
        ("itl", slo.itl_seconds, "InterTokenLatency"),
        ("e2e", slo.e2e_seconds, "EndToEndLatency"),
    ):
        m = served.facts.metric(signal)
        if target is None or m is None:
            continue
        threshold = target * seconds_in(m.unit)
        rules.append(
            {
                "alert": f"{label}SloMissed",
                "expr": f"{_quantile(m, slo.p, selector)} > {threshold:g}",
                "for": slo.for_,
                "labels": {"severity": "warning", "model": served.name},
                "annotations": {
                    "summary": f"{served.name}: p{slo.p * 100:g} {signal} above {target:g}s",
                    "description": f"{m.name} ({m.unit}) p{slo.p * 100:g} over 5m exceeds {threshold:g} {m.unit}.",
                },
            }
        )
    queue = served.facts.metric("queue")
    if slo.max_queue_depth is not None and queue is not None:
        rules.append(
            {
                "alert": "QueueDepthSloMissed",
                "expr": f"sum({queue.series(selector)}) > {slo.max_queue_depth}",
                "for": slo.for_,
                "labels": {"severity": "warning", "model": served.name},
                "annotations": {
                    "summary": f"{served.name}: more than {slo.max_queue_depth} requests waiting",
                    "description": f"{queue.name} summed over the model's pods.",
                },
            }
        )
    return rules


# Flow-control outcomes worth an operator's look: (alert, outcome, severity, what the client saw, the fix).
_SHED = (
    (
        "FlowControlQueueFull",
        "RejectedCapacity",
        "warning",
        "429: the picker's queue was full",
        "raise routing.flowControl.maxRequests or maxQueuedMiB, or add replicas",
    ),
    (
        "FlowControlQueueTimeout",
        "EvictedTTL",
        "warning",
        "429 after waiting routing.flowControl.queueTimeoutSeconds in the queue",
        "add replicas, or lengthen the timeout",
    ),
    (
        "FlowControlNoEndpoints",
        "RejectedNoEndpoints",
        "critical",
        "503: the model had no pod to send to",
        "check the model's pods and its scaling",
    ),
)


def _shed_rate(outcomes: Metric, selector: str, outcome: str) -> str:
    matchers = f'{selector},outcome="{outcome}"'
    return f"sum(rate({outcomes.series(matchers)}[5m])) > 0"


def flow_control_rules(served: Endpoint) -> list[dict[str, Any]]:
    """Alerts on the picker's flow control (its own metrics, scraped by the picker's PodMonitor with the
    model's label): requests shed because the queue was full, because they waited too long, or because no
    pod exists, and pods whose stale metrics make the picker hold every request (it reads them as
    saturated, fail-closed). None without flow control."""
    if served.routing is None or served.routing.flow_control is None:
        return []
    m, selector = FLOW_CONTROL_METRICS, model_filter(served)
    rules = [
        {
            "alert": alert,
            "expr": _shed_rate(m["outcomes"], selector, outcome),
            "for": "10m" if severity == "warning" else "5m",
            "labels": {"severity": severity, "model": served.name},
            "annotations": {
                "summary": f"{served.name}: the endpoint picker is shedding requests ({outcome})",
                "description": f"Clients get {seen}; {fix}.",
            },
        }
        for alert, outcome, severity, seen, fix in _SHED
    ]
    rules.append(
        {
            "alert": "FlowControlStaleEndpoints",
            "expr": f"max({m['stale_endpoints'].series(selector)}) > 0",
            "for": "5m",
            "labels": {"severity": "warning", "model": served.name},
            "annotations": {
                "summary": f"{served.name}: the endpoint picker cannot read some pods' metrics",
                "description": "Pods with missing or stale metrics count as saturated, so requests queue behind "
                "them; check the engine's metrics path and port and the picker's network policy.",
            },
        }
    )
    return rules


def flow_control_prometheus_rule(served: Endpoint) -> dict[str, Any] | None:
    return rule_group(served, "fairness", flow_control_rules(served))


def rule_group(served: Endpoint, suffix: str, rules: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A model's PrometheusRule `<model>-<suffix>` in its namespace, one group `<model>.<suffix>`; None
    without rules."""
    if not rules:
        return None
    return {
        "apiVersion": MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": _meta(f"{served.name}-{suffix}", served.namespace, **{MODEL_LABEL: served.name}),
        "spec": {"groups": [{"name": f"{served.name}.{suffix}", "rules": rules}]},
    }


def prometheus_rule(model: ModelSection, served: ResolvedModel) -> dict[str, Any] | None:
    return rule_group(served, "slo", slo_rules(model, served))
