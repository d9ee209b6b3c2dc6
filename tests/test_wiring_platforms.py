"""The seams between the serving platforms and the front door, on the serving example stack: the
controllers that must reach model pods get through the default-deny policies, AIBrix's gateway runs
on an Envoy Gateway that accepts its EnvoyPatchPolicy behind the same load balancer as ours, and the
LiteLLM proxy is one more authenticated route, scraped with its own key."""

from __future__ import annotations

from typing import Any

import yaml

from components import peers
from components.gateway import isolation
from components.gateway.routing import envoy_gateway_values, load_balancer_annotations
from components.serving import litellm
from components.serving.values import aibrix_values
from stacks.resolved import LITELLM_NAMESPACE, ResolvedModel
from tests import netpol
from tests.builders import resolved_model, resolved_stack
from tests.conftest import DEV, rendered_stack, sections_of, stack_manifests
from tests.netpol import Peer, peer_of
from tests.serving_support import SERVING, serving_sections, serving_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
ACM = "arn:aws:acm:us-west-2:111122223333:certificate/0f0e0d0c-0b0a-0908-0706-050403020100"


def _serving() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The serving example's objects and releases, from its render cached for the session."""
    rendered = rendered_stack(SERVING)
    releases = {r.inputs["name"]: r.inputs for r in rendered.mocks.of_type(RELEASE)}
    return rendered.manifests(), releases


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def policy(objs: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any]:
    (found,) = [
        o["spec"]
        for o in of_kind(objs, "NetworkPolicy")
        if o["metadata"]["namespace"] == namespace and o["metadata"]["name"] == name
    ]
    return found


def admitted_pods(objs: list[dict[str, Any]], served: ResolvedModel, **extra: str) -> set[Peer]:
    """Every peer any policy admits to the model's pods (with `extra` labels), on any port."""
    labels = {**served.selector, **extra}
    return {
        peer_of(peer, served.namespace)
        for p in netpol.policies(objs)
        if netpol.selects(p, served.namespace, labels)
        for _, raw in netpol.ingress_rules(p)
        for peer in raw
    }


# ---- 1. controllers through the model namespaces' NetworkPolicies, pod by pod --------------------


def test_each_models_pods_admit_exactly_the_controller_pods_that_call_them():
    """Upstream, per controller: KubeRay calls a RayService's head (dashboard, Serve proxy health); the
    Dynamo 1.4 operator calls no pod of a graph; AIBrix's gateway plugin and controller manager call the
    pods they find by the labels the shared workload shape sets (here the vLLM model)."""
    objs, _ = _serving()
    controllers = {"dynamo-system", "kuberay-system", "aibrix-system", "nim-operator"}
    expected = {
        "qwen3-8b-dynamo": set(),
        "qwen3-32b-disagg": set(),
        "qwen3-8b-lora": {Peer.of(peers.AIBRIX_GATEWAY_PLUGIN), Peer.of(peers.AIBRIX_CONTROLLER)},
        "qwen3-4b-ray": set(),
        # vLLM loads its adapters itself: AIBrix's gateway plugin reads its metrics, no adapter controller.
        "qwen3-8b-native": {Peer.of(peers.AIBRIX_GATEWAY_PLUGIN)},
    }
    # AIBrix's Gateway's Envoy proxies run in aibrix-system too (GatewayNamespace mode): the route's
    # callers, not a controller (the front door's tests hold them to exposed models' serving ports).
    proxies = Peer.of(peers.proxies(serving_stack().route_parent))
    assert proxies.namespace == "aibrix-system"

    def from_controllers(found: set[Peer]) -> set[Peer]:
        return {p for p in found if p.namespace in controllers and p != proxies}

    for served in serving_stack().models:
        got = from_controllers(admitted_pods(objs, served))
        assert got == expected[served.name], f"{served.name}: {sorted(map(str, got))}"
        head = from_controllers(admitted_pods(objs, served, **peers.RAY_HEAD_LABELS))
        ray = peers.KUBERAY_OPERATOR.namespace in serving_stack().controller_namespaces.get(served.engine, ())
        assert head == expected[served.name] | ({Peer.of(peers.KUBERAY_OPERATOR)} if ray else set()), served.name
    assert all(p.labels for p in admitted_pods(objs, resolved_model(serving_stack(), "qwen3-8b-lora"))), "pods only"


def test_model_pods_call_nothing_in_the_platform_namespaces():
    objs, _ = _serving()
    rules = policy(objs, "inference", "egress")["egress"]

    def namespaces(rule: dict[str, Any]) -> set[str]:
        return {p.get("namespaceSelector", {}).get("matchLabels", {}).get(isolation.NS_LABEL) for p in rule["to"]}

    assert not [r for r in rules if namespaces(r) - {None, "kube-system"}], (
        "Dynamo 1.4's frontend and workers talk over TCP and ZMQ inside the namespace: no NATS, no etcd"
    )
    assert {"to": [{"podSelector": {}}]} in rules, "peers of one model reach each other"


def test_the_platform_wiring_follows_the_enabled_add_ons():
    sections = serving_sections()
    sections["addons"]["aibrix"] = {"enabled": False}
    sections["addons"]["nimOperator"] = {"enabled": True}
    for model in sections["models"]:
        model.pop("adapters", None)
        model.pop("autoscaling", None)
    stack = serving_stack(sections)
    assert stack.controller_namespaces == {"dynamo": ("dynamo-system",), "ray-serve": ("kuberay-system",)}
    assert resolved_stack(sections_of(DEV)).controller_namespaces == {}, "no platform, no opening"


def test_a_model_namespace_egress_is_dns_itself_https_and_the_pod_identity_agent(dev):
    stack = resolved_stack(dev)
    policies = isolation.namespace_policies(
        [s for s in stack.models if s.namespace == "inference"],
        isolation.Callers(proxies=peers.proxies(stack.route_parent), controllers={"vllm": ("aibrix-system",)}),
    )
    egress = next(p for p in policies if p["metadata"]["name"] == "egress")
    assert len(egress["spec"]["egress"]) == 4, "DNS, the namespace, 443 and the Pod Identity agent only"


# ---- 2. AIBrix on Envoy Gateway ----------------------------------------------------------------


def test_envoy_gateway_accepts_envoy_patch_policies_only_when_aibrix_needs_them(dev):
    plain = resolved_stack(dev)
    values = envoy_gateway_values(prod=plain.prod, aibrix=plain.platform.addons.aibrix.enabled)
    assert "extensionApis" not in values["config"]["envoyGateway"], "off unless AIBrix is on"
    _, releases = _serving()
    values = releases["envoy-gateway"]["values"]
    assert values["config"]["envoyGateway"]["extensionApis"] == {"enableEnvoyPatchPolicy": True}, (
        "AIBrix's chart routes through an EnvoyPatchPolicy, which Envoy Gateway ignores unless enabled"
    )


def test_aibrix_envoy_service_gets_the_front_doors_load_balancer_annotations():
    _, releases = _serving()
    service = releases["aibrix"]["values"]["gateway"]["envoyProxy"]["service"]
    gateway = serving_stack().platform.gateway
    assert service["annotations"] == load_balancer_annotations(gateway), "the same NLB as our gateway"
    assert service["type"] == "LoadBalancer"
    assert "patch" not in service, "no certificate in the example: the listener stays plain HTTP on 80"


def test_with_an_acm_certificate_aibrix_gateway_answers_tls_on_443_and_not_plain_http():
    sections = serving_sections()
    sections["gateway"]["tls"] = {"certificateArn": ACM}
    stack = serving_stack(sections)
    platform = stack.platform
    annotations = load_balancer_annotations(platform.gateway)
    values = aibrix_values(platform.addons.aibrix, platform.gateway, stack.images, annotations)
    service = values["gateway"]["envoyProxy"]["service"]
    annotations = service["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == ACM
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "443"
    ports = service["patch"]["value"]["spec"]["ports"]
    assert {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 10080} in ports, (
        "443 on the NLB (TLS) onto Envoy's container port for AIBrix's HTTP listener on 80"
    )
    assert {"port": 80, "$patch": "delete"} in ports, "no plain-HTTP port for keys to cross in clear text"
    assert service["patch"]["type"] == "StrategicMerge"


# ---- 3. LiteLLM behind the gateway -------------------------------------------------------------


def test_litellm_is_routed_through_the_front_door_with_authentication():
    objs, _ = _serving()
    (route,) = [r for r in of_kind(objs, "HTTPRoute") if r["metadata"]["name"] == litellm.NAME]
    parent = serving_stack().route_parent
    assert route["spec"]["parentRefs"] == [
        {"name": parent.name, "namespace": parent.namespace, "sectionName": parent.listener}
    ]
    prefixes = {m["path"]["value"] for rule in route["spec"]["rules"] for m in rule["matches"]}
    assert prefixes == {f"/litellm{p}" for p in litellm.ROUTE_PATHS}, "only the OpenAI paths, never the admin API"
    backends = {(b["namespace"], b["name"], b["port"]) for rule in route["spec"]["rules"] for b in rule["backendRefs"]}
    assert backends == {(LITELLM_NAMESPACE, litellm.NAME, litellm.PORT)}
    auth = [
        p
        for p in of_kind(objs, "SecurityPolicy")
        if {"kind": "HTTPRoute", "name": litellm.NAME, "group": "gateway.networking.k8s.io"} in p["spec"]["targetRefs"]
    ]
    assert len(auth) == 1 and auth[0]["metadata"]["namespace"] == parent.namespace, "no route without a policy"
    grants = [g for g in of_kind(objs, "ReferenceGrant") if g["metadata"]["namespace"] == LITELLM_NAMESPACE]
    assert [t["name"] for g in grants for t in g["spec"]["to"]] == [litellm.NAME], (
        "the route may reach that one Service"
    )


def test_litellm_has_no_route_when_it_is_off():
    objs = stack_manifests(DEV)
    assert not [r for r in of_kind(objs, "HTTPRoute") if r["metadata"]["name"] == litellm.NAME]


def test_litellm_is_scraped_with_its_master_key_when_monitoring_is_on():
    objs, _ = _serving()
    addon = serving_stack().platform.addons.litellm
    (monitor,) = [m for m in of_kind(objs, "PodMonitor") if m["metadata"]["namespace"] == LITELLM_NAMESPACE]
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics" and endpoint["port"] == "http"
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": addon.master_key_secret, "key": litellm.MASTER_KEY_KEY},
    }, "LiteLLM's /metrics requires a key by default (1.85+); the key comes from the existing Secret"
    router = yaml.safe_load(_router_text(objs))
    assert router["litellm_settings"]["callbacks"] == ["prometheus"], "the proxy exports /metrics only when asked"


def test_litellm_exports_no_metrics_and_gets_no_monitor_without_monitoring():
    sections = serving_sections()
    sections["addons"]["monitoring"] = {"enabled": False}
    for model in sections["models"]:
        model.pop("slo", None)  # alerted on by Prometheus: refused without monitoring
        if model.get("autoscaling", {}).get("owner") == "keda":
            model.pop("autoscaling")  # KEDA's trigger queries Prometheus: refused without monitoring
    stack = serving_stack(sections)
    addons = stack.platform.addons
    router = litellm.router_config(addons.litellm, stack.models, addons.monitoring.enabled)
    assert "callbacks" not in router["litellm_settings"]


def _router_text(objs: list[dict[str, Any]]) -> str:
    (cm,) = [
        o
        for o in of_kind(objs, "ConfigMap")
        if o["metadata"]["namespace"] == LITELLM_NAMESPACE and o["metadata"]["name"] == f"{litellm.NAME}-config"
    ]
    return str(cm["data"]["config.yaml"])
