"""Tokens and cost per team and model (addons.monitoring.cost), pure builders: one PrometheusRule of
recording rules in the monitoring namespace, the kube-state-metrics labels they need, and a team and a
platform Grafana dashboard over the recorded series only.

Tokens: every engine's prompt and generation counters (`EngineFacts.metrics`, signals `prompt_tokens`
and `tokens`; a histogram counts through its `_sum`), by namespace and model (the target label the
model's PodMonitor adds), joined with the namespace's team (its TEAM_LABEL, through
kube_namespace_labels).

Cost: each node's hourly price (its instance type and capacity type, from kube_node_labels, joined with
the resolved price of that pair), shared among its pods by their dominant share of it (the largest of
a pod's requests over the node's allocatable, across accelerators, CPU and memory: a pod holding all 4
GPUs of a node holds the node even if it asks for a tenth of its CPUs), summed per model (the pod's
model label, through kube_pod_labels) and per team. Cost per million tokens divides the two. What no
model's pod holds (system nodes, idle capacity) stays on the platform: the platform dashboard shows the
nodes' total beside what models hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stacks.engine_facts import EngineFacts
from stacks.metrics import COST_METRICS, GRAFANA_UNITS, KUBE_METRICS, Metric
from stacks.resolved import MODEL_LABEL, MONITORING_NAMESPACE, TEAM_LABEL, ResolvedCost

from .collection import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, MODEL_TARGET_LABEL, _meta
from .dashboards import DATASOURCE, _dashboard, _panel

# The resources a pod's share of its node is taken over, as kube-state-metrics names them (an extended
# resource's name sanitised: `nvidia.com/gpu` -> `nvidia_com_gpu`).
SHARED_RESOURCES = ("nvidia_com_gpu", "aws_amazon_com_neuron", "aws_amazon_com_neuroncore", "cpu", "memory")
WINDOW = "5m"
C = COST_METRICS


def ksm_label(key: str) -> str:
    """The label kube-state-metrics gives an allowed Kubernetes label on its `*_labels` series."""
    return "label_" + "".join(ch if ch.isalnum() else "_" for ch in key)


def _renamed(expr: str, to: str, source: str) -> str:
    return f'label_replace({expr}, "{to}", "$1", "{source}", "(.+)")'


def _rate(m: Metric) -> str:
    series = m.name if m.kind == "counter" else f"{m.name}_sum"
    return f"rate({series}[{WINDOW}])"


def token_series(engines: Mapping[str, EngineFacts], signal: str) -> list[Metric]:
    """Every engine's series for one token signal, once each (NIM and neuron-vllm share vLLM's)."""
    found = {m.name: m for e in engines.values() if (m := e.metric(signal)) is not None and m.unit == "tokens"}
    return [found[name] for name in sorted(found)]


def _tokens_rule(record: Metric, series: list[Metric]) -> dict[str, Any] | None:
    """Tokens per second by namespace, model and team: the engines' series joined with the team."""
    if not series:
        return None
    # A pod exports one engine's series, so the union never holds two series with the same labels.
    rates = " or ".join(_rate(m) for m in series)
    by_model = _renamed(f"({rates})", "model", MODEL_TARGET_LABEL)
    expr = f"sum by (namespace, model, team) ({by_model} * on (namespace) group_left (team) {C['team'].name})"
    return {"record": record.name, "expr": expr}


def token_rules(engines: Mapping[str, EngineFacts]) -> list[dict[str, Any]]:
    team = ksm_label(TEAM_LABEL)
    team_info = _renamed(f'{KUBE_METRICS["namespace_labels"].name}{{{team}!=""}}', "team", team)
    rules = [
        {"record": C["team"].name, "expr": f"max by (namespace, team) ({team_info})"},
        _tokens_rule(C["prompt_tokens"], token_series(engines, "prompt_tokens")),
        _tokens_rule(C["generation_tokens"], token_series(engines, "tokens")),
        {"record": C["tokens"].name, "expr": f"{C['prompt_tokens'].name} + {C['generation_tokens'].name}"},
    ]
    return [r for r in rules if r is not None]


def price_rules(cost: ResolvedCost) -> list[dict[str, Any]]:
    """One constant series per priced (instance type, capacity type), labelled with where it is from."""
    return [
        {
            "record": C["price"].name,
            "expr": f"vector({p.usd_per_hour:g})",
            "labels": {"instance_type": p.instance_type, "capacity_type": p.capacity_type, "basis": p.basis},
        }
        for p in cost.prices
    ]


def _node_cost() -> str:
    labels = KUBE_METRICS["node_labels"].name
    typed = _renamed(labels, "instance_type", ksm_label(INSTANCE_TYPE_LABEL))
    typed = _renamed(typed, "capacity_type", ksm_label(CAPACITY_TYPE_LABEL))
    return (
        f"max by (node, instance_type, capacity_type) ({typed} * on (instance_type, capacity_type) "
        f"group_left () {C['price'].name})"
    )


def _pod_share() -> str:
    resources = "|".join(SHARED_RESOURCES)
    requested = f'{KUBE_METRICS["pod_requests"].name}{{resource=~"{resources}",node!=""}}'
    requests = f"sum by (namespace, pod, node, resource) ({requested})"
    allocatable = f'(sum by (node, resource) ({KUBE_METRICS["node_allocatable"].name}{{resource=~"{resources}"}}) > 0)'
    return f"max by (namespace, pod, node) ({requests} / on (node, resource) group_left () {allocatable})"


def _model_cost() -> str:
    model_label = ksm_label(MODEL_LABEL)
    pods = _renamed(f'{KUBE_METRICS["pod_labels"].name}{{{model_label}!=""}}', "model", model_label)
    return (
        f"sum by (namespace, model, team) ({C['pod_cost'].name} * on (namespace, pod) group_left (model) "
        f"max by (namespace, pod, model) ({pods}) * on (namespace) group_left (team) {C['team'].name})"
    )


# Tokens per second to millions of tokens per hour.
PER_MILLION_PER_HOUR = "3600 / 1e6"


def cost_rules() -> list[dict[str, Any]]:
    """Node cost, each pod's share and cost, cost per model and team, and cost per million tokens (only
    where tokens flow: an idle model has a cost per hour and no cost per token)."""
    tokens = C["tokens"].name
    return [
        {"record": C["node_cost"].name, "expr": _node_cost()},
        {"record": C["pod_share"].name, "expr": _pod_share()},
        {
            "record": C["pod_cost"].name,
            "expr": f"{C['pod_share'].name} * on (node) group_left () {C['node_cost'].name}",
        },
        {"record": C["model_cost"].name, "expr": _model_cost()},
        {"record": C["team_cost"].name, "expr": f"sum by (team) ({C['model_cost'].name})"},
        {
            "record": C["model_cost_per_mtok"].name,
            "expr": f"{C['model_cost'].name} / on (namespace, model, team) (({tokens} > 0) * {PER_MILLION_PER_HOUR})",
        },
        {
            "record": C["team_cost_per_mtok"].name,
            "expr": f"{C['team_cost'].name} / on (team) ((sum by (team) ({tokens}) > 0) * {PER_MILLION_PER_HOUR})",
        },
    ]


def cost_prometheus_rule(cost: ResolvedCost, engines: Mapping[str, EngineFacts]) -> dict[str, Any]:
    """The PrometheusRule `inference-cost` in the monitoring namespace: tokens, prices and cost in one
    group, because Prometheus evaluates a group's rules in order and its groups concurrently: each rule
    reads what the rules before it recorded in the same evaluation."""
    rules = [*token_rules(engines), *price_rules(cost), *cost_rules()]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            **_meta("inference-cost", MONITORING_NAMESPACE),
            # Where the prices are from, for whoever reads the rule in the cluster.
            "annotations": {
                "inference-platform.io/price-table": f"{cost.table_source}, {cost.table_region} on-demand, "
                f"generated {cost.table_generated}",
            },
        },
        "spec": {"groups": [{"name": "inference.cost", "rules": rules}]},
    }


# --- dashboards ----------------------------------------------------------------------------------

TEAM_FILTER = 'team=~"$team"'


def _value_panel(pid: int, title: str, m: Metric, by: str, legend: str, where: str = "") -> dict[str, Any]:
    """A time series of one recorded metric summed by `by`, in its own unit."""
    selector = f"{{{where}}}" if where else ""
    return _panel(pid, title, GRAFANA_UNITS[m.unit], [(f"sum by ({by}) ({m.name}{selector})", legend)])


def team_dashboard() -> dict[str, Any]:
    """A team's view (the `team` variable): its models' tokens per second, cost per hour and cost per
    million tokens, and its total cost per hour."""
    model = "{{namespace}}/{{model}}"
    panels = [
        _value_panel(1, "Prompt tokens per second", C["prompt_tokens"], "namespace, model", model, TEAM_FILTER),
        _value_panel(2, "Generated tokens per second", C["generation_tokens"], "namespace, model", model, TEAM_FILTER),
        _value_panel(3, "Cost per hour by model (USD)", C["model_cost"], "namespace, model", model, TEAM_FILTER),
        _panel(4, "Cost per million tokens by model (USD)", GRAFANA_UNITS["USD"], [
            (f"{C['model_cost_per_mtok'].name}{{{TEAM_FILTER}}}", model)
        ]),
        _value_panel(5, "Team cost per hour (USD)", C["team_cost"], "team", "{{team}}", TEAM_FILTER),
        _panel(6, "Team cost per million tokens (USD)", GRAFANA_UNITS["USD"], [
            (f"{C['team_cost_per_mtok'].name}{{{TEAM_FILTER}}}", "{{team}}")
        ]),
    ]  # fmt: skip
    board = _dashboard("ip-team-cost", "Inference: team tokens and cost", ["cost", "team"], panels)
    board["templating"]["list"].append(
        {
            "name": "team",
            "label": "Team",
            "type": "query",
            "datasource": DATASOURCE,
            "query": f"label_values({C['team_cost'].name}, team)",
            "includeAll": True,
            "multi": True,
        }
    )
    return board


def platform_dashboard() -> dict[str, Any]:
    """The platform's view: cost per hour and per million tokens by team, tokens by team, the nodes'
    cost by instance and capacity type, and the nodes' total beside what models hold (the rest is the
    platform's: idle capacity, system pods)."""
    panels = [
        _value_panel(1, "Cost per hour by team (USD)", C["team_cost"], "team", "{{team}}"),
        _panel(2, "Cost per million tokens by team (USD)", GRAFANA_UNITS["USD"], [
            (C["team_cost_per_mtok"].name, "{{team}}")
        ]),
        _value_panel(3, "Tokens per second by team", C["tokens"], "team", "{{team}}"),
        _value_panel(4, "Node cost per hour by instance type (USD)", C["node_cost"],
                     "instance_type, capacity_type", "{{instance_type}} {{capacity_type}}"),
        _panel(5, "Node cost held by models (USD per hour)", GRAFANA_UNITS["USD/h"], [
            (f"sum ({C['node_cost'].name})", "all priced nodes"),
            (f"sum ({C['model_cost'].name})", "held by models"),
        ]),
    ]  # fmt: skip
    return _dashboard("ip-platform-cost", "Inference: platform tokens and cost", ["cost", "platform"], panels)
