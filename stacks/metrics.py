"""The metric catalog: engine -> signal -> the Prometheus metric the engine really exports, with its
type and unit. Dashboards, alert rules, the SLO checks and the tests all read this one table, so a
name or a unit is written once.

Sources (names and units as each project's own code/docs spell them at the pinned versions):
- vLLM v1 engine (0.29; also the vLLM inside NIM 2.0.12, which passes native vLLM metrics through at
  `/v1/metrics`, and the NxD-backed vLLM on Neuron): `vllm/v1/metrics/loggers.py`. Latency histograms
  are in seconds; `vllm:kv_cache_usage_perc` is a 0-1 fraction despite its name; the older
  `vllm:time_per_output_token_seconds` was superseded by `vllm:inter_token_latency_seconds`.
- SGLang 0.5.19 `python/sglang/srt/observability/metrics_collector.py` (only with `--enable-metrics`):
  `sglang:token_usage` is a 0-1 fraction of the KV pool.
- TGI 3.x router: `tgi_request_duration`, `tgi_request_mean_time_per_token_duration` (seconds,
  no `_seconds` suffix), `tgi_queue_size`; TGI exports no time-to-first-token and no KV-cache metric.
- Dynamo frontend (`lib/runtime/src/metrics/prometheus_names.rs`): `dynamo_frontend_*`, seconds.
- Ray Serve: `ray_serve_http_request_latency_ms` is in MILLISECONDS.
- Ollama exports no Prometheus metrics at all.
- The llm-d router's endpoint picker v0.10.0 (`docs/metrics.md`, prefix `llm_d_epp_`, on its own
  port 9090): request counts, errored requests (label `error_code`), the scheduler's end-to-end
  latency in seconds, ready endpoints.
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
Unit = Literal["s", "ms", "ratio", "percent", "tokens", "requests", "endpoints", "MiB", "replicas", "bool"]

# The signals a serving dashboard and an SLO talk about.
Signal = Literal["ttft", "itl", "e2e", "tokens", "queue", "running", "kv_cache", "requests"]


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

    def series(self, selector: str = "") -> str:
        """The instant-vector selector of this metric, narrowed by `selector` (PromQL label matchers)."""
        inner = ",".join(part for part in (selector, self.matchers) if part)
        return f"{self.name}{{{inner}}}" if inner else self.name


def _vllm() -> dict[str, Metric]:
    return {
        "ttft": Metric("vllm:time_to_first_token_seconds", "histogram", "s", "time to first token"),
        "itl": Metric("vllm:inter_token_latency_seconds", "histogram", "s", "inter-token latency"),
        "e2e": Metric("vllm:e2e_request_latency_seconds", "histogram", "s", "end-to-end request latency"),
        "tokens": Metric("vllm:generation_tokens_total", "counter", "tokens", "generated tokens"),
        "queue": Metric("vllm:num_requests_waiting", "gauge", "requests", "requests waiting"),
        "running": Metric("vllm:num_requests_running", "gauge", "requests", "requests running"),
        "kv_cache": Metric("vllm:kv_cache_usage_perc", "gauge", "ratio", "KV-cache blocks in use (0-1)"),
    }


ENGINE_METRICS: dict[str, dict[str, Metric]] = {
    "vllm": _vllm(),
    "neuron-vllm": _vllm(),
    "nim": _vllm(),
    "sglang": {
        "ttft": Metric("sglang:time_to_first_token_seconds", "histogram", "s", "time to first token"),
        "itl": Metric("sglang:inter_token_latency_seconds", "histogram", "s", "inter-token latency"),
        "e2e": Metric("sglang:e2e_request_latency_seconds", "histogram", "s", "end-to-end request latency"),
        "tokens": Metric("sglang:generation_tokens_total", "counter", "tokens", "generated tokens"),
        "queue": Metric("sglang:num_queue_reqs", "gauge", "requests", "requests in the waiting queue"),
        "running": Metric("sglang:num_running_reqs", "gauge", "requests", "requests running"),
        "kv_cache": Metric("sglang:token_usage", "gauge", "ratio", "KV pool token usage (0-1)"),
    },
    "tgi": {
        "itl": Metric("tgi_request_mean_time_per_token_duration", "histogram", "s", "mean time per generated token"),
        "e2e": Metric("tgi_request_duration", "histogram", "s", "end-to-end request duration"),
        "tokens": Metric("tgi_request_generated_tokens", "histogram", "tokens", "generated tokens per request"),
        "queue": Metric("tgi_queue_size", "gauge", "requests", "requests in the queue"),
        "running": Metric("tgi_batch_current_size", "gauge", "requests", "current batch size"),
    },
    "dynamo": {
        "ttft": Metric("dynamo_frontend_time_to_first_token_seconds", "histogram", "s", "time to first token"),
        "itl": Metric("dynamo_frontend_inter_token_latency_seconds", "histogram", "s", "inter-token latency"),
        "e2e": Metric("dynamo_frontend_request_duration_seconds", "histogram", "s", "request duration"),
        "tokens": Metric("dynamo_frontend_output_sequence_tokens", "histogram", "tokens", "output tokens per request"),
        # 1.4 deprecates dynamo_frontend_queued_requests and _inflight_requests: the queue is the requests in
        # the stages before a worker takes them (docs/autoscaling.md, lib/runtime/src/metrics/prometheus_names.rs).
        "queue": Metric(
            "dynamo_frontend_stage_requests",
            "gauge",
            "requests",
            "requests not yet at a worker",
            matchers='stage=~"preprocess|route|dispatch"',
        ),
        "running": Metric("dynamo_frontend_active_requests", "gauge", "requests", "requests in flight"),
    },
    "ray-serve": {
        "e2e": Metric("ray_serve_http_request_latency_ms", "histogram", "ms", "HTTP request latency at the proxy"),
        "requests": Metric("ray_serve_num_http_requests_total", "counter", "requests", "HTTP requests"),
        "queue": Metric("ray_serve_deployment_queued_queries", "gauge", "requests", "queries waiting"),
    },
    "ollama": {},  # no Prometheus endpoint
}

# The endpoint picker's own metrics (models[].routing), by signal.
PICKER_METRICS: dict[str, Metric] = {
    "requests": Metric("llm_d_epp_request_total", "counter", "requests", "requests the picker handled"),
    "errors": Metric("llm_d_epp_request_error_total", "counter", "requests", "requests it errored"),
    "scheduling": Metric("llm_d_epp_scheduler_e2e_duration_seconds", "histogram", "s", "time to pick an endpoint"),
    "ready": Metric("llm_d_epp_ready_endpoints", "gauge", "endpoints", "ready endpoints it picks from"),
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
}

# Grafana unit ids: the metric's unit shown as-is (seconds as seconds), never relabelled.
GRAFANA_UNITS: dict[str, str] = {
    "s": "s",
    "ms": "ms",
    "ratio": "percentunit",
    "percent": "percent",
    "MiB": "decmbytes",
    "tokens/s": "suffix: tokens/s",
    "requests/s": "reqps",
    "requests": "short",
    "endpoints": "short",
    "replicas": "short",
    "bool": "bool",
}


def metric(engine: str, signal: str) -> Metric | None:
    return ENGINE_METRICS.get(engine, {}).get(signal)


def scaling_metrics(engine: str) -> list[Metric]:
    """The metrics a HorizontalPodAutoscaler may scale an engine's pods on: its gauges (a per-pod
    value averaged over pods). Counters and histograms would need a rate() the HPA cannot ask for."""
    return [m for m in ENGINE_METRICS.get(engine, {}).values() if m.kind == "gauge"]


def scaling_metric(engine: str, chosen: str | None) -> str | None:
    """The metric a model's autoscaler reads: `autoscaling.metric`, else the engine's queue depth."""
    if chosen:
        return chosen
    queue = metric(engine, "queue")
    return queue.name if queue else None


def scaling_series(engine: str, chosen: str | None) -> Metric | None:
    """The gauge a KEDA trigger sums (`scaling_metric`'s choice, with the label matchers that are part
    of the signal): `autoscaling.metric` when it is one of the engine's gauges, else the queue."""
    name = scaling_metric(engine, chosen)
    return next((m for m in scaling_metrics(engine) if m.name == name), None)


def custom_metric(name: str) -> str:
    """The name custom.metrics.k8s.io serves a series under (prometheus-adapter renames it; an API
    resource name cannot contain ':'): `vllm:num_requests_waiting` -> `vllm_num_requests_waiting`.
    The HPA asks for this name and the adapter's rule produces it, both from here."""
    return name.replace(":", "_")


def seconds_in(unit: str) -> float:
    """How many of `unit` make one second: thresholds in seconds are converted explicitly."""
    return {"s": 1.0, "ms": 1000.0}[unit]
