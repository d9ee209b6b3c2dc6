"""Capacity rules: what Karpenter could never provision, caught before anything exists.

- a pool whose limits stop even one node of every allowed type (so nothing ever launches);
- `localNvme: raid0` on a type with no instance store (inf2 has none);
- the AMI family and architecture the pool's types need, and the device plugin each accelerator
  needs to advertise its devices (without it Karpenter never considers the node initialized);
- every model replica fits some type of its pool after Karpenter's overheads and the platform's
  DaemonSets, and the pool's limits admit at least one node that replica fits on.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config import StackConfig
from ..errors import Problem, key_path
from ..fit import (
    blocked_by_limits,
    daemonset_overhead,
    explain_no_fit,
    fit,
    largest,
    pool_limits,
    pool_types,
)
from ..hardware import catalog
from ..sizing import replica_requests

# The model key a shortfall of each resource points at.
RESOURCE_KEYS = {
    "cpu": "resources.cpu",
    "memory": "resources.memory",
    "nvidia.com/gpu": "acceleratorsPerReplica",
    "aws.amazon.com/neuron": "acceleratorsPerReplica",
    "aws.amazon.com/neuroncore": "acceleratorsPerReplica",
}


@rule
def limits_admit_some_type(config: StackConfig) -> Iterable[Problem]:
    for i, pool in enumerate(config.node_pools):
        if pool.limits.accelerators is not None and pool.accelerator == "none":
            yield Problem(
                key_path(["nodePools", i, "limits", "accelerators"]),
                "a pool with accelerator: none has no accelerators to limit; limit cpu and memory instead",
            )
            continue
        types = pool_types(pool)
        if not types or (pool.limits.cpu is None and pool.limits.memory is None and pool.limits.accelerators is None):
            continue
        limits = pool_limits(pool)
        blocked = {t.name: blocked_by_limits(pool, t, limits) for t in types}
        if all(blocked.values()):
            smallest = min(types, key=lambda t: (t.accelerator_count, t.vcpu, t.memory_gib))
            yield Problem(
                key_path(["nodePools", i, "limits"]),
                f"these limits block every instance type, so Karpenter can never launch a node: "
                f"even the smallest, {smallest.name}, exceeds {', '.join(blocked[smallest.name])}; raise "
                f"the limits to at least one {smallest.name} or remove them",
            )


@rule
def raid0_needs_instance_store(config: StackConfig) -> Iterable[Problem]:
    for i, pool in enumerate(config.node_pools):
        if pool.local_nvme != "raid0":
            continue
        without = [t.name for t in pool_types(pool) if not t.has_instance_store]
        if without:
            yield Problem(
                key_path(["nodePools", i, "localNvme"]),
                f"raid0 stripes the instance store, but {', '.join(without)} has none (EBS only); set "
                f"localNvme: none and size rootVolumeGiB, or choose types with local NVMe "
                f"(g6, g6e, p5, trn1)",
            )


@rule
def architecture_matches_types(config: StackConfig) -> Iterable[Problem]:
    for i, pool in enumerate(config.node_pools):
        wrong = sorted({t.name for t in pool_types(pool) if t.architecture != pool.architecture})
        if wrong:
            yield Problem(
                key_path(["nodePools", i, "architecture"]),
                f"{pool.architecture} requested, but {', '.join(wrong)} "
                f"{'is' if len(wrong) == 1 else 'are'} {pool_types(pool)[0].architecture}; Karpenter would "
                f"find no type that satisfies both. Set architecture to match the types",
            )


@rule
def accelerators_have_device_plugins(config: StackConfig) -> Iterable[Problem]:
    for pool in config.node_pools:
        if (
            pool.accelerator == "nvidia"
            and pool.ami_family == "al2023"
            and not config.addons.nvidia_device_plugin.enabled
        ):
            yield Problem(
                key_path(["addons", "nvidiaDevicePlugin", "enabled"]),
                f"pool {pool.name} runs NVIDIA GPUs on AL2023, whose AMI ships no device plugin: without "
                f"it no node advertises nvidia.com/gpu and Karpenter never considers it initialized. Enable "
                f"it, or use amiAlias: bottlerocket@... (its NVIDIA variant includes the plugin)",
            )
        if pool.accelerator == "neuron" and not config.addons.neuron.enabled:
            yield Problem(
                key_path(["addons", "neuron", "enabled"]),
                f"pool {pool.name} runs Inferentia/Trainium; without the Neuron device plugin no node "
                f"advertises aws.amazon.com/neuron. Enable addons.neuron or remove the pool",
            )


@rule
def replicas_fit_their_pool(config: StackConfig) -> Iterable[Problem]:
    if config.stack.role == "workloads":
        return  # the pools live in the platform stack
    for i, model in enumerate(config.models):
        pool = config.pool(model.pool)
        if pool is None or not pool_types(pool):
            continue  # reported by the pool rules
        requests = replica_requests(model, pool, config.storage)
        report = fit(requests, pool, daemonset_overhead(pool, config))
        if not report.ok:
            misses = report.misses.get(largest(pool_types(pool)).name, [])
            # Point at the accelerator count when it is short: that is the first thing to change.
            shorts = sorted(
                (m.resource for m in misses), key=lambda r: RESOURCE_KEYS.get(r) != "acceleratorsPerReplica"
            )
            first = shorts[0] if shorts else ""
            yield Problem(
                key_path(["models", i, *RESOURCE_KEYS.get(first, "pool").split(".")]),
                explain_no_fit(f"model {model.name}", requests, pool, report),
            )
            continue
        limit = pool.limits.accelerators
        if limit is not None and pool.accelerator != "none" and model.accelerators_per_replica > limit:
            yield Problem(
                key_path(["models", i, "acceleratorsPerReplica"]),
                f"one replica of {model.name} needs {model.accelerators_per_replica} accelerators but pool "
                f"{pool.name} is limited to {limit} (nodePools limits.accelerators); raise the limit",
            )
            continue
        limits = pool_limits(pool)
        types = {t.name: t for t in pool_types(pool)}
        blocked = {n: blocked_by_limits(pool, types[n], limits) for n in report.fits}
        pool_blocked = all(blocked_by_limits(pool, t, limits) for t in types.values())  # reported above
        if all(blocked.values()) and not pool_blocked:
            why = "; ".join(f"{n}: {', '.join(b)}" for n, b in blocked.items())
            yield Problem(
                key_path(["nodePools", config.node_pools.index(pool), "limits"]),
                f"model {model.name} fits only {', '.join(report.fits)}, and the pool's limits stop even one "
                f"such node ({why}); raise the limits",
            )


@warning
def cpu_types_outside_the_catalog(config: StackConfig) -> Iterable[Problem]:
    known = catalog()
    for i, pool in enumerate(config.node_pools):
        if pool.accelerator != "none":
            continue  # accelerator types must be in the catalog (stacks/rules/pools.py)
        for j, name in enumerate(pool.instance_types):
            if name not in known:
                yield Problem(
                    key_path(["nodePools", i, "instanceTypes", j]),
                    f"{name} is not in the hardware catalog, so what fits on it is not checked; the catalog "
                    f"knows the m7i and c7i families for CPU pools",
                )
        for j, family in enumerate(pool.instance_families):
            if not any(t.family == family for t in known.values()):
                yield Problem(
                    key_path(["nodePools", i, "instanceFamilies", j]),
                    f"family {family} is not in the hardware catalog, so what fits on it is not checked; the "
                    f"catalog knows the m7i and c7i families for CPU pools",
                )
