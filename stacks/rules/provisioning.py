"""Capacity rules: what Karpenter could never provision, caught before anything exists.

- a pool whose limits stop even one node of every allowed type (so nothing ever launches);
- `localNvme: raid0` on a type with no instance store (inf2 has none);
- the AMI family and architecture the pool's types need, and the device plugin each accelerator
  needs to advertise its devices (without it Karpenter never considers the node initialized);
- every pod a model runs on its pool (`ResolvedModel.pods`: the requests the render gives it) fits some
  type of the pool after Karpenter's overheads and the platform's DaemonSets, and the pool's limits
  admit at least one node it fits on. A workloads stack's models are held to its platform's pools.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem, key_path
from ..fit import FitReport, blocked_by_limits, explain_no_fit, fit, largest
from ..hardware import catalog
from ..resolved import PodShape, ResolvedModel, ResolvedStack

# The model key a shortfall of each resource points at.
RESOURCE_KEYS = {
    "cpu": "resources.cpu",
    "memory": "resources.memory",
    "nvidia.com/gpu": "acceleratorsPerReplica",
    "aws.amazon.com/neuron": "acceleratorsPerReplica",
    "aws.amazon.com/neuroncore": "acceleratorsPerReplica",
}


@rule
def limits_admit_some_type(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.config.node_pools):
        if pool.limits.accelerators is not None and pool.accelerator == "none":
            yield Problem(
                key_path(["nodePools", i, "limits", "accelerators"]),
                "a pool with accelerator: none has no accelerators to limit; limit cpu and memory instead",
            )
            continue
        resolved = stack.platform.pools[i]
        types = list(resolved.instance_types)
        if not types or (pool.limits.cpu is None and pool.limits.memory is None and pool.limits.accelerators is None):
            continue
        limits = resolved.limits
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
def raid0_needs_instance_store(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.platform.pools if stack.owns_platform else ()):
        if pool.config.local_nvme != "raid0":
            continue
        without = [t.name for t in pool.instance_types if not t.has_instance_store]
        if without:
            yield Problem(
                key_path(["nodePools", i, "localNvme"]),
                f"raid0 stripes the instance store, but {', '.join(without)} has none (EBS only); set "
                f"localNvme: none and size rootVolumeGiB, or choose types with local NVMe "
                f"(g6, g6e, p5, trn1)",
            )


@rule
def architecture_matches_types(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.platform.pools if stack.owns_platform else ()):
        wrong = sorted({t.name for t in pool.instance_types if t.architecture != pool.config.architecture})
        if wrong:
            yield Problem(
                key_path(["nodePools", i, "architecture"]),
                f"{pool.config.architecture} requested, but {', '.join(wrong)} "
                f"{'is' if len(wrong) == 1 else 'are'} {pool.instance_types[0].architecture}; Karpenter would "
                f"find no type that satisfies both. Set architecture to match the types",
            )


@rule
def accelerators_have_device_plugins(stack: ResolvedStack) -> Iterable[Problem]:
    addons = stack.platform.addons
    for pool in stack.config.node_pools:
        if pool.accelerator == "nvidia" and pool.ami_family == "al2023" and not addons.nvidia_device_plugin.enabled:
            yield Problem(
                key_path(["addons", "nvidiaDevicePlugin", "enabled"]),
                f"pool {pool.name} runs NVIDIA GPUs on AL2023, whose AMI ships no device plugin: without "
                f"it no node advertises nvidia.com/gpu and Karpenter never considers it initialized. Enable "
                f"it, or use amiAlias: bottlerocket@... (its NVIDIA variant includes the plugin)",
            )
        if pool.accelerator == "neuron" and not addons.neuron.enabled:
            yield Problem(
                key_path(["addons", "neuron", "enabled"]),
                f"pool {pool.name} runs Inferentia/Trainium; without the Neuron device plugin no node "
                f"advertises aws.amazon.com/neuron. Enable addons.neuron or remove the pool",
            )


def _report(model: ResolvedModel, pod: PodShape) -> FitReport:
    return fit(pod.requests, model.pool.config, model.pool.overhead)


def _no_fit(stack: ResolvedStack, model: ResolvedModel, pod: PodShape, report: FitReport) -> Problem:
    """The model's pod fits no type: at the key to change first (the accelerator count when it is short)."""
    what = f"model {model.name}" if len(model.pods) == 1 else f"a {pod.role} pod of model {model.name}"
    text = explain_no_fit(what, pod.requests, model.pool.config, report)
    if not stack.owns_platform:
        return Problem(model.key(), text)
    misses = report.misses.get(largest(list(model.pool.instance_types)).name, [])
    shorts = sorted((m.resource for m in misses), key=lambda r: RESOURCE_KEYS.get(r) != "acceleratorsPerReplica")
    first = shorts[0] if shorts else ""
    offload = model.config.kv_cache_offload
    if first == "memory" and offload is not None:
        # The memory asked for is the engine's plus its KV-cache CPU tier: the tier is what to change.
        text += f" (the memory includes kvCacheOffload's {offload.cpu_gib}GiB CPU tier)"
        return Problem(model.key("kvCacheOffload", "cpuGiB"), text)
    return Problem(model.key(*RESOURCE_KEYS.get(first, "pool").split(".")), text)


@rule
def pods_fit_their_pool(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        if model.pool.accelerator not in model.facts.accelerators or not model.pool.instance_types:
            continue  # the wrong accelerator, or types the catalog does not know: the pool rules say so
        reports = [(pod, _report(model, pod)) for pod in model.pods if pod.pool]
        short = next(((pod, r) for pod, r in reports if not r.ok), None)
        if short is not None:
            yield _no_fit(stack, model, *short)
            continue
        limit = model.pool.config.limits.accelerators
        apr = model.config.accelerators_per_replica
        if limit is not None and model.pool.accelerator != "none" and apr > limit:
            yield Problem(
                model.key("acceleratorsPerReplica"),
                f"one replica of {model.name} needs {apr} accelerators but pool {model.pool.name} is limited to "
                f"{limit} (nodePools limits.accelerators); raise the limit"
                if stack.owns_platform
                else f"{apr} accelerators per replica exceed the platform pool {model.pool.name}'s limit of {limit}; "
                f"ask the platform team to raise limits.accelerators",
            )
            continue
        if not stack.owns_platform:
            continue  # a team cannot change its platform's limits; the platform's stack checks them
        fits = sorted(set.intersection(*(set(r.fits) for _, r in reports))) if reports else []
        types = {t.name: t for t in model.pool.instance_types}
        blocked = {n: blocked_by_limits(model.pool.config, types[n], model.pool.limits) for n in fits}
        pool_blocked = all(blocked_by_limits(model.pool.config, t, model.pool.limits) for t in types.values())
        if fits and all(blocked.values()) and not pool_blocked:
            why = "; ".join(f"{n}: {', '.join(b)}" for n, b in blocked.items())
            index = [p.name for p in stack.config.node_pools].index(model.pool.name)
            yield Problem(
                key_path(["nodePools", index, "limits"]),
                f"model {model.name} fits only {', '.join(fits)}, and the pool's limits stop even one such node "
                f"({why}); raise the limits",
            )


@warning
def cpu_types_outside_the_catalog(stack: ResolvedStack) -> Iterable[Problem]:
    known = catalog()
    for i, pool in enumerate(stack.config.node_pools):
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
