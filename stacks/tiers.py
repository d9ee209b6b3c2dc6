"""A pool's capacity tiers: the Karpenter NodePools one `nodePools[]` entry renders.

Karpenter orders the capacity types of one NodePool itself: with several allowed it prioritises
`reserved`, then `spot`, then `on-demand`, falling back to the next when EC2 has no offering of the
first (karpenter-provider-aws website/content/en/v1.14/concepts/nodepools.md, "Capacity Type"). So
`capacityTypes: [on-demand, spot]` launches spot first. The order a user chooses is expressed across
NodePools instead: Karpenter tries the NodePool of highest `spec.weight` first and uses a lower one when
the first cannot launch, because its limits are reached or EC2 has no capacity for it (concepts/scheduling.md,
"Weighted NodePools"; an insufficient-capacity answer is cached for 3 minutes per type and zone, so
the next attempt moves on).

`capacityPreference: [a, b, ...]` therefore renders one NodePool per type, each allowing that type alone,
with descending weights: the first named after the pool (an existing pool keeps its NodePool), the others
`<pool>-<type>`. Every tier carries the pool's label (components/scheduling.py POOL_LABEL), taints and
EC2NodeClass, so a model that selects the pool may land on any tier, preferring the first. Without a
preference the pool is one tier, exactly as before: its name, its `capacityTypes`, its `weight`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config.pools import NodePoolSection


@dataclass(frozen=True, kw_only=True)
class PoolTier:
    """One NodePool of a pool: its name, the capacity types it allows and its weight (None: unset)."""

    name: str
    capacity_types: tuple[str, ...]
    weight: int | None


def tier_name(pool: str, capacity_type: str, first: bool) -> str:
    return pool if first else f"{pool}-{capacity_type}"


def top_weight(pool: NodePoolSection) -> int:
    """The first tier's weight: the pool's `weight`, else the number of tiers (so the last gets 1,
    Karpenter's lowest: the CRD takes 1 to 100)."""
    return pool.weight if pool.weight is not None else len(pool.capacity_preference or ())


def pool_tiers(pool: NodePoolSection) -> tuple[PoolTier, ...]:
    """The pool's NodePools, most preferred first."""
    if not pool.capacity_preference:
        return (PoolTier(name=pool.name, capacity_types=tuple(pool.capacity_types), weight=pool.weight),)
    top = top_weight(pool)
    return tuple(
        PoolTier(name=tier_name(pool.name, kind, i == 0), capacity_types=(kind,), weight=top - i)
        for i, kind in enumerate(pool.capacity_preference)
    )


def tier_weights(pool: NodePoolSection) -> tuple[int, int] | None:
    """The lowest and highest weight of a tiered pool's NodePools; None without a preference."""
    if not pool.capacity_preference:
        return None
    top = top_weight(pool)
    return top - len(pool.capacity_preference) + 1, top
