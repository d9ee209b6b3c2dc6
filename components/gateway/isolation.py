"""NetworkPolicies for the model namespaces: default-deny ingress and egress, then only what serving
needs. Pure builders.

Ingress to a model's pods comes only from
- the Envoy proxies (the gateway data plane; AIBrix's gateway plugin too when AIBrix is on), on the
  serving port, and only for exposed models;
- the metrics scraper's namespace, on the metrics port;
- for a model that scales to zero, the KEDA HTTP add-on's interceptor pods (namespace `keda`), on the
  serving port: its route goes through them. The interceptor's own pods then take ingress only from
  the Envoy proxies and the LiteLLM proxy on its proxy port and from the add-on's scaler on its admin
  port (`interceptor_ingress`): it forwards by a header, so anything else reaching it would be an
  unauthenticated way around the front door;
- the model's own pods (Dynamo frontend and workers, Ray head and workers talk to each other);
- its endpoint picker (`models[].routing`), on the metrics port it scrapes; the picker's own pods
  take ingress only from the Envoy proxies, on its ext_proc port, and the scraper on its metrics port;
- the serving platforms' controller namespaces the wiring names for the model's engine
  (`platform_namespaces`, built by components/serving/platforms.py `controller_namespaces`): the
  KubeRay operator polls the Ray head's dashboard, the Dynamo and NIM operators their pods, and
  with AIBrix its controller manager (adapters, PodAutoscaler metrics) and gateway plugin (pod
  metrics for routing) call every model pod.
Egress is limited to cluster DNS, the model's own pods (Dynamo's frontend and workers, Ray's head
and workers reach each other directly), TCP 443 and the EKS Pod Identity agent. The agent
(169.254.170.23:80, a hostNetwork DaemonSet on a link-local address, not the node IP the VPC CNI
always admits) is where the AWS SDK fetches the model-bucket reader's credentials: without the
rule, the model-preparation init container's `aws s3 sync` is refused credentials. A
NetworkPolicy cannot name a host: 443 is how pods reach the model bucket (S3, through the VPC
gateway endpoint or its public addresses), Hugging Face or NGC and the registries a stack names.
Image pulls are made by the kubelet on the node and EFS/FSx mounts by the CSI node driver; neither is
pod traffic, so neither needs a rule here.

Enforced only where the CNI enforces NetworkPolicy: on EKS, the VPC CNI add-on with
`enableNetworkPolicy: "true"`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stacks.naming import MANAGED_BY
from stacks.resolved import EG_NAMESPACE, KEDA_NAMESPACE, LITELLM_NAMESPACE, Endpoint

from ..autoscaling import wake
from ..serving import litellm
from . import picker
from .routing import PROXY_POD_LABELS

NS_LABEL = "kubernetes.io/metadata.name"
# The EKS Pod Identity agent's credential endpoint (IPv4 clusters): AWS_CONTAINER_CREDENTIALS_FULL_URI.
POD_IDENTITY_AGENT = {"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"protocol": "TCP", "port": 80}]}


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


def egress(namespace: str) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [
        {
            "to": [{**_ns("kube-system"), "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
        {"to": [{"podSelector": {}}]},  # the namespace's own pods: peers of one model
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]},
        POD_IDENTITY_AGENT,
    ]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("egress", namespace),
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": rules},
    }


def _proxies(gateways: Iterable[str]) -> list[dict[str, Any]]:
    return [
        {**_ns(ns), "podSelector": {"matchLabels": PROXY_POD_LABELS}} if ns == EG_NAMESPACE else _ns(ns)
        for ns in gateways
    ]


def _picked(served: Endpoint) -> bool:
    return served.expose and served.routing is not None and served.routing.picker


def picker_ingress(
    served: Endpoint, *, gateway_namespaces: Iterable[str], scraper_namespace: str | None
) -> dict[str, Any]:
    """The picker's pods answer only the Envoy proxies, on ext_proc, and the scraper on its metrics port."""
    rules: list[dict[str, Any]] = [
        {
            "from": _proxies(sorted(set(gateway_namespaces))),
            "ports": [{"protocol": "TCP", "port": picker.EXT_PROC_PORT}],
        }
    ]
    if scraper_namespace:
        rules.append({"from": [_ns(scraper_namespace)], "ports": [{"protocol": "TCP", "port": picker.METRICS_PORT}]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(f"{served.name}-picker-ingress", served.namespace),
        "spec": {
            "podSelector": {"matchLabels": picker.pod_labels(served)},
            "policyTypes": ["Ingress"],
            "ingress": rules,
        },
    }


def model_ingress(
    served: Endpoint,
    *,
    gateway_namespaces: Iterable[str],
    scraper_namespace: str | None,
    platform_namespaces: Iterable[str] = (),
) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [{"from": [{"podSelector": {"matchLabels": served.selector}}]}]
    gateways = sorted(set(gateway_namespaces))
    if served.expose and gateways:
        rules.append({"from": _proxies(gateways), "ports": [{"protocol": "TCP", "port": served.port}]})
    if served.wake is not None:
        interceptor = {**_ns(KEDA_NAMESPACE), "podSelector": {"matchLabels": wake.INTERCEPTOR_POD_LABELS}}
        rules.append({"from": [interceptor], "ports": [{"protocol": "TCP", "port": served.port}]})
    if _picked(served) and served.metrics_port:
        rules.append(
            {
                "from": [{"podSelector": {"matchLabels": picker.pod_labels(served)}}],
                "ports": [{"protocol": "TCP", "port": served.metrics_port}],
            }
        )
    if scraper_namespace and served.metrics_port:
        rules.append({"from": [_ns(scraper_namespace)], "ports": [{"protocol": "TCP", "port": served.metrics_port}]})
    controllers = sorted(set(platform_namespaces))
    if controllers:
        rules.append({"from": [_ns(ns) for ns in controllers]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(f"{served.name}-ingress", served.namespace),
        "spec": {"podSelector": {"matchLabels": served.selector}, "policyTypes": ["Ingress"], "ingress": rules},
    }


def interceptor_ingress(*, gateway_namespaces: Iterable[str], litellm_proxy: bool) -> dict[str, Any]:
    """The KEDA HTTP add-on's interceptor pods: the proxy port only from the Envoy proxies (whose routes
    authenticate first) and the LiteLLM proxy when it runs (its master key), the admin port only from the
    add-on's scaler (it reads the pending-request counts there). Ingress only: the interceptor reaches
    the model pods, which admit it (`model_ingress`)."""
    callers = _proxies(sorted(set(gateway_namespaces)))
    if litellm_proxy:
        callers.append(
            {**_ns(LITELLM_NAMESPACE), "podSelector": {"matchLabels": {"app.kubernetes.io/name": litellm.NAME}}}
        )
    rules: list[dict[str, Any]] = [
        {"from": callers, "ports": [{"protocol": "TCP", "port": wake.PROXY_PORT}]},
        {
            "from": [{"podSelector": {"matchLabels": wake.SCALER_POD_LABELS}}],
            "ports": [{"protocol": "TCP", "port": wake.ADMIN_PORT}],
        },
    ]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("interceptor-ingress", KEDA_NAMESPACE),
        "spec": {
            "podSelector": {"matchLabels": wake.INTERCEPTOR_POD_LABELS},
            "policyTypes": ["Ingress"],
            "ingress": rules,
        },
    }


def namespace_policies(
    served_in_namespace: list[Endpoint],
    *,
    gateway_namespaces: Iterable[str],
    scraper_namespace: str | None,
    platform_namespaces: Mapping[str, Sequence[str]],
) -> list[dict[str, Any]]:
    """All policies of one model namespace (its models are given; linear in their number)."""
    namespace = served_in_namespace[0].namespace
    gateways = list(gateway_namespaces)
    objs = [default_deny(namespace), egress(namespace)]
    for served in served_in_namespace:
        objs.append(
            model_ingress(
                served,
                gateway_namespaces=gateways,
                scraper_namespace=scraper_namespace,
                platform_namespaces=platform_namespaces.get(served.engine, ()),
            )
        )
        if _picked(served) and gateways:
            objs.append(picker_ingress(served, gateway_namespaces=gateways, scraper_namespace=scraper_namespace))
    return objs
