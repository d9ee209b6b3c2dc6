"""The callers' pods and ports (components/peers.py) against the pinned charts as they render: every
label a policy selects a caller by is on that caller's pods, every port a policy opens is one the
chart's pods listen on, and every pod the monitoring charts run in `monitoring` is covered by a policy
that admits each port its Services send to.

kube-prometheus-stack's subcharts grafana, kube-state-metrics and prometheus-node-exporter are not in
the chart directory, so the templating turns them off (stacks/charts.py says so); their labels and
ports in components/peers.py come from grafana 11.1.1 and kube-state-metrics 7.1.0 at their tags.
The Prometheus and Alertmanager pods are the operator's: the chart's own Services select them, so
their selectors are the labels the policies must use.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from components import peers
from components.monitoring.policies import monitoring_policies
from components.peers import Pods
from stacks import charts
from stacks.resolved import MONITORING_NAMESPACE
from tests.builders import resolved_stack
from tests.conftest import EXAMPLES, rendered_stack, sections_of
from tests.netpol import admitted, policies, selects

SERVING = next(p for p in EXAMPLES if p.name == "Pulumi.serving.yaml")
PLATFORM = next(p for p in EXAMPLES if p.name == "Pulumi.platform.yaml")
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet", "Job")

pytestmark = pytest.mark.charts


@cache
def _templated(path: Path, release: str) -> tuple[dict[str, Any], ...]:
    root = charts.charts_dir()
    assert root is not None, "the tests that read it carry the charts marker"
    rendered = rendered_stack(path)
    manifests = rendered.manifests()
    found = next(r for r in rendered.releases() if r["name"] == release)
    apis = charts.BASE_API_VERSIONS | {m["apiVersion"] for m in manifests if "/" in m["apiVersion"]}
    chart = charts.template({**found, "skipCrds": True}, root, "1.34", apis, charts.helm())
    assert chart.objects and not chart.problems and chart.skipped is None, (chart.skipped, chart.problems)
    return tuple(chart.objects)


def _workload(objects: tuple[dict[str, Any], ...], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _pod_labels(workload: dict[str, Any]) -> dict[str, str]:
    return workload["spec"]["template"]["metadata"]["labels"]


def _ports(workload: dict[str, Any]) -> dict[str, int]:
    """Container port name (or number as a string) -> number, over the pod's containers."""
    out: dict[str, int] = {}
    for c in workload["spec"]["template"]["spec"]["containers"]:
        for p in c.get("ports", []):
            out[p.get("name") or str(p["containerPort"])] = p["containerPort"]
    return out


# (stack, release, kind, workload name) -> the caller whose pods these are, and the ports the platform's
# policies open on them (to them: their own listeners) or that they call elsewhere (checked by source).
CALLERS: list[tuple[Path, str, str, str, Pods, tuple[int, ...]]] = [
    (SERVING, "kuberay", "Deployment", "kuberay-operator", peers.KUBERAY_OPERATOR, ()),
    (SERVING, "aibrix", "Deployment", "aibrix-controller-manager", peers.AIBRIX_CONTROLLER, ()),
    (SERVING, "aibrix", "Deployment", "aibrix-gateway-plugins", peers.AIBRIX_GATEWAY_PLUGIN, ()),
    (SERVING, "keda", "Deployment", "keda-operator", peers.KEDA_OPERATOR, ()),
    (PLATFORM, "keda-add-ons-http", "Deployment", "keda-add-ons-http-interceptor", peers.INTERCEPTOR, (8080, 9090)),
    (PLATFORM, "keda-add-ons-http", "Deployment", "keda-add-ons-http-external-scaler", peers.HTTP_SCALER, ()),
    (SERVING, "kube-prometheus-stack", "Deployment", "kube-prometheus-stack-operator", peers.PROMETHEUS_OPERATOR,
     (peers.OPERATOR_PORT,)),
    (SERVING, "kube-prometheus-stack", "Job", "kube-prometheus-stack-admission-create", peers.ADMISSION_JOBS, ()),
    (SERVING, "kube-prometheus-stack", "Job", "kube-prometheus-stack-admission-patch", peers.ADMISSION_JOBS, ()),
    (SERVING, "prometheus-adapter", "Deployment", "prometheus-adapter", peers.PROMETHEUS_ADAPTER,
     (peers.ADAPTER_PORT,)),
    (SERVING, "dcgm-exporter", "DaemonSet", "dcgm-exporter", peers.DCGM_EXPORTER, (peers.DCGM_PORT,)),
]  # fmt: skip


@pytest.mark.parametrize(("path", "release", "kind", "name", "pods", "ports"), CALLERS, ids=[c[3] for c in CALLERS])
def test_each_callers_labels_and_ports_are_on_the_pods_its_pinned_chart_renders(path, release, kind, name, pods, ports):
    workload = _workload(_templated(path, release), kind, name)
    assert workload["metadata"]["namespace"] == pods.namespace
    labels = _pod_labels(workload)
    assert dict(pods.labels).items() <= labels.items(), f"{name}: {dict(pods.labels)} not on its pods {labels}"
    assert set(ports) <= set(_ports(workload).values()), f"{name} listens on {_ports(workload)}"


def _service(objects: tuple[dict[str, Any], ...], name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == name]
    return found


def test_prometheus_and_alertmanager_pods_are_selected_by_the_charts_own_service_selectors():
    kps = _templated(SERVING, "kube-prometheus-stack")
    for pods, service, port in (
        (peers.PROMETHEUS, "kube-prometheus-stack-prometheus", peers.PROMETHEUS_PORT),
        (peers.ALERTMANAGER, "kube-prometheus-stack-alertmanager", peers.ALERTMANAGER_PORT),
    ):
        spec = _service(kps, service)["spec"]
        assert dict(pods.labels) == spec["selector"], f"{service}: the operator's pod labels, as the chart selects"
        web = next(p for p in spec["ports"] if p["name"] == "http-web")
        assert web["targetPort"] == port, f"{service}: its web port"
        assert any(p["name"] == "reloader-web" for p in spec["ports"]), "the reloader's port, which the chart scrapes"
    prometheus = next(o for o in kps if o["kind"] == "Prometheus")
    assert prometheus["metadata"]["name"] == peers.PROMETHEUS_NAME
    alertmanager = next(o for o in kps if o["kind"] == "Alertmanager")
    assert alertmanager["metadata"]["name"] == peers.ALERTMANAGER_NAME
    assert alertmanager["spec"].get("replicas", 1) == 1, "one Alertmanager: no cluster port (9094) to open"


def _monitoring_pods(path: Path) -> list[tuple[str, Mapping[str, str], dict[str, int], bool]]:
    """(name, labels, container ports by name, hostNetwork) of every pod the monitoring charts run in
    `monitoring`, the operator's Prometheus and Alertmanager pods included (their Services' selectors,
    their containers' ports as the Services name them)."""
    out = []
    for release in ("kube-prometheus-stack", "prometheus-adapter", "dcgm-exporter"):
        for o in _templated(path, release):
            if o["kind"] in WORKLOADS and o["metadata"]["namespace"] == MONITORING_NAMESPACE:
                host = bool(o["spec"]["template"]["spec"].get("hostNetwork"))
                out.append((o["metadata"]["name"], _pod_labels(o), _ports(o), host))
    reloader = {"reloader-web": peers.RELOADER_PORT}
    out.append(("prometheus", peers.PROMETHEUS.labels, {"http-web": 9090, **reloader}, False))
    out.append(("alertmanager", peers.ALERTMANAGER.labels, {"http-web": 9093, **reloader}, False))
    return out


def test_every_monitoring_pod_is_covered_and_every_port_its_services_send_to_is_admitted():
    stack = resolved_stack(sections_of(SERVING))
    assert stack.cluster is not None and not stack.platform.addons.monitoring.existing_prometheus
    objects = monitoring_policies(
        stack.platform.addons,
        accelerators=stack.platform.accelerators,
        adapter=stack.prometheus_adapter is not None,
        blocks=stack.cluster.vpc.address_blocks,
    )
    services = [
        o
        for r in ("kube-prometheus-stack", "prometheus-adapter", "dcgm-exporter")
        for o in _templated(SERVING, r)
        if o["kind"] == "Service" and o["metadata"]["namespace"] == MONITORING_NAMESPACE
    ]
    for name, labels, ports, host in _monitoring_pods(SERVING):
        if host:
            continue  # the host network: no NetworkPolicy applies
        mine = [p for p in policies(objects) if p["spec"]["podSelector"] and selects(p, MONITORING_NAMESPACE, labels)]
        assert mine, f"{name}: no policy of its own, so the default deny leaves it nothing"
        for service in services:
            if not service["spec"].get("selector") or not service["spec"]["selector"].items() <= labels.items():
                continue
            for port in service["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                number = ports.get(target) if isinstance(target, str) else target
                assert number is not None, f"{service['metadata']['name']}: {target} is no port of {name}"
                assert admitted(objects, MONITORING_NAMESPACE, labels, number), (
                    f"{name}: {service['metadata']['name']} sends to {number}, which nothing may reach"
                )
