"""Node-pool rules: instance types the catalog knows, on the accelerator the pool declares."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..errors import Problem, key_path
from ..hardware import catalog, families


def _names_of(accelerator: str) -> list[str]:
    return sorted(t.name for t in catalog().values() if t.accelerator == accelerator)


@rule
def known_accelerator_types(config: StackConfig) -> Iterable[Problem]:
    known = catalog()
    for i, pool in enumerate(config.node_pools):
        if pool.accelerator == "none":
            for j, name in enumerate(pool.instance_types):
                if name in known and known[name].accelerator != "none":
                    yield Problem(
                        key_path(["nodePools", i, "instanceTypes", j]),
                        f"{name} carries {known[name].accelerator} accelerators; set accelerator: "
                        f"{known[name].accelerator} so the pool is tainted and its devices advertised",
                    )
            continue
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
def pools_need_karpenter(config: StackConfig) -> Iterable[Problem]:
    if config.node_pools and not config.addons.karpenter.enabled:
        yield Problem(
            key_path(["addons", "karpenter", "enabled"]),
            "nodePools are Karpenter NodePools; keep karpenter enabled or remove the pools",
        )
