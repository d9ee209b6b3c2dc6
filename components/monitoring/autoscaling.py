"""Scaling and benchmark observability per model: a Grafana dashboard and a PrometheusRule, pure builders.

The dashboard (`scaling_dashboard`) shows, for a model with an autoscaler:
- the replicas its HPA sees and wants and its ceiling (kube-state-metrics; KEDA's HPA is
  named after its target, one per target, as `owner: hpa`'s is named after the workload) against the
  cluster total of the gauge it scales on (components/autoscaling/keda.py `queue_query`, the model's own
  pods by the labels the PodMonitor keeps), with the queue the current replicas are sized for
  (replicas x `targetValue`);
- scale events: how often the HPA's desired replicas changed over 15 minutes;
- whether the HPA can read its metric (its ScalingActive condition);
- for a model that scales to zero on a Deployment, the replicas the Deployment asks for against those
  available (a cold start is the gap between the two after a wake) and the wakes from zero per hour
  (steps of the asked-for replicas from 0);
- for a model with `benchmark`, the verdict of its current benchmark Job (kube-state-metrics' Complete
  and Failed conditions; the Job fails exactly when the verdict misses the SLO or nothing was
  measured: components/benchmark.py UPLOAD) beside the objectives the stack states, and the live
  quantiles of the same signals against them. The benchmark's measured TTFT/ITL are in the Job's
  `verdict.json` in the model bucket, not in Prometheus (nothing the platform runs exports them).

An AIBrix PodAutoscaler or the Dynamo Planner scales without an HPA; kube-state-metrics exports no
custom resource by default, so only a Deployment target's replicas are shown for them.

The rules (`scaling_rules`) apply only where their signal exists: pinned at the ceiling with the
queue above target and the HPA unable to read its metric (an HPA: owner keda or hpa), slow and
frequent cold starts (a model that scales to zero on a Deployment), and a failed benchmark Job.
"""

from __future__ import annotations

import hashlib
from typing import Any

from stacks.metrics import GRAFANA_UNITS, KUBE_METRICS, seconds_in
from stacks.resolved import ImageTable, ResolvedModel

from ..autoscaling.keda import hpa_name, queue_query, queue_series
from ..benchmark import cron_job_name, job_name, objectives, results_prefix, runs_once
from .collection import _quantile, model_filter, rule_group

K = KUBE_METRICS
# How long a signal must hold before its alert fires.
PINNED_FOR = "15m"
UNREADABLE_FOR = "10m"
# A wake from zero slower than this (model servers load weights for minutes), and more wakes an hour
# than this (the model idles out only to be woken again: idleSeconds is short for its traffic).
COLD_START_SLOW = "10m"
COLD_STARTS_PER_HOUR = 4
# The window scale events are counted over on the dashboard.
EVENTS_WINDOW = "15m"


def hpa_names(served: ResolvedModel) -> list[str]:
    """The HorizontalPodAutoscalers that set the model's replicas: KEDA's per target, or `owner: hpa`'s,
    named after the workload (components/engines/workload.py autoscaler; the NIM Operator names the
    HPA of a NIMService's spec.scale after the NIMService: its GetHPAParams, read in one stored
    version of NVIDIA/k8s-nim-operator, not checked at the pinned v3.1.2)."""
    if served.scaler == "keda":
        return [hpa_name(target) for target in served.keda_targets]
    if served.scaler == "hpa":
        return [served.workload[2]]
    return []


def _names(label: str, names: list[str]) -> str:
    """A matcher on one or several object names (Kubernetes names need no regex escaping but `.`)."""
    if len(names) == 1:
        return f'{label}="{names[0]}"'
    pattern = "|".join(n.replace(".", "\\\\.") for n in names)
    return f'{label}=~"{pattern}"'


def hpa_selector(served: ResolvedModel) -> str:
    return f'namespace="{served.namespace}",{_names("horizontalpodautoscaler", hpa_names(served))}'


def deployment(served: ResolvedModel) -> str | None:
    """The Deployment whose replicas kube-state-metrics exports, when the model's scale target is one."""
    _, kind, name = served.workload
    return name if kind == "Deployment" else None


def deployment_selector(served: ResolvedModel) -> str:
    return f'namespace="{served.namespace}",deployment="{deployment(served)}"'


def cold_starts_observed(served: ResolvedModel) -> bool:
    return served.config.autoscaling.to_zero and deployment(served) is not None


def benchmark_selector(served: ResolvedModel, images: ImageTable) -> str:
    return f'namespace="{served.namespace}",job_name="{job_name(served, images)}"'


def wakes(served: ResolvedModel, window: str) -> str:
    """Steps of the Deployment's asked-for replicas from 0 to at least 1 within `window` (KEDA itself
    sets the first replica on activation), sampled each minute (kube-state-metrics is scraped every 30s)."""
    spec = K["deployment_spec"].series(deployment_selector(served))
    step = f"clamp_max({spec}, 1) - clamp_max({spec} offset 1m, 1)"
    return f"sum_over_time(({step} > 0)[{window}:1m])"


def waking(served: ResolvedModel) -> str:
    """A replica asked for and none available: the model is starting (from zero, for these models)."""
    sel = deployment_selector(served)
    return f"{K['deployment_spec'].series(sel)} > 0 and {K['deployment_available'].series(sel)} == 0"


def scheduled_runs(served: ResolvedModel) -> str:
    """The Jobs the model's benchmark CronJob created (its history: the last runs of each outcome)."""
    owner = f'namespace="{served.namespace}",owner_kind="CronJob",owner_name="{cron_job_name(served)}"'
    return K["job_owner"].series(owner)


def newest_scheduled_run(served: ResolvedModel) -> str:
    """The CronJob's newest Job, the current scheduled run: a filter on (namespace, job_name)."""
    created = K["job_created"].series(f'namespace="{served.namespace}"')
    return f"topk(1, {created} * on (namespace, job_name) group_left () {scheduled_runs(served)})"


def verdict_targets(served: ResolvedModel, images: ImageTable) -> list[tuple[str, str]]:
    """The current Job's Complete condition (the verdict met the SLO), its Failed condition (missed, or
    nothing measured) and its running pods (neither yet). With a schedule, the current Job is the
    CronJob's newest run (what follows `and on` only selects it; its value is not shown)."""
    if served.config.benchmark is not None and served.config.benchmark.schedule is not None:
        ns = f'namespace="{served.namespace}"'
        done = ns + ',condition="true"'
        newest = f"and on (namespace, job_name) {newest_scheduled_run(served)}"
        return [
            (f"max({K['job_complete'].series(done)} {newest})", "SLO met (Job complete)"),
            (f"max({K['job_failed'].series(done)} {newest})", "SLO missed or nothing measured (Job failed)"),
            (
                f"sum({K['job_active'].series(ns)} and on (namespace, job_name) {scheduled_runs(served)})",
                "running (pods)",
            ),
        ]
    sel = benchmark_selector(served, images)
    done = sel + ',condition="true"'
    return [
        (f"max({K['job_complete'].series(done)})", "SLO met (Job complete)"),
        (f"max({K['job_failed'].series(done)})", "SLO missed or nothing measured (Job failed)"),
        (f"sum({K['job_active'].series(sel)})", "running (pods)"),
    ]


def verdict_title(served: ResolvedModel, images: ImageTable) -> str:
    bench = served.config.benchmark
    if bench is not None and bench.schedule is not None:
        return f"Latest benchmark verdict (newest run of CronJob {cron_job_name(served)})"
    return f"Latest benchmark verdict ({job_name(served, images)})"


# -- the dashboard ------------------------------------------------------------------------------------


def _target(ref: int, expr: str, legend: str) -> dict[str, Any]:
    return {"refId": chr(ord("A") + ref), "expr": expr, "legendFormat": legend}


def _panel(
    pid: int, title: str, unit: str, targets: list[tuple[str, str]], kind: str = "timeseries", w: int = 12
) -> dict[str, Any]:
    return {
        "id": pid,
        "type": kind,
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "gridPos": {"h": 8, "w": w, "x": 0, "y": 0},
        "targets": [_target(i, e, legend) for i, (e, legend) in enumerate(targets)],
    }


def _override(panel: dict[str, Any], ref: str, unit: str, right: bool = False) -> None:
    """Query `ref` of the panel in its own unit (on the right axis)."""
    properties: list[dict[str, Any]] = [{"id": "unit", "value": unit}]
    if right:
        properties.insert(0, {"id": "custom.axisPlacement", "value": "right"})
    panel["fieldConfig"]["overrides"].append(
        {"matcher": {"id": "byFrameRefID", "options": ref}, "properties": properties}
    )


def _threshold_line(panel: dict[str, Any], value: float) -> None:
    """A limit the stack states, drawn as a line (Grafana thresholds), not as a query."""
    panel["fieldConfig"]["defaults"]["thresholds"] = {
        "mode": "absolute",
        "steps": [{"color": "green", "value": None}, {"color": "red", "value": value}],
    }
    panel["fieldConfig"]["defaults"]["custom"] = {"thresholdsStyle": {"mode": "line"}}


def replicas_panel(pid: int, served: ResolvedModel) -> dict[str, Any] | None:
    """Current and desired replicas and the ceiling against the queue the model scales on."""
    scaling = served.config.autoscaling
    queue = queue_series(served)
    replicas: list[tuple[str, str]]
    if hpa_names(served):
        sel, by = hpa_selector(served), "horizontalpodautoscaler"
        replicas = [
            (f"sum by ({by}) ({K[s].series(sel)})", f"{label} {{{{{by}}}}}")
            for s, label in (("hpa_current", "current"), ("hpa_desired", "desired"), ("hpa_max", "max"))
        ]
        current = f"sum({K['hpa_current'].series(sel)})"
    elif deployment(served) is not None:
        sel = deployment_selector(served)
        replicas = [
            (f"sum({K['deployment_available'].series(sel)})", "available"),
            (f"sum({K['deployment_spec'].series(sel)})", "asked for"),
        ]
        current = f"sum({K['deployment_available'].series(sel)})"
    else:
        return None
    targets = [
        *replicas,
        (queue_query(served), f"{queue.name} (all pods)"),
        (f"{current} * {scaling.target_value}", f"queue the current replicas are sized for (x {scaling.target_value})"),
    ]
    panel = _panel(pid, "Replicas against queue depth", GRAFANA_UNITS["replicas"], targets, w=24)
    if not hpa_names(served):  # no HPA to read the ceiling from: the stack's autoscaling.maxReplicas
        _threshold_line(panel, scaling.max_replicas)
    for ref in range(len(replicas), len(targets)):
        _override(panel, chr(ord("A") + ref), GRAFANA_UNITS[queue.unit], right=True)
    return panel


def scaling_panels(served: ResolvedModel) -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = []
    replicas = replicas_panel(1, served)
    if replicas is not None:
        panels.append(replicas)
    if hpa_names(served):
        sel, by = hpa_selector(served), "horizontalpodautoscaler"
        panels.append(
            _panel(
                len(panels) + 1,
                f"Scale events (desired-replica changes per {EVENTS_WINDOW})",
                GRAFANA_UNITS["replicas"],
                [(f"changes({K['hpa_desired'].series(sel)}[{EVENTS_WINDOW}])", f"{{{{{by}}}}}")],
            )
        )
        active = K["hpa_condition"].series(f'{sel},condition="ScalingActive",status="true"')
        panels.append(
            _panel(
                len(panels) + 1,
                "Scaler reads its metric (ScalingActive; false at zero replicas is normal)",
                GRAFANA_UNITS[K["hpa_condition"].unit],
                [(active, f"{{{{{by}}}}}")],
            )
        )
    if cold_starts_observed(served):
        sel = deployment_selector(served)
        panels.append(
            _panel(
                len(panels) + 1,
                "Cold starts: replicas asked for against available (a wake is the gap)",
                GRAFANA_UNITS["replicas"],
                [
                    (K["deployment_spec"].series(sel), "asked for"),
                    (K["deployment_available"].series(sel), "available"),
                ],
            )
        )
        panels.append(
            _panel(
                len(panels) + 1, "Wakes from zero per hour", GRAFANA_UNITS["replicas"], [(wakes(served, "1h"), "wakes")]
            )
        )
    return panels


def slo_text(served: ResolvedModel) -> str:
    slo = served.config.slo
    found = objectives(slo)
    if slo is None or not found:
        stated = "The stack states no TTFT or ITL objective for this model: the verdict holds none."
    else:
        q = f"p{slo.p * 100:g}"
        names = {"ttftSeconds": "time to first token", "itlSeconds": "inter-token latency"}
        stated = "\n".join(f"- {q} {names[k]} at most **{v:g} s** (`slo.{k}`)" for k, v in found.items())
    return (
        f"### Objectives (models[].slo)\n{stated}\n\n"
        f"The verdict is the benchmark Job's outcome. Its measured numbers are in `verdict.json` under "
        f"`{results_prefix(served)}/<UTC time>/` in the model bucket; they are not in Prometheus."
    )


def benchmark_panels(first: int, served: ResolvedModel, images: ImageTable) -> list[dict[str, Any]]:
    verdict = _panel(
        first,
        verdict_title(served, images),
        GRAFANA_UNITS[K["job_complete"].unit],
        verdict_targets(served, images),
        kind="stat",
    )
    _override(verdict, "C", GRAFANA_UNITS[K["job_active"].unit])
    verdict["fieldConfig"]["defaults"]["noValue"] = "no benchmark Job"
    text = _panel(first + 1, "Objectives", "none", [], kind="text")
    text["options"] = {"mode": "markdown", "content": slo_text(served)}
    panels = [verdict, text]
    slo = served.config.slo
    for signal, target in (("ttft", slo.ttft_seconds if slo else None), ("itl", slo.itl_seconds if slo else None)):
        m = served.facts.metric(signal)
        if slo is None or target is None or m is None:
            continue
        live = _panel(
            first + len(panels),
            f"Live p{slo.p * 100:g} {signal} against the SLO ({m.unit})",
            GRAFANA_UNITS[m.unit],
            [(_quantile(m, slo.p, model_filter(served)), f"p{slo.p * 100:g}")],
        )
        _threshold_line(live, target * seconds_in(m.unit))
        panels.append(live)
    return panels


def _layout(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Left to right, top to bottom, in Grafana's 24 columns."""
    x = y = row_h = 0
    for p in panels:
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if x + w > 24:
            x, y, row_h = 0, y + row_h, 0
        p["gridPos"] = {"h": h, "w": w, "x": x, "y": y}
        x, row_h = x + w, max(row_h, h)
    return panels


def dashboard_uid(served: ResolvedModel) -> str:
    """Grafana uids stop at 40 characters: a digest of the model's namespace and name."""
    return "ip-scaling-" + hashlib.sha256(f"{served.namespace}/{served.name}".encode()).hexdigest()[:12]


def scaling_dashboard(served: ResolvedModel, images: ImageTable) -> dict[str, Any] | None:
    """The model's scaling and benchmark view; None for a model with neither an autoscaler nor a benchmark."""
    panels = scaling_panels(served) if served.scaler != "none" else []
    if served.config.benchmark is not None:
        panels += benchmark_panels(len(panels) + 1, served, images)
    if not panels:
        return None
    return {
        "uid": dashboard_uid(served),
        "title": f"Scaling: {served.name} ({served.namespace})",
        "tags": ["inference-platform", "scaling", f"model:{served.name}"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}]
        },
        "panels": _layout(panels),
    }


# -- the rules ----------------------------------------------------------------------------------------


def _rule(
    served: ResolvedModel, alert: str, expr: str, for_: str, summary: str, description: str, severity: str = "warning"
) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "alert": alert,
        "expr": expr,
        "labels": {"severity": severity, "model": served.name},
        "annotations": {"summary": f"{served.name}: {summary}", "description": description},
    }
    if for_:
        rule["for"] = for_
    return rule


def pinned_at_max(served: ResolvedModel) -> str:
    """An HPA at its ceiling while the model's queue per replica is above the target."""
    sel = hpa_selector(served)
    current, ceiling = K["hpa_current"].series(sel), K["hpa_max"].series(sel)
    target = served.config.autoscaling.target_value
    return f"({current} >= {ceiling}) and ({queue_query(served)} / on () group_right {current} > {target})"


def scaler_unreadable(served: ResolvedModel) -> str:
    """The HPA's ScalingActive is false: it cannot read its metric. At zero replicas the HPA controller
    sets it false itself (reason ScalingDisabled), so a model that scales to zero counts only above zero."""
    sel = hpa_selector(served)
    inactive = K["hpa_condition"].series(sel + ',condition="ScalingActive",status="false"')
    expr = f"{inactive} == 1"
    if served.config.autoscaling.to_zero:
        expr += f" and on (namespace, horizontalpodautoscaler) {K['hpa_current'].series(sel)} > 0"
    return expr


def benchmark_failed(served: ResolvedModel, images: ImageTable) -> str:
    """The one-off Job failed and, with a schedule, the CronJob's newest run did (either, when both run)."""
    found = []
    if runs_once(served):
        once = K["job_failed"].series(benchmark_selector(served, images) + ',condition="true"')
        found.append(f"{once} == 1")
    bench = served.config.benchmark
    if bench is not None and bench.schedule is not None:
        failed = K["job_failed"].series(f'namespace="{served.namespace}",condition="true"')
        found.append(f"{failed} == 1 and on (namespace, job_name) {newest_scheduled_run(served)}")
    return found[0] if len(found) == 1 else " or ".join(f"({e})" for e in found)


def scaling_rules(served: ResolvedModel, images: ImageTable) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    if hpa_names(served):
        rules += _autoscaler_rules(served)
    if cold_starts_observed(served):
        rules += _cold_start_rules(served)
    if served.config.benchmark is not None:
        rules.append(_benchmark_rule(served, images))
    return rules


def _autoscaler_rules(served: ResolvedModel) -> list[dict[str, Any]]:
    """For a model with an HPA: pinned at its ceiling with a queue, and unable to read its metric."""
    scaling = served.config.autoscaling
    queue = queue_series(served)
    return [
        _rule(
            served,
            "ScalingPinnedAtMax",
            pinned_at_max(served),
            PINNED_FOR,
            f"at maxReplicas ({scaling.max_replicas}) with more than {scaling.target_value} requests waiting "
            f"per replica",
            f"{queue.name} summed over the model's pods, per replica its HPA sees, is above "
            f"autoscaling.targetValue while the HPA runs at its ceiling: the model needs more capacity than "
            f"autoscaling.maxReplicas allows.",
        ),
        _rule(
            served,
            "ScalerCannotReadMetric",
            scaler_unreadable(served),
            UNREADABLE_FOR,
            "its HPA cannot read the metric it scales on",
            f"ScalingActive is false on {', '.join(hpa_names(served))}: the replicas are frozen. "
            f"kubectl describe hpa shows the reason (FailedGetExternalMetric for KEDA's, "
            f"FailedGetPodsMetric for prometheus-adapter's).",
        ),
    ]


def _cold_start_rules(served: ResolvedModel) -> list[dict[str, Any]]:
    """For a model whose cold starts are observed: a slow wake, and waking too often."""
    scaling = served.config.autoscaling
    return [
        _rule(
            served,
            "ColdStartSlow",
            waking(served),
            COLD_START_SLOW,
            f"asked for replicas and none available for {COLD_START_SLOW}",
            f"Deployment {deployment(served)} has replicas asked for and none available: a wake from zero "
            f"(or a restart) takes longer than {COLD_START_SLOW}; requests wait at the interceptor meanwhile.",
        ),
        _rule(
            served,
            "ColdStartsFrequent",
            f"{wakes(served, '1h')} > {COLD_STARTS_PER_HOUR}",
            "",
            f"woken from zero more than {COLD_STARTS_PER_HOUR} times in an hour",
            f"The model idles out after autoscaling.idleSeconds ({scaling.idle_seconds}) and is woken "
            f"again: each wake is a cold start; a longer idleSeconds or minReplicas: 1 avoids them.",
            severity="info",
        ),
    ]


def _benchmark_rule(served: ResolvedModel, images: ImageTable) -> dict[str, Any]:
    """For a model with a benchmark: its Job failed."""
    return _rule(
        served,
        "BenchmarkSloMissed",
        benchmark_failed(served, images),
        "",
        "its benchmark Job failed: the SLO was missed or nothing was measured",
        f"{_benchmark_jobs(served, images)} failed; its verdict.json is under {results_prefix(served)}/ in "
        f"the model bucket (the Job fails exactly when the verdict misses the SLO, or when it measured "
        f"nothing).",
    )


def _benchmark_jobs(served: ResolvedModel, images: ImageTable) -> str:
    """What the alert watches, in words: the one-off Job and/or the CronJob's newest run."""
    bench = served.config.benchmark
    named = [f"Job {job_name(served, images)}"] if runs_once(served) else []
    if bench is not None and bench.schedule is not None:
        named.append(f"the newest run of CronJob {cron_job_name(served)}")
    return " or ".join(named)


def scaling_prometheus_rule(served: ResolvedModel, images: ImageTable) -> dict[str, Any] | None:
    return rule_group(served, "scaling", scaling_rules(served, images))
