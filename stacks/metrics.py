"""The metric catalog: each Prometheus metric the platform queries, with its type and unit, written
once. An engine's own series are in its module (components/engines/<engine>.py `METRICS`, its
`EngineFacts.metrics`, by signal); this module holds the metric type and the series of everything else
the dashboards and alert rules read.

Sources (names and units as each project's own code/docs spell them at the pinned versions):
- The llm-d router's endpoint picker v0.10.0 (`docs/metrics.md`, prefix `llm_d_epp_`, on its own
  port 9090): request counts, errored requests (label `error_code`), the scheduler's end-to-end
  latency in seconds, ready endpoints; with flow control, its outcomes, queue size, queue wait and
  stale endpoints (section "Flow control").
- DCGM exporter: `DCGM_FI_DEV_GPU_UTIL` is a percentage 0-100; neuron-monitor's
  `neuroncore_utilization_ratio` is a 0-1 fraction.
- kube-state-metrics v2.18.0 (the kube-state-metrics 7.1.0 chart kube-prometheus-stack 81.6.2 pins):
  `docs/metrics/workload/{horizontalpodautoscaler,deployment,job}-metrics.md` and
  `internal/store/{horizontalpodautoscaler,job}.go`. Each metric's own labels are listed with it
  (`labels`); the chart's ServiceMonitor keeps them (`honorLabels: true`), so `namespace` is the
  object's namespace, not kube-state-metrics'. Condition gauges are 0/1, one series per status
  (`true|false|unknown`, lower case).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["histogram", "gauge", "counter"]
# Units as the metric carries them. A rate() of a counter or of a histogram's _sum is "<unit>/s".
Unit = Literal[
    "s",
    "ms",
    "ratio",
    "percent",
    "tokens",
    "tokens/s",
    "requests",
    "endpoints",
    "MiB",
    "replicas",
    "bool",
    "code",
    "errors",
    "devices",
    "USD/h",
    "USD",
]

# The signals a serving dashboard and an SLO talk about.
# `prompt_tokens` is the prefill side of `tokens` (the cost rules count both).
Signal = Literal[
    "ttft", "itl", "e2e", "tokens", "prompt_tokens", "queue", "running", "kv_cache", "requests", "offload_hits"
]


@dataclass(frozen=True)
class Metric:
    name: str
    kind: Kind
    unit: Unit
    help: str
    # Label matchers that are part of the signal (Dynamo's queue is some stages of one gauge).
    matchers: str = ""
    # The labels the exporter itself puts on the series (kube-state-metrics' tables); empty for the
    # engines, whose series a query selects by the labels the PodMonitor adds.
    labels: tuple[str, ...] = ()
    # A label of the series a panel keeps apart (SGLang's offload hits by tier, `mode`); empty: none.
    split: str = ""

    def series(self, selector: str = "") -> str:
        """The instant-vector selector of this metric, narrowed by `selector` (PromQL label matchers)."""
        inner = ",".join(part for part in (selector, self.matchers) if part)
        return f"{self.name}{{{inner}}}" if inner else self.name


# The endpoint picker's own metrics (models[].routing), by signal.
PICKER_METRICS: dict[str, Metric] = {
    "requests": Metric("llm_d_epp_request_total", "counter", "requests", "requests the picker handled"),
    "errors": Metric("llm_d_epp_request_error_total", "counter", "requests", "requests it errored"),
    "scheduling": Metric("llm_d_epp_scheduler_e2e_duration_seconds", "histogram", "s", "time to pick an endpoint"),
    "ready": Metric("llm_d_epp_ready_endpoints", "gauge", "endpoints", "ready endpoints it picks from"),
}

# The endpoint picker's flow control (models[].routing.flowControl; exposed only with the gate on), by
# signal: llm-d-router v0.10.0 docs/metrics.md "Flow control". `outcome` is Dispatched, RejectedCapacity
# (queue full: 429), RejectedNoEndpoints (no pod: 503), RejectedOther, EvictedTTL (waited past the
# timeout: 429, 503 with no pod), EvictedContextCancelled, EvictedOther.
FLOW_CONTROL_METRICS: dict[str, Metric] = {
    "outcomes": Metric(
        "llm_d_epp_flow_control_requests_total",
        "counter",
        "requests",
        "requests by their flow-control outcome",
        labels=("outcome", "priority", "inference_pool"),
    ),
    "queued": Metric(
        "llm_d_epp_flow_control_queue_size",
        "gauge",
        "requests",
        "requests held in the queue",
        labels=("fairness_id", "priority", "inference_pool", "model_name", "target_model_name"),
    ),
    "queue_wait": Metric(
        "llm_d_epp_flow_control_request_queue_duration_seconds",
        "histogram",
        "s",
        "time from enqueue to outcome",
        labels=("fairness_id", "priority", "outcome", "inference_pool", "model_name", "target_model_name"),
    ),
    "stale_endpoints": Metric(
        "llm_d_epp_flow_control_stale_endpoints",
        "gauge",
        "endpoints",
        "pods whose metrics are missing or stale, read as saturated",
        labels=("detector",),
    ),
}

# Accelerator exporters, by accelerator.
NODE_METRICS: dict[str, dict[str, Metric]] = {
    "nvidia": {
        "utilization": Metric("DCGM_FI_DEV_GPU_UTIL", "gauge", "percent", "GPU utilization (0-100)"),
        "memory_used": Metric("DCGM_FI_DEV_FB_USED", "gauge", "MiB", "GPU framebuffer memory used"),
    },
    "neuron": {
        "utilization": Metric("neuroncore_utilization_ratio", "gauge", "ratio", "NeuronCore utilization (0-1)"),
    },
}

# Accelerator health, by signal (the node-health alerts, components/monitoring/health.py). DCGM
# exporter 4.8.2's default counters (the chart's exporter-metrics-config-map): the last XID a GPU raised
# (a gauge holding the XID code), rows remapped for uncorrectable (double-bit) ECC errors, and whether
# remapping has failed; its ECC, retired-page and NVLink error counters are commented out there, so
# the row-remap fields stand for double-bit ECC and no NVLink error alert is possible on the defaults.
# Every series carries `Hostname` (the node name: the chart's NODE_NAME, dcgm-exporter
# internal/pkg/hostname) and `gpu`. neuron-monitor's Prometheus exporter (aws-neuron-sdk
# neuron-monitor-prometheus.py): ECC events per device (`event_type` mem_ecc_corrected,
# mem_ecc_uncorrected, sram_ecc_corrected, sram_ecc_uncorrected; `neuron_device_index`) and execution
# errors by `error_type` (generic, numerical, transient, model, runtime, hardware), both counters with
# the EC2 instance labels (`instance_id`).
HEALTH_METRICS: dict[str, Metric] = {
    "xid": Metric(
        "DCGM_FI_DEV_XID_ERRORS", "gauge", "code", "the last XID error a GPU raised", labels=("Hostname", "gpu")
    ),
    "remapped_uncorrectable": Metric(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "errors",
        "rows remapped for uncorrectable (double-bit) ECC errors",
        labels=("Hostname", "gpu"),
    ),
    "remap_failure": Metric(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "bool", "row remapping has failed", labels=("Hostname", "gpu")
    ),
    "gpu_present": Metric(
        "DCGM_FI_DEV_GPU_UTIL",
        "gauge",
        "percent",
        "a GPU the exporter reads (its utilization)",
        labels=("Hostname", "gpu"),
    ),
    "neuron_ecc": Metric(
        "hardware_ecc_events_total",
        "counter",
        "errors",
        "Neuron device ECC events",
        labels=("instance_id", "event_type", "neuron_device_index"),
    ),
    "neuron_errors": Metric(
        "execution_errors_total",
        "counter",
        "errors",
        "Neuron runtime execution errors",
        labels=("instance_id", "error_type"),
    ),
}

_HPA = ("namespace", "horizontalpodautoscaler")
_DEPLOYMENT = ("namespace", "deployment")
_JOB = ("namespace", "job_name")

# kube-state-metrics, by signal: the replicas an autoscaler sees and wants, its bounds, whether it can
# read its metric (the HPA's ScalingActive condition), a Deployment's replicas, and a Job's outcome.
KUBE_METRICS: dict[str, Metric] = {
    "hpa_current": Metric(
        "kube_horizontalpodautoscaler_status_current_replicas",
        "gauge",
        "replicas",
        "replicas the HPA sees",
        labels=_HPA,
    ),
    "hpa_desired": Metric(
        "kube_horizontalpodautoscaler_status_desired_replicas",
        "gauge",
        "replicas",
        "replicas the HPA wants",
        labels=_HPA,
    ),
    "hpa_max": Metric(
        "kube_horizontalpodautoscaler_spec_max_replicas", "gauge", "replicas", "the HPA's ceiling", labels=_HPA
    ),
    "hpa_min": Metric(
        "kube_horizontalpodautoscaler_spec_min_replicas", "gauge", "replicas", "the HPA's floor", labels=_HPA
    ),
    "hpa_condition": Metric(
        "kube_horizontalpodautoscaler_status_condition",
        "gauge",
        "bool",
        "an HPA condition (1 for the status it has)",
        labels=(*_HPA, "condition", "status"),
    ),
    "deployment_spec": Metric(
        "kube_deployment_spec_replicas", "gauge", "replicas", "replicas a Deployment asks for", labels=_DEPLOYMENT
    ),
    "deployment_available": Metric(
        "kube_deployment_status_replicas_available", "gauge", "replicas", "available replicas", labels=_DEPLOYMENT
    ),
    "job_complete": Metric(
        "kube_job_complete", "gauge", "bool", "the Job's Complete condition", labels=(*_JOB, "condition")
    ),
    "job_failed": Metric("kube_job_failed", "gauge", "bool", "the Job's Failed condition", labels=(*_JOB, "condition")),
    "job_active": Metric("kube_job_status_active", "gauge", "replicas", "the Job's running pods", labels=_JOB),
    # A scheduled benchmark's runs: the Jobs its CronJob owns, and when each was created (the newest is
    # the current run).
    "job_owner": Metric(
        "kube_job_owner",
        "gauge",
        "bool",
        "the Job's owner (1 per owner reference)",
        labels=(*_JOB, "owner_kind", "owner_name", "owner_is_controller"),
    ),
    "job_created": Metric("kube_job_created", "gauge", "s", "the Job's creation time (Unix seconds)", labels=_JOB),
    # A node's extended resources (`resource` sanitised: nvidia.com/gpu is nvidia_com_gpu): the device
    # plugin registers every device in capacity and only the healthy ones in allocatable.
    "node_capacity": Metric(
        "kube_node_status_capacity", "gauge", "devices", "a node's capacity", labels=("node", "resource", "unit")
    ),
    # What the cost rules read (internal/store/{pod,node,namespace}.go): a container's requests and a
    # node's allocatable, one series per resource (extended resources sanitised: `nvidia_com_gpu`,
    # `aws_amazon_com_neuron`), and the `*_labels` info series, which carry only the labels the chart's
    # `metricLabelsAllowlist` names, as `label_<sanitised key>`.
    "pod_requests": Metric(
        "kube_pod_container_resource_requests",
        "gauge",
        "replicas",
        "a container's request of one resource (cores, bytes or devices)",
        labels=("namespace", "pod", "container", "node", "resource", "unit"),
    ),
    "node_allocatable": Metric(
        "kube_node_status_allocatable",
        "gauge",
        "replicas",
        "a node's allocatable amount of one resource",
        labels=("node", "resource", "unit"),
    ),
    "node_labels": Metric("kube_node_labels", "gauge", "bool", "a node's allowed labels (1)", labels=("node",)),
    "namespace_labels": Metric(
        "kube_namespace_labels", "gauge", "bool", "a namespace's allowed labels (1)", labels=("namespace",)
    ),
    "pod_labels": Metric("kube_pod_labels", "gauge", "bool", "a pod's allowed labels (1)", labels=("namespace", "pod")),
}

# Grafana unit ids: the metric's unit shown as-is (seconds as seconds), never relabelled.
GRAFANA_UNITS: dict[str, str] = {
    "s": "s",
    "ms": "ms",
    "ratio": "percentunit",
    "percent": "percent",
    "MiB": "decmbytes",
    "tokens/s": "suffix: tokens/s",
    "USD/h": "currencyUSD",
    "USD": "currencyUSD",
    "requests/s": "reqps",
    "requests": "short",
    "endpoints": "short",
    "replicas": "short",
    "bool": "bool",
    "code": "none",
    "errors": "short",
    "devices": "short",
}


def custom_metric(name: str) -> str:
    """The name custom.metrics.k8s.io serves a series under (prometheus-adapter renames it; an API
    resource name cannot contain ':'): `vllm:num_requests_waiting` -> `vllm_num_requests_waiting`.
    The HPA asks for this name and the adapter's rule produces it, both from here."""
    return name.replace(":", "_")


def seconds_in(unit: str) -> float:
    """How many of `unit` make one second: thresholds in seconds are converted explicitly."""
    return {"s": 1.0, "ms": 1000.0}[unit]


# The series the platform's own recording rules make (components/monitoring/cost.py), by name: tokens
# per second and cost per team, namespace and model. The team and platform cost dashboards query only
# these. Tokens are summed over prompt and generation; cost is in US dollars.
COST_METRICS: dict[str, Metric] = {
    "prompt_tokens": Metric("inference:tokens_prompt:rate5m", "gauge", "tokens/s", "prompt tokens per second"),
    "generation_tokens": Metric(
        "inference:tokens_generation:rate5m", "gauge", "tokens/s", "generated tokens per second"
    ),
    "tokens": Metric("inference:tokens:rate5m", "gauge", "tokens/s", "prompt and generated tokens per second"),
    "price": Metric("inference:instance_price:usd_per_hour", "gauge", "USD/h", "an instance type's hourly price"),
    "node_cost": Metric("inference:node_cost:usd_per_hour", "gauge", "USD/h", "a priced node's hourly cost"),
    "pod_share": Metric("inference:pod_node_share:ratio", "gauge", "ratio", "a pod's share of its node"),
    "pod_cost": Metric("inference:pod_cost:usd_per_hour", "gauge", "USD/h", "a pod's share of its node's cost"),
    "model_cost": Metric("inference:model_cost:usd_per_hour", "gauge", "USD/h", "a model's hourly cost"),
    "team_cost": Metric("inference:team_cost:usd_per_hour", "gauge", "USD/h", "a team's hourly cost"),
    "model_cost_per_mtok": Metric(
        "inference:model_cost:usd_per_million_tokens", "gauge", "USD", "a model's cost per million tokens"
    ),
    "team_cost_per_mtok": Metric(
        "inference:team_cost:usd_per_million_tokens", "gauge", "USD", "a team's cost per million tokens"
    ),
    "team": Metric("inference:namespace_team:info", "gauge", "bool", "a namespace's team (1)"),
}
