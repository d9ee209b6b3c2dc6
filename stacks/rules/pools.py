"""Node-pool rules: instance types the catalog knows, on the accelerator the pool declares; a CPU
pool (`accelerator: none`) selects no accelerator family or type, since it is neither tainted nor
labelled for their devices; the system node group runs known CPU types; an `efa` pool has one EFA
layout and accelerator count; `reserved` and `capacityReservations` go together; a static pool
(`replicas`) follows Karpenter's static-capacity rules; `capacityPreference` is an order of distinct types
whose tiers (stacks/tiers.py) neither collide by name nor interleave by weight with another pool's, and
several `capacityTypes` in one NodePool warn that Karpenter, not the order written, decides."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..checks import rule, warning
from ..config.pools import NodePoolSection
from ..errors import Problem, key_path
from ..hardware import catalog, expand, families
from ..resolved import ResolvedStack
from ..tiers import pool_tiers, tier_weights


def _names_of(accelerator: str) -> list[str]:
    return sorted(t.name for t in catalog().values() if t.accelerator == accelerator)


# EC2's accelerated computing series (the EC2 instance types guide, "Instance type naming
# conventions": DL, F, G, Gr, Inf, P, Trn, VT), also for types the catalog does not hold.
_ACCELERATED = re.compile(r"^(dl|f|g|gr|inf|p|trn|vt)[0-9]", re.ASCII)


def _families_of(accelerator: str) -> list[str]:
    return sorted({t.family for t in catalog().values() if t.accelerator == accelerator})


def _cpu_pool_problems(i: int, pool: NodePoolSection) -> Iterable[Problem]:
    """A CPU pool (`accelerator: none`) selects no accelerator type or family: it is neither tainted nor
    labelled for their devices."""
    known = catalog()
    for j, name in enumerate(pool.instance_types):
        if name in known and known[name].accelerator != "none":
            yield Problem(
                key_path(["nodePools", i, "instanceTypes", j]),
                f"{name} carries {known[name].accelerator} accelerators; set accelerator: "
                f"{known[name].accelerator} so the pool is tainted and its devices advertised",
            )
        elif name not in known and _ACCELERATED.match(name):
            yield Problem(
                key_path(["nodePools", i, "instanceTypes", j]),
                f"{name} is an EC2 accelerated computing type, but the pool is accelerator: none (neither "
                f"tainted nor labelled for accelerators); use a CPU type, or an nvidia or neuron pool",
            )
    for j, fam in enumerate(pool.instance_families):
        members = [t for t in known.values() if t.family == fam]
        kinds = sorted({t.accelerator for t in members} - {"none"})
        if not members and _ACCELERATED.match(fam):
            yield Problem(
                key_path(["nodePools", i, "instanceFamilies", j]),
                f"family {fam} is an EC2 accelerated computing family, but the pool is accelerator: none "
                f"(neither tainted nor labelled for accelerators); choose CPU families "
                f"({', '.join(_families_of('none'))}), or an nvidia or neuron pool",
            )
        elif kinds:
            yield Problem(
                key_path(["nodePools", i, "instanceFamilies", j]),
                f"family {fam} carries {kinds[0]} accelerators, but the pool is accelerator: none, so its "
                f"nodes would be neither tainted nor labelled for them; set accelerator: {kinds[0]}, or "
                f"choose CPU families ({', '.join(_families_of('none'))})",
            )


def _accelerator_pool_problems(i: int, pool: NodePoolSection) -> Iterable[Problem]:
    """An accelerator pool allows only types and families the catalog knows, of its accelerator."""
    known = catalog()
    for j, name in enumerate(pool.instance_types):
        itype = known.get(name)
        if itype is None:
            yield Problem(
                key_path(["nodePools", i, "instanceTypes", j]),
                f"{name} is not in the hardware catalog (stacks/data/instances.json); known "
                f"{pool.accelerator} types: {', '.join(_names_of(pool.accelerator))}",
            )
        elif itype.accelerator != pool.accelerator:
            yield Problem(
                key_path(["nodePools", i, "instanceTypes", j]),
                f"{name} has {itype.accelerator} accelerators but the pool says accelerator: "
                f"{pool.accelerator}; move it to a {itype.accelerator} pool",
            )
    for j, fam in enumerate(pool.instance_families):
        members = [t for t in known.values() if t.family == fam]
        if not members:
            yield Problem(
                key_path(["nodePools", i, "instanceFamilies", j]),
                f"family {fam} is not in the hardware catalog; known: {', '.join(sorted(families()))}",
            )
        elif members[0].accelerator != pool.accelerator:
            yield Problem(
                key_path(["nodePools", i, "instanceFamilies", j]),
                f"family {fam} has {members[0].accelerator} accelerators but the pool says "
                f"accelerator: {pool.accelerator}",
            )


@rule
def known_accelerator_types(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.config.node_pools):
        yield from (_cpu_pool_problems if pool.accelerator == "none" else _accelerator_pool_problems)(i, pool)


@rule
def pools_need_karpenter(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if config.node_pools and not config.addons.karpenter.enabled:
        yield Problem(
            key_path(["addons", "karpenter", "enabled"]),
            "nodePools are Karpenter NodePools; keep karpenter enabled or remove the pools",
        )


@rule
def system_nodes_are_known_cpu_types(stack: ResolvedStack) -> Iterable[Problem]:
    """The managed node group runs AL2023 x86_64 without accelerator drivers: each of its types must be
    a CPU type of the catalog (so the fit of the controllers on it is known)."""
    config = stack.config
    if config.cluster is None:
        return
    known = catalog()
    cpu = _names_of("none")
    for j, name in enumerate(config.cluster.system_nodes.instance_types):
        itype = known.get(name)
        if itype is None:
            yield Problem(
                key_path(["cluster", "systemNodes", "instanceTypes", j]),
                f"{name} is not in the hardware catalog (stacks/data/instances-cpu.json); known CPU types: "
                f"{', '.join(cpu[:8])}, ...",
            )
        elif itype.accelerator != "none" or itype.architecture != "amd64":
            yield Problem(
                key_path(["cluster", "systemNodes", "instanceTypes", j]),
                f"{name} is not an x86_64 CPU type (it has {itype.accelerator} accelerators or runs "
                f"{itype.architecture}); the system nodes run controllers on AL2023 x86_64: use e.g. m7i.large",
            )


def _efa_types(accelerator: str) -> str:
    """The catalog's EFA types of this accelerator, most EFA first."""
    laid_out = [t for t in catalog().values() if t.efa_layout and t.accelerator == accelerator]
    return ", ".join(t.name for t in sorted(laid_out, key=lambda t: (-t.efa_interfaces, t.name))[:5])


@rule
def efa_pools_have_one_efa_layout(stack: ResolvedStack) -> Iterable[Problem]:
    """`efa: true` renders one `networkInterfaces` layout for every node of the pool (Karpenter drops a
    type the layout does not fit), and a multi-node group needs its nodes alike: every allowed type
    must have EFA the catalog can lay out, the same layout, and the same accelerator count."""
    config = stack.config
    for i, pool in enumerate(config.node_pools):
        if not pool.efa:
            continue
        where = key_path(["nodePools", i, "efa"])
        types = expand(pool.instance_types, pool.instance_families)
        selector = "instanceFamilies" if pool.instance_families else "instanceTypes"
        for itype in types:
            if itype.efa_layout:
                continue
            if not itype.efa_interfaces:
                yield Problem(
                    where,
                    f"{itype.name} (in {selector}) has no EFA, so efa: true cannot attach any; allow only EFA "
                    f"types in this pool (e.g. {_efa_types(pool.accelerator)}) or set efa: false",
                )
            else:
                yield Problem(
                    where,
                    f"{itype.name} has {itype.efa_interfaces} EFA interfaces but the hardware catalog does not "
                    f"know its network cards ({itype.network_cards} recorded), so no networkInterfaces layout "
                    f"can be rendered for it; remove it from the pool or set efa: false",
                )
        laid_out = [t for t in types if t.efa_layout]
        layouts = {t.efa_interfaces for t in laid_out}
        if len(layouts) > 1:
            detail = ", ".join(f"{t.name} {t.efa_interfaces}" for t in laid_out)
            yield Problem(
                where,
                f"efa: true gives every node of the pool one networkInterfaces layout, but its types differ in EFA "
                f"interfaces ({detail}); Karpenter would launch only the types that layout fits. Put each layout "
                f"in a pool of its own",
            )
        counts = {t.accelerator_count for t in laid_out}
        if len(counts) > 1:
            detail = ", ".join(f"{t.name} {t.accelerator_count}" for t in laid_out)
            yield Problem(
                where,
                f"the nodes of a multi-node group must be alike, but this efa pool's types differ in accelerators "
                f"({detail}); list types with one accelerator count (e.g. instanceTypes: [{laid_out[-1].name}])",
            )


@rule
def reserved_capacity_is_selected(stack: ResolvedStack) -> Iterable[Problem]:
    """`reserved` and `capacityReservations` go together. With Karpenter's ReservedCapacity gate (on by
    default since v1.6) a pool launches only into the reservations its EC2NodeClass selects, and its
    on-demand launches opt out of open reservations; selecting reservations without allowing
    `reserved` would never use them. Both are refused rather than completed silently."""
    config = stack.config
    for i, pool in enumerate(config.node_pools):
        key = "capacityPreference" if pool.capacity_preference else "capacityTypes"
        order = pool.capacity_order
        reserved = "reserved" in order
        if reserved and not pool.capacity_reservations:
            yield Problem(
                key_path(["nodePools", i, key, order.index("reserved")]),
                "reserved capacity matches only the reservations the pool selects (Karpenter never uses an open "
                "reservation by itself), and this pool selects none; add capacityReservations: "
                "[{id: cr-...}] or [{tags: {...}}], or drop reserved",
            )
        elif pool.capacity_reservations and not reserved:
            yield Problem(
                key_path(["nodePools", i, "capacityReservations"]),
                f"the pool selects capacity reservations but {key} lacks reserved, so Karpenter never "
                f"launches into them; add reserved to {key} (e.g. capacityTypes: [reserved] or "
                "capacityPreference: [reserved, on-demand])",
            )


def _preference_problems(i: int, pool: NodePoolSection) -> Iterable[Problem]:
    """A preference orders two or more distinct types, replaces capacityTypes, and needs room for one
    weight per tier on a pool that takes weights (not a static one)."""
    preference = pool.capacity_preference or []
    where: list[str | int] = ["nodePools", i, "capacityPreference"]
    if len(preference) < 2:
        yield Problem(
            key_path(where),
            "capacityPreference orders two or more capacity types (e.g. [on-demand, spot]); for one type write "
            f"capacityTypes: [{preference[0] if preference else 'on-demand'}] instead",
        )
    for j, kind in enumerate(preference):
        if kind in preference[:j]:
            yield Problem(
                key_path([*where, j]),
                f"{kind} is listed twice; each capacity type is one tier (one NodePool), so list it once, at "
                "the place it should be tried",
            )
    if "capacity_types" in pool.model_fields_set:
        yield Problem(
            key_path(["nodePools", i, "capacityTypes"]),
            "give either capacityTypes (one NodePool, Karpenter orders the types: reserved, spot, on-demand) or "
            "capacityPreference (one NodePool per type, in your order), not both; remove capacityTypes",
        )
    if pool.replicas is not None:
        yield Problem(
            key_path(where),
            "a static pool (replicas) is one NodePool of fixed size and takes no weight, so it cannot be split "
            "into preferred tiers; use capacityTypes on it, or remove replicas",
        )
    elif pool.weight is not None and pool.weight < len(preference):
        yield Problem(
            key_path(["nodePools", i, "weight"]),
            f"the {len(preference)} tiers take weights {pool.weight} and down, one less each, and Karpenter's "
            f"lowest weight is 1; set weight to at least {len(preference)} (or leave it unset)",
        )


@rule
def capacity_preference_is_an_order(stack: ResolvedStack) -> Iterable[Problem]:
    """`capacityPreference` (stacks/tiers.py): its own shape, and tier NodePool names no other pool uses."""
    config = stack.config
    names = {p.name: i for i, p in enumerate(config.node_pools)}
    for i, pool in enumerate(config.node_pools):
        if pool.capacity_preference is None:
            continue
        yield from _preference_problems(i, pool)
        for j, tier in enumerate(pool_tiers(pool)[1:], start=1):
            if tier.name in names:
                yield Problem(
                    key_path(["nodePools", i, "capacityPreference", j]),
                    f"this tier's NodePool would be named {tier.name}, the name of nodePools[{names[tier.name]}]; "
                    f"rename one of the pools",
                )


def _weight_span(pool: NodePoolSection) -> tuple[int, int]:
    return tier_weights(pool) or (pool.weight or 0, pool.weight or 0)


@rule
def tier_weights_do_not_interleave(stack: ResolvedStack) -> Iterable[Problem]:
    """Karpenter orders every NodePool a pod could use by weight, across pools. A model's pods select
    their pool by label, so only pools without a taint (`accelerator: none`) share pods that select
    none; between two such pools, a tiered pool's weights overlapping the other's would interleave or
    tie the two pools' tiers, and pods would not try one pool's tiers in the order its preference says."""
    untainted = [
        (i, p) for i, p in enumerate(stack.config.node_pools) if p.accelerator == "none" and p.replicas is None
    ]
    for n, (i, pool) in enumerate(untainted):
        for k, other in untainted[:n]:
            if pool.capacity_preference is None and other.capacity_preference is None:
                continue
            low, high = _weight_span(pool)
            other_low, other_high = _weight_span(other)
            if low <= other_high and other_low <= high:
                yield Problem(
                    key_path(["nodePools", i, "weight"]),
                    f"this pool's NodePools take weights {low}-{high} and nodePools[{k}] ({other.name}) "
                    f"{other_low}-{other_high}; neither is tainted, so a pod that selects no pool would try "
                    "their tiers interleaved. Set weight so the ranges do not overlap (e.g. above "
                    f"{other_high + high - low})",
                )


@warning
def capacity_types_order_is_karpenters(stack: ResolvedStack) -> Iterable[Problem]:
    """`capacityTypes` with several types is one NodePool, where Karpenter chooses the order itself:
    reserved, then spot, then on-demand, falling back only when EC2 has no offering of the higher
    type (karpenter-provider-aws v1.14 concepts/nodepools.md, "Capacity Type"). Not an error (spot first
    is often wanted), but the order written is not the order used."""
    for i, pool in enumerate(stack.config.node_pools):
        kinds = pool.capacity_types
        if pool.capacity_preference is not None or len(kinds) < 2:
            continue
        where = key_path(["nodePools", i, "capacityTypes"])
        written = f"[{', '.join(kinds)}]"
        if "on-demand" in kinds and "spot" in kinds:
            after = " (after the reservations)" if "reserved" in kinds else ""
            yield Problem(
                where,
                f"{written} is one NodePool, and Karpenter launches spot first{after}, "
                "falling back to on-demand only when spot is unavailable, whatever the order written; for on-demand "
                "first and spot when on-demand is short write capacityPreference: [on-demand, spot] (one NodePool "
                "per type, weighted), or capacityPreference: [spot, on-demand] to keep spot first and say so",
            )
        elif "reserved" in kinds:
            rest = ", ".join(k for k in kinds if k != "reserved")
            yield Problem(
                where,
                f"{written} is one NodePool, and Karpenter launches into the selected reservations first and {rest} "
                f"only when none has room, whatever the order written; capacityPreference: [reserved, {rest}] says "
                f"so (one NodePool per type, weighted), and [{rest}, reserved] would keep the reservations for last",
            )


@rule
def static_pools_follow_karpenters_rules(stack: ResolvedStack) -> Iterable[Problem]:
    """A static NodePool (`spec.replicas`, Karpenter v1.14.1 CRD CEL rules) takes only `limits.nodes` and
    no `weight`; it ignores consolidation, so setting it is refused as misleading. `limits.nodes` is
    rendered only on static pools."""
    config = stack.config
    for i, pool in enumerate(config.node_pools):
        limits = pool.limits
        if pool.replicas is None:
            if limits.nodes is not None:
                yield Problem(
                    key_path(["nodePools", i, "limits", "nodes"]),
                    "limits.nodes bounds a static pool; set replicas to make this one static, or limit it by "
                    "accelerators, cpu or memory",
                )
            continue
        for key in ("accelerators", "cpu", "memory"):
            if getattr(limits, key) is not None:
                yield Problem(
                    key_path(["nodePools", i, "limits", key]),
                    f"a static pool (replicas) takes only limits.nodes (Karpenter refuses other limits on it); "
                    f"remove limits.{key}",
                )
        if pool.weight is not None:
            yield Problem(
                key_path(["nodePools", i, "weight"]),
                "a static pool (replicas) takes no weight (Karpenter refuses it: the pool launches its replicas "
                "without choosing among pools); remove weight",
            )
        for key, field in (("consolidationPolicy", "consolidation_policy"), ("consolidateAfter", "consolidate_after")):
            if field in pool.model_fields_set:
                yield Problem(
                    key_path(["nodePools", i, key]),
                    f"a static pool (replicas) is never consolidated, so Karpenter ignores {key}; remove it",
                )
        if limits.nodes is not None and pool.replicas > limits.nodes:
            yield Problem(
                key_path(["nodePools", i, "replicas"]),
                f"replicas {pool.replicas} exceeds limits.nodes {limits.nodes}; Karpenter would stop at "
                f"{limits.nodes} nodes. Raise the limit or lower replicas",
            )
