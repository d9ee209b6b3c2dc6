"""NetworkPolicies for the model namespaces: default-deny ingress and egress, then only what serving
needs. Pure builders.

Ingress to a model's pods comes only from
- the Envoy proxies (the gateway data plane; AIBrix's gateway plugin too when AIBrix is on), on the
  serving port, and only for exposed models;
- the metrics scraper's namespace, on the metrics port;
- the model's own pods (Dynamo frontend and workers, Ray head and workers talk to each other);
- the serving platform's controller namespace, when the wiring names one for the engine (the KubeRay
  operator polls the Ray head, the Dynamo operator its components).
Egress is limited to cluster DNS, the model's own pods, the platform namespaces and TCP 443. A
NetworkPolicy cannot name a host: 443 is how pods reach the model bucket (S3, through the VPC
gateway endpoint or its public addresses), Hugging Face or NGC and the registries a stack names.
Image pulls are made by the kubelet on the node and EFS/FSx mounts by the CSI node driver; neither is
pod traffic, so neither needs a rule here.

Enforced only where the CNI enforces NetworkPolicy: on EKS, the VPC CNI add-on with
`enableNetworkPolicy: "true"`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..naming import MANAGED_BY
from ..served import ServedModel
from .manifests import EG_NAMESPACE, PROXY_POD_LABELS

NS_LABEL = "kubernetes.io/metadata.name"


def _ns(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NS_LABEL: name}}}


def _meta(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {**MANAGED_BY, "app.kubernetes.io/component": "isolation"}}


def default_deny(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("default-deny", namespace),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }


def egress(namespace: str, platform_namespaces: Iterable[str]) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [
        {
            "to": [{**_ns("kube-system"), "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
        {"to": [{"podSelector": {}}]},  # the namespace's own pods: peers of one model
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]},
    ]
    platforms = sorted(set(platform_namespaces))
    if platforms:
        rules.append({"to": [_ns(ns) for ns in platforms]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("egress", namespace),
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": rules},
    }


def model_ingress(
    served: ServedModel,
    *,
    gateway_namespaces: Iterable[str],
    scraper_namespace: str | None,
    platform_namespace: str | None,
) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [{"from": [{"podSelector": {"matchLabels": served.selector}}]}]
    gateways = sorted(set(gateway_namespaces))
    if served.expose and gateways:
        sources = [
            {**_ns(ns), "podSelector": {"matchLabels": PROXY_POD_LABELS}} if ns == EG_NAMESPACE else _ns(ns)
            for ns in gateways
        ]
        rules.append({"from": sources, "ports": [{"protocol": "TCP", "port": served.port}]})
    if scraper_namespace and served.metrics_port:
        rules.append({"from": [_ns(scraper_namespace)], "ports": [{"protocol": "TCP", "port": served.metrics_port}]})
    if platform_namespace:
        rules.append({"from": [_ns(platform_namespace)]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(f"{served.name}-ingress", served.namespace),
        "spec": {"podSelector": {"matchLabels": served.selector}, "policyTypes": ["Ingress"], "ingress": rules},
    }


def namespace_policies(
    served_in_namespace: list[ServedModel],
    *,
    gateway_namespaces: Iterable[str],
    scraper_namespace: str | None,
    platform_namespaces: dict[str, str],
) -> list[dict[str, Any]]:
    """All policies of one model namespace (its models are given; linear in their number)."""
    namespace = served_in_namespace[0].namespace
    gateways = list(gateway_namespaces)
    objs = [default_deny(namespace), egress(namespace, platform_namespaces.values())]
    for served in served_in_namespace:
        objs.append(
            model_ingress(
                served,
                gateway_namespaces=gateways,
                scraper_namespace=scraper_namespace,
                platform_namespace=platform_namespaces.get(served.engine),
            )
        )
    return objs
