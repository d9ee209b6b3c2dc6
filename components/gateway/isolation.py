"""NetworkPolicies for the model namespaces: default-deny ingress and egress, then only what serving
needs, pod by pod. Pure builders.

Every ingress peer is a pod selector (inside a namespace selector when the caller lives elsewhere),
never a whole namespace: a team namespace may hold several models, and a platform namespace holds
more than the one component that must call in. Who calls a model's pods, on which port
(components/peers.py holds each caller's pods and where upstream says so):

| caller (pods)                                        | port                        | when                           |
|------------------------------------------------------|-----------------------------|--------------------------------|
| the model's own pods                                 | all (a Ray head: all but    | always: a Dynamo graph's and a |
|                                                      | its dashboard, 8265)        | Ray cluster's pods talk        |
| the route's Gateway's Envoy proxies                  | serving port                | the model is exposed           |
| the LiteLLM proxy                                    | serving port                | this stack runs LiteLLM and it |
|                                                      |                             | routes to the model            |
| the KEDA HTTP add-on's interceptor                   | serving port                | the model scales to zero       |
| its endpoint picker (`models[].routing`)             | metrics port                | a picker routes it             |
| its endpoint picker's pods (the Envoy beside it)     | serving port                | ... and LiteLLM calls it there |
| Prometheus                                           | metrics port                | monitoring is on               |
| the NIM Operator                                     | serving port (/v1/models)   | the model is a NIMService      |
| AIBrix's gateway plugin                              | 8000 (pod metrics)          | AIBrix labels the model's pods |
| AIBrix's controller manager                          | 8000 and 8080 (LoRA         | ... with adapters; with an     |
|                                                      | adapters, runtime sidecar); | AIBrix PodAutoscaler           |
|                                                      | metrics port (autoscaling)  |                                |
| the KubeRay operator, to the Ray head only           | 8265 (Serve config), serve  | a RayService                   |
|                                                      | port (proxy health)         |                                |

A Dynamo graph's callers reach its Frontend only (`serving_ingress`, on the Frontend's role label): the
prefill and decode workers carry the model's label too, but serve nobody, so only the graph's own pods
reach them (`model_ingress`).

Where an engine serves its metrics on its serving port (vLLM, SGLang, TGI, NIM, Dynamo's frontend,
the picker's scrape), Prometheus's rule is on the serving port: a NetworkPolicy cannot tell `/metrics`
from `/v1`, so Prometheus's own pods, which hold no client key, are the only scraper admitted there.
The Dynamo operator calls no pod of a graph, so its namespace gets no opening at all.

The picker's own pods take ingress only from the proxies, on ext_proc, LiteLLM on the port of the Envoy
the chart runs beside the picker (only where LiteLLM calls the model through it, which then replaces
LiteLLM's own rule on the model's pods), and Prometheus on their metrics port; the picker's pods reach the
model's pods through the namespace's `egress` policy (its own pods, every port). The KEDA HTTP add-on's
interceptor takes ingress only from the proxies and the LiteLLM proxy on its proxy port and from the
add-on's scaler on its admin port (`interceptor_ingress`): it forwards by a header, so
anything else reaching it would be an unauthenticated way around the front door.

Egress is limited to cluster DNS, the namespace's own pods (Dynamo's frontend and workers, Ray's head
and workers reach each other directly), TCP 443 and the EKS Pod Identity agent. The agent
(169.254.170.23:80, a hostNetwork DaemonSet on a link-local address, not the node IP the VPC CNI
always admits) is where the AWS SDK fetches the model-bucket reader's credentials: without the
rule, the model-preparation init container's `aws s3 sync` is refused credentials. A
NetworkPolicy cannot name a host: 443 is how pods reach the model bucket (S3, through the VPC
gateway endpoint or its public addresses), Hugging Face or NGC and the registries a stack names.
Image pulls are made by the kubelet on the node and EFS/FSx mounts by the CSI node driver; neither is
pod traffic, so neither needs a rule here.

With the platform's tracing on (`addons.tracing`), each exporting pod gets one more egress policy, to the
collector's OTLP ports only (`trace_egress`: the picker's pods always, an engine's when its tracing is on);
the collector's own policy (components/tracing.py) admits exactly those pods.

Enforced only where the CNI enforces NetworkPolicy: on EKS, the VPC CNI add-on with
`enableNetworkPolicy: "true"`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stacks.naming import MANAGED_BY
from stacks.resolved import KEDA_NAMESPACE, LITELLM_NAMESPACE, Endpoint, ResolvedModel

from .. import peers
from ..autoscaling import wake
from ..peers import NS_LABEL, Pods
from ..serving import litellm
from . import picker

__all__ = ["NS_LABEL", "Callers", "namespace_policies"]

# The EKS Pod Identity agent's credential endpoint (IPv4 clusters): AWS_CONTAINER_CREDENTIALS_FULL_URI.
POD_IDENTITY_AGENT = peers.POD_IDENTITY_AGENT
LITELLM = Pods(LITELLM_NAMESPACE, {peers.NAME: litellm.NAME})


@dataclass(frozen=True, kw_only=True)
class Callers:
    """Who, besides a model's own pods, may call the models of this stack, as the wiring knows it."""

    # The Envoy proxies of the Gateway the routes attach to (peers.proxies); None: no model is exposed.
    proxies: Pods | None = None
    # The Prometheus that scrapes (peers.prometheus); None: no monitoring.
    prometheus: Pods | None = None
    # This stack runs the LiteLLM proxy, which calls its exposed models at their Services.
    litellm: bool = False
    # Engine -> the serving platforms' controller namespaces the resolver names for it
    # (stacks/resolve/models.py controller_namespaces).
    controllers: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # The platform runs the trace collector (`addons.tracing`): pickers export to it, and so do the
    # engines of models whose `tracing` resolved on.
    tracing: bool = False

    def run(self, controller: Pods, served: Endpoint) -> bool:
        """Whether this controller runs for the model's engine (its namespace is named for it)."""
        return controller.namespace in self.controllers.get(served.engine, ())


def _meta(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {**MANAGED_BY, "app.kubernetes.io/component": "isolation"}}


def _policy(name: str, namespace: str, selector: Mapping[str, str], ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(name, namespace),
        "spec": {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"], "ingress": ingress},
    }


def default_deny(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("default-deny", namespace),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }


def egress(namespace: str) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [
        peers.DNS,
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


def _picked(served: Endpoint) -> bool:
    return served.expose and served.routing is not None and served.routing.picker


def _litellm_picked(served: Endpoint, callers: Callers) -> bool:
    """LiteLLM runs here and calls the model through its picker's proxy (RoutePicking.litellm_proxy)."""
    return callers.litellm and _picked(served) and served.routing is not None and served.routing.litellm_proxy


def _aibrix_labelled(served: ResolvedModel) -> bool:
    """AIBrix's gateway plugin and controller manager find a model's pods by the labels the shared
    workload shape puts on them with AIBrix on (components/engines/workload.py pod_labels)."""
    return served.aibrix and served.facts.platform_workload


def _controller_grants(served: ResolvedModel, callers: Callers) -> list[peers.Grant]:
    """The serving platforms' controllers that call this model's pods, each on the ports it calls
    (components/peers.py says where upstream does)."""
    grants: list[peers.Grant] = []
    if callers.run(peers.NIM_OPERATOR, served):
        grants.append((peers.NIM_OPERATOR, (served.port,)))
    if callers.run(peers.AIBRIX_CONTROLLER, served) and _aibrix_labelled(served):
        grants.append((peers.AIBRIX_GATEWAY_PLUGIN, (peers.AIBRIX_ENGINE_PORT,)))
        adapters = (peers.AIBRIX_ENGINE_PORT, peers.AIBRIX_RUNTIME_PORT)
        ports: tuple[int, ...] = adapters if served.adapter_loader == "aibrix" else ()
        if served.scaler == "aibrix":  # its PodAutoscaler reads the pods' metrics (serving/aibrix.py)
            ports += (served.metrics_port or served.port,)
        if ports:
            grants.append((peers.AIBRIX_CONTROLLER, ports))
    return grants


def _own_pods(served: ResolvedModel, callers: Callers) -> dict[str, Any]:
    """The model's own pods reach each other on every port, except a Ray head's dashboard: that is the
    KubeRay operator's alone (its Jobs API runs code), so a RayService's pods reach the head on every
    other TCP port and on UDP."""
    own = {"from": [{"podSelector": {"matchLabels": dict(served.selector)}}]}
    if not callers.run(peers.KUBERAY_OPERATOR, served):
        return own
    dashboard = peers.RAY_DASHBOARD_PORT
    return {
        **own,
        "ports": [
            {"protocol": "TCP", "port": 1, "endPort": dashboard - 1},
            {"protocol": "TCP", "port": dashboard + 1, "endPort": 65535},
            {"protocol": "UDP", "port": 1, "endPort": 65535},
        ],
    }


def model_grants(served: ResolvedModel, callers: Callers) -> list[peers.Grant]:
    """Every caller of the model's pods but their own, with its ports."""
    grants: list[peers.Grant] = []
    if served.expose and callers.proxies is not None:
        grants.append((callers.proxies, (served.port,)))
    if served.expose and callers.litellm and served.wake is None and not _litellm_picked(served, callers):
        grants.append((LITELLM, (served.port,)))  # at to-zero models it calls the interceptor
    if served.wake is not None:
        grants.append((peers.INTERCEPTOR, (served.port,)))
    if _picked(served) and served.metrics_port:
        grants.append((Pods(served.namespace, picker.pod_labels(served)), (served.metrics_port,)))
    if _litellm_picked(served, callers):
        # LiteLLM's requests, through the Envoy beside the picker, to the pod the picker chose.
        grants.append((Pods(served.namespace, picker.pod_labels(served)), (served.port,)))
    if callers.prometheus is not None and served.metrics_port:
        grants.append((callers.prometheus, (served.metrics_port,)))
    return grants + _controller_grants(served, callers)


def model_ingress(served: ResolvedModel, callers: Callers) -> dict[str, Any]:
    """Every pod of the model: its own pods and, where every pod serves, every other caller. Where only
    some pods serve (a Dynamo graph's Frontend), the others' callers are on `serving_ingress` alone."""
    rules = [_own_pods(served, callers)]
    if not _split(served):
        rules += peers.rules(model_grants(served, callers), served.namespace)
    return _policy(f"{served.name}-ingress", served.namespace, served.selector, rules)


def _split(served: ResolvedModel) -> bool:
    return served.serving_selector != served.selector


def serving_ingress(served: ResolvedModel, callers: Callers) -> dict[str, Any] | None:
    """The serving pods of a model whose other pods serve nobody (a Dynamo graph's Frontend, not its prefill
    or decode workers): the gateway's proxies, LiteLLM, the interceptor and Prometheus reach these alone.
    None where every pod serves (`model_ingress` admits them)."""
    if not _split(served):
        return None
    rules = peers.rules(model_grants(served, callers), served.namespace)
    role = served.facts.serving_role
    return _policy(f"{served.name}-{role}-ingress", served.namespace, served.serving_selector, rules)


def ray_head_ingress(served: ResolvedModel, callers: Callers) -> dict[str, Any] | None:
    """A RayService's head: the KubeRay operator on the dashboard (Serve config) and the serve port (its
    proxy's health), and nothing else but what the model's policy admits."""
    if not callers.run(peers.KUBERAY_OPERATOR, served):
        return None
    rules = [peers.rule([peers.KUBERAY_OPERATOR], (peers.RAY_DASHBOARD_PORT, served.port), served.namespace)]
    selector = {**served.selector, **peers.RAY_HEAD_LABELS}
    return _policy(f"{served.name}-ray-head", served.namespace, selector, rules)


def picker_ingress(served: Endpoint, callers: Callers) -> dict[str, Any]:
    """The picker's pods answer only the Envoy proxies, on ext_proc, LiteLLM on the proxy beside the
    picker when it calls the model through it, and Prometheus on its metrics port."""
    grants: list[peers.Grant] = []
    if callers.proxies is not None:
        grants.append((callers.proxies, (picker.EXT_PROC_PORT,)))
    if _litellm_picked(served, callers):
        grants.append((LITELLM, (picker.PROXY_PORT,)))
    if callers.prometheus is not None:
        grants.append((callers.prometheus, (picker.METRICS_PORT,)))
    rules = peers.rules(grants, served.namespace)
    return _policy(f"{served.name}-picker-ingress", served.namespace, picker.pod_labels(served), rules)


def interceptor_ingress(*, proxies: Pods, litellm_proxy: bool) -> dict[str, Any]:
    """The KEDA HTTP add-on's interceptor pods: the proxy port only from the Envoy proxies (whose routes
    authenticate first) and the LiteLLM proxy when it runs (its master key), the admin port only from the
    add-on's scaler (it reads the pending-request counts there). Ingress only: the interceptor reaches
    the model pods, which admit it (`model_ingress`)."""
    callers = [proxies, *([LITELLM] if litellm_proxy else [])]
    rules = [
        peers.rule(callers, (wake.PROXY_PORT,), KEDA_NAMESPACE),
        peers.rule([peers.HTTP_SCALER], (wake.ADMIN_PORT,), KEDA_NAMESPACE),
    ]
    return _policy("interceptor-ingress", KEDA_NAMESPACE, wake.INTERCEPTOR_POD_LABELS, rules)


def _egress_policy(name: str, namespace: str, selector: Mapping[str, str], rules: list[dict[str, Any]]) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(name, namespace),
        "spec": {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Egress"], "egress": rules},
    }


def trace_exporters(served: ResolvedModel, callers: Callers) -> list[tuple[str, Pods]]:
    """(policy name, pods) of each of the model's pods that export spans: its engine when its tracing
    resolved on, its picker whenever the platform traces (the picker traces every request it picks for)."""
    if not callers.tracing:
        return []
    out: list[tuple[str, Pods]] = []
    if served.tracing is not None:
        out.append((f"{served.name}-traces", Pods(served.namespace, dict(served.selector))))
    if _picked(served) and callers.proxies is not None:
        out.append((f"{served.name}-picker-traces", Pods(served.namespace, picker.pod_labels(served))))
    return out


def trace_egress(served: ResolvedModel, callers: Callers) -> list[dict[str, Any]]:
    """Egress to the collector's OTLP ports for exactly the pods that export, one policy each (egress
    policies add up, so the namespace's `egress` policy stays as it is for every other pod)."""
    to_collector = [peers.to([peers.COLLECTOR], peers.OTLP_PORTS, served.namespace)]
    return [
        _egress_policy(name, pods.namespace, pods.labels, to_collector)
        for name, pods in trace_exporters(served, callers)
    ]


def namespace_policies(served_in_namespace: Sequence[ResolvedModel], callers: Callers) -> list[dict[str, Any]]:
    """All policies of one model namespace (its models are given; linear in their number)."""
    namespace = served_in_namespace[0].namespace
    objs = [default_deny(namespace), egress(namespace)]
    for served in served_in_namespace:
        objs.append(model_ingress(served, callers))
        for extra in (serving_ingress(served, callers), ray_head_ingress(served, callers)):
            if extra is not None:
                objs.append(extra)
        if _picked(served) and callers.proxies is not None:
            objs.append(picker_ingress(served, callers))
        objs += trace_egress(served, callers)
    return objs
