"""The trace collector: an OpenTelemetry Collector in namespace `tracing` that receives OTLP (gRPC 4317,
HTTP 4318) from the gateway's proxies, the endpoint pickers and the engines, batches, and exports every
span to `addons.tracing.endpoint`.

It runs from the platform's own manifests, built here by pure functions, rather than from the
opentelemetry-collector chart: that chart is not among the charts kept for offline rendering, and these
few objects are checked against the Kubernetes schemas like every other. Sampling happens at the head
(the gateway, then parent-based at every hop), so the collector forwards what it receives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pulumi
import pulumi_kubernetes as k8s
import yaml

from stacks.awaits import await_service
from stacks.config.addons import TracingAddon
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL, TOKEN
from stacks.resolved import COLLECTOR_NAME, OTLP_GRPC_PORT, OTLP_HTTP_PORT, TRACING_NAMESPACE
from stacks.versions import Image

from . import peers
from .k8s import register
from .peers import Pods

__all__ = ["Collector", "CollectorArgs", "collector_config", "collector_objects", "collector_policies"]

CONFIG_FILE = "/etc/otelcol-contrib/config.yaml"  # the contrib image's default --config path
HEALTH_PORT = 13133  # the health_check extension's default
COLLECTOR_UID = 10001  # the contrib image's USER (uid and gid), a high uid as CKV_K8S_40 asks
SELECTOR = dict(peers.COLLECTOR.labels)  # what every exporter's egress policy names
LABELS = {**SELECTOR, **MANAGED_BY}


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
        # The provider waits for the collector on the system nodes: its image's pull and its start.
        "metadata": _meta(COLLECTOR_NAME) | {"annotations": await_service()},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(SELECTOR)},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    # The collector only receives and forwards spans (no k8sattributes processor): it never
                    # calls the API server, so its pod gets no service-account token.
                    "automountServiceAccountToken": False,
                    "nodeSelector": dict(SYSTEM_NODE_LABEL),
                    "securityContext": {
                        "runAsNonRoot": True,
                        # The image's user (opentelemetry-collector-releases distributions/otelcol-contrib/
                        # Dockerfile: USER 10001:10001), stated so the kubelet can verify it is not root.
                        "runAsUser": COLLECTOR_UID,
                        "runAsGroup": COLLECTOR_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
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


def backend_address(endpoint: str) -> tuple[str, int]:
    """The backend's host and port from `addons.tracing.endpoint` (the scheme's port when it names
    none: 443 for https, 80 for http), which the collector's egress policy opens."""
    parsed = urlsplit(endpoint)
    assert parsed.hostname is not None, "OtlpEndpoint's pattern requires a host"
    return parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)


def _backend_egress(addon: TracingAddon) -> dict[str, Any]:
    """Egress to the backend: a NetworkPolicy cannot name a host, so an in-cluster Service
    (`<svc>.<ns>.svc...`) is reached as its namespace on the port, an IP as itself, and any other
    host as every address on that one port."""
    assert addon.endpoint is not None, "the config model requires an endpoint when tracing is on"
    host, port = backend_address(addon.endpoint)
    labels = host.split(".")
    if len(labels) >= 3 and labels[2] == "svc":
        to: dict[str, Any] = {"namespaceSelector": {"matchLabels": {peers.NS_LABEL: labels[1]}}}
    elif all(part.isdigit() for part in labels) and len(labels) == 4:
        to = {"ipBlock": {"cidr": f"{host}/32"}}
    else:
        to = {"ipBlock": {"cidr": "0.0.0.0/0"}}
    return {"to": [to], "ports": peers.tcp(port)}


def collector_policies(
    addon: TracingAddon, exporters: list[Pods], team_namespaces: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The `tracing` namespace's NetworkPolicies: default-deny, then the collector's pods admit exactly
    the pods that export (the gateway's proxies, the pickers, the tracing engines) on the OTLP ports,
    and in each team namespace (`teams[].namespaces`) the engine and picker pods of the team's models,
    which its own stack deploys later (peers.team_exporters); they reach only DNS and the backend
    (`addons.tracing.endpoint`'s host and port). Its health probe comes from the kubelet on the node,
    which the VPC CNI always admits."""
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("default-deny"),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    ingress = [peers.rule(dict.fromkeys(exporters), peers.OTLP_PORTS, TRACING_NAMESPACE)] if exporters else []
    teams = [peer for ns in dict.fromkeys(team_namespaces) for peer in peers.team_exporters(ns)]
    if teams:
        ingress.append({"from": teams, "ports": peers.tcp(*peers.OTLP_PORTS)})
    collector = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(COLLECTOR_NAME),
        "spec": {
            "podSelector": {"matchLabels": dict(SELECTOR)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress,
            "egress": [peers.DNS, _backend_egress(addon)],
        },
    }
    return [deny, collector]


@dataclass(frozen=True, kw_only=True)
class CollectorArgs:
    addon: TracingAddon
    image: Image
    prod: bool
    provider: k8s.Provider
    # Every pod that exports spans to the collector (the proxies, pickers and tracing engines): exactly
    # what its ingress policy admits.
    exporters: list[Pods]
    # The team namespaces (`teams[].namespaces`) whose engines and pickers export too (their own stacks).
    team_namespaces: tuple[str, ...] = ()
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
        for obj in [*rest, *collector_policies(args.addon, args.exporters, args.team_namespaces)]:
            register(obj, after, service_webhook=args.service_webhook)
        self.register_outputs({})
