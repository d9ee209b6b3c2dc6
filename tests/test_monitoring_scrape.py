"""Scraping and alerting: a PodMonitor per workload on its engine's real path and port, exporters on
accelerator nodes, SLO alerts only as the stack states them."""

from __future__ import annotations

from typing import Any

import pytest

from components import peers
from components.monitoring.collection import (
    dcgm_exporter_values,
    neuron_monitor,
    pod_monitor,
    prometheus_rule,
    prometheus_stack_values,
)
from stacks.errors import ConfigError
from stacks.load import ROOT
from stacks.pipeline import check_sections
from stacks.versions import IMAGES, chart
from tests.builders import resolved_stack, sourced
from tests.conftest import render_sections, rendered_stack

FRONTDOOR = ROOT / "stacks" / "examples" / "Pulumi.frontdoor.yaml"


def model(engine: str, **extra: Any) -> dict[str, Any]:
    blocks: dict[str, Any] = {
        "nim": {"nim": {"profile": "abc", "modelPath": "/models/prepared"}},
        "tgi": {"tgi": {"acceptMaintenanceMode": True}},
    }
    return {
        "name": f"m-{engine}",
        "engine": engine,
        "model": "org/model",
        "pool": "gpu",
        **blocks.get(engine, {}),
        **extra,
    }


def served_of(dev: dict[str, Any], engine: str, **extra: Any):
    dev["models"] = [model(engine, **extra)]
    if engine == "ray-serve":
        dev["addons"]["kuberay"] = {"enabled": True}
    if engine == "dynamo":
        dev["addons"]["dynamo"] = {"enabled": True}
    served = resolved_stack(sourced(dev)).models[0]  # a NIM model's pull Secret, from Pulumi secrets
    return served.config, served


@pytest.mark.parametrize(
    ("engine", "port", "path"),
    [
        ("vllm", 8000, "/metrics"),
        ("sglang", 30000, "/metrics"),
        ("nim", 8000, "/v1/metrics"),
        ("tgi", 8080, "/metrics"),
        ("dynamo", 8000, "/metrics"),
        ("ray-serve", 8080, "/metrics"),
    ],
)
def test_each_workload_is_scraped_on_its_engines_real_port_and_path(dev, engine, port, path):
    _, served = served_of(dev, engine)
    monitor = pod_monitor(served)
    assert monitor is not None and monitor["kind"] == "PodMonitor"
    assert monitor["spec"]["podMetricsEndpoints"] == [{"portNumber": port, "path": path, "interval": "15s"}]
    # A Dynamo graph's Frontend alone: its workers carry the model's label but export none of these series,
    # and nothing listens on the Frontend's port there (a target that is always down).
    role = {"app.kubernetes.io/component": "frontend"} if engine == "dynamo" else {}
    assert monitor["spec"]["selector"] == {"matchLabels": {**served.selector, **role}}
    assert monitor["metadata"]["namespace"] == served.namespace


def test_ollama_is_not_scraped_because_it_has_no_metrics_endpoint(dev):
    _, served = served_of(dev, "ollama")
    assert pod_monitor(served) is None


def test_kube_prometheus_stack_is_pinned_and_selects_every_monitor(dev_render):
    (stack,) = [r for r in dev_render.releases() if r["name"] == "kube-prometheus-stack"]
    assert stack["version"] == chart("kube-prometheus-stack").version
    spec = stack["values"]["prometheus"]["prometheusSpec"]
    for key in (
        "serviceMonitorSelectorNilUsesHelmValues",
        "podMonitorSelectorNilUsesHelmValues",
        "ruleSelectorNilUsesHelmValues",
    ):
        assert spec[key] is False, f"{key}: the platform's monitors are not labelled for the chart's release"


def test_an_existing_prometheus_gets_only_monitors_rules_and_dashboards():
    # Wiring, on the front-door example (the cluster's own Prometheus, with its URL for the adapter).
    rendered = rendered_stack(FRONTDOOR)
    releases = {r["name"] for r in rendered.releases()}
    assert "kube-prometheus-stack" not in releases, "the cluster's Prometheus is used, none installed"
    assert "prometheus-adapter" in releases, "the example names its prometheusUrl, so HPAs get an adapter on it"
    kinds = {o["kind"] for o in rendered.manifests()}
    assert {"PodMonitor", "PrometheusRule", "ConfigMap"} <= kinds


def test_an_existing_prometheus_without_its_url_gets_no_prometheus_adapter(dev):
    # The Monitoring component installs prometheus-adapter exactly when the resolved stack names one.
    dev["addons"]["monitoring"] = {"enabled": True, "existingPrometheus": True}
    for m in dev["models"]:
        m.pop("autoscaling", None)  # an HPA needs prometheus-adapter, which needs prometheusUrl here
    assert resolved_stack(dev).prometheus_adapter is None, "no Prometheus to query"
    releases = {r["name"] for r in render_sections(dev).releases()}
    assert not any("prometheus-adapter" in r for r in releases), releases


def test_dcgm_runs_on_gpu_nodes_tolerating_their_taint():
    values = dcgm_exporter_values()
    assert values["nodeSelector"] == {"inference-platform.io/accelerator": "nvidia"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]


def test_neuron_monitor_runs_on_neuron_nodes_and_is_scraped():
    daemonset, monitor, _ = neuron_monitor(IMAGES["neuron-monitor"], peers.PROMETHEUS)
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"inference-platform.io/accelerator": "neuron"}
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    container = pod["containers"][0]
    assert container["command"] == ["/opt/bin/entrypoint.sh"], "the image's own entrypoint, as AWS's DaemonSet"
    assert container["args"][:2] == ["--port", "8000"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 8000}]
    assert monitor["spec"]["selector"] == daemonset["spec"]["selector"]
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_slo_alerts_use_the_stacks_thresholds_on_the_engines_metric(dev):
    m, served = served_of(dev, "vllm", slo={"ttftSeconds": 2.0, "itlSeconds": 0.1, "p": 0.95})
    rule = prometheus_rule(m, served)
    assert rule is not None
    alerts = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert set(alerts) == {"TimeToFirstTokenSloMissed", "InterTokenLatencySloMissed"}, "only the stated objectives"
    ttft = alerts["TimeToFirstTokenSloMissed"]["expr"]
    assert ttft.startswith("histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{")
    assert ttft.endswith("> 2"), "seconds compared with seconds"
    assert alerts["TimeToFirstTokenSloMissed"]["for"] == "10m"


def test_a_seconds_objective_on_a_millisecond_metric_is_converted(dev):
    m, served = served_of(dev, "ray-serve", slo={"e2eSeconds": 1.5})
    rule = prometheus_rule(m, served)
    assert rule is not None
    (alert,) = rule["spec"]["groups"][0]["rules"]
    assert "ray_serve_http_request_latency_ms_bucket" in alert["expr"] and alert["expr"].endswith("> 1500")


def test_no_slo_no_rule(dev):
    m, served = served_of(dev, "vllm")
    assert prometheus_rule(m, served) is None, "no universal thresholds"


def test_an_objective_the_engine_cannot_measure_is_refused(dev):
    dev["models"] = [model("tgi", slo={"ttftSeconds": 1.0})]
    with pytest.raises(ConfigError) as info:
        check_sections(dev, "us-west-2")
    assert any(
        str(p).startswith("inference-platform:models[0].slo.ttftSeconds: engine tgi exports no metric")
        for p in info.value.problems
    )


def test_an_slo_without_monitoring_is_refused(dev):
    dev["addons"]["monitoring"] = {"enabled": False}
    dev["models"][0]["slo"] = {"ttftSeconds": 1.0}
    with pytest.raises(ConfigError) as info:
        check_sections(dev, "us-west-2")
    assert any(
        str(p).startswith("inference-platform:models[0].slo: an slo is alerted on by Prometheus")
        for p in info.value.problems
    )


def test_an_empty_slo_is_refused(dev):
    dev["models"][0]["slo"] = {"p": 0.9}
    with pytest.raises(ConfigError) as info:
        check_sections(dev, "us-west-2")
    assert any("at least one of ttftSeconds" in str(p) for p in info.value.problems)


# ---- structure of the kinds whose CRD is not on file (stacks/conformance.CRDS_NOT_ON_FILE) ----------


def test_rendered_podmonitors_and_rules_have_the_shape_the_prometheus_operator_expects(dev_render):
    objs = dev_render.manifests()
    monitors = [o for o in objs if o["kind"] == "PodMonitor"]
    rules = [o for o in objs if o["kind"] == "PrometheusRule"]
    assert monitors and rules
    allowed_endpoint = {"port", "portNumber", "path", "interval", "relabelings"}
    for mon in monitors:
        assert mon["apiVersion"] == "monitoring.coreos.com/v1"
        assert set(mon["spec"]) <= {"selector", "podMetricsEndpoints", "podTargetLabels"}
        assert mon["spec"]["selector"]["matchLabels"], "a PodMonitor without a selector scrapes every pod"
        for ep in mon["spec"]["podMetricsEndpoints"]:
            assert set(ep) <= allowed_endpoint and ({"port", "portNumber"} & set(ep)), ep
            assert ep["path"].startswith("/")
            for relabel in ep.get("relabelings", []):  # an endpoint picker's: the model it picks for
                assert relabel["action"] == "replace" and relabel["targetLabel"] == "inference_platform_io_model"
    for rule in rules:
        for group in rule["spec"]["groups"]:
            assert set(group) == {"name", "rules"}
            for r in group["rules"]:
                if "record" in r:  # a recording rule (the cost rules): a name, an expression, maybe labels
                    assert set(r) <= {"record", "expr", "labels"} and {"record", "expr"} <= set(r), r
                    continue
                assert set(r) == {"alert", "expr", "for", "labels", "annotations"}
                assert r["for"][-1] in "smh"


def test_the_dev_stack_runs_an_exporter_for_each_accelerator_it_has(dev_render):
    releases = {r["name"]: r for r in dev_render.releases()}
    assert releases["dcgm-exporter"]["version"] == chart("dcgm-exporter").version, "GPU pool: DCGM exporter"
    kinds = {(o["kind"], o["metadata"]["name"]) for o in dev_render.manifests()}
    assert ("DaemonSet", "neuron-monitor") in kinds, "Neuron pool: neuron-monitor"
    assert ("PodMonitor", "neuron-monitor") in kinds


def test_grafanas_admin_comes_from_an_existing_secret_when_named(dev):
    default = prometheus_stack_values(resolved_stack(dev).platform.addons.monitoring)["grafana"]
    assert "admin" not in default, "the chart generates a random password and keeps it across upgrades"
    dev["addons"]["monitoring"] = {"enabled": True, "grafanaAdminSecret": "grafana-admin"}
    values = prometheus_stack_values(resolved_stack(sourced(dev)).platform.addons.monitoring)["grafana"]
    assert values["admin"] == {
        "existingSecret": "grafana-admin",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }


def test_neuron_monitor_is_reachable_only_by_the_scraper_and_calls_nothing():
    daemonset, _, policy = neuron_monitor(IMAGES["neuron-monitor"], peers.PROMETHEUS)
    assert policy["kind"] == "NetworkPolicy"
    assert policy["spec"]["podSelector"]["matchLabels"] == daemonset["spec"]["selector"]["matchLabels"]
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["from"] == [{"podSelector": {"matchLabels": dict(peers.PROMETHEUS.labels)}}], (
        "Prometheus's own pods (the policy is in their namespace), not every pod of `monitoring`"
    )
    assert ingress["ports"] == [{"protocol": "TCP", "port": 8000}]
    _, _, existing = neuron_monitor(IMAGES["neuron-monitor"], peers.ANY_PROMETHEUS)
    assert existing["spec"]["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    ], "an existing Prometheus: any the Prometheus Operator runs in monitoring, still pods only"
    assert policy["spec"]["egress"] == [] and "Egress" in policy["spec"]["policyTypes"]
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["containers"][0]["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": 8000}
