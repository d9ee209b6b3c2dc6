"""The monitoring namespace's own NetworkPolicies (components/monitoring/policies.py): default-deny both
ways, then each kube-prometheus-stack pod (and the adapter and the DCGM exporter) admits only its
callers, each only when what calls it runs; nothing at all beside an existing Prometheus."""

from __future__ import annotations

from typing import Any

from components import peers
from components.monitoring.policies import monitoring_policies
from stacks.config.cluster import Vpc
from stacks.resolved import MONITORING_NAMESPACE, ResolvedStack
from tests.builders import resolved_stack, sourced
from tests.netpol import Peer, admitted


def _policies(stack: ResolvedStack) -> list[dict[str, Any]]:
    assert stack.cluster is not None
    return monitoring_policies(
        stack.platform.addons,
        accelerators=stack.platform.accelerators,
        adapter=stack.prometheus_adapter is not None,
        blocks=stack.cluster.vpc.address_blocks,
    )


def _by_name(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"] for o in objs}


def _on(objs: list[dict[str, Any]], pods: peers.Pods, port: int) -> set[Peer]:
    return admitted(objs, MONITORING_NAMESPACE, pods.labels, port)


def test_the_namespace_denies_both_ways_and_each_component_has_its_own_policy(dev):
    objs = _policies(resolved_stack(dev))
    assert all(o["metadata"]["namespace"] == MONITORING_NAMESPACE for o in objs)
    names = _by_name(objs)
    assert names["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    assert set(names) == {
        "default-deny",
        "prometheus",
        "alertmanager",
        "prometheus-operator",
        "prometheus-operator-admission",
        "kube-state-metrics",
        "grafana",
        "dcgm-exporter",
        "prometheus-adapter",
    }
    assert all(s["policyTypes"] == ["Ingress", "Egress"] for s in names.values()), "egress is limited too"


def test_an_existing_prometheus_gets_nothing_in_its_namespace(dev):
    dev["addons"]["monitoring"] |= {"existingPrometheus": True, "prometheusUrl": "http://prometheus.monitoring:9090"}
    stack = resolved_stack(dev)
    assert monitoring_policies(stack.platform.addons, accelerators=frozenset({"nvidia"}), adapter=True, blocks=()) == []


def test_prometheus_is_queried_only_by_grafana_the_adapter_keda_and_itself(dev):
    objs = _policies(resolved_stack(dev))
    prom = Peer.of(peers.PROMETHEUS)
    assert _on(objs, peers.PROMETHEUS, 9090) == {prom, Peer.of(peers.GRAFANA), Peer.of(peers.PROMETHEUS_ADAPTER)}
    assert _on(objs, peers.PROMETHEUS, 8080) == {prom}, "its config reloader's metrics"
    dev["addons"]["keda"] = {"enabled": True}
    dev["addons"]["monitoring"]["grafana"] = False
    with_keda = _policies(resolved_stack(dev))
    assert Peer.of(peers.KEDA_OPERATOR) in _on(with_keda, peers.PROMETHEUS, 9090), "KEDA's Prometheus triggers"
    assert Peer.of(peers.GRAFANA) not in _on(with_keda, peers.PROMETHEUS, 9090), "no Grafana, no opening"
    assert "grafana" not in _by_name(with_keda)


def test_prometheus_scrapes_every_pod_and_the_nodes_and_reads_the_api_server(dev):
    stack = resolved_stack(dev)
    assert stack.cluster is not None
    egress = _by_name(_policies(stack))["prometheus"]["egress"]
    assert peers.DNS in egress
    assert {"to": [{"namespaceSelector": {}}]} in egress, "PodMonitors of any namespace; each target admits it"
    blocks = [{"ipBlock": {"cidr": c}} for c in stack.cluster.vpc.address_blocks]
    assert {"to": blocks, "ports": peers.tcp(10250, 9100)} in egress, "the kubelet and the node exporter"
    assert peers.to_api_server(stack.cluster.vpc.address_blocks) in egress


def test_the_api_server_alone_reaches_the_webhook_and_the_adapter_from_the_vpcs_blocks(dev):
    stack = resolved_stack(dev)
    assert stack.cluster is not None
    objs = _policies(stack)
    api = {Peer(cidr=c) for c in stack.cluster.vpc.address_blocks}
    assert api == {Peer(cidr=dev["cluster"]["vpc"]["cidr"])}, "the created VPC's block"
    assert _on(objs, peers.PROMETHEUS_OPERATOR, 10250) == api | {Peer.of(peers.PROMETHEUS)}
    assert _on(objs, peers.PROMETHEUS_ADAPTER, 6443) == api
    assert _on(objs, peers.PROMETHEUS_ADAPTER, 9090) == set()
    subnets = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    adopted = Vpc.model_validate({"id": "vpc-0123456789abcdef0", "privateSubnetIds": subnets})
    assert adopted.address_blocks == ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"), "its block is not on file"


def test_the_api_servers_address_is_its_service_and_its_endpoints():
    rule = peers.to_api_server(["10.42.0.0/16"])
    cidrs = [p["ipBlock"]["cidr"] for p in rule["to"]]
    assert cidrs == ["10.100.0.1/32", "172.20.0.1/32", "10.42.0.0/16"], "either default Service block's first address"
    assert rule["ports"] == peers.tcp(443)


def test_alertmanager_hears_prometheus_and_grafana_and_sends_only_when_configured(dev):
    objs = _policies(resolved_stack(dev))
    assert _on(objs, peers.ALERTMANAGER, 9093) == {Peer.of(peers.PROMETHEUS), Peer.of(peers.GRAFANA)}
    assert _by_name(objs)["alertmanager"]["egress"] == [peers.DNS], "the chart's default receiver sends nothing"
    dev["addons"]["monitoring"]["alertmanagerConfigSecret"] = "alertmanager-config"
    egress = _by_name(_policies(resolved_stack(sourced(dev))))["alertmanager"]["egress"]
    assert {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": peers.tcp(443)} in egress, "receivers over HTTPS"


def test_grafana_reads_prometheus_and_alertmanager_and_is_scraped(dev):
    spec = _by_name(_policies(resolved_stack(dev)))["grafana"]
    assert peers.to([peers.PROMETHEUS], [9090], MONITORING_NAMESPACE) in spec["egress"]
    assert peers.to([peers.ALERTMANAGER], [9093], MONITORING_NAMESPACE) in spec["egress"]
    assert _on(_policies(resolved_stack(dev)), peers.GRAFANA, 3000) == {Peer.of(peers.PROMETHEUS)}


def test_the_dcgm_exporter_answers_prometheus_and_the_dynamo_operator_only_when_dynamo_runs(dev):
    objs = _policies(resolved_stack(dev))
    assert _on(objs, peers.DCGM_EXPORTER, 9400) == {Peer.of(peers.PROMETHEUS)}
    assert _by_name(objs)["dcgm-exporter"]["egress"] == [], "it mounts no token and calls nothing"
    dev["addons"]["dynamo"] = {"enabled": True}
    dynamo = _policies(resolved_stack(dev))
    assert Peer.of(peers.DYNAMO_OPERATOR) in _on(dynamo, peers.DCGM_EXPORTER, 9400), "a graph request's GPU discovery"


def test_the_certificate_jobs_and_kube_state_metrics_only_call_the_api_server(dev):
    stack = resolved_stack(dev)
    assert stack.cluster is not None
    names = _by_name(_policies(stack))
    api = [peers.DNS, peers.to_api_server(stack.cluster.vpc.address_blocks)]
    assert names["prometheus-operator-admission"]["ingress"] == [], "run-once Jobs: nothing calls them"
    assert names["prometheus-operator-admission"]["egress"] == api
    assert names["kube-state-metrics"]["egress"] == api
    assert _on(_policies(stack), peers.KUBE_STATE_METRICS, 8080) == {Peer.of(peers.PROMETHEUS)}
