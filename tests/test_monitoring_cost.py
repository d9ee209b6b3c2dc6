"""Tokens and cost per team and model: the price table is dated and sourced, the recording rules parse
and read only catalogued series (each engine's real token counters, kube-state-metrics' joins), prices
follow the stack's pools, overrides and spot discount, and the team and platform dashboards show the
recorded series in their units."""

from __future__ import annotations

import copy
import json
import re

from components.engines import ENGINES
from components.monitoring.collection import ksm_allowlist, prometheus_stack_values
from components.monitoring.cost import cost_prometheus_rule, platform_dashboard, team_dashboard, token_series
from stacks.config.addons import MonitoringAddon
from stacks.hardware import catalog
from stacks.metrics import COST_METRICS, KUBE_METRICS, Metric
from stacks.pipeline import check_sections, stack_warnings
from stacks.pricing import on_demand, price_table
from tests.conftest import EXAMPLES_DIR, stack_manifests
from tests.guard_support import has, sections, warnings_of
from tests.test_monitoring_dashboards import check

PLATFORM = "stacks/examples/Pulumi.platform.yaml"
FACTS = {name: e.facts for name, e in ENGINES.items()}
# Every name a cost rule may read: the engines' series, kube-state-metrics' and the rules' own.
CATALOG: dict[str, Metric] = {
    **{m.name: m for f in FACTS.values() for m in f.metrics.values()},
    **{m.name: m for m in KUBE_METRICS.values()},
    **{m.name: m for m in COST_METRICS.values()},
}
FUNCTIONS = {"sum", "max", "rate", "label_replace", "vector", "by", "on", "group_left", "or"}
TOKEN = re.compile(
    r'\d+(?:ms|[smhdwy])(?![A-Za-z0-9_])|"(?:[^"\\]|\\.)*"|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?(?:e\d+)?|=~|!=|[(){}\[\],=*/+>-]'
)


def resolved(sections_: dict):
    return check_sections(sections_, "us-west-2")


def rule_exprs(rule: dict) -> list[dict]:
    return [r for g in rule["spec"]["groups"] for r in g["rules"]]


def parse(expr: str) -> set[str]:
    """A PromQL lexical parse: every character belongs to a token, brackets nest, a selector's braces
    hold only `label op "value"` matchers, a grouping clause holds only label names. Returns the
    metric names the expression reads."""
    assert "".join(TOKEN.findall(expr)) == re.sub(r"\s+", "", expr), f"characters PromQL has no token for: {expr}"
    tokens, stack, names = TOKEN.findall(expr), [], set()
    pairs = {")": "(", "}": "{", "]": "["}
    for i, tok in enumerate(tokens):
        if tok in "({[":
            stack.append(tok)
        elif tok in ")}]":
            assert stack and stack.pop() == pairs[tok], f"unbalanced {tok} in {expr}"
        elif re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", tok):
            inside = stack[-1] if stack else ""
            after = tokens[i + 1] if i + 1 < len(tokens) else ""
            before = tokens[i - 1] if i else ""
            if (
                inside == "{"
                or before in ("by", "on", "group_left")
                or (inside == "(" and after in (",", ")") and tokens[i - 1] in ("(", ",") and _grouping(tokens, i))
            ):
                continue  # a label name
            if tok not in FUNCTIONS and after != "(":
                names.add(tok)
    assert not stack, f"unclosed {stack} in {expr}"
    return names


def _grouping(tokens: list[str], i: int) -> bool:
    """Whether the name at i sits in a `by (...)`, `on (...)` or `group_left (...)` list."""
    j = i
    while tokens[j] != "(":
        j -= 1
    return tokens[j - 1] in ("by", "on", "group_left")


def test_the_price_table_is_karpenters_dated_on_demand_table_for_us_east_1():
    table = price_table()
    assert table.region == "us-east-1", "Karpenter's generated table holds us-east-1 only"
    assert table.generated == "2026-07-20T13:44:30Z", "the date the figures were generated"
    assert "aws/karpenter-provider-aws" in table.source and "zz_generated.pricing_aws.go" in table.source
    assert on_demand("g5.xlarge") == 1.006 and on_demand("inf2.xlarge") == 0.7582, "figures as the table has them"
    unpriced = {t for t in catalog() if on_demand(t) is None}
    capacity_blocks = {"p5e.48xlarge", "trn2.48xlarge", "trn2.3xlarge", "trn2u.48xlarge", "p6e-gb200.36xlarge"}
    assert unpriced == capacity_blocks, "only capacity-block types are not sold on demand"


def test_the_token_rules_read_each_engines_real_prompt_and_generation_series():
    prompt = {m.name for m in token_series(FACTS, "prompt_tokens")}
    generated = {m.name for m in token_series(FACTS, "tokens")}
    assert prompt == {
        "vllm:prompt_tokens_total",
        "sglang:prompt_tokens_total",
        "tgi_request_input_length",
        "dynamo_frontend_input_sequence_tokens",
    }
    assert "vllm:generation_tokens_total" in generated and "sglang:generation_tokens_total" in generated


def test_every_cost_rule_parses_and_reads_only_catalogued_series():
    stack = resolved(sections(PLATFORM))
    assert stack.cost is not None, "a platform stack with monitoring records cost"
    rule = cost_prometheus_rule(stack.cost, FACTS)
    records = {r["record"] for r in rule_exprs(rule)}
    assert records == {m.name for m in COST_METRICS.values()}, "every catalogued recorded series is recorded"
    for r in rule_exprs(rule):
        assert re.fullmatch(r"[a-z_]+:[a-z_0-9]+:[a-z0-9_]+", r["record"]), "level:metric:operations"
        unknown = parse(r["expr"]) - set(CATALOG) - {n + s for n in CATALOG for s in ("_sum",)}
        assert not unknown, f"{r['record']} reads series no catalog names: {unknown}"
    by = " ".join(r["expr"] for r in rule_exprs(rule) if r["record"] == COST_METRICS["model_cost"].name)
    assert "label_inference_platform_io_model" in by and "label_inference_platform_io_team" not in by


def test_a_made_up_series_and_an_unbalanced_bracket_are_caught():
    assert parse("sum by (team) (inference:team_cost:usd_per_hour)") == {"inference:team_cost:usd_per_hour"}
    assert "vllm:prompt_tokens" in parse("rate(vllm:prompt_tokens[5m])")
    try:
        parse("sum(rate(x[5m])")
    except AssertionError:
        return
    raise AssertionError("an unclosed bracket parses")


def test_prices_follow_the_pools_with_the_stacks_own_figures_and_spot_discount():
    raw = copy.deepcopy(sections(PLATFORM))
    raw["nodePools"][0]["capacityTypes"] = ["spot", "on-demand"]
    raw["addons"]["monitoring"]["cost"] = {"spotDiscount": 0.6, "prices": {"g6.xlarge": 0.9}}
    cost = resolved(raw).cost
    assert cost is not None
    price = {(p.instance_type, p.capacity_type): p for p in cost.prices}
    assert price["g6.xlarge", "on-demand"].usd_per_hour == 0.9 and price["g6.xlarge", "on-demand"].basis == "stack"
    assert price["g6.xlarge", "spot"].usd_per_hour == 0.36, "spot is the stated share of on demand"
    assert price["g6.12xlarge", "on-demand"].usd_per_hour == on_demand("g6.12xlarge"), "the table elsewhere"
    assert price["inf2.24xlarge", "on-demand"].basis == "table"


def test_spot_without_a_discount_and_a_type_without_a_price_warn_naming_the_key():
    raw = copy.deepcopy(sections(PLATFORM))
    raw["nodePools"][0]["capacityTypes"] = ["spot"]
    raw["nodePools"][0]["instanceTypes"] = ["g6.xlarge"]
    found = warnings_of(raw)
    assert has(found, "addons.monitoring.cost.spotDiscount", "on-demand price", "upper bound")
    raw = copy.deepcopy(sections(PLATFORM))
    raw["nodePools"].append({"name": "big", "accelerator": "nvidia", "instanceTypes": ["p5e.48xlarge"]})
    assert has(warnings_of(raw), "addons.monitoring.cost.prices", "p5e.48xlarge", "no on-demand price")


def test_a_stack_outside_the_tables_region_is_warned_its_prices_are_us_east_1s_unless_it_states_them_all():
    raw = copy.deepcopy(sections(PLATFORM))
    found = warnings_of(raw)
    assert has(found, "addons.monitoring.cost.prices", "us-west-2", "us-east-1", "may differ", "g6.xlarge"), (
        "a us-west-2 stack costed from us-east-1's table is told which Region its figures are from"
    )
    east = [str(p) for p in stack_warnings(check_sections(raw, "us-east-1"))]
    assert not has(east, "addons.monitoring.cost.prices", "may differ"), "the table's own Region is priced right"
    cost = resolved(raw).cost
    assert cost is not None
    raw["addons"]["monitoring"]["cost"] = {"prices": {p.instance_type: 1.0 for p in cost.prices}}
    assert not has(warnings_of(raw), "addons.monitoring.cost.prices", "may differ"), (
        "a stack stating every launched type's price takes nothing from the table"
    )


def test_cost_is_off_with_its_switch_or_without_monitoring():
    raw = copy.deepcopy(sections(PLATFORM))
    raw["addons"]["monitoring"]["cost"] = {"enabled": False}
    assert resolved(raw).cost is None
    values = prometheus_stack_values(MonitoringAddon.model_validate({"cost": {"enabled": False}}))
    assert "kube-state-metrics" not in values, "no extra label series when cost is off"


def test_kube_state_metrics_exports_the_labels_the_joins_read():
    values = prometheus_stack_values(MonitoringAddon())
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == ksm_allowlist()
    assert ksm_allowlist() == [
        "namespaces=[inference-platform.io/team]",
        "nodes=[node.kubernetes.io/instance-type,karpenter.sh/capacity-type]",
        "pods=[inference-platform.io/model]",
    ]


def test_the_team_dashboard_shows_a_teams_tokens_and_cost_per_model_in_their_units():
    board = team_dashboard()
    check(board)
    titles = [p["title"] for p in board["panels"]]
    assert "Cost per million tokens by model (USD)" in titles and "Prompt tokens per second" in titles
    assert all('team=~"$team"' in t["expr"] for p in board["panels"] for t in p["targets"]), "filtered by team"
    (team,) = [v for v in board["templating"]["list"] if v["name"] == "team"]
    assert team["query"] == "label_values(inference:team_cost:usd_per_hour, team)"


def test_the_platform_dashboard_shows_cost_by_team_and_the_nodes_cost_models_hold():
    board = platform_dashboard()
    check(board)
    exprs = " ".join(t["expr"] for p in board["panels"] for t in p["targets"])
    assert "inference:node_cost:usd_per_hour" in exprs and "sum by (team) (inference:team_cost:usd_per_hour)" in exprs


def test_the_platform_example_renders_the_cost_rule_and_both_dashboards():
    objs = stack_manifests(EXAMPLES_DIR / "Pulumi.platform.yaml")
    (rule,) = [o for o in objs if o["kind"] == "PrometheusRule" and o["metadata"]["name"] == "inference-cost"]
    assert rule["metadata"]["namespace"] == "monitoring"
    assert "2026-07-20" in rule["metadata"]["annotations"]["inference-platform.io/price-table"]
    prices = [r for r in rule_exprs(rule) if r["record"] == COST_METRICS["price"].name]
    assert {(r["labels"]["instance_type"], r["labels"]["capacity_type"]) for r in prices} >= {
        ("g6.xlarge", "on-demand")
    }
    boards = {
        o["metadata"]["name"]: json.loads(next(iter(o["data"].values())))
        for o in objs
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] in ("dashboard-team-cost", "dashboard-platform-cost")
    }
    assert set(boards) == {"dashboard-team-cost", "dashboard-platform-cost"}
