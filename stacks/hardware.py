"""Hardware catalog: the EC2 GPU, Inferentia2, Trainium and CPU instance types the platform knows.

Facts, not estimates: `stacks/data/instances.json` is a copy of shared/facts/instances.json, whose
every entry names its sources (Karpenter's generated instance-type reference at v1.14, the EC2
instance-type guide, the EKS AMI's ENI table). The allocatable figures are Karpenter's for AL2023,
VPC CNI without prefix delegation and a 20Gi root volume; `stacks/fit.py` adjusts them for a
pool's own root volume or RAID0 instance store. `stacks/data/instances-cpu.json` adds the m7i and c7i
families for `accelerator: none` pools, computed with the same formulas and checked against the same
Karpenter reference (tests/test_capacity_fit.py recomputes every entry).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

DATA = Path(__file__).resolve().parent / "data" / "instances.json"
DATA_CPU = Path(__file__).resolve().parent / "data" / "instances-cpu.json"

AcceleratorKind = Literal["nvidia", "neuron", "none"]


@dataclass(frozen=True)
class InstanceType:
    name: str
    family: str
    vcpu: int
    memory_gib: float
    gpu_name: str | None
    gpu_count: int
    gpu_memory_gib: float
    neuron_accelerator: str | None
    neuron_devices: int
    neuron_cores: int
    accelerator_memory_gib: float
    nvme_gib: int
    max_pods: int
    alloc_cpu_m: int
    alloc_memory_mib: int
    alloc_pods: int
    sources: tuple[str, ...]
    architecture: str = "amd64"
    max_enis: int = 0
    ipv4_per_eni: int = 0
    # EFA devices a node of this type can attach (one per network card on p4d/p5/p6), and its cards.
    efa_interfaces: int = 0
    network_cards: int = 1

    @property
    def accelerator(self) -> AcceleratorKind:
        if self.gpu_count:
            return "nvidia"
        if self.neuron_devices:
            return "neuron"
        return "none"

    @property
    def accelerator_count(self) -> int:
        return self.gpu_count or self.neuron_devices

    @property
    def memory_per_accelerator_gib(self) -> float:
        """GiB of accelerator memory per schedulable unit (a GPU, or a whole Neuron device)."""
        count = self.accelerator_count
        return self.accelerator_memory_gib / count if count else 0.0

    @property
    def has_instance_store(self) -> bool:
        return self.nvme_gib > 0


def _from_json(entry: dict) -> InstanceType:
    alloc = entry["karpenter_allocatable"]
    return InstanceType(
        name=entry["name"],
        family=entry["family"],
        vcpu=entry["vcpu"],
        memory_gib=entry["memory_gib"],
        gpu_name=entry.get("gpu_name"),
        gpu_count=entry.get("gpu_count") or 0,
        gpu_memory_gib=entry.get("gpu_memory_gib") or 0.0,
        neuron_accelerator=entry.get("neuron_accelerator_name"),
        neuron_devices=entry.get("neuron_devices") or 0,
        neuron_cores=entry.get("neuron_cores") or 0,
        accelerator_memory_gib=entry.get("accelerator_memory_gib") or 0.0,
        nvme_gib=entry.get("nvme_gib") or 0,
        max_pods=entry["max_pods"],
        alloc_cpu_m=alloc["cpu_millicores"],
        alloc_memory_mib=alloc["memory_mib"],
        alloc_pods=alloc["pods"],
        sources=tuple(entry.get("sources", ())),
        # Every type in the catalog is x86_64 unless its entry says otherwise.
        architecture=entry.get("architecture", "amd64"),
        max_enis=entry.get("max_enis_default_card") or 0,
        ipv4_per_eni=entry.get("ipv4_per_eni") or 0,
        efa_interfaces=entry.get("efa_interfaces") or 0,
        network_cards=entry.get("network_cards") or 1,
    )


@cache
def catalog() -> dict[str, InstanceType]:
    entries = [e for path in (DATA, DATA_CPU) for e in json.loads(path.read_text())["instances"]]
    return {e["name"]: _from_json(e) for e in entries}


def families() -> set[str]:
    return {t.family for t in catalog().values()}


def expand(instance_types: list[str], instance_families: list[str]) -> list[InstanceType]:
    """The catalog entries a pool allows, in catalog order (smallest first within a family)."""
    wanted_types, wanted_families = set(instance_types), set(instance_families)
    return [t for t in catalog().values() if t.name in wanted_types or t.family in wanted_families]
