"""Replica sizing: the ONE place that decides what a model replica requests.

The engine builders put these figures into the container's resources and the fit rule
(stacks/rules/engines.py) checks the very same figures against the pool's instance types, so what
is validated is what is deployed. Pure functions over the validated config and the hardware
catalog.

- accelerators: per pod, `acceleratorsPerReplica` / `nodesPerReplica` (stacks/groups.py: a replica
  of N nodes is N pods, one per node, and every figure here is one such pod's) whole GPUs
  (`nvidia.com/gpu`) or whole Neuron devices (`aws.amazon.com/neuron`); requests equal limits.
- cpu and memory: `models[].resources` when given; otherwise the replica's share of the smallest
  instance type of the pool that holds its accelerators (share = accelerators / accelerators on the
  type), less the platform's DaemonSets and a 10% margin, so one replica per accelerator group
  always fits. CPU-only pools get a fixed modest share. On Neuron the memory is at least the
  weights plus room, since NxD Inference shards the checkpoint in host memory.
- ephemeral storage: logs, home and compiler caches, plus the node-local model cache when the cache
  lives on the node's own disk (`storage.modelCache: local`, or `none` without an existing claim):
  exactly the emptyDir size the storage concern gives that cache (`local_cache_gib`: weights plus
  `storage.local.headroomPercent`, plus room for compiled Neuron artifacts on Neuron pools), so
  the fit rule checks the ephemeral-storage request the pod really makes.
- weights: parameters x bytes per parameter of the dtype (BYTES_PER_PARAMETER).
- KV-cache offload (`models[].kvCacheOffload`): the CPU tier is added to the pod's memory request
  and limit; a derived share first gives the node's tiers their room (engine_memory_mib), so the
  tier never eats the margin kept back for spikes.
- shared GPU pools (`gpuSharing`, stacks/sharing.py): the pod requests one slice (`nvidia.com/gpu.shared`
  or `nvidia.com/mig-<profile>`) instead of a GPU, and its cpu/memory share is per slice of the node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import offload
from .config.models import ModelSection
from .config.pools import NodePoolSection
from .config.storage import StorageSection
from .engine_facts import Groups
from .fit import GIB, Requests, daemonset_overhead, pool_types
from .groups import per_node, replica_group
from .hardware import InstanceType
from .quantity import mebibytes, millicores
from .sharing import SHARED_RESOURCE, slice_resource, slices_per_node

BYTES_PER_PARAMETER = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
# Fraction of accelerator memory the weights may take; the rest is for the KV cache and activations.
WEIGHTS_FRACTION = 0.75
MARGIN = 0.9  # of a replica's share of the node, kept back for spikes and unlisted agents
BASE_EPHEMERAL_MIB = 10 * GIB
NEURON_ARTIFACTS_GIB = 20  # compiled NEFFs, kept in the model cache beside the weights
NEURON_ARTIFACTS_MIB = NEURON_ARTIFACTS_GIB * GIB
UNKNOWN_WEIGHTS_MIB = 50 * GIB  # weights on node disk with no `parameters` given
CPU_POOL_CPU_M = 8000
CPU_POOL_MEMORY_MIB = 32 * GIB


@dataclass(frozen=True)
class Weights:
    parameters: int
    dtype: str

    @property
    def bytes(self) -> float:
        return self.parameters * BYTES_PER_PARAMETER[self.dtype]

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


def weights(model: ModelSection) -> Weights | None:
    count = model.parameter_count
    return Weights(count, model.dtype) if count is not None and model.dtype is not None else None


def accelerator_types(model: ModelSection, pool: NodePoolSection) -> list[InstanceType]:
    """The pool's instance types that can hold one pod's accelerators (a whole replica's, on one node)."""
    return [t for t in pool_types(pool) if t.accelerator_count >= per_node(model)]


def _share(model: ModelSection, pool: NodePoolSection) -> tuple[int, int]:
    """(cpu millicores, memory MiB) of one pod's share of the smallest fitting type."""
    overhead = daemonset_overhead(pool)
    pod_accelerators = per_node(model)
    if pool.accelerator == "none" or model.accelerators_per_replica == 0:
        types = pool_types(pool)
        if not types:
            return CPU_POOL_CPU_M, CPU_POOL_MEMORY_MIB
        small = min(types, key=lambda t: (t.alloc_cpu_m, t.alloc_memory_mib))
        cpu = min(CPU_POOL_CPU_M, int((small.alloc_cpu_m - overhead.cpu_m) * MARGIN))
        mem = min(CPU_POOL_MEMORY_MIB, int((small.alloc_memory_mib - overhead.memory_mib) * MARGIN))
    else:
        types = accelerator_types(model, pool)
        if not types:
            return 0, 0  # no type holds the accelerators: the fit rule names that
        # On a shared GPU pool a pod's accelerator is one slice: its share of the node is per slice.
        units = {t.name: slices_per_node(pool, t) or t.accelerator_count for t in types}
        shares = [
            (
                int((t.alloc_cpu_m - overhead.cpu_m) * MARGIN * pod_accelerators / units[t.name]),
                int((t.alloc_memory_mib - overhead.memory_mib) * MARGIN * pod_accelerators / units[t.name]),
            )
            for t in types
        ]
        cpu, mem = min(s[0] for s in shares), min(s[1] for s in shares)
    # Round down to tidy quantities: 500m and 1Gi steps.
    return max(500, cpu // 500 * 500), max(GIB, mem // GIB * GIB)


def cache_on_node(storage: StorageSection | None) -> bool:
    """True when the model cache is an emptyDir on the node's disk rather than a claim."""
    if storage is None:
        return True
    return storage.model_cache == "local" or (storage.model_cache == "none" and storage.existing_claim is None)


def local_cache_gib(model: ModelSection, pool: NodePoolSection, headroom_percent: int) -> int | None:
    """The node-local cache's size in whole GiB: weights plus headroom and, on Neuron pools, the
    compiled artifacts; None when the stack file gives no `parameters`/`dtype`."""
    w = weights(model)
    if w is None:
        return None
    gib = max(1, math.ceil(w.bytes * (1 + headroom_percent / 100) / 2**30))
    return gib + (NEURON_ARTIFACTS_GIB if pool.accelerator == "neuron" else 0)


def _ephemeral(model: ModelSection, pool: NodePoolSection, storage: StorageSection | None) -> int:
    total = BASE_EPHEMERAL_MIB
    if cache_on_node(storage):
        headroom = storage.local.headroom_percent if storage is not None else StorageSection().local.headroom_percent
        gib = local_cache_gib(model, pool, headroom)
        if gib is not None:
            total += gib * GIB
        else:
            total += UNKNOWN_WEIGHTS_MIB + (NEURON_ARTIFACTS_MIB if pool.accelerator == "neuron" else 0)
    return math.ceil(total / GIB) * GIB


def host_memory_floor_mib(model: ModelSection, pool: NodePoolSection) -> int:
    """Neuron (NxD Inference) loads and shards the whole checkpoint in host memory before it moves
    it to the devices: the replica needs the weights plus working room in RAM."""
    w = weights(model)
    if pool.accelerator != "neuron" or w is None:
        return 0
    return math.ceil((w.bytes * 1.25 / 2**20 + 8 * GIB) / GIB) * GIB


def pod_allocatable_mib(model: ModelSection, pool: NodePoolSection) -> int:
    """One pod's part of the node's memory after the platform's DaemonSets, on the pool's smallest type
    that holds its accelerators (the node's allocatable over the pods it holds); 0 when none does."""
    overhead = daemonset_overhead(pool)
    types = accelerator_types(model, pool)
    if not types:
        return 0
    return min(int((t.alloc_memory_mib - overhead.memory_mib) * per_node(model) / t.accelerator_count) for t in types)


def largest_tier_gib(model: ModelSection, pool: NodePoolSection) -> int:
    """The largest KV-cache CPU tier (GiB) one pod of `model` can have on `pool`: the engine keeps its
    floor (or its `resources.memory`) and engine + tier stays inside the pod's part of the node."""
    bare = model.model_copy(update={"kv_cache_offload": None})
    room = pod_allocatable_mib(model, pool)
    if model.resources.memory:
        return max(0, (room - mebibytes(model.resources.memory)) // GIB)
    share = engine_memory_mib(bare, pool)
    return max(0, min(int((share - offload.ENGINE_FLOOR_MIB) / MARGIN), room - offload.ENGINE_FLOOR_MIB) // GIB)


def engine_memory_mib(model: ModelSection, pool: NodePoolSection) -> int:
    """The pod's memory for the engine itself, beside any KV-cache CPU tier: `resources.memory` when
    given; else its share of the node, the node's tiers carved out first (each pod's share of
    allocatable less the tiers of the pods the node holds, so share + tier stays inside the pod's part of
    the node), rounded down to whole GiB. May fall below the engine floor: the offload rule refuses that."""
    if model.resources.memory:
        return mebibytes(model.resources.memory)
    _, mem = _share(model, pool)
    mem = max(mem, host_memory_floor_mib(model, pool))
    tier = offload.tier_mib(model)
    if not tier:
        return mem
    return max(0, int(mem - tier * MARGIN) // GIB * GIB)


def replica_requests(model: ModelSection, pool: NodePoolSection, storage: StorageSection | None = None) -> Requests:
    """What one pod of `model` requests on `pool` (accelerator requests equal limits): the whole
    replica on one node, or one of its `nodesPerReplica` pods. Memory is the engine's plus its
    KV-cache CPU tier (`kvCacheOffload.cpuGiB`), which the engine allocates in host RAM (vLLM in
    /dev/shm, a memory-backed volume charged to the pod)."""
    cpu, _ = _share(model, pool)
    mem = engine_memory_mib(model, pool) + offload.tier_mib(model)
    if model.resources.cpu:
        cpu = millicores(model.resources.cpu)
    apr = per_node(model)
    shared = slice_resource(pool)
    return Requests(
        cpu_m=cpu,
        memory_mib=mem,
        ephemeral_mib=_ephemeral(model, pool, storage),
        gpu=apr if pool.accelerator == "nvidia" and shared is None else 0,
        neuron=apr if pool.accelerator == "neuron" else 0,
        gpu_shared=apr if shared == SHARED_RESOURCE else 0,
        mig=apr if shared is not None and shared != SHARED_RESOURCE else 0,
    )


def neuron_cores_per_device(pool: NodePoolSection) -> int:
    """NeuronCores on one `aws.amazon.com/neuron` device of this pool (2 on Inferentia2)."""
    per = {t.neuron_cores // t.neuron_devices for t in pool_types(pool) if t.neuron_devices}
    return min(per) if per else 2


def tensor_parallel(model: ModelSection, pool: NodePoolSection, groups: Groups) -> int:
    """Tensor-parallel degree: on NVIDIA the group's tensor size (stacks/groups.py; the replica's GPUs
    on one node); the NeuronCores of the requested devices on Neuron."""
    if pool.accelerator == "neuron":
        return model.accelerators_per_replica * neuron_cores_per_device(pool)
    return replica_group(model, groups).tensor
