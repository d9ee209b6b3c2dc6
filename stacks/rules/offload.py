"""KV-cache offload rules (`models[].kvCacheOffload`): the engines the platform wires a CPU tier for
(`EngineFacts.kv_offload`: vLLM's native OffloadingConnector, SGLang's hierarchical cache), on one node,
and a tier the pod's part of its node can hold beside the engine (stacks/sizing.py). Refused, each at
the key: another engine (TGI, Ollama, NIM, neuron-vllm and Ray Serve have no offload the platform
wires), a Dynamo graph (disaggregated, its workers' KV connector is NIXL, which the offloading
connector would replace; aggregated, Dynamo's own KV block manager is the path, not wired here), a
replica across nodes (how the engines split the tier over pipeline stages on several hosts is not
verified), an SGLang tier under 1 GB per rank (its `--hicache-size` is whole GB per rank), and a
tier that leaves the engine less than its floor on the pool's smallest type, with the largest that
fits. Zero and negative sizes are refused when the stack file loads (`cpuGiB` is at least 1).

The shared file tier (`kvCacheOffload.shared`) is refused at its key on an engine whose file tier the
platform does not wire (`KvOffload.shared_tier`: SGLang's only; vLLM 0.29's never deletes its files) and
on a stack whose model cache is not a shared file system (`local`, `none`: each pod's own volume, or an
existing claim the platform cannot tell is shared); on a Dynamo graph the whole key is refused above.
`sizeGiB` bounds the directory through every writer rank's cap (stacks/offload.py kv_writers): a size
that leaves a rank under MIN_RANK_GIB is refused with the smallest that works, and `engineArgs` may not set
the page size the tier sets (the dialect's `file_tier` flags). On FSx the stack's tiers together (one
`sizeGiB` per live revision: a canary's directory has its own bound) must stay below the file system's
fixed capacity, which the weights share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from components.engines import ENGINES

from ..checks import rule
from ..errors import Problem
from ..fastpath import SHARED_CACHES
from ..groups import replica_group
from ..offload import ENGINE_FLOOR_GIB, MIN_RANK_GIB, kv_smallest_gib, sglang_smallest_gib, shared_gib
from ..resolved import ModelEntry, ResolvedStack
from ..sizing import largest_tier_gib
from .engine_args import owned_flag


def _engine_problem(entry: ModelEntry) -> str | None:
    model = entry.config
    if model.dynamo is not None:  # only a Dynamo graph has the block
        if model.dynamo.mode == "disaggregated":
            return (
                "a disaggregated Dynamo graph moves the KV cache from prefill to decode workers through the NIXL "
                "connector the platform sets (--kv-transfer-config), and the offloading connector would replace "
                "it; remove kvCacheOffload, or serve the model aggregated on vllm or sglang"
            )
        return (
            "the platform wires no KV-cache offload on Dynamo's workers (Dynamo's own KV block manager is its "
            "path, not set up here); remove kvCacheOffload, or serve the model with engine vllm or sglang"
        )
    if entry.facts.kv_offload is None:
        wired = " and ".join(f"{n} ({e.facts.kv_offload.title})" for n, e in ENGINES.items() if e.facts.kv_offload)
        return (
            f"the platform wires KV-cache offload for {wired} only, not {model.engine}; remove kvCacheOffload or "
            f"choose one of those engines"
        )
    if model.nodes_per_replica > 1:
        return (
            f"a replica across {model.nodes_per_replica} nodes: how the engine splits its CPU tier over the "
            f"pipeline stages on several hosts is not verified; remove kvCacheOffload or serve the replica on one "
            f"node (nodesPerReplica: 1)"
        )
    return None


def offload_problems(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    model = entry.config
    offload = model.kv_cache_offload
    if offload is None:
        return
    why = _engine_problem(entry)
    if why is not None:
        yield Problem(entry.key("kvCacheOffload"), why)
        return
    yield from shared_problems(entry, stack)
    at = entry.key("kvCacheOffload", "cpuGiB")
    assert entry.facts.kv_offload is not None
    if entry.facts.kv_offload.per_rank_gb:
        tensor = replica_group(model, entry.facts.groups).tensor
        smallest = sglang_smallest_gib(tensor)
        if offload.cpu_gib < smallest:
            yield Problem(
                at,
                f"cpuGiB: {offload.cpu_gib} over {tensor} tensor-parallel ranks is under 1 GB per rank, and SGLang's "
                f"--hicache-size is whole GB per rank; set cpuGiB to {smallest} or more",
            )
            return
    pool = stack.platform.pool(model.pool) if stack.platform.known else None
    if pool is None or pool.accelerator != "nvidia":
        return  # an unknown or CPU pool is refused by its own rule; a workloads stack's is checked at preview
    largest = largest_tier_gib(model, pool.config)
    if offload.cpu_gib > largest:
        keeps = "resources.memory" if model.resources.memory else f"its {ENGINE_FLOOR_GIB}GiB floor"
        fits = f"the largest that fits is {largest}" if largest > 0 else "no tier fits"
        yield Problem(
            at,
            f"a {offload.cpu_gib}GiB CPU tier does not fit pool {pool.name}: on its smallest type for this model, "
            f"one pod's part of the node's memory after the platform's DaemonSets holds the engine ({keeps}) and "
            f"at most {max(largest, 0)}GiB more; {fits} (or choose a pool of larger instances)",
        )


def shared_problems(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """The file tier's refusals, for a model whose CPU tier the engine takes."""
    offload = entry.config.kv_cache_offload
    if offload is None or offload.shared is None:
        return
    at = entry.key("kvCacheOffload", "shared")
    facts = entry.facts.kv_offload
    assert facts is not None
    if facts.shared_tier is None:
        wired = " and ".join(
            f"{n} ({e.facts.kv_offload.shared_tier})"
            for n, e in ENGINES.items()
            if e.facts.kv_offload and e.facts.kv_offload.shared_tier
        )
        yield Problem(
            at,
            f"the platform wires a shared KV-cache file tier for {wired} only, not {entry.config.engine} (vLLM "
            f"0.29's file tier, a TieringOffloadingSpec secondary tier, never deletes what it writes, so nothing "
            f"would bound it); remove kvCacheOffload.shared, or serve the model with engine sglang",
        )
        return
    cache = stack.platform.storage.model_cache
    if cache not in SHARED_CACHES:
        yield Problem(
            at,
            f"storage.modelCache is {cache}: the tier lives on the platform's shared model cache, and this stack "
            f"has none (each pod's volume is its own, or an existing claim the platform cannot tell is shared); "
            f"use storage.modelCache: efs or fsx, or remove kvCacheOffload.shared",
        )
        return
    yield from _bound_problems(entry, stack)
    file_tier = replace(entry.made.dialect, owned=entry.made.dialect.file_tier)
    for j, token in enumerate(entry.config.engine_args):
        hit = owned_flag(token, file_tier)
        if hit is not None:
            yield Problem(entry.key("engineArgs", j), f"{token} ({hit[0]}) {hit[1]}")


def _bound_problems(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """A `sizeGiB` too small to give every writer rank that can share the directory MIN_RANK_GIB."""
    served = next((m for m in stack.models if m.name == entry.name), None)
    if served is None or not served.cache.kv_writers:
        return  # a model on no known pool is refused by its own rule
    writers, size = served.cache.kv_writers, shared_gib(entry.config)
    if served.cache.kv_rank_bytes < MIN_RANK_GIB * 2**30:
        model = entry.config
        yield Problem(
            entry.key("kvCacheOffload", "shared", "sizeGiB"),
            f"sizeGiB: {size} bounds the whole directory, split over the {writers} SGLang ranks that can write it "
            f"at once ({model.most_replicas} replicas at most, plus a rollout's surge of {model.rollout.max_surge}, "
            f"times each pod's writer ranks), which leaves each under {MIN_RANK_GIB}GiB; set sizeGiB to "
            f"{kv_smallest_gib(writers)} or more, or lower the replicas",
        )


@rule
def kv_cache_offload_is_wired_and_fits(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        yield from offload_problems(entry, stack)


@rule
def kv_file_tiers_fit_the_fsx_file_system(stack: ResolvedStack) -> Iterable[Problem]:
    """FSx for Lustre has a fixed capacity, which the weights share: the stack's file tiers together must
    stay below it (EFS is elastic and needs no such bound)."""
    storage = stack.platform.storage
    if storage.model_cache != "fsx":
        return
    capacity, total = storage.fsx.storage_capacity_gib, 0
    for entry in stack.entries:
        # Each live revision's directory (the model's, its canary's) has a bound of its own.
        size = shared_gib(entry.config) * (2 if entry.config.canary is not None else 1)
        total += size
        if size and total >= capacity:
            yield Problem(
                entry.key("kvCacheOffload", "shared", "sizeGiB"),
                f"the stack's KV-cache file tiers come to {total}GiB with this one (sizeGiB per live revision: a "
                f"canary's directory has its own), and the FSx file system holds {capacity}GiB "
                f"(storage.fsx.storageCapacityGiB) beside the models' weights; lower sizeGiB or raise the capacity",
            )
            return
