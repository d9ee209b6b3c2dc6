"""Scaling and benchmark observability per model (issue 17, item 6): a dashboard of replicas against
queue depth, the ceiling, scale events, the scaler's health and cold starts, the latest benchmark
verdict beside the SLO; alerts only where their signal exists. Builder-level: resolved stacks, the
pure builders of components/monitoring/autoscaling.py."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from components.autoscaling.keda import queue_query, scaled_objects
from components.benchmark import job_name
from components.engines import ENGINES
from components.monitoring import autoscaling
from components.monitoring.dashboards import dashboard_configmap
from stacks.load import ROOT
from stacks.metrics import GRAFANA_UNITS, KUBE_METRICS
from tests.builders import by_kind, engine_objects, resolved_model, resolved_stack
from tests.conftest import sections_of
from tests.engines_helpers import example, stack_of
from tests.test_keda import dynamo_sections, keda

K = KUBE_METRICS
ENGINE_METRICS = {name: e.facts.metrics for name, e in ENGINES.items()}
# The labels kube-state-metrics v2.18.0 (kube-prometheus-stack 81.6.2's kube-state-metrics 7.1.0)
# puts on each series: docs/metrics/workload/{horizontalpodautoscaler,deployment,job}-metrics.md.
KSM_LABELS = {
    "kube_horizontalpodautoscaler_status_current_replicas": {"namespace", "horizontalpodautoscaler"},
    "kube_horizontalpodautoscaler_status_desired_replicas": {"namespace", "horizontalpodautoscaler"},
    "kube_horizontalpodautoscaler_spec_max_replicas": {"namespace", "horizontalpodautoscaler"},
    "kube_horizontalpodautoscaler_spec_min_replicas": {"namespace", "horizontalpodautoscaler"},
    "kube_horizontalpodautoscaler_status_condition": {"namespace", "horizontalpodautoscaler", "condition", "status"},
    "kube_deployment_spec_replicas": {"namespace", "deployment"},
    "kube_deployment_status_replicas_available": {"namespace", "deployment"},
    "kube_job_complete": {"namespace", "job_name", "condition"},
    "kube_job_failed": {"namespace", "job_name", "condition"},
    "kube_job_status_active": {"namespace", "job_name"},
    "kube_job_owner": {"namespace", "job_name", "owner_kind", "owner_name", "owner_is_controller"},
    "kube_job_created": {"namespace", "job_name"},
    # docs/metrics/cluster/node-metrics.md (the node-health alerts, components/monitoring/health.py).
    "kube_node_status_capacity": {"node", "resource", "unit"},
    "kube_node_status_allocatable": {"node", "resource", "unit"},
    # The cost rules' joins (internal/store/{pod,node,namespace}.go).
    "kube_pod_container_resource_requests": {"namespace", "pod", "container", "node", "resource", "unit"},
    "kube_node_labels": {"node"},
    "kube_namespace_labels": {"namespace"},
    "kube_pod_labels": {"namespace", "pod"},
}
# The labels an engine series carries from the PodMonitor (collection.py model_filter, podTargetLabels).
ENGINE_LABELS = {"namespace", "inference_platform_io_model", "inference_platform_io_revision", "stage"}
CATALOG = {m.name for table in ENGINE_METRICS.values() for m in table.values()} | {m.name for m in K.values()}
HISTOGRAMS = {m.name for table in ENGINE_METRICS.values() for m in table.values() if m.kind == "histogram"}


def model_of(sections: dict[str, Any], name: str = "qwen3-8b"):
    stack = resolved_stack(sections)
    return stack, resolved_model(stack, name)


def to_zero(dev: dict[str, Any]) -> dict[str, Any]:
    return keda(dev, minReplicas=0, maxReplicas=3)


def exprs(served, images) -> list[str]:
    found = [r["expr"] for r in autoscaling.scaling_rules(served, images)]
    board = autoscaling.scaling_dashboard(served, images)
    if board:
        found += [t["expr"] for p in board["panels"] for t in p["targets"]]
    return found


def panels(served, images) -> dict[str, dict[str, Any]]:
    board = autoscaling.scaling_dashboard(served, images)
    assert board is not None
    return {p["title"]: p for p in board["panels"]}


def alerts(served, images) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for r in autoscaling.scaling_rules(served, images)}


SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}")
MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"')


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    return [(name, set(MATCHER.findall(body))) for name, body in SELECTOR.findall(expr)]


def test_a_keda_model_charts_its_hpas_replicas_and_ceiling_against_the_queue_its_trigger_sums(dev):
    stack, served = model_of(keda(dev, targetValue="8"))
    replicas = panels(served, stack.images)["Replicas against queue depth"]
    targets = [t["expr"] for t in replicas["targets"]]
    hpa = f'namespace="{served.namespace}",horizontalpodautoscaler="qwen3-8b"'
    for m in (K["hpa_current"], K["hpa_desired"], K["hpa_max"]):
        assert f"sum by (horizontalpodautoscaler) ({m.name}{{{hpa}}})" in targets
    # The queue is exactly what the ScaledObject's trigger sums, over the model's own pods.
    (obj,) = scaled_objects(served, stack.platform.prometheus or "")
    assert obj["spec"]["triggers"][-1]["metadata"]["query"] == queue_query(served) in targets
    assert f"sum({K['hpa_current'].name}{{{hpa}}}) * 8" in targets, "the queue the current replicas are sized for"
    # Replicas on the left, in replicas; the queue on the right axis in its own unit.
    assert replicas["fieldConfig"]["defaults"]["unit"] == GRAFANA_UNITS["replicas"] == "short"
    right = {o["matcher"]["options"] for o in replicas["fieldConfig"]["overrides"]}
    assert right == {"D", "E"}
    for o in replicas["fieldConfig"]["overrides"]:
        assert {"id": "unit", "value": GRAFANA_UNITS["requests"]} in o["properties"]
    events = panels(served, stack.images)["Scale events (desired-replica changes per 15m)"]
    assert events["targets"][0]["expr"] == f"changes({K['hpa_desired'].name}{{{hpa}}}[15m])"
    active = panels(served, stack.images)["Scaler reads its metric (ScalingActive; false at zero replicas is normal)"]
    assert active["fieldConfig"]["defaults"]["unit"] == "bool"
    assert 'condition="ScalingActive",status="true"' in active["targets"][0]["expr"]


def test_a_keda_model_is_alerted_when_pinned_at_its_ceiling_and_when_its_hpa_cannot_read_the_metric(dev):
    stack, served = model_of(keda(dev, targetValue="8"))
    found = alerts(served, stack.images)
    assert set(found) == {"ScalingPinnedAtMax", "ScalerCannotReadMetric"}, "no cold starts above zero, no benchmark"
    hpa = f'namespace="{served.namespace}",horizontalpodautoscaler="qwen3-8b"'
    pinned = found["ScalingPinnedAtMax"]
    assert pinned["expr"] == (
        f"({K['hpa_current'].name}{{{hpa}}} >= {K['hpa_max'].name}{{{hpa}}}) and "
        f"({queue_query(served)} / on () group_right {K['hpa_current'].name}{{{hpa}}} > 8)"
    )
    assert pinned["for"] == "15m" and pinned["labels"] == {"severity": "warning", "model": "qwen3-8b"}
    unreadable = found["ScalerCannotReadMetric"]
    assert unreadable["expr"] == (
        f'{K["hpa_condition"].name}{{{hpa},condition="ScalingActive",status="false"}} == 1'
    ), "above zero a false ScalingActive is always a fault"


def test_an_hpa_model_reads_the_hpa_its_engine_builds(dev):
    stack, served = model_of(dev)
    assert served.scaler == "hpa"
    (hpa,) = by_kind(engine_objects(stack, "qwen3-8b"), "HorizontalPodAutoscaler")
    assert autoscaling.hpa_names(served) == [hpa["metadata"]["name"]]
    assert hpa["metadata"]["namespace"] == served.namespace
    assert (
        f'horizontalpodautoscaler="{hpa["metadata"]["name"]}"'
        in alerts(served, stack.images)["ScalingPinnedAtMax"]["expr"]
    )
    assert "ColdStartSlow" not in alerts(served, stack.images)


def test_a_dynamo_graph_charts_one_hpa_per_scaling_adapter(dev):
    stack, served = model_of(dynamo_sections(dev, "disaggregated"))
    # KEDA's HPA is named after its target (components/autoscaling/keda.py hpa_name): the adapter.
    names = [name for _, _, name in served.keda_targets]
    assert len(names) >= 1 and autoscaling.hpa_names(served) == names
    sel = autoscaling.hpa_selector(served)
    assert sel.startswith(f'namespace="{served.namespace}",horizontalpodautoscaler')
    for name in names:
        assert name in sel
    assert "stage=~" in panels(served, stack.images)["Replicas against queue depth"]["targets"][3]["expr"]


def test_a_model_that_scales_to_zero_charts_and_alerts_its_cold_starts(dev):
    stack, served = model_of(to_zero(dev))
    assert served.config.autoscaling.to_zero and served.workload[1] == "Deployment"
    board = panels(served, stack.images)
    dep = f'namespace="{served.namespace}",deployment="qwen3-8b"'
    gap = board["Cold starts: replicas asked for against available (a wake is the gap)"]
    assert [t["expr"] for t in gap["targets"]] == [
        f"{K['deployment_spec'].name}{{{dep}}}",
        f"{K['deployment_available'].name}{{{dep}}}",
    ]
    spec = f"{K['deployment_spec'].name}{{{dep}}}"
    wakes = board["Wakes from zero per hour"]["targets"][0]["expr"]
    assert wakes == f"sum_over_time((clamp_max({spec}, 1) - clamp_max({spec} offset 1m, 1) > 0)[1h:1m])"
    found = alerts(served, stack.images)
    assert set(found) == {"ScalingPinnedAtMax", "ScalerCannotReadMetric", "ColdStartSlow", "ColdStartsFrequent"}
    assert found["ColdStartSlow"]["expr"] == f"{spec} > 0 and {K['deployment_available'].name}{{{dep}}} == 0"
    assert found["ColdStartSlow"]["for"] == autoscaling.COLD_START_SLOW
    assert found["ColdStartsFrequent"]["expr"] == f"{wakes} > {autoscaling.COLD_STARTS_PER_HOUR}"
    assert found["ColdStartsFrequent"]["labels"]["severity"] == "info" and "for" not in found["ColdStartsFrequent"]
    # At zero the HPA controller sets ScalingActive false itself (ScalingDisabled): only above zero.
    assert found["ScalerCannotReadMetric"]["expr"].endswith(
        f"and on (namespace, horizontalpodautoscaler) {K['hpa_current'].name}{{{autoscaling.hpa_selector(served)}}} > 0"
    )


def test_an_aibrix_model_charts_its_deployment_and_gets_no_hpa_alert():
    stack, served = model_of(sections_of(ROOT / "stacks" / "examples" / "Pulumi.serving.yaml"), "qwen3-8b-lora")
    assert served.scaler == "aibrix" and not autoscaling.hpa_names(served)
    replicas = panels(served, stack.images)["Replicas against queue depth"]
    targets = [t["expr"] for t in replicas["targets"]]
    assert f"sum({K['deployment_available'].name}{{{autoscaling.deployment_selector(served)}}})" in targets
    steps = replicas["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps[-1]["value"] == served.config.autoscaling.max_replicas, "no HPA: the ceiling the stack states"
    assert autoscaling.scaling_rules(served, stack.images) == []
    assert autoscaling.scaling_prometheus_rule(served, stack.images) is None


def test_a_model_with_no_autoscaler_and_no_benchmark_gets_neither_dashboard_nor_rule(dev):
    sections = copy.deepcopy(dev)
    sections["models"][0]["autoscaling"] = {"owner": "none"}
    stack, served = model_of(sections)
    assert served.scaler == "none" and served.config.benchmark is None
    assert autoscaling.scaling_dashboard(served, stack.images) is None
    assert autoscaling.scaling_prometheus_rule(served, stack.images) is None


@pytest.fixture(scope="module")
def benchmarked():
    stack = stack_of(copy.deepcopy(example()))
    return stack, resolved_model(stack, "qwen3-8b")


def test_a_benchmarked_model_is_alerted_when_its_current_benchmark_job_fails(benchmarked):
    stack, served = benchmarked
    assert served.config.benchmark is not None
    rule = alerts(served, stack.images)["BenchmarkSloMissed"]
    job = job_name(served, stack.images)
    assert rule["expr"] == (
        f'{K["job_failed"].name}{{namespace="{served.namespace}",job_name="{job}",condition="true"}} == 1'
    )
    assert "for" not in rule and rule["labels"]["model"] == "qwen3-8b"
    obj = autoscaling.scaling_prometheus_rule(served, stack.images)
    assert obj is not None and obj["metadata"]["name"] == "qwen3-8b-scaling"
    assert obj["metadata"]["namespace"] == served.namespace


def test_a_scheduled_benchmark_is_judged_and_alerted_by_its_cronjobs_newest_run():
    from components.benchmark import cron_job_name

    sections = copy.deepcopy(example())
    model = next(m for m in sections["models"] if m["name"] == "qwen3-8b")
    model["benchmark"] = {**model["benchmark"], "schedule": "0 3 * * *", "gate": False}
    stack = stack_of(sections)
    served = resolved_model(stack, "qwen3-8b")
    cron = cron_job_name(served)
    owned = f'{K["job_owner"].name}{{namespace="{served.namespace}",owner_kind="CronJob",owner_name="{cron}"}}'
    created = f'{K["job_created"].name}{{namespace="{served.namespace}"}}'
    newest = f"topk(1, {created} * on (namespace, job_name) group_left () {owned})"
    rule = alerts(served, stack.images)["BenchmarkSloMissed"]
    assert rule["expr"] == (
        f'{K["job_failed"].name}{{namespace="{served.namespace}",condition="true"}} == 1 '
        f"and on (namespace, job_name) {newest}"
    ), "a miss of the newest nightly run alerts; an older failed run kept in the history does not"
    assert job_name(served, stack.images) not in rule["expr"], "no one-off Job runs without a gate"
    verdict = panels(served, stack.images)[f"Latest benchmark verdict (newest run of CronJob {cron})"]
    assert verdict["targets"][1]["expr"] == (
        f'max({K["job_failed"].name}{{namespace="{served.namespace}",condition="true"}} and on (namespace, job_name) '
        f"{newest})"
    )
    model["benchmark"] = {**model["benchmark"], "gate": True}
    gated = resolved_model(stack_of(sections), "qwen3-8b")
    both = alerts(gated, stack.images)["BenchmarkSloMissed"]["expr"]
    sel = f'namespace="{served.namespace}",job_name="{job_name(gated, stack.images)}",condition="true"'
    once = f"{K['job_failed'].name}{{{sel}}} == 1"
    assert both.startswith(f"({once}) or (") and newest in both, "with a gate the one-off Job is watched too"


def test_the_latest_benchmark_verdict_stands_beside_the_slo_the_stack_states(benchmarked):
    stack, served = benchmarked
    slo = served.config.slo
    assert slo is not None and slo.ttft_seconds is not None
    board = panels(served, stack.images)
    job = job_name(served, stack.images)
    verdict = board[f"Latest benchmark verdict ({job})"]
    assert verdict["type"] == "stat" and verdict["fieldConfig"]["defaults"]["unit"] == "bool"
    sel = f'namespace="{served.namespace}",job_name="{job}"'
    assert [(t["expr"], t["legendFormat"]) for t in verdict["targets"]] == [
        (f'max({K["job_complete"].name}{{{sel},condition="true"}})', "SLO met (Job complete)"),
        (f'max({K["job_failed"].name}{{{sel},condition="true"}})', "SLO missed or nothing measured (Job failed)"),
        (f"sum({K['job_active'].name}{{{sel}}})", "running (pods)"),
    ]
    (running,) = verdict["fieldConfig"]["overrides"]
    assert running["matcher"]["options"] == "C" and {"id": "unit", "value": "short"} in running["properties"]
    text = board["Objectives"]["options"]["content"]
    assert f"**{slo.ttft_seconds:g} s** (`slo.ttftSeconds`)" in text and "not in Prometheus" in text
    live = board[f"Live p{slo.p * 100:g} ttft against the SLO (s)"]
    assert live["fieldConfig"]["defaults"]["unit"] == "s"
    steps = live["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps[-1]["value"] == slo.ttft_seconds, "the objective as a line, in the metric's unit (seconds)"
    assert live["fieldConfig"]["defaults"]["custom"] == {"thresholdsStyle": {"mode": "line"}}
    assert ENGINE_METRICS["vllm"]["ttft"].name in live["targets"][0]["expr"]


def test_every_metric_comes_from_the_catalog_and_every_label_is_one_its_exporter_sets(dev, benchmarked):
    cases = [
        model_of(keda(dev)),
        model_of(to_zero(dev)),
        model_of(dev),
        model_of(dynamo_sections(dev, "aggregated")),
        benchmarked,
    ]
    for stack, served in cases:
        for expr in exprs(served, stack.images):
            for name, labels in selectors(expr):
                if name.endswith("_bucket") and name.removesuffix("_bucket") in HISTOGRAMS:
                    name = name.removesuffix("_bucket")
                assert name in CATALOG, f"{name} is not in stacks/metrics.py"
                allowed = KSM_LABELS.get(name, ENGINE_LABELS)
                assert labels <= allowed, (name, labels - allowed)
            for grouping in re.findall(r"\b(?:by|on) \(([^)]*)\)", expr):
                labels = {g.strip() for g in grouping.split(",") if g.strip()}
                # kube-state-metrics' own labels, and a histogram's bucket bound.
                # job_name: a scheduled benchmark's runs joined to their CronJob (kube_job_owner).
                assert labels <= {"namespace", "horizontalpodautoscaler", "le", "job_name"}, expr


def test_the_catalog_spells_kube_state_metrics_labels_as_it_exports_them():
    assert {m.name: set(m.labels) for m in K.values()} == KSM_LABELS
    for m in K.values():
        # kube_job_created is a time (seconds): it only picks a CronJob's newest run, never shown.
        assert m.kind == "gauge" and GRAFANA_UNITS[m.unit] in (
            "short",
            "bool",
            *(("s",) if m is K["job_created"] else ()),
        )


def test_the_dashboard_is_a_grafana_configmap_in_the_models_namespace_with_a_short_uid(dev):
    stack, served = model_of(keda(dev))
    board = autoscaling.scaling_dashboard(served, stack.images)
    assert board is not None and len(board["uid"]) <= 40
    cm = dashboard_configmap(f"scaling-{served.name}", board, served.namespace)
    assert cm["metadata"]["namespace"] == served.namespace
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    ids = [p["id"] for p in board["panels"]]
    assert ids == list(range(1, len(ids) + 1)), "unique panel ids"
    for p in board["panels"]:
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
