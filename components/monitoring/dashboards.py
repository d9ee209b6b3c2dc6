"""Grafana dashboards as ConfigMaps for the kube-prometheus-stack Grafana sidecar (label
grafana_dashboard=1): one per engine the stack serves, one for accelerator utilisation, and one for
the llm-d router's endpoint picker where an engine it reads is served (models[].routing).

Every query names a metric from `stacks/metrics.py` and every panel's unit is the unit that metric
carries (seconds shown as seconds, milliseconds as milliseconds, 0-1 fractions as percentunit, DCGM's
0-100 as percent): nothing is relabelled, so nothing is off by a factor of 1000 or 100.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stacks.engine_facts import EngineFacts
from stacks.metrics import GRAFANA_UNITS, NODE_METRICS, PICKER_METRICS, Metric, Signal
from stacks.naming import MANAGED_BY
from stacks.resolved import MONITORING_NAMESPACE

from .collection import DASHBOARD_LABEL, MODEL_TARGET_LABEL, REVISION_TARGET_LABEL

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
BY_MODEL = f"namespace, {MODEL_TARGET_LABEL}"
LEGEND = f"{{{{{MODEL_TARGET_LABEL}}}}}"

TITLES = {
    "ttft": "Time to first token",
    "itl": "Inter-token latency",
    "e2e": "End-to-end request latency",
    "tokens": "Generated tokens per second",
    "requests": "Requests per second",
    "queue": "Queue depth (requests waiting)",
    "running": "Requests running",
    "kv_cache": "KV-cache use",
    # Empty for a model without `kvCacheOffload`: vLLM counts them only with a KV connector, SGLang only
    # with its hierarchical cache (by tier: host_hit the CPU's, storage_hit the shared file tier's).
    "offload_hits": "KV-cache offload tier hits (prompt tokens/s)",
}


def _panel(pid: int, title: str, unit: str, targets: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "gridPos": {"h": 8, "w": 12, "x": 12 * ((pid - 1) % 2), "y": 8 * ((pid - 1) // 2)},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def latency_targets(m: Metric) -> list[tuple[str, str]]:
    return [
        (f"histogram_quantile({p}, sum by (le, {BY_MODEL}) (rate({m.name}_bucket[5m])))", f"p{int(p * 100)} {LEGEND}")
        for p in (0.5, 0.95)
    ]


def signal_panel(pid: int, signal: str, m: Metric) -> dict[str, Any]:
    """The panel for one signal, in the unit its query yields."""
    if m.kind == "histogram" and m.unit in ("s", "ms"):
        return _panel(pid, f"{TITLES[signal]} ({m.unit})", GRAFANA_UNITS[m.unit], latency_targets(m))
    if m.kind == "counter" or (m.kind == "histogram" and m.unit == "tokens"):
        series = m.series() if m.kind == "counter" else f"{m.name}_sum"
        unit = f"{m.unit}/s"
        by, legend = (f"{BY_MODEL}, {m.split}", f"{LEGEND} {{{{{m.split}}}}}") if m.split else (BY_MODEL, LEGEND)
        return _panel(pid, TITLES[signal], GRAFANA_UNITS[unit], [(f"sum by ({by}) (rate({series}[5m]))", legend)])
    return _panel(pid, TITLES[signal], GRAFANA_UNITS[m.unit], [(f"sum by ({BY_MODEL}) ({m.series()})", LEGEND)])


BY_REVISION = f"{BY_MODEL}, {REVISION_TARGET_LABEL}"
REVISION_LEGEND = f"{LEGEND} @ {{{{{REVISION_TARGET_LABEL}}}}}"


def canary_row(above: list[dict[str, Any]], table: Mapping[Signal, Metric]) -> list[dict[str, Any]]:
    """A row comparing a model's revisions (a canary beside the stable one): p95 latency and the request
    rate per revision, from the revision label the PodMonitor keeps."""
    pid = max((p["id"] for p in above), default=0) + 1
    y = max((p["gridPos"]["y"] + p["gridPos"]["h"] for p in above), default=0)
    row: dict[str, Any] = {
        "id": pid,
        "type": "row",
        "title": "Canary: stable and canary revisions",
        "collapsed": False,
        "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
        "panels": [],
    }
    panels = [row]
    shown: tuple[Signal, ...] = ("ttft", "e2e", "requests")
    for i, signal in enumerate(s for s in shown if s in table):
        m = table[signal]
        if m.kind == "histogram":
            expr = f"histogram_quantile(0.95, sum by (le, {BY_REVISION}) (rate({m.name}_bucket[5m])))"
            title, unit = f"p95 {TITLES[signal]} by revision ({m.unit})", GRAFANA_UNITS[m.unit]
        else:
            expr = f"sum by ({BY_REVISION}) (rate({m.name}[5m]))"
            title, unit = f"{TITLES[signal]} by revision", GRAFANA_UNITS[f"{m.unit}/s"]
        panel = _panel(pid + 1 + i, title, unit, [(expr, REVISION_LEGEND)])
        panel["gridPos"] = {"h": 8, "w": 12, "x": 12 * (i % 2), "y": y + 1 + 8 * (i // 2)}
        panels.append(panel)
    return panels


def _dashboard(uid: str, title: str, tags: list[str], panels: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "tags": ["inference-platform", *tags],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}]
        },
        "panels": panels,
    }


def engine_dashboard(engine: str, facts: EngineFacts) -> dict[str, Any] | None:
    """TTFT, ITL, end-to-end latency, throughput, queue depth, running requests, KV-cache use and the
    KV-cache CPU tier's hits, as far as the engine exports them (TGI has no TTFT or KV-cache metric,
    Ollama none at all), and a row by revision for an engine that can run a canary."""
    table = facts.metrics
    if not table:
        return None
    order: tuple[Signal, ...] = (
        "ttft",
        "itl",
        "e2e",
        "tokens",
        "requests",
        "queue",
        "running",
        "kv_cache",
        "offload_hits",
    )
    # The CPU tier's hits only where the platform wires the tier (NIM's and vllm-neuron's vLLM export the
    # same counter, always empty there).
    shown = [s for s in order if s in table and (s != "offload_hits" or facts.kv_offload is not None)]
    panels = [signal_panel(i, s, table[s]) for i, s in enumerate(shown, start=1)]
    if facts.canary:
        panels += canary_row(panels, table)
    return _dashboard(f"ip-{engine}", f"Inference: {engine}", [f"engine:{engine}"], panels)


def picker_dashboard() -> dict[str, Any]:
    """Requests and errors per second, the time to pick an endpoint and the endpoints ready to pick,
    per model (the picker's PodMonitor labels its series with the model it serves)."""
    m = PICKER_METRICS
    rate = "requests/s"
    panels = [
        _panel(1, "Requests per second", GRAFANA_UNITS[rate], [
            (f"sum by ({BY_MODEL}) (rate({m['requests'].name}[5m]))", LEGEND)
        ]),
        _panel(2, "Errored requests per second", GRAFANA_UNITS[rate], [
            (f"sum by ({BY_MODEL}, error_code) (rate({m['errors'].name}[5m]))", f"{LEGEND} {{{{error_code}}}}")
        ]),
        _panel(3, f"Time to pick an endpoint ({m['scheduling'].unit})", GRAFANA_UNITS[m["scheduling"].unit],
               latency_targets(m["scheduling"])),
        _panel(4, "Ready endpoints", GRAFANA_UNITS[m["ready"].unit], [
            (f"sum by ({BY_MODEL}) ({m['ready'].name})", LEGEND)
        ]),
    ]  # fmt: skip
    return _dashboard("ip-endpoint-picker", "Inference: endpoint picker", ["endpoint-picker"], panels)


def accelerator_dashboard(accelerators: set[str]) -> dict[str, Any] | None:
    """GPU utilisation and memory (DCGM) and NeuronCore utilisation (neuron-monitor)."""
    panels: list[dict[str, Any]] = []
    if "nvidia" in accelerators:
        util, mem = NODE_METRICS["nvidia"]["utilization"], NODE_METRICS["nvidia"]["memory_used"]
        panels.append(
            _panel(
                1,
                "GPU utilisation",
                GRAFANA_UNITS[util.unit],
                [(f"avg by (Hostname, gpu) ({util.name})", "{{Hostname}} gpu{{gpu}}")],
            )
        )
        panels.append(
            _panel(
                2,
                "GPU memory used",
                GRAFANA_UNITS[mem.unit],
                [(f"sum by (Hostname, gpu) ({mem.name})", "{{Hostname}} gpu{{gpu}}")],
            )
        )
    if "neuron" in accelerators:
        nc = NODE_METRICS["neuron"]["utilization"]
        panels.append(
            _panel(
                len(panels) + 1,
                "NeuronCore utilisation",
                GRAFANA_UNITS[nc.unit],
                [(f"avg by (instance_id, neuroncore) ({nc.name})", "{{instance_id}} nc{{neuroncore}}")],
            )
        )
    if not panels:
        return None
    return _dashboard("ip-accelerators", "Inference: accelerators", ["accelerators"], panels)


def dashboard_configmap(name: str, dashboard: dict[str, Any], namespace: str = MONITORING_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"dashboard-{name}",
            "namespace": namespace,
            "labels": {**MANAGED_BY, **DASHBOARD_LABEL},
        },
        "data": {f"{name}.json": json.dumps(dashboard, indent=1, sort_keys=True)},
    }


def dashboards(engines: Mapping[str, EngineFacts], accelerators: set[str]) -> list[dict[str, Any]]:
    out = []
    for engine, facts in sorted(engines.items()):
        board = engine_dashboard(engine, facts)
        if board:
            out.append(dashboard_configmap(engine, board))
    if any(facts.picker_engine for facts in engines.values()):
        out.append(dashboard_configmap("endpoint-picker", picker_dashboard()))
    acc = accelerator_dashboard(accelerators)
    if acc:
        out.append(dashboard_configmap("accelerators", acc))
    return out
