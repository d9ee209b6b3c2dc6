"""Hardware catalog: the EC2 GPU, Inferentia2, Trainium and CPU instance types the platform knows.

Facts, not estimates: every entry of `stacks/data/instances.json` names its sources (Karpenter's
generated instance-type reference at v1.14, the EC2 instance-type guide, the EKS AMI's ENI table).
The allocatable figures are Karpenter's for AL2023, VPC CNI without prefix delegation and a 20Gi
root volume; `stacks/fit.py` adjusts them for a pool's own root volume or RAID0 instance store.
`stacks/data/instances-cpu.json` adds the m7i and c7i families for `accelerator: none` pools,
computed with the same formulas and checked against the same Karpenter reference
(tests/test_capacity_fit.py recomputes every entry). `stacks/data/instances-frontier.json` adds the newest
accelerated types (p6-b200, p6-b300, the g6f fractional-L4 sizes) from the same Karpenter reference, and the
types that reference does not list (p6e-gb200 and trn2u UltraServer members, trn2.3xlarge) from AWS's Neuron
and EKS sources; a figure no primary table publishes is named in the entry's `secondary_figures` with where
it comes from, and a pool that allows such a type is warned to confirm it (stacks/rules/hardware.py)
(tests/test_hardware_frontier.py recomputes every allocatable)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

DATA = Path(__file__).resolve().parent / "data" / "instances.json"
DATA_CPU = Path(__file__).resolve().parent / "data" / "instances-cpu.json"
DATA_FRONTIER = Path(__file__).resolve().parent / "data" / "instances-frontier.json"

AcceleratorKind = Literal["nvidia", "neuron", "none"]

# How a user reads an entry's secondary figures.
SECONDARY_LABELS = {
    "vcpu": "vCPUs",
    "memory_gib": "memory",
    "gpu_memory_gib": "GPU memory",
    "nvme_gib": "local NVMe",
    "ebs_baseline_mbps": "EBS bandwidth",
    "max_enis_default_card": "ENI limits (so its pods)",
    "ipv4_per_eni": "ENI limits (so its pods)",
}


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
    # Karpenter's `instance-network-bandwidth` (baseline Mbps): the rate a node can pull an image or read
    # its weights at, over any path (stacks/coldstart.py bounds every transfer by it).
    network_mbps: int = 0
    # Karpenter's `instance-ebs-bandwidth` (baseline Mbps); 0 where the catalog's entry does not record it.
    ebs_mbps: int = 0
    # The share of one physical GPU a node gets (g6f: 1/8, 1/4, 1/2 of an L4, through NVIDIA vGPU); None: whole
    # GPUs. `gpu_count` and `gpu_memory_gib` are what the node's device plugin and driver show (one GPU of
    # the fraction's memory); `karpenter_gpus` is what Karpenter counts (0 for g6f: EC2 reports no whole GPU).
    gpu_fraction: float | None = None
    karpenter_gpus: int = 0
    # Figures of this entry that no primary (EC2-API-generated or AWS) table publishes, each with where it
    # comes from: the fit rule still reads them, and a pool allowing the type is warned to confirm them.
    secondary_figures: tuple[tuple[str, str], ...] = ()
    # Set on UltraServer members (p6e-gb200, trn2u): what the type is part of and how it is sold.
    ultraserver: str | None = None
    # Why the EKS accelerated AMIs may not run this type (not listed, driver floor): a pool is warned.
    ami_caveat: str | None = None

    @property
    def secondary_labels(self) -> list[str]:
        """The secondary figures in words, each once (both ENI figures are its ENI limits)."""
        names = (SECONDARY_LABELS.get(name, name) for name, _ in self.secondary_figures)
        return list(dict.fromkeys(names))

    @property
    def network_bytes_per_second(self) -> float:
        return self.network_mbps * 1e6 / 8

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

    @property
    def efa_layout(self) -> tuple[NetworkInterface, ...]:
        """The EC2NodeClass `networkInterfaces` that attach every EFA device of this type, as EC2's
        multi-card guidance lays them out (efa-acc-inst-types; the P6-B200 example of EKS's
        device-management-efa page): the primary ENA on card 0 device 0, an `efa-only` on card 0
        device 1, then an `efa-only` on device 0 of each further card, one EFA per card. Empty when
        the type has no EFA, or when the catalog cannot place them so (more EFA than network cards,
        or no second interface on card 0)."""
        count = self.efa_interfaces
        if not count or count > self.network_cards or self.max_enis < 2:
            return ()
        primary = NetworkInterface(0, 0, "interface")
        return (
            primary,
            NetworkInterface(0, 1, "efa-only"),
            *(NetworkInterface(c, 0, "efa-only") for c in range(1, count)),
        )

    @property
    def efa_pods(self) -> int:
        """Pods a node of this type takes with `efa_layout`: Karpenter's ENI-limited count, less the
        `efa-only` interface on card 0 (it carries no IPs): (ENIs(card 0) - 1) x (IPv4 per ENI - 1) + 2
        (karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go ENILimitedPods). p5.48xlarge:
        51 instead of 100."""
        return (self.max_enis - 1) * (self.ipv4_per_eni - 1) + 2


@dataclass(frozen=True)
class NetworkInterface:
    """One entry of an EC2NodeClass's `spec.networkInterfaces` (karpenter.k8s.aws/v1, v1.14.1)."""

    network_card_index: int
    device_index: int
    interface_type: Literal["interface", "efa-only"]

    def manifest(self) -> dict[str, int | str]:
        return {
            "networkCardIndex": self.network_card_index,
            "deviceIndex": self.device_index,
            "interfaceType": self.interface_type,
        }


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
        network_mbps=entry.get("network_baseline_mbps") or 0,
        ebs_mbps=entry.get("ebs_baseline_mbps") or 0,
        gpu_fraction=entry.get("gpu_fraction"),
        karpenter_gpus=alloc.get("nvidia.com/gpu") or 0,
        secondary_figures=tuple((entry.get("secondary_figures") or {}).items()),
        ultraserver=entry.get("ultraserver"),
        ami_caveat=entry.get("ami_caveat"),
    )


@cache
def catalog() -> dict[str, InstanceType]:
    entries = [e for path in (DATA, DATA_CPU, DATA_FRONTIER) for e in json.loads(path.read_text())["instances"]]
    types = [_from_json(e) for e in entries]
    # Catalog order is family order, smallest first within a family (a family's sizes may span files:
    # trn2.3xlarge beside instances.json's trn2.48xlarge).
    first = {t.family: i for i, t in reversed(list(enumerate(types)))}
    types.sort(key=lambda t: (first[t.family], t.vcpu))
    return {t.name: t for t in types}


def families() -> set[str]:
    return {t.family for t in catalog().values()}


def expand(instance_types: list[str], instance_families: list[str]) -> list[InstanceType]:
    """The catalog entries a pool allows, in catalog order (smallest first within a family)."""
    wanted_types, wanted_families = set(instance_types), set(instance_families)
    return [t for t in catalog().values() if t.name in wanted_types or t.family in wanted_families]
