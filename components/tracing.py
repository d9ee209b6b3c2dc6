"""The trace collector: an OpenTelemetry Collector in namespace `tracing` that receives OTLP (gRPC 4317,
HTTP 4318) from the gateway's proxies, the endpoint pickers and the engines, batches, and exports every
span to `addons.tracing.endpoint`.

It runs from the platform's own manifests, built here by pure functions, rather than from the
opentelemetry-collector chart: that chart is not among the charts kept for offline rendering, and these
few objects are checked against the Kubernetes schemas like every other. Sampling happens at the head
(the gateway, then parent-based at every hop), so the collector forwards what it receives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from stacks.config.addons import TracingAddon
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL, TOKEN
from stacks.resolved import COLLECTOR_NAME, OTLP_GRPC_PORT, OTLP_HTTP_PORT, TRACING_NAMESPACE
from stacks.versions import Image

from .k8s import register

__all__ = ["Collector", "CollectorArgs", "collector_config", "collector_objects"]

CONFIG_FILE = "/etc/otelcol-contrib/config.yaml"  # the contrib image's default --config path
HEALTH_PORT = 13133  # the health_check extension's default
LABELS = {"app.kubernetes.io/name": COLLECTOR_NAME, **MANAGED_BY}
SELECTOR = {"app.kubernetes.io/name": COLLECTOR_NAME}


def collector_config(addon: TracingAddon) -> dict[str, Any]:
    """The collector's pipeline: OTLP in on both protocols, a memory limit and batching, and out to the
    backend with `otlp` (gRPC) or `otlphttp`."""
    assert addon.endpoint is not None, "the config model requires an endpoint when tracing is on"
    exporter = "otlp" if addon.protocol == "grpc" else "otlphttp"
    return {
        "extensions": {"health_check": {"endpoint": f"0.0.0.0:{HEALTH_PORT}"}},
        "receivers": {
            "otlp": {
                "protocols": {
                    "grpc": {"endpoint": f"0.0.0.0:{OTLP_GRPC_PORT}"},
                    "http": {"endpoint": f"0.0.0.0:{OTLP_HTTP_PORT}"},
                }
            }
        },
        "processors": {
            # Refuses data before the container's memory limit kills it (limit below the 512Mi limit).
            "memory_limiter": {"check_interval": "1s", "limit_mib": 400, "spike_limit_mib": 100},
            "batch": {},
        },
        "exporters": {exporter: {"endpoint": addon.endpoint}},
        "service": {
            "extensions": ["health_check"],
            "pipelines": {
                "traces": {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"], "exporters": [exporter]}
            },
        },
    }


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": TRACING_NAMESPACE, "labels": dict(LABELS)}


def _deployment(image: Image, replicas: int) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/", "port": HEALTH_PORT}}
    container = {
        "name": "collector",
        "image": image.ref,
        "args": [f"--config={CONFIG_FILE}"],
        "ports": [
            {"name": "otlp-grpc", "containerPort": OTLP_GRPC_PORT},
            {"name": "otlp-http", "containerPort": OTLP_HTTP_PORT},
        ],
        "readinessProbe": probe,
        "livenessProbe": probe,
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "config", "mountPath": "/etc/otelcol-contrib", "readOnly": True}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(COLLECTOR_NAME),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(SELECTOR)},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "nodeSelector": dict(SYSTEM_NODE_LABEL),
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": COLLECTOR_NAME}}],
                },
            },
        },
    }


def collector_objects(addon: TracingAddon, image: Image, *, prod: bool) -> list[dict[str, Any]]:
    """The namespace, the collector's config, Deployment and Service (two replicas in prod)."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(COLLECTOR_NAME),
        "spec": {
            "selector": dict(SELECTOR),
            "ports": [
                {"name": "otlp-grpc", "port": OTLP_GRPC_PORT, "targetPort": OTLP_GRPC_PORT, "appProtocol": "grpc"},
                {"name": "otlp-http", "port": OTLP_HTTP_PORT, "targetPort": OTLP_HTTP_PORT},
            ],
        },
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(COLLECTOR_NAME),
        "data": {"config.yaml": yaml.safe_dump(collector_config(addon), sort_keys=True)},
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": TRACING_NAMESPACE, "labels": dict(MANAGED_BY)},
    }
    return [namespace, config_map, _deployment(image, 2 if prod else 1), service]


@dataclass(frozen=True, kw_only=True)
class CollectorArgs:
    addon: TracingAddon
    image: Image
    prod: bool
    provider: k8s.Provider
    # The AWS Load Balancer Controller's release, when this stack runs it: its Service webhook fails closed.
    service_webhook: pulumi.Resource | None = None


class Collector(pulumi.ComponentResource):
    """The OpenTelemetry Collector every traced hop exports to (see the module docstring)."""

    namespace: pulumi.Resource

    def __init__(self, name: str, args: CollectorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:TraceCollector", name, None, opts)
        namespace, *rest = collector_objects(args.addon, args.image, prod=args.prod)
        self.namespace = register(namespace, pulumi.ResourceOptions(parent=self, provider=args.provider))
        after = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.namespace])
        for obj in rest:
            register(obj, after, service_webhook=args.service_webhook)
        self.register_outputs({})
