"""AIBrix per-model objects: LoRA ModelAdapters and a PodAutoscaler (model.aibrix.ai and
autoscaling.aibrix.ai, v1alpha1, AIBrix 0.7.0).

- A ModelAdapter per `models[].adapters` entry, selecting the model's pods by the
  `model.aibrix.ai/name` label and `adapter.model.aibrix.ai/enabled: "true"` (what the gateway
  routes by and what the adapter controller schedules onto). `replicas` is omitted (load on every
  matching pod) or 1; the config refuses anything else, as the AIBrix webhook does. artifactURL
  schemes are the webhook's: s3://, gcs://, tos://, huggingface://, hf:// or an absolute path.
- Beside the engine of a model with adapters, AIBrix's runtime sidecar (`runtime_sidecar`). At 0.7.0
  the adapter controller (started with `--enable-runtime-sidecar` by the chart) looks for a container
  named `aibrix-runtime` in the pod (pkg/controller/modeladapter/utils.go DetectRuntimeSidecar): with
  it, the controller posts `{lora_name, artifact_url}` to the sidecar on 8080 and the sidecar downloads
  the artifact (python/aibrix/aibrix/runtime/artifact_service.py, downloaders.py: boto3's default
  credential chain for s3://, so the pod's EKS Pod Identity) into /tmp/aibrix/adapters/<name> and asks
  vLLM on localhost to load that local path. Without it the controller posts the artifactURL itself
  to vLLM's /v1/load_lora_adapter as `lora_path`, and vLLM cannot read `s3://`. So the identity that
  reads an adapter's artifact is the model pod's service account (`model-reader`, read-only on its
  owner's bucket prefix), never the controller's; stacks/rules/serving.py keeps an `s3://` artifact
  inside that prefix of the platform's bucket.
- When `autoscaling.owner: aibrix`, one PodAutoscaler with the chosen strategy (HPA, KPA or APA)
  and exactly one metrics source (the webhook's rule): the engine's Prometheus endpoint scraped
  per pod. It targets the model's workload (`Endpoint.scale_target`) and is its only scaler.
"""

from __future__ import annotations

from typing import Any

from stacks.fit import AIBRIX_RUNTIME_REQUESTS
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


# AIBrix 0.7.0's runtime sidecar, as its own injection webhook builds it (pkg/webhook/sidecar_injection.go):
# the name the controller detects, the port it calls (DefaultRuntimeAPIPort), the directory the artifact
# service downloads into (ArtifactDelegationService local_dir), shared with the engine, which loads from it.
RUNTIME_CONTAINER = "aibrix-runtime"
RUNTIME_PORT = 8080
ADAPTER_VOLUME = "adapter-storage"
ADAPTER_DIR = "/tmp/aibrix/adapters"


def adapter_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    """The directory the sidecar downloads adapters into and the engine loads them from: (volume, mount)."""
    return {"name": ADAPTER_VOLUME, "emptyDir": {}}, {"name": ADAPTER_VOLUME, "mountPath": ADAPTER_DIR}


def runtime_sidecar(
    *, image: str, engine: str, engine_port: int, region: str | None, security: dict[str, Any]
) -> dict[str, Any]:
    """AIBrix's runtime beside the engine (`engine` in AIBrix's vocabulary, reached on localhost at
    `engine_port`): it downloads each ModelAdapter's artifact as the pod's service account and loads it.
    The stack's region goes to boto3 as AWS_DEFAULT_REGION, so its S3 client signs for the bucket's
    region instead of us-east-1's; it gets no credentials besides Pod Identity's."""
    env = [
        {"name": "INFERENCE_ENGINE", "value": engine},
        {"name": "INFERENCE_ENGINE_ENDPOINT", "value": f"http://localhost:{engine_port}"},
    ]
    if region:
        env.append({"name": "AWS_DEFAULT_REGION", "value": region})
    probe = {"httpGet": {"port": RUNTIME_PORT}}
    return {
        "name": RUNTIME_CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["aibrix_runtime", "--port", str(RUNTIME_PORT)],
        "env": env,
        "ports": [{"name": "aibrix-runtime", "containerPort": RUNTIME_PORT, "protocol": "TCP"}],
        "volumeMounts": [adapter_volume()[1]],
        # The webhook's own probes and resources for the sidecar.
        "livenessProbe": {**probe, "httpGet": {"path": "/healthz", "port": RUNTIME_PORT}, "periodSeconds": 2,
                          "initialDelaySeconds": 3},
        "readinessProbe": {**probe, "httpGet": {"path": "/ready", "port": RUNTIME_PORT}, "periodSeconds": 10,
                           "initialDelaySeconds": 5},
        "resources": {"requests": dict(AIBRIX_RUNTIME_REQUESTS), "limits": {"cpu": "500m", "memory": "512Mi"}},
        "securityContext": security,
    }  # fmt: skip


def model_adapters(served: ResolvedModel, labels: dict[str, str]) -> list[dict[str, Any]]:
    """One ModelAdapter per adapter of a model whose engine AIBrix loads adapters into (an engine that
    loads its own, Ray Serve, gets none: AIBrix would try to load them into pods it cannot reach)."""
    if served.adapter_loader != "aibrix":
        return []
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
