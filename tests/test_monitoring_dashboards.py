"""Dashboards: every panel queries a metric its engine really exports, in the unit that metric carries."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.engines import ENGINES
from components.monitoring.dashboards import accelerator_dashboard, engine_dashboard
from stacks.metrics import COST_METRICS, KUBE_METRICS, NODE_METRICS, PICKER_METRICS, Metric
from tests.conftest import ALL_STACKS, sections_of, stack_manifests

# Expected Grafana unit, written out here independently of the builders: (how the query uses the
# metric, the metric's unit) -> unit id. Seconds stay seconds, milliseconds stay milliseconds.
EXPECTED_UNIT = {
    ("quantile", "s"): "s",
    ("quantile", "ms"): "ms",
    ("rate", "tokens"): "suffix: tokens/s",
    ("rate", "requests"): "reqps",
    ("value", "requests"): "short",
    ("value", "endpoints"): "short",
    ("value", "ratio"): "percentunit",
    ("value", "percent"): "percent",
    ("value", "MiB"): "decmbytes",
    ("value", "replicas"): "short",
    ("value", "bool"): "bool",
    ("value", "tokens/s"): "suffix: tokens/s",
    ("value", "USD/h"): "currencyUSD",
    ("value", "USD"): "currencyUSD",
}
NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

# Each engine's series, from its module (components/engines/<engine>.py).
ENGINE_METRICS = {name: e.facts.metrics for name, e in ENGINES.items()}


def catalog_for(board: dict[str, Any]) -> dict[str, Metric]:
    engines = [t.split(":", 1)[1] for t in board["tags"] if t.startswith("engine:")]
    if "cost" in board["tags"]:  # the team and platform cost views: the cost rules' recorded series
        return {m.name: m for m in COST_METRICS.values()}
    if "endpoint-picker" in board["tags"]:
        return {m.name: m for m in PICKER_METRICS.values()}
    if "scaling" in board["tags"]:  # a model's scaling view: its engine's queue and kube-state-metrics
        tables = [*ENGINE_METRICS.values(), KUBE_METRICS]
        return {m.name: m for table in tables for m in table.values()}
    tables = [ENGINE_METRICS[e] for e in engines] if engines else list(NODE_METRICS.values())
    return {m.name: m for table in tables for m in table.values()}


def queried_metric(expr: str, catalog: dict[str, Metric]) -> Metric:
    # What follows `and on (...)` only selects series (a scheduled benchmark's newest run): the value
    # shown, and so the unit, is the metric before it.
    shown = expr.split(" and on (", 1)[0]
    names = {re.sub(r"_(bucket|sum|count)$", "", n) for n in NAME.findall(shown)}
    found = [catalog[n] for n in names if n in catalog]
    assert len(found) == 1, f"{expr!r} names no (or several) metric the engine exports: {sorted(names)}"
    return found[0]


def usage(expr: str) -> str:
    if "histogram_quantile" in expr:
        return "quantile"
    return "rate" if "rate(" in expr else "value"


def check(board: dict[str, Any]) -> None:
    catalog = catalog_for(board)
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue  # a heading (the canary row), no query
        default = panel["fieldConfig"]["defaults"]["unit"]
        # A query shown in a unit of its own (a second axis): the panel's override for its refId.
        own = {
            o["matcher"]["options"]: p["value"]
            for o in panel["fieldConfig"]["overrides"]
            if o["matcher"]["id"] == "byFrameRefID"
            for p in o["properties"]
            if p["id"] == "unit"
        }
        for target in panel["targets"]:
            unit = own.get(target["refId"], default)
            m = queried_metric(target["expr"], catalog)
            how = usage(target["expr"])
            if how == "quantile":
                assert m.kind == "histogram", f"{m.name} is not a histogram"
            assert (how, m.unit) in EXPECTED_UNIT, f"{panel['title']}: no unit rule for {how} of {m.unit}"
            assert unit == EXPECTED_UNIT[(how, m.unit)], f"{panel['title']}: {m.name} ({m.unit}) shown as {unit}"


def dashboards_of(path: Path) -> list[dict[str, Any]]:
    objs = stack_manifests(path)
    maps = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["labels"].get("grafana_dashboard") == "1"]
    return [json.loads(v) for cm in maps for v in cm["data"].values()]


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_rendered_dashboard_queries_real_metrics_in_their_units(path):
    boards = dashboards_of(path)
    sections = sections_of(path)
    role = (sections.get("stack") or {}).get("role", "all-in-one")
    expected = {m["engine"] for m in sections.get("models", [])}
    if role == "platform":  # teams deploy later: every engine the pools can run gets its dashboard
        accelerators = {p.get("accelerator", "none") for p in sections.get("nodePools", [])}
        expected |= {name for name, e in ENGINES.items() if accelerators & set(e.facts.accelerators)}
    monitoring = ((sections.get("addons") or {}).get("monitoring") or {}).get("enabled", True)
    if role == "workloads" or not monitoring:
        expected = set()  # the platform stack owns the dashboards; none without monitoring
    for board in boards:
        check(board)
    assert {t.split(":", 1)[1] for b in boards for t in b["tags"] if t.startswith("engine:")} == {
        e for e in expected if ENGINE_METRICS[e]
    }, "one dashboard per engine with metrics"


@pytest.mark.parametrize("engine", sorted(ENGINE_METRICS))
def test_each_engines_dashboard_queries_real_metrics_in_their_units(engine):
    board = engine_dashboard(engine, ENGINES[engine].facts)
    if not ENGINE_METRICS[engine]:
        assert board is None, f"{engine} exports no metrics, so it gets no dashboard"
        return
    assert board is not None
    check(board)


def test_the_accelerator_dashboard_shows_gpu_and_neuroncore_utilisation_in_their_units():
    board = accelerator_dashboard({"nvidia", "neuron"})
    assert board is not None
    check(board)
    titles = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in board["panels"]}
    assert titles["GPU utilisation"] == "percent", "DCGM reports 0-100"
    assert titles["NeuronCore utilisation"] == "percentunit", "neuron-monitor reports a 0-1 ratio"


def test_the_vllm_dashboard_has_every_serving_panel():
    board = engine_dashboard("vllm", ENGINES["vllm"].facts)
    assert board is not None
    titles = " | ".join(p["title"] for p in board["panels"])
    for part in (
        "Time to first token",
        "Inter-token latency",
        "End-to-end",
        "tokens per second",
        "Queue depth",
        "KV-cache",
    ):
        assert part in titles, f"missing panel: {part}"
    ttft = next(p for p in board["panels"] if p["title"].startswith("Time to first token"))
    assert "vllm:time_to_first_token_seconds_bucket" in ttft["targets"][0]["expr"]
    assert ttft["fieldConfig"]["defaults"]["unit"] == "s", "vLLM latency histograms are in seconds"


def test_ray_serve_latency_stays_in_milliseconds():
    board = engine_dashboard("ray-serve", ENGINES["ray-serve"].facts)
    assert board is not None
    e2e = next(p for p in board["panels"] if "ray_serve_http_request_latency_ms" in p["targets"][0]["expr"])
    assert e2e["fieldConfig"]["defaults"]["unit"] == "ms"


def test_a_panel_in_the_wrong_unit_is_caught():
    board = engine_dashboard("vllm", ENGINES["vllm"].facts)
    assert board is not None
    board["panels"][0]["fieldConfig"]["defaults"]["unit"] = "ms"
    with pytest.raises(AssertionError):
        check(board)


def test_a_made_up_metric_is_caught():
    board = engine_dashboard("vllm", ENGINES["vllm"].facts)
    assert board is not None
    board["panels"][0]["targets"][0]["expr"] = "histogram_quantile(0.95, rate(nim_ttft_ms_bucket[5m]))"
    with pytest.raises(AssertionError):
        check(board)


def test_dashboards_are_configmaps_the_grafana_sidecar_picks_up(dev_render):
    maps = [
        o for o in dev_render.manifests() if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("dashboard-")
    ]
    assert maps and all(m["metadata"]["labels"]["grafana_dashboard"] == "1" for m in maps)
    (stack,) = [r for r in dev_render.releases() if r["name"] == "kube-prometheus-stack"]
    sidecar = stack["values"]["grafana"]["sidecar"]["dashboards"]
    assert (sidecar["label"], sidecar["labelValue"], sidecar["searchNamespace"]) == ("grafana_dashboard", "1", "ALL")
