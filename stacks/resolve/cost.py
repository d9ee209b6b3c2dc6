"""Resolve `addons.monitoring.cost`: a price per instance type and capacity type the platform's pools
may launch, from the stack's own figures or the dated price table (stacks/pricing.py), with the spot
discount applied to spot. Reserved capacity is prepaid and costed at the on-demand price."""

from __future__ import annotations

from ..config.addons import CostSection
from ..pricing import on_demand, price_table
from ..resolved import InstancePrice, ResolvedCost, ResolvedPool


def _price(instance_type: str, capacity_type: str, cost: CostSection) -> InstancePrice | None:
    own = cost.prices.get(instance_type)
    usd = own if own is not None else on_demand(instance_type)
    if usd is None:
        return None
    basis = "stack" if own is not None else "table"
    if capacity_type == "spot" and cost.spot_discount is not None:
        usd, basis = usd * (1 - cost.spot_discount), f"{basis} + spot discount"
    return InstancePrice(instance_type, capacity_type, round(usd, 6), basis)


def resolve_cost(cost: CostSection, pools: tuple[ResolvedPool, ...]) -> ResolvedCost:
    """Every (instance type, capacity type) a pool may launch, priced; the types without a price."""
    wanted = sorted({(t.name, c) for p in pools for t in p.instance_types for c in p.config.capacity_order})
    priced = [_price(t, c, cost) for t, c in wanted]
    table = price_table()
    return ResolvedCost(
        prices=tuple(p for p in priced if p is not None),
        table_region=table.region,
        table_generated=table.generated,
        table_source=table.source,
        spot_discount=cost.spot_discount,
        unpriced=tuple(sorted({t for (t, _), p in zip(wanted, priced, strict=True) if p is None})),
    )
