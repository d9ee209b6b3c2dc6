"""Network isolation of the model namespaces: deny by default, then only gateway, scraper and peers."""

from __future__ import annotations

from typing import Any

from components.gateway import isolation, picker
from stacks.resolved import EG_NAMESPACE
from tests.builders import resolved_stack


def policies(objs: list[dict[str, Any]], namespace: str) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o["spec"]
        for o in objs
        if o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] == namespace
    }


def sources(rule: dict[str, Any]) -> set[str]:
    out = set()
    for peer in rule["from"]:
        ns = peer.get("namespaceSelector", {}).get("matchLabels", {}).get(isolation.NS_LABEL)
        out.add(ns or "same-namespace")
    return out


def test_every_model_namespace_denies_ingress_and_egress_by_default(dev_render, dev):
    objs = dev_render.manifests()
    namespaces = {m.namespace for m in resolved_stack(dev).models}
    for ns in namespaces:
        deny = policies(objs, ns)["default-deny"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, ns


def test_a_model_admits_the_gateway_on_its_port_the_scraper_on_its_metrics_port_and_its_peers(dev_render, dev):
    objs = dev_render.manifests()
    for served in resolved_stack(dev).models:
        spec = policies(objs, served.namespace)[f"{served.name}-ingress"]
        assert spec["podSelector"] == {"matchLabels": served.selector}
        by_source = {frozenset(sources(r)): r for r in spec["ingress"]}
        gateway = by_source[frozenset({EG_NAMESPACE})]
        assert gateway["ports"] == [{"protocol": "TCP", "port": served.port}], "gateway reaches the serving port only"
        assert gateway["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "proxy"
        scraper = by_source[frozenset({"monitoring"})]
        assert scraper["ports"] == [{"protocol": "TCP", "port": served.metrics_port}], "scraper: metrics port only"
        peers = [r for r in spec["ingress"] if r["from"] == [{"podSelector": {"matchLabels": served.selector}}]]
        assert len(peers) == 1 and "ports" not in peers[0], "the model's own pods reach each other"
        others = [r for r in spec["ingress"] if sources(r) == {"same-namespace"} and r not in peers]
        assert all(r["from"] == [{"podSelector": {"matchLabels": picker.pod_labels(served)}}] for r in others), (
            "besides its peers, only its endpoint picker comes from the namespace"
        )


def test_an_unexposed_model_gets_no_gateway_ingress(dev):
    dev["models"][0]["expose"] = False
    del dev["models"][0]["routing"]  # routing needs the route
    served = resolved_stack(dev).models[0]
    spec = isolation.model_ingress(served, gateway_namespaces=[EG_NAMESPACE], scraper_namespace=None)
    assert all(EG_NAMESPACE not in sources(r) for r in spec["spec"]["ingress"])


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


def test_a_serving_platform_controller_is_admitted_when_the_wiring_names_its_namespace(dev):
    served = resolved_stack(dev).models[0]
    spec = isolation.model_ingress(
        served, gateway_namespaces=[], scraper_namespace=None, platform_namespaces=["kuberay-system"]
    )
    assert {"kuberay-system"} in [sources(r) for r in spec["spec"]["ingress"]]
