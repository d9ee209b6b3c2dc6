"""Queue-based autoscaling works end to end: an HPA asks custom.metrics.k8s.io for the engine's own
gauge, prometheus-adapter serves exactly that name from the series the PodMonitor scrapes, and a
stack that has no adapter is refused instead of rendering an HPA that never scales."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.engines import ENGINES
from components.monitoring.collection import prometheus_adapter_values
from stacks.errors import ConfigError
from stacks.exports import export_platform
from stacks.load import ROOT
from stacks.metrics import custom_metric
from stacks.pipeline import check_sections
from stacks.resolved import PROMETHEUS_SERVICE
from tests.builders import engine_objects, resolved_stack
from tests.conftest import ALL_STACKS, rendered_stack, sections_of, stack_manifests

P = "inference-platform:"
FRONTDOOR = ROOT / "stacks" / "examples" / "Pulumi.frontdoor.yaml"
# The engines the Monitoring component has prometheus-adapter serve: every engine with a workload
# of the platform's own (team stacks' HPAs read the same adapter).
WORKLOAD_ENGINES = [e.facts for e in ENGINES.values() if e.facts.platform_workload]
ENGINE_METRICS = {name: e.facts.metrics for name, e in ENGINES.items()}


def adapter_rules(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]["as"]: r for r in values["rules"]["custom"]}


def hpa_metric_names(manifests: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Every HPA's (and NIMService-made HPA's) Pods metric names, by object."""
    found: dict[str, list[str]] = {}
    for m in manifests:
        if m["kind"] == "HorizontalPodAutoscaler":
            spec = m["spec"]
        elif m["kind"] == "NIMService" and m["spec"].get("scale", {}).get("enabled"):
            spec = m["spec"]["scale"]["hpa"]
        else:
            continue
        found[f"{m['kind']}/{m['metadata']['name']}"] = [x["pods"]["metric"]["name"] for x in spec["metrics"]]
    return found


def test_the_dev_stack_installs_prometheus_adapter_on_its_own_prometheus(dev_render):
    releases = {r["name"]: r for r in dev_render.releases()}
    adapter = releases["prometheus-adapter"]
    assert adapter["namespace"] == "monitoring" and adapter["version"] == "5.3.0"
    # kube-prometheus-stack names its Prometheus Service <release>-prometheus when the release name
    # contains the chart name (templates/_helpers.tpl fullname): the adapter must query that one.
    assert releases["kube-prometheus-stack"]["name"] == PROMETHEUS_SERVICE.removesuffix("-prometheus")
    assert adapter["values"]["prometheus"] == {
        "url": "http://kube-prometheus-stack-prometheus.monitoring.svc",
        "port": 9090,
        "path": "",
    }
    assert adapter["values"]["rules"]["default"] is False, "no container CPU/memory rules nothing uses"
    assert adapter["values"]["replicas"] == 2 and adapter["values"]["podDisruptionBudget"]["enabled"] is True


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_hpa_metric_is_served_by_an_adapter_rule_on_the_engines_own_series(path):
    rules = adapter_rules(prometheus_adapter_values("http://prometheus", 9090, WORKLOAD_ENGINES))
    engine_gauges = {m.name for table in ENGINE_METRICS.values() for m in table.values() if m.kind == "gauge"}
    for obj, names in hpa_metric_names(stack_manifests(path)).items():
        for name in names:
            assert name in rules, f"{obj} asks for {name}, which prometheus-adapter does not serve"
            series = rules[name]["seriesQuery"].split('"')[1]
            assert series in engine_gauges and custom_metric(series) == name, (obj, rules[name])


def test_the_adapter_serves_each_series_per_pod_from_the_pod_monitors_labels():
    for name, rule in adapter_rules(prometheus_adapter_values("http://prometheus", 9090, WORKLOAD_ENGINES)).items():
        assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
        assert 'namespace!="",pod!=""' in rule["seriesQuery"]
        assert rule["name"]["as"] == name and ":" not in name, "API resource names cannot contain ':'"
        assert rule["metricsQuery"] == "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"


def test_an_hpa_without_a_metric_scales_on_the_engines_queue_depth(dev):
    names = hpa_metric_names(engine_objects(resolved_stack(dev), "qwen3-8b"))
    assert names["HorizontalPodAutoscaler/qwen3-8b"] == ["vllm_num_requests_waiting"]


def test_an_existing_prometheus_with_a_url_gets_the_adapter_pointed_at_it():
    monitoring = sections_of(FRONTDOOR)["addons"]["monitoring"]
    assert monitoring["existingPrometheus"] is True, "the front-door example runs on the cluster's own Prometheus"
    url = monitoring["prometheusUrl"]
    releases = {r["name"]: r for r in rendered_stack(FRONTDOOR).releases()}
    assert "kube-prometheus-stack" not in releases
    assert releases["prometheus-adapter"]["values"]["prometheus"] == {"url": url, "port": "", "path": ""}


def refusals(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        check_sections(sections, "us-west-2")
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def test_an_hpa_without_prometheus_is_refused(dev):
    dev["addons"]["monitoring"] = {"enabled": False}
    for m in dev["models"]:
        m.pop("slo", None)
    (problem,) = refusals(dev)
    assert problem.startswith(f"{P}models[0].autoscaling.owner:") and "addons.monitoring.enabled: true" in problem


def test_an_hpa_on_an_existing_prometheus_without_its_url_is_refused(dev):
    dev["addons"]["monitoring"] = {"enabled": True, "existingPrometheus": True}
    (problem,) = refusals(dev)
    assert "models[0].autoscaling.owner" in problem and "prometheusUrl" in problem


def test_a_prometheus_url_without_an_existing_prometheus_is_refused(dev):
    dev["addons"]["monitoring"] = {"enabled": True, "prometheusUrl": "http://prometheus.x.svc:9090"}
    (problem,) = refusals(dev)
    assert "addons.monitoring" in problem and "existingPrometheus: true" in problem


def test_the_platform_exports_whether_it_serves_custom_metrics(dev):
    assert export_platform(resolved_stack(dev).platform)["customMetrics"] is True
    off = copy.deepcopy(dev)
    off["addons"]["monitoring"] = {"enabled": True, "existingPrometheus": True}
    for m in off["models"]:
        m.pop("autoscaling", None)
    assert export_platform(resolved_stack(off).platform)["customMetrics"] is False
