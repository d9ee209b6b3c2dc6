"""The price table: what an hour of each EC2 instance type costs on demand, dated and sourced.

`stacks/data/prices.json` is Karpenter's own static on-demand table (aws/karpenter-provider-aws
`pkg/providers/pricing/zz_generated.pricing_aws.go`, `InitialOnDemandPricesAWS`, generated from the
AWS Price List API at the date the file names), cut to the instance types of the hardware catalog. It
holds us-east-1 only: Karpenter's generator writes no other Region, and Karpenter itself falls back to
it in every Region until its live refresh (`pricing.go`). A stack in another Region states its own
figures with `addons.monitoring.cost.prices`. Spot prices change by the hour and by zone, so none is
kept: a stack states the discount it assumes (`addons.monitoring.cost.spotDiscount`).

The cost rules (components/monitoring/cost.py) read the resolved prices (`ResolvedStack.cost`), never
this table directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent / "data" / "prices.json"


@dataclass(frozen=True)
class PriceTable:
    region: str
    # When the figures were generated (ISO 8601) and where from (repository, path, commit).
    generated: str
    source: str
    on_demand: dict[str, float]


@cache
def price_table() -> PriceTable:
    data: dict[str, Any] = json.loads(TABLE.read_text())
    src = data["source"]
    return PriceTable(
        region=data["region"],
        generated=src["generated"],
        source=f"{src['repository']} {src['path']}@{src['commit'][:12]}",
        on_demand={name: float(usd) for name, usd in data["onDemand"].items()},
    )


def on_demand(instance_type: str) -> float | None:
    """USD per hour of one instance on demand (the table's Region); None when the table has no price
    (capacity-block-only types such as p5e.48xlarge are not sold on demand)."""
    return price_table().on_demand.get(instance_type)
