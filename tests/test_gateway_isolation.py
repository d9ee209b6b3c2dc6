"""Network isolation of the model namespaces, pod by pod: deny by default, then the route's proxies,
the picker, the interceptor, LiteLLM, Prometheus's pods and the controllers upstream says call a
model, each on its ports (components/gateway/isolation.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components import peers
from components.gateway import isolation, picker
from components.gateway.routing import PROXY_POD_LABELS
from stacks.resolved import AIBRIX_GATEWAY, EG_NAMESPACE, GATEWAY_NAME, GATEWAY_NAMESPACE, ResolvedModel
from tests.builders import resolved_model, resolved_stack
from tests.conftest import EXAMPLES, sections_of
from tests.netpol import Peer, admitted
from tests.serving_support import serving_sections, serving_stack

TEAM_SEARCH = next(p for p in EXAMPLES if p.name == "Pulumi.team-search.yaml")


def policies(objs: list[dict[str, Any]], namespace: str) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o["spec"]
        for o in objs
        if o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] == namespace
    }


def _callers(**given: Any) -> isolation.Callers:
    return isolation.Callers(**given)


def test_every_model_namespace_denies_ingress_and_egress_by_default(dev_render, dev):
    objs = dev_render.manifests()
    namespaces = {m.namespace for m in resolved_stack(dev).models}
    for ns in namespaces:
        deny = policies(objs, ns)["default-deny"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, ns


def test_the_proxies_admitted_are_the_routes_gateways_own_pods_in_the_gateways_namespace(dev):
    own = peers.proxies(resolved_stack(dev).route_parent)
    assert own.namespace == GATEWAY_NAMESPACE != EG_NAMESPACE, "GatewayNamespace mode: proxies beside their Gateway"
    assert dict(own.labels) == {
        **PROXY_POD_LABELS,
        "gateway.envoyproxy.io/owning-gateway-namespace": GATEWAY_NAMESPACE,
        "gateway.envoyproxy.io/owning-gateway-name": GATEWAY_NAME,
    }, "Envoy Gateway 1.9.0 labels every proxy pod with the app labels and its Gateway's name and namespace"
    aibrix = peers.proxies(serving_stack().route_parent)
    assert aibrix.namespace == AIBRIX_GATEWAY[0], "AIBrix's Gateway's proxies run in AIBrix's namespace"
    assert aibrix.labels[peers.OWNING_GATEWAY_NAMESPACE] == AIBRIX_GATEWAY[0]
    assert aibrix.labels[peers.OWNING_GATEWAY_NAME] == AIBRIX_GATEWAY[1]
    team = peers.proxies(resolved_stack(sections_of(TEAM_SEARCH)).route_parent)
    assert team == own, "a team's routes attach to the platform's Gateway: its proxies are the same pods"


def test_an_exposed_model_admits_its_gateways_proxies_on_its_serving_port_only(dev):
    served = resolved_stack(dev).models[0]
    front = peers.proxies(resolved_stack(dev).route_parent)
    policy = isolation.model_ingress(served, _callers(proxies=front))
    assert policy["spec"]["podSelector"] == {"matchLabels": served.selector}
    got = admitted([policy], served.namespace, served.selector, served.port)
    assert Peer.of(front) in got
    assert Peer.of(front) not in admitted([policy], served.namespace, served.selector, served.port + 1)


def test_an_unexposed_model_gets_no_gateway_or_litellm_ingress(dev):
    dev["models"][0]["expose"] = False
    del dev["models"][0]["routing"]  # routing needs the route
    stack = resolved_stack(dev)
    served = stack.models[0]
    front = peers.proxies(stack.route_parent)
    policy = isolation.model_ingress(served, _callers(proxies=front, litellm=True))
    got = admitted([policy], served.namespace, served.selector, served.port)
    assert got == {Peer.own(served.namespace, served.selector)}, "only its own pods"


def test_prometheus_pods_scrape_the_metrics_port_even_where_it_is_the_serving_port(dev):
    served = resolved_stack(dev).models[0]
    assert served.metrics_port == served.port, "vLLM serves /metrics on its API port"
    policy = isolation.model_ingress(served, _callers(prometheus=peers.PROMETHEUS))
    got = admitted([policy], served.namespace, served.selector, served.port)
    own, its_picker = Peer.own(served.namespace, served.selector), Peer.own(served.namespace, picker.pod_labels(served))
    assert got == {own, its_picker, Peer.of(peers.PROMETHEUS)}, "its own pods, its picker and the scraper's pods"
    assert peers.PROMETHEUS.labels == {
        "app.kubernetes.io/name": "prometheus",
        "operator.prometheus.io/name": "kube-prometheus-stack-prometheus",
    }, "the Prometheus Operator's selector labels of the chart's Prometheus, not every pod of monitoring"
    existing = isolation.model_ingress(served, _callers(prometheus=peers.ANY_PROMETHEUS))
    assert Peer.of(peers.ANY_PROMETHEUS) in admitted([existing], served.namespace, served.selector, served.port)


def test_two_models_of_one_team_namespace_admit_each_only_its_own_pods():
    stack = resolved_stack(sections_of(TEAM_SEARCH))
    models = [m for m in stack.models if m.namespace == stack.models[0].namespace]
    assert len(models) >= 2, "the team example runs two models in its namespace"
    objs = isolation.namespace_policies(models, _callers(proxies=peers.proxies(stack.route_parent)))
    for served in models:
        own = admitted(objs, served.namespace, served.selector, 12345)
        assert own == {Peer.own(served.namespace, served.selector)}, served.name
        others = [m for m in models if m is not served]
        assert all(Peer.own(o.namespace, o.selector) not in own for o in others), "never the whole namespace"


def test_egress_is_dns_the_namespace_itself_https_and_pod_identity(dev_render):
    spec = policies(dev_render.manifests(), "inference")["egress"]
    rules = spec["egress"]
    dns = rules[0]
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert {p["port"] for p in dns["ports"]} == {53}
    assert rules[1] == {"to": [{"podSelector": {}}]}
    assert rules[2]["ports"] == [{"protocol": "TCP", "port": 443}], "S3, model hubs and registries over TLS only"
    assert rules[3] == {
        "to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}],
        "ports": [{"protocol": "TCP", "port": 80}],
    }, "the EKS Pod Identity agent: the model-bucket reader's credentials come from it, on port 80"
    assert len(rules) == 4, "nothing else leaves the namespace"


# ---- the serving platforms' controllers ---------------------------------------------------------


def _serving(name: str, sections: dict[str, Any] | None = None) -> tuple[ResolvedModel, isolation.Callers]:
    stack = serving_stack(sections)
    return resolved_model(stack, name), _callers(controllers=stack.controller_namespaces)


def _on(policies_: list[dict[str, Any]], served: ResolvedModel, port: int, **extra: str) -> set[Peer]:
    return admitted(policies_, served.namespace, {**served.selector, **extra}, port)


def test_the_dynamo_operator_calls_no_pod_of_a_graph_so_dynamo_system_gets_no_opening():
    served, callers = _serving("qwen3-8b-dynamo")
    assert peers.DYNAMO_OPERATOR.namespace in callers.controllers[served.engine], "the operator runs"
    objs = isolation.namespace_policies([served], callers)
    for port in (served.port, 9090, 6379):
        assert all(p.namespace != peers.DYNAMO_OPERATOR.namespace for p in _on(objs, served, port)), port


def test_a_ray_head_admits_the_kuberay_operator_on_its_dashboard_and_serve_port_only():
    served, callers = _serving("qwen3-4b-ray")
    objs = isolation.namespace_policies([served], callers)
    head = peers.RAY_HEAD_LABELS
    operator = Peer.of(peers.KUBERAY_OPERATOR)
    assert _on(objs, served, peers.RAY_DASHBOARD_PORT, **head) == {operator}, "8265 runs code: the operator alone"
    assert operator in _on(objs, served, served.port, **head), "it probes the head's Serve proxy"
    assert operator not in _on(objs, served, 6379, **head), "never the GCS"
    assert operator not in _on(objs, served, served.port), "never a worker"
    assert _on(objs, served, peers.RAY_DASHBOARD_PORT) == set(), "the model's own pods: every port but 8265"
    own = Peer.own(served.namespace, served.selector)
    assert {own} <= _on(objs, served, 6379, **head) and own in _on(objs, served, 8266, **head)
    (head_policy,) = [o for o in objs if o["metadata"]["name"] == f"{served.name}-ray-head"]
    assert head_policy["spec"]["podSelector"]["matchLabels"] == {**served.selector, "ray.io/node-type": "head"}


def test_the_nim_operator_reaches_a_nim_service_on_its_serving_port_only():
    engines = next(p for p in EXAMPLES if p.name == "Pulumi.engines.yaml")
    stack = resolved_stack(sections_of(engines))
    nim = next(m for m in stack.models if m.facts.controller == "nim-operator")
    callers = _callers(controllers={nim.engine: (peers.NIM_OPERATOR.namespace,)})
    policy = isolation.model_ingress(nim, callers)
    assert Peer.of(peers.NIM_OPERATOR) in _on([policy], nim, nim.port)
    assert Peer.of(peers.NIM_OPERATOR) not in _on([policy], nim, nim.port + 1)
    plain = isolation.model_ingress(nim, _callers())
    assert Peer.of(peers.NIM_OPERATOR) not in _on([plain], nim, nim.port), "no operator, no opening"


def test_aibrix_reaches_a_labelled_model_on_the_ports_its_plugin_and_controller_call():
    served, callers = _serving("qwen3-8b-lora")
    assert served.config.adapters and served.scaler == "aibrix" and served.port == peers.AIBRIX_ENGINE_PORT
    policy = isolation.model_ingress(served, callers)
    got = _on([policy], served, peers.AIBRIX_ENGINE_PORT)
    assert {Peer.of(peers.AIBRIX_GATEWAY_PLUGIN), Peer.of(peers.AIBRIX_CONTROLLER)} <= got
    assert not {p for p in _on([policy], served, 9090) if p.namespace == "aibrix-system"}, "nothing else"
    assert all(p.labels for p in got), "its two components' pods, never the whole aibrix-system namespace"


def test_aibrix_gets_nothing_on_pods_it_does_not_label():
    for name in ("qwen3-8b-dynamo", "qwen3-4b-ray"):
        served, callers = _serving(name)
        objs = isolation.namespace_policies([served], callers)
        for port in (served.port, served.metrics_port or served.port, peers.AIBRIX_ENGINE_PORT):
            assert all(p.namespace != "aibrix-system" for p in _on(objs, served, port)), (name, port)


def test_aibrixs_controller_has_no_port_on_a_model_without_adapters_or_its_autoscaler():
    sections = serving_sections()
    lora = next(m for m in sections["models"] if m["name"] == "qwen3-8b-lora")
    lora.pop("adapters")
    lora.pop("autoscaling")
    served, callers = _serving("qwen3-8b-lora", sections)
    got = _on([isolation.model_ingress(served, callers)], served, peers.AIBRIX_ENGINE_PORT)
    assert Peer.of(peers.AIBRIX_CONTROLLER) not in got
    assert Peer.of(peers.AIBRIX_GATEWAY_PLUGIN) in got, "the plugin still reads its metrics for routing"


def test_litellm_reaches_the_models_it_routes_to_and_a_to_zero_model_only_through_the_interceptor():
    picked, _ = _serving("qwen3-8b-lora")
    assert picked.routing is not None and picked.routing.litellm_proxy, "the serving example calls it picked"
    # The model as LiteLLM calls it at its Service (tests/test_litellm_picker.py: through its picker).
    served = replace(picked, routing=replace(picked.routing, litellm_proxy=False))
    policy = isolation.model_ingress(served, _callers(litellm=True))
    assert Peer.own("litellm", {"app.kubernetes.io/name": "litellm"}) in _on([policy], served, served.port)
    no_litellm = isolation.model_ingress(served, _callers())
    assert all(p.namespace != "litellm" for p in _on([no_litellm], served, served.port))


def test_the_pickers_pods_admit_the_proxies_on_ext_proc_only(dev):
    stack = resolved_stack(dev)
    served = resolved_model(stack, "qwen3-8b")
    front = peers.proxies(stack.route_parent)
    policy = isolation.picker_ingress(served, _callers(proxies=front, prometheus=peers.PROMETHEUS))
    labels = picker.pod_labels(served)
    assert admitted([policy], served.namespace, labels, picker.EXT_PROC_PORT) == {Peer.of(front)}
    assert admitted([policy], served.namespace, labels, picker.METRICS_PORT) == {Peer.of(peers.PROMETHEUS)}
