"""Monitoring rules: an SLO can only be alerted on if the model's engine exports the metric for it, and
by a Prometheus the platform runs."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem, key_path
from ..resolved import ResolvedStack

_SLO_SIGNALS = {
    "ttft_seconds": ("ttft", "ttftSeconds"),
    "itl_seconds": ("itl", "itlSeconds"),
    "e2e_seconds": ("e2e", "e2eSeconds"),
    "max_queue_depth": ("queue", "maxQueueDepth"),
}


@rule
def slo_needs_a_metric(stack: ResolvedStack) -> Iterable[Problem]:
    """A workloads stack's SLOs are alerted on by its platform's Prometheus (its exported add-ons)."""
    for entry in stack.entries:
        slo, facts = entry.config.slo, entry.facts
        if slo is None:
            continue
        for attr, (signal, key) in _SLO_SIGNALS.items():
            if getattr(slo, attr) is not None and facts.metric(signal) is None:
                yield Problem(
                    entry.key("slo", key),
                    f"engine {entry.config.engine} exports no metric for {signal}, so this objective could never "
                    f"be alerted on; remove it"
                    + (f" ({facts.title} has no metrics endpoint)" if facts.metrics_path is None else ""),
                )
        if stack.platform.known and not stack.platform.addons.monitoring.enabled:
            where = "this stack" if stack.owns_platform else stack.platform.where
            yield Problem(
                entry.key("slo"),
                f"an slo is alerted on by Prometheus, which {where} does not run; {stack.ask_for('monitoring')}, or "
                f"remove the slo",
            )


_COST = ("addons", "monitoring", "cost")


@warning
def cost_prices_are_stated(stack: ResolvedStack) -> Iterable[Problem]:
    """The cost rules price every node the pools may launch: a type the table has no price for is left
    out of every cost, and a spot node without a stated discount is costed at the on-demand price."""
    cost = stack.cost
    if cost is None:
        return
    for name in cost.unpriced:
        yield Problem(
            key_path([*_COST, "prices"]),
            f"{name} has no on-demand price in the price table ({cost.table_source}), so its nodes count in no "
            f"model's or team's cost; set prices.{name} to its USD per instance-hour",
        )
    spot = [p.name for p in stack.platform.pools if "spot" in p.config.capacity_order]
    if spot and cost.spot_discount is None:
        yield Problem(
            key_path([*_COST, "spotDiscount"]),
            f"pool {spot[0]} may launch spot nodes, whose price changes by the hour and no table holds; they "
            f"are costed at the on-demand price (an upper bound): set spotDiscount to the share you expect "
            f"spot to save (0.6 when spot costs 40 % of on demand)",
        )


@warning
def cost_prices_match_the_region(stack: ResolvedStack) -> Iterable[Problem]:
    """The price table holds one Region's prices (us-east-1, the only one Karpenter's generated table
    has); EC2 prices differ by Region, so a stack elsewhere that takes any price from the table is told,
    unless its own figures cover every type its pools may launch."""
    cost = stack.cost
    if cost is None or stack.region == cost.table_region:
        return
    from_table = sorted({p.instance_type for p in cost.prices if p.basis.startswith("table")})
    if from_table:
        yield Problem(
            key_path([*_COST, "prices"]),
            f"this stack runs in {stack.region} but the price table holds {cost.table_region}'s on-demand "
            f"prices ({cost.table_source}, generated {cost.table_generated}), which may differ from "
            f"{stack.region}'s; {', '.join(from_table)} are costed at {cost.table_region}'s prices: set "
            f"prices.<type> to each type's {stack.region} USD per instance-hour",
        )
