"""The monitoring namespace's NetworkPolicies: default-deny ingress and egress, then exactly what
kube-prometheus-stack and the charts the platform installs beside it (prometheus-adapter, the DCGM
exporter) need, pod by pod. Pure builders; none when the stack uses `existingPrometheus` (the namespace
is then someone else's).

Ingress, read from the charts as rendered (components/peers.py names each chart and version):

| pods                      | port  | from                                                            |
|---------------------------|-------|-----------------------------------------------------------------|
| Prometheus                | 9090  | Prometheus (self-scrape), Grafana, prometheus-adapter, KEDA's   |
|                           |       | operator (its Prometheus triggers)                              |
|                           | 8080  | Prometheus (the config reloader's metrics)                      |
| Alertmanager              | 9093  | Prometheus (alerts, scrape), Grafana (its data source)          |
|                           | 8080  | Prometheus (the config reloader's metrics)                      |
| Prometheus Operator       | 10250 | the API server (admission webhook), Prometheus (metrics)        |
| kube-state-metrics        | 8080  | Prometheus                                                      |
| Grafana                   | 3000  | Prometheus (its ServiceMonitor)                                 |
| prometheus-adapter        | 6443  | the API server (custom.metrics.k8s.io)                          |
| DCGM exporter             | 9400  | Prometheus; the Dynamo operator (a graph request's GPU          |
|                           |       | discovery) when Dynamo runs                                     |
| neuron-monitor            | 8000  | Prometheus (collection.py, its own policy)                      |

The API server is no pod: it calls from the control plane's interfaces in the VPC, so those two ports
admit the cluster's address blocks (`Vpc.address_blocks`); a NetworkPolicy cannot tell the control
plane from a pod there. prometheus-node-exporter runs on the host network, where no NetworkPolicy
applies. Users reach Grafana and Prometheus with `kubectl port-forward`, which the kubelet opens from
the pod's node and the VPC CNI always admits.

Egress: DNS everywhere; the API server (443) for the operator, its certificate Jobs, kube-state-metrics,
Grafana's sidecars and prometheus-adapter; Prometheus and Alertmanager's pods for Grafana and the
adapter; for Prometheus itself every pod of the cluster (PodMonitors and ServiceMonitors of any
namespace name their own ports, and each target's own policy admits only Prometheus's pods) and the
nodes' kubelet (10250), node exporter (9100) and API server endpoints (443); Alertmanager's receivers
over HTTPS (443) when the stack gives its configuration; nothing for the DCGM exporter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stacks.config.addons import AddonsSection
from stacks.naming import MANAGED_BY
from stacks.resolved import MONITORING_NAMESPACE

from .. import peers
from ..acceptance import acceptance_pods
from ..peers import Pods

NS = MONITORING_NAMESPACE


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": NS, "labels": {**MANAGED_BY, "app.kubernetes.io/component": "isolation"}}


def _policy(name: str, pods: Pods, ingress: list[dict[str, Any]], egress: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(name),
        "spec": {
            "podSelector": {"matchLabels": dict(pods.labels)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress,
            "egress": egress,
        },
    }


def default_deny() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("default-deny"),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }


def _from_api_server(ports: Sequence[int], blocks: Sequence[str]) -> dict[str, Any]:
    return {"from": peers.api_server(blocks), "ports": peers.tcp(*ports)}


def prometheus(
    addons: AddonsSection, *, adapter: bool, blocks: Sequence[str], accepted_in: Sequence[str] = ()
) -> dict[str, Any]:
    """Prometheus: queried by Grafana, the adapter, KEDA and the acceptance Jobs of `accepted_in` (their
    metrics step, components/acceptance.py), scraped by itself; it scrapes every pod and the nodes, and
    reads the API server (service discovery)."""
    queriers = [peers.PROMETHEUS]
    if addons.monitoring.grafana:
        queriers.append(peers.GRAFANA)
    if adapter:
        queriers.append(peers.PROMETHEUS_ADAPTER)
    if addons.keda.enabled:
        queriers.append(peers.KEDA_OPERATOR)
    queriers += [acceptance_pods(ns) for ns in accepted_in]
    grants = [(q, (peers.PROMETHEUS_PORT,)) for q in queriers] + [(peers.PROMETHEUS, (peers.RELOADER_PORT,))]
    nodes: dict[str, Any] = {
        "to": [{"ipBlock": {"cidr": c}} for c in blocks],
        "ports": peers.tcp(peers.KUBELET_PORT, peers.NODE_EXPORTER_PORT),
    }
    egress: list[dict[str, Any]] = [peers.DNS, {"to": [{"namespaceSelector": {}}]}, nodes, peers.to_api_server(blocks)]
    return _policy("prometheus", peers.PROMETHEUS, peers.rules(grants, NS), egress)


def alertmanager(addons: AddonsSection) -> dict[str, Any]:
    """Alertmanager: Prometheus sends alerts and scrapes it, Grafana reads it; it sends to its receivers
    over HTTPS when the stack configures any (the chart's default sends nothing)."""
    mon = addons.monitoring
    grants: list[peers.Grant] = [(peers.PROMETHEUS, (peers.ALERTMANAGER_PORT, peers.RELOADER_PORT))]
    if mon.grafana:
        grants.append((peers.GRAFANA, (peers.ALERTMANAGER_PORT,)))
    egress: list[dict[str, Any]] = [peers.DNS]
    if mon.alertmanager_config_secret:
        egress.append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": peers.tcp(443)})
    return _policy("alertmanager", peers.ALERTMANAGER, peers.rules(grants, NS), egress)


def operator(blocks: Sequence[str]) -> list[dict[str, Any]]:
    """The Prometheus Operator (its webhook called by the API server, its metrics scraped) and the
    chart's certificate Jobs, which only talk to the API server."""
    api = [peers.DNS, peers.to_api_server(blocks)]
    ingress = [
        _from_api_server((peers.OPERATOR_PORT,), blocks),
        peers.rule([peers.PROMETHEUS], (peers.OPERATOR_PORT,), NS),
    ]
    return [
        _policy("prometheus-operator", peers.PROMETHEUS_OPERATOR, ingress, api),
        _policy("prometheus-operator-admission", peers.ADMISSION_JOBS, [], api),
    ]


def exporters(addons: AddonsSection, *, accelerators: frozenset[str], blocks: Sequence[str]) -> list[dict[str, Any]]:
    """kube-state-metrics and, when on, Grafana and the DCGM exporter."""
    api = [peers.DNS, peers.to_api_server(blocks)]
    scraped = peers.rule([peers.PROMETHEUS], (peers.KUBE_STATE_METRICS_PORT,), NS)
    out = [_policy("kube-state-metrics", peers.KUBE_STATE_METRICS, [scraped], api)]
    if addons.monitoring.grafana:
        reads = peers.to([peers.PROMETHEUS], (peers.PROMETHEUS_PORT,), NS)
        alerts = peers.to([peers.ALERTMANAGER], (peers.ALERTMANAGER_PORT,), NS)
        ingress = [peers.rule([peers.PROMETHEUS], (peers.GRAFANA_PORT,), NS)]
        out.append(_policy("grafana", peers.GRAFANA, ingress, [*api, reads, alerts]))
    if "nvidia" in accelerators:
        readers = [peers.PROMETHEUS, *([peers.DYNAMO_OPERATOR] if addons.dynamo.enabled else [])]
        out.append(_policy("dcgm-exporter", peers.DCGM_EXPORTER, [peers.rule(readers, (peers.DCGM_PORT,), NS)], []))
    return out


def adapter_policy(blocks: Sequence[str]) -> dict[str, Any]:
    """prometheus-adapter: the API server's aggregation layer calls it; it queries Prometheus."""
    ingress = [_from_api_server((peers.ADAPTER_PORT,), blocks)]
    egress = [peers.DNS, peers.to_api_server(blocks), peers.to([peers.PROMETHEUS], (peers.PROMETHEUS_PORT,), NS)]
    return _policy("prometheus-adapter", peers.PROMETHEUS_ADAPTER, ingress, egress)


def monitoring_policies(
    addons: AddonsSection,
    *,
    accelerators: frozenset[str],
    adapter: bool,
    blocks: Sequence[str],
    accepted_in: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every policy of the monitoring namespace, or none with an existing Prometheus."""
    if addons.monitoring.existing_prometheus:
        return []
    objs = [
        default_deny(),
        prometheus(addons, adapter=adapter, blocks=blocks, accepted_in=accepted_in),
        alertmanager(addons),
        *operator(blocks),
        *exporters(addons, accelerators=accelerators, blocks=blocks),
    ]
    if adapter:
        objs.append(adapter_policy(blocks))
    return objs
