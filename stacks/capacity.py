"""Schedulability: does a pod fit any instance type of a Karpenter NodePool, and why not.

Pure functions over the hardware catalog (stacks/hardware.py) and Karpenter's allocatable formulas
(shared/facts/CAPACITY.md): allocatable = capacity - kubeReserved - systemReserved - evictionHard,
then minus the requests of the platform's own DaemonSets that land on every node of the pool.
Used by `stacks validate`, `stacks plan`, the render and the engine modules, so a replica that can
never be scheduled is refused before anything is created.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .config.pools import NodePoolSection
from .hardware import InstanceType, expand

GIB = 1024  # MiB


@dataclass(frozen=True)
class Requests:
    """A pod's requests, in the units Karpenter packs by."""

    cpu_m: int = 0
    memory_mib: int = 0
    ephemeral_mib: int = 0
    gpu: int = 0
    neuron: int = 0
    neuroncore: int = 0
    neurondevice: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True)))

    def as_tuple(self) -> tuple[int, ...]:
        return (
            self.cpu_m,
            self.memory_mib,
            self.ephemeral_mib,
            self.gpu,
            self.neuron,
            self.neuroncore,
            self.neurondevice,
        )


# Resource name -> (attribute, how to show a quantity of it).
RESOURCES: dict[str, tuple[str, Callable[[int], str]]] = {
    "cpu": ("cpu_m", lambda v: f"{v}m"),
    "memory": ("memory_mib", lambda v: f"{v}Mi"),
    "ephemeral-storage": ("ephemeral_mib", lambda v: f"{v}Mi"),
    "nvidia.com/gpu": ("gpu", str),
    "aws.amazon.com/neuron": ("neuron", str),
    "aws.amazon.com/neuroncore": ("neuroncore", str),
}


@dataclass(frozen=True)
class Allocatable:
    instance_type: str
    cpu_m: int
    memory_mib: int
    ephemeral_mib: int
    gpu: int
    neuron: int
    neuroncore: int
    pods: int


@dataclass(frozen=True)
class Shortfall:
    resource: str
    requested: str
    available: str


@dataclass(frozen=True)
class FitReport:
    pool: str
    fits: list[str] = field(default_factory=list)
    # instance type -> the resources that do not fit on it
    misses: dict[str, list[Shortfall]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.fits)


def ephemeral_mib(pool: NodePoolSection, itype: InstanceType) -> int:
    """Karpenter's ephemeral-storage allocatable: the node filesystem less 10% eviction and 1Gi."""
    if pool.local_nvme == "raid0" and itype.has_instance_store:
        capacity_mib = itype.nvme_gib * 10**9 // 2**20  # EC2 reports decimal GB
    else:
        capacity_mib = pool.root_volume_gib * GIB
    return capacity_mib - math.ceil(capacity_mib * 0.10) - GIB


def allocatable(pool: NodePoolSection, itype: InstanceType, overhead: Requests = Requests()) -> Allocatable:
    """What a pod can request on a fresh node of this type, after the platform's DaemonSets."""
    return Allocatable(
        instance_type=itype.name,
        cpu_m=itype.alloc_cpu_m - overhead.cpu_m,
        memory_mib=itype.alloc_memory_mib - overhead.memory_mib,
        ephemeral_mib=ephemeral_mib(pool, itype) - overhead.ephemeral_mib,
        gpu=itype.gpu_count,
        neuron=itype.neuron_devices,
        neuroncore=itype.neuron_cores,
        pods=itype.alloc_pods,
    )


def daemonset_overhead(pool: NodePoolSection) -> Requests:
    """Requests of the platform's own DaemonSets on every node of this pool (device plugin, CNI,
    kube-proxy, CSI node drivers, exporters), which Karpenter adds when it packs pods."""
    return Requests()


def pool_types(pool: NodePoolSection) -> list[InstanceType]:
    return expand(pool.instance_types, pool.instance_families)


def fit(requests: Requests, pool: NodePoolSection, overhead: Requests = Requests()) -> FitReport:
    """Which of the pool's instance types can hold one pod with these requests."""
    report = FitReport(pool=pool.name)
    for itype in pool_types(pool):
        alloc = allocatable(pool, itype, overhead)
        short = [
            Shortfall(name, show(getattr(requests, attr)), show(getattr(alloc, attr)))
            for name, (attr, show) in RESOURCES.items()
            if getattr(requests, attr) > getattr(alloc, attr)
        ]
        if short:
            report.misses[itype.name] = short
        else:
            report.fits.append(itype.name)
    return report


def largest(types: list[InstanceType]) -> InstanceType:
    return max(types, key=lambda t: (t.accelerator_count, t.vcpu, t.memory_gib))


def explain_no_fit(what: str, requests: Requests, pool: NodePoolSection, report: FitReport) -> str:
    """One sentence naming the workload, the pool, the largest allowed type and what does not fit."""
    types = pool_types(pool)
    if not types:
        return f"{what}: pool {pool.name} allows no instance type the hardware catalog knows"
    big = largest(types)
    short = report.misses.get(big.name, [])
    detail = "; ".join(f"{s.resource} {s.requested} > {s.available} allocatable" for s in short)
    return (
        f"{what} fits no instance type of pool {pool.name}: on the largest, {big.name}, "
        f"{detail or 'nothing is short'}. Give the pool a larger instance type or ask for less"
    )
