"""`python -m stacks plan <stack>`: what each pool can launch and where each model fits.

For each pool, the instance types it allows with what a pod can request on a fresh node of each
(Karpenter's allocatable less the platform's DaemonSets, stacks/fit.py); for each model, one
replica's requests and the types it fits on (for a replica across nodes, its group: N nodes x the
accelerators of each, and one pod's requests). Pure text from a validated StackConfig.
"""

from __future__ import annotations

from components.engines import ENGINES

from .config import StackConfig
from .fit import (
    allocatable,
    daemonset_overhead,
    daemonsets_on,
    fit,
    pool_limits,
    pool_types,
)
from .groups import replica_group
from .sizing import replica_requests

COLUMNS = ("type", "cpu", "memory", "ephemeral", "gpu", "neuron", "neuroncore", "pods")


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def plan(config: StackConfig) -> str:
    lines: list[str] = []
    for pool in config.node_pools:
        overhead = daemonset_overhead(pool, config)
        limits = pool_limits(pool).manifest(pool.accelerator)
        lines.append(
            f"pool {pool.name}: accelerator {pool.accelerator}, {'/'.join(pool.capacity_types)}, "
            f"{pool.ami_alias}, limits {limits or 'none'}"
        )
        names = ", ".join(d.name for d in daemonsets_on(pool, config))
        lines.append(f"  after DaemonSets ({names}: cpu {overhead.cpu_m}m, memory {overhead.memory_mib}Mi):")
        rows: list[tuple[str, ...]] = [COLUMNS]
        for itype in pool_types(pool):
            a = allocatable(pool, itype, overhead)
            rows.append(
                (
                    a.instance_type,
                    f"{a.cpu_m}m",
                    f"{a.memory_mib}Mi",
                    f"{a.ephemeral_mib}Mi",
                    str(a.gpu),
                    str(a.neuron),
                    str(a.neuroncore),
                    str(a.pods),
                )
            )
        lines += _table(rows) if len(rows) > 1 else ["    (no instance type the catalog knows)"]
    for model in config.models:
        target = config.pool(model.pool)
        if target is None:
            lines.append(f"model {model.name}: pool {model.pool} is not in this stack")
            continue
        req = replica_requests(model, target, config.storage)
        report = fit(req, target, daemonset_overhead(target, config))
        asked = f"cpu {req.cpu_m}m, memory {req.memory_mib}Mi, gpu {req.gpu}, neuron {req.neuron}"
        if not pool_types(target):
            where = "unchecked (no instance type of the pool is in the catalog)"
        else:
            where = ", ".join(report.fits) if report.ok else "NOTHING (see `stacks validate`)"
        group = replica_group(model, ENGINES[model.engine].facts.groups)
        if group.multi_node:
            unit = {"nvidia": "GPUs", "neuron": "Neuron devices"}.get(target.accelerator, "accelerators")
            lines.append(
                f"model {model.name} on pool {target.name}: one replica is a group of {group.describe(unit)}, "
                f"each pod {asked}: fits {where}"
            )
            continue
        lines.append(f"model {model.name} on pool {target.name} ({asked} per replica): fits {where}")
    return "\n".join(lines) + "\n"
