"""AIBrix per-model objects: LoRA ModelAdapters and a PodAutoscaler (model.aibrix.ai and
autoscaling.aibrix.ai, v1alpha1, AIBrix 0.7.0).

- A ModelAdapter per `models[].adapters` entry, selecting the model's pods by the
  `model.aibrix.ai/name` label and `adapter.model.aibrix.ai/enabled: "true"` (what the gateway
  routes by and what the adapter controller schedules onto). `replicas` is omitted (load on every
  matching pod) or 1; the config refuses anything else, as the AIBrix webhook does. artifactURL
  schemes are the webhook's: s3://, gcs://, tos://, huggingface://, hf:// or an absolute path.
- When `autoscaling.owner: aibrix`, one PodAutoscaler with the chosen strategy (HPA, KPA or APA)
  and exactly one metrics source (the webhook's rule): the engine's Prometheus endpoint scraped
  per pod. It targets the model's workload (`Endpoint.scale_target`) and is its only scaler.
"""

from __future__ import annotations

from typing import Any

from stacks.resolved import Endpoint, ResolvedModel

MODEL_LABEL = "model.aibrix.ai/name"
PORT_LABEL = "model.aibrix.ai/port"
ADAPTER_ENABLED_LABEL = "adapter.model.aibrix.ai/enabled"


def pod_labels(served: Endpoint, adapters: bool) -> dict[str, str]:
    """Labels a model's pods carry so the AIBrix gateway and adapter controller find them."""
    labels = {MODEL_LABEL: served.served_model_name, PORT_LABEL: str(served.port)}
    if adapters:
        labels[ADAPTER_ENABLED_LABEL] = "true"
    return labels


def lora_runtime() -> tuple[list[str], list[dict[str, str]]]:
    """What a vLLM server needs so the AIBrix adapter controller can load and unload LoRA adapters
    at runtime: `--enable-lora` and vLLM's runtime-LoRA-updating switch. For the vLLM engine
    module, on models with adapters."""
    return ["--enable-lora"], [{"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"}]


def model_adapters(served: ResolvedModel, labels: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for adapter in served.config.adapters:
        spec: dict[str, Any] = {
            "baseModel": served.served_model_name,
            "podSelector": {"matchLabels": {MODEL_LABEL: served.served_model_name, ADAPTER_ENABLED_LABEL: "true"}},
            "artifactURL": adapter.artifact_url,
        }
        if adapter.replicas is not None:
            spec["replicas"] = adapter.replicas
        out.append(
            {
                "apiVersion": "model.aibrix.ai/v1alpha1",
                "kind": "ModelAdapter",
                "metadata": {
                    "name": adapter.name,
                    "namespace": served.namespace,
                    "labels": {**labels, MODEL_LABEL: adapter.name, PORT_LABEL: str(served.port)},
                },
                "spec": spec,
            }
        )
    return out


def pod_autoscaler(served: ResolvedModel, labels: dict[str, str]) -> dict[str, Any]:
    model = served.config
    scaling = model.autoscaling
    api_version, kind, name = served.scale_target
    metrics_port = served.metrics_port or served.port
    return {
        "apiVersion": "autoscaling.aibrix.ai/v1alpha1",
        "kind": "PodAutoscaler",
        "metadata": {
            "name": f"{served.name}-{scaling.strategy.lower()}",
            "namespace": served.namespace,
            "labels": labels,
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
            "minReplicas": scaling.min_replicas,
            "maxReplicas": scaling.max_replicas,
            "scalingStrategy": scaling.strategy,
            "metricsSources": [
                {
                    "metricSourceType": "pod",
                    "protocolType": "http",
                    "port": str(metrics_port),
                    "path": (served.metrics_path or "/metrics").lstrip("/"),
                    "targetMetric": served.facts.scaling_metric(scaling.metric),
                    "targetValue": scaling.target_value,
                }
            ],
        },
    }


def model_objects(served: ResolvedModel, labels: dict[str, str]) -> list[dict[str, Any]]:
    objects = model_adapters(served, labels)
    if served.scaler == "aibrix":
        objects.append(pod_autoscaler(served, labels))
    return objects
