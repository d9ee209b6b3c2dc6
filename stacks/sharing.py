"""GPU sharing (`nodePools[].gpuSharing`): what a shared GPU pool advertises, per node and per slice.

Pure facts over the hardware catalog, read by the rules, the fit check, the sizing, the device plugin's
values and the NodeOverlay builder, so every one of them counts the same slices.

- Time-slicing (NVIDIA k8s-device-plugin v0.20.0 `sharing.timeSlicing`, `renameByDefault: true`): each
  GPU is advertised `replicas` times as `nvidia.com/gpu.shared`. Pods take turns on the whole GPU: no
  memory or fault isolation, so the platform gives each replica the GPU's memory divided by `replicas`
  (its engine is capped there) and the fit rule checks the weights against that share.
- MIG (`flags.migStrategy: mixed`): every GPU is cut into instances of one profile (mig-parted's
  `all-<profile>` layout) and each is advertised as `nvidia.com/mig-<profile>`, a hardware-isolated slice
  with `memory_eighths`/8 of the GPU's memory (stacks/data/mig-profiles.json, from NVIDIA's MIG user guide).
- Bottlerocket: its NVIDIA variant runs its own device plugin as a host service, which the chart's config
  never reaches; time-slicing is its `settings.kubelet-device-plugins.nvidia` in the EC2NodeClass userData
  (`bottlerocket_sharing_settings`), which renders the same plugin config (renamed `nvidia.com/gpu.shared`).
  MIG there is refused: Bottlerocket's plugin runs MIG with `migStrategy: single` (every instance advertised
  as `nvidia.com/gpu`) and its `mig.profile` is keyed by GPU model, not the `nvidia.com/mig-<profile>`
  slices the fit, quotas and NodeOverlay count.
- g6f (a fraction of an L4 through NVIDIA vGPU): EC2 reports 0 GPUs, so Karpenter counts none, while
  the node's plugin advertises `nvidia.com/gpu: 1`; the NodeOverlay adds that one GPU (`fractional_gpus`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .config.pools import NodePoolSection
from .hardware import InstanceType, expand

DATA = Path(__file__).resolve().parent / "data" / "mig-profiles.json"

# The node label the device plugin's config-manager reads to pick the node's named config (chart 0.20.0
# templates/daemonset-device-plugin.yml: NODE_LABEL), and the config a node without it gets.
CONFIG_LABEL = "nvidia.com/device-plugin.config"
DEFAULT_CONFIG = "default"
TIME_SLICING_CONFIG = "time-slicing-"
MIG_CONFIG = "mig-"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
WHOLE_GPU = "nvidia.com/gpu"
# A ResourceQuota bounds a pod's requests of a resource under `requests.<resource>`.
QUOTA_PREFIX = "requests."
# Bottlerocket renders time-slicing from `settings.kubelet-device-plugins.nvidia` since core-kit v2.9.0
# (bottlerocket-core-kit 7a2edb76 "nvidia-k8s-device-plugin: add time-slicing configs", 2024-10-01), first in
# Bottlerocket 1.25.0 (bottlerocket.dev's 1.25.x settings reference is the first to list it).
BOTTLEROCKET_TIME_SLICING_SINCE = (1, 25, 0)
# Of the memory share a time-sliced replica gets, what its engine may allocate (vLLM's default
# --gpu-memory-utilization is 0.9 of the whole GPU; the rest is CUDA context and fragmentation).
ENGINE_MEMORY_FRACTION = 0.9


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile of one GPU model: its memory in eighths of the GPU's, and how many fit a GPU."""

    profile: str
    memory_eighths: int
    per_gpu: int


@dataclass(frozen=True)
class MigModel:
    name: str
    gpu_name: str
    memory_gib: float
    profiles: dict[str, MigProfile]


@cache
def mig_models() -> dict[str, MigModel]:
    raw = json.loads(DATA.read_text())["models"]
    return {
        name: MigModel(
            name,
            e["gpu_name"],
            e["memory_gib"],
            {p["profile"]: MigProfile(p["profile"], p["memory_eighths"], p["per_gpu"]) for p in e["profiles"]},
        )
        for name, e in raw.items()
    }


@cache
def without_mig() -> frozenset[str]:
    """The catalog's GPUs that have no MIG at all (others without a table may have one not recorded)."""
    return frozenset(json.loads(DATA.read_text())["no_mig"]["gpus"])


@cache
def mig_untabled() -> dict[str, str]:
    """The catalog's GPUs that NVIDIA lists as MIG-capable but whose profile table the catalog does not hold,
    each with what NVIDIA's guide says: MIG on them is refused, naming why."""
    return dict(json.loads(DATA.read_text())["mig_untabled"]["gpus"])


def mig_model(itype: InstanceType) -> MigModel | None:
    """The MIG table of this type's GPU (by name and memory: A100 40 GB and 80 GB differ); None: no MIG."""
    if itype.gpu_fraction is not None:
        return None  # a vGPU fraction of an L4 is not a MIG-capable GPU
    for model in mig_models().values():
        if model.gpu_name == itype.gpu_name and abs(model.memory_gib - itype.gpu_memory_gib) < 1:
            return model
    return None


def pool_types(pool: NodePoolSection) -> list[InstanceType]:
    return expand(pool.instance_types, pool.instance_families)


def slice_resource(pool: NodePoolSection) -> str | None:
    """The extended resource one slice of this pool's GPUs is advertised as; None: whole GPUs."""
    sharing = pool.gpu_sharing
    if sharing is None:
        return None
    if sharing.mig is not None:
        return f"{MIG_RESOURCE_PREFIX}{sharing.mig.profile}"
    return SHARED_RESOURCE


def mig_quota_key(profile: str) -> str:
    """The ResourceQuota `hard` key bounding one MIG profile's instances (`requests.nvidia.com/mig-3g.40gb`):
    what a team quota renders (components/team.py) and what the rules and the policy pack compare against."""
    return f"{QUOTA_PREFIX}{MIG_RESOURCE_PREFIX}{profile}"


def slices_per_gpu(pool: NodePoolSection, itype: InstanceType) -> int:
    """Slices one GPU of this type holds on this pool (0: not shared, or the GPU lacks the profile)."""
    sharing = pool.gpu_sharing
    if sharing is None:
        return 0
    if sharing.time_slicing is not None:
        return sharing.time_slicing.replicas
    assert sharing.mig is not None
    model = mig_model(itype)
    profile = model.profiles.get(sharing.mig.profile) if model else None
    return profile.per_gpu if profile else 0


def slices_per_node(pool: NodePoolSection, itype: InstanceType) -> int:
    return itype.gpu_count * slices_per_gpu(pool, itype)


def slice_memory_gib(pool: NodePoolSection, itype: InstanceType) -> float:
    """Accelerator memory one slice offers a model: the MIG instance's own memory, or, time-sliced, the
    GPU's memory divided by the replicas sharing it (nothing enforces it but the engine's own cap)."""
    sharing = pool.gpu_sharing
    if sharing is None:
        return itype.gpu_memory_gib
    if sharing.time_slicing is not None:
        return itype.gpu_memory_gib / sharing.time_slicing.replicas
    assert sharing.mig is not None
    model = mig_model(itype)
    profile = model.profiles.get(sharing.mig.profile) if model else None
    return itype.gpu_memory_gib * profile.memory_eighths / 8 if profile else 0.0


def engine_memory_fraction(pool: NodePoolSection) -> float | None:
    """The share of the whole GPU's memory a time-sliced replica's engine may allocate (two decimals,
    rounded down), so `replicas` engines fit one GPU together; None when the pool is not time-sliced
    (a MIG instance is a GPU of its own to the engine, whose default fraction then applies)."""
    sharing = pool.gpu_sharing
    if sharing is None or sharing.time_slicing is None:
        return None
    return math.floor(ENGINE_MEMORY_FRACTION / sharing.time_slicing.replicas * 100) / 100


def config_name(pool: NodePoolSection) -> str | None:
    """The device plugin's named config for this pool's nodes (the CONFIG_LABEL value); pools that share
    alike share a config. A MIG config names its profile, though the plugin's config is the same for every
    profile: the label then tells the policy pack (and a reader of the node) what the node is cut into."""
    sharing = pool.gpu_sharing
    if sharing is None:
        return None
    if sharing.time_slicing is not None:
        return f"{TIME_SLICING_CONFIG}{sharing.time_slicing.replicas}"
    assert sharing.mig is not None
    return f"{MIG_CONFIG}{sharing.mig.profile}"


def sharing_of_config(name: str | None) -> dict[str, object] | None:
    """The `gpuSharing` a CONFIG_LABEL value stands for (the reverse of `config_name`), as stack-file keys;
    None for whole GPUs or a value this platform does not write."""
    if name and name.startswith(TIME_SLICING_CONFIG) and name[len(TIME_SLICING_CONFIG) :].isdigit():
        return {"timeSlicing": {"replicas": int(name[len(TIME_SLICING_CONFIG) :])}}
    if name and name.startswith(MIG_CONFIG):
        return {"mig": {"profile": name[len(MIG_CONFIG) :]}}
    return None


def plugin_config(pool: NodePoolSection | None) -> dict[str, object]:
    """The device plugin's config file (k8s-device-plugin v0.20.0 api/config/v1) for this pool's nodes;
    None: the default, whole GPUs and no MIG."""
    sharing = pool.gpu_sharing if pool is not None else None
    strategy = "mixed" if sharing is not None and sharing.mig is not None else "none"
    config: dict[str, object] = {"version": "v1", "flags": {"migStrategy": strategy}}
    if sharing is not None and sharing.time_slicing is not None:
        config["sharing"] = {
            "timeSlicing": {
                # Advertised as nvidia.com/gpu.shared, not nvidia.com/gpu: a pod that asks for a whole GPU
                # never lands on a time-sliced one by mistake.
                "renameByDefault": True,
                "resources": [{"name": WHOLE_GPU, "replicas": sharing.time_slicing.replicas}],
            }
        }
    return config


def fractional_gpus(pool: NodePoolSection) -> list[InstanceType]:
    """The pool's types whose GPU Karpenter does not count (g6f: EC2 reports a fractional GPU as 0)."""
    return [t for t in pool_types(pool) if t.gpu_count > t.karpenter_gpus]


def overlay_capacity(pool: NodePoolSection, itype: InstanceType) -> dict[str, int]:
    """The extended resources a NodeOverlay must add for one type of this pool: its slices, and on a g6f
    the whole (fractional) GPU Karpenter does not count."""
    capacity: dict[str, int] = {}
    resource = slice_resource(pool)
    if resource is not None and (count := slices_per_node(pool, itype)):
        capacity[resource] = count
    if itype.gpu_count > itype.karpenter_gpus:
        capacity[WHOLE_GPU] = itype.gpu_count
    return capacity


def mig_partition_script(pool: NodePoolSection) -> str | None:
    """The AL2023 userData shell script that cuts every GPU of a MIG pool's node into its profile: MIG mode
    on, then `per_gpu` GPU instances of the profile with their compute instances (`nvidia-smi mig -cgi
    <profile,...> -C`, NVIDIA's MIG user guide "Getting Started with MIG"). AL2023 runs userData scripts
    after nodeadm's config phase and before nodeadm-run starts the kubelet (awslabs/amazon-eks-ami nodeadm
    docs), so the device plugin finds the instances when it starts. None when the pool is not MIG.

    What only a live node can confirm: that MIG mode takes effect without a reboot on the GPU model (A100s
    in a VM may need the GPU reset nvidia-smi attempts when no process holds it), that every GPU of a
    multi-GPU type gets its instances (no `-i`: every GPU), and that the instances appear as
    `nvidia.com/mig-<profile>` in the node's allocatable at the count the NodeOverlay promises."""
    sharing = pool.gpu_sharing
    if sharing is None or sharing.mig is None:
        return None
    profile = sharing.mig.profile
    counts = {
        model.profiles[profile].per_gpu
        for t in pool_types(pool)
        if (model := mig_model(t)) is not None and profile in model.profiles
    }
    if len(counts) != 1:
        return None  # no type, or types that disagree: refused by the rules before this renders
    instances = ",".join([profile] * counts.pop())
    return (
        "#!/bin/bash\n"
        "# MIG: partition every GPU before the kubelet and the NVIDIA device plugin start.\n"
        "set -euo pipefail\n"
        "nvidia-smi -mig 1\n"
        f"nvidia-smi mig -cgi {instances} -C\n"
        "nvidia-smi -L\n"
    )


def bottlerocket_sharing_settings(pool: NodePoolSection) -> str | None:
    """The TOML settings that time-slice a Bottlerocket pool's GPUs (settings.kubelet-device-plugins.nvidia,
    bottlerocket-core-kit packages/nvidia-k8s-device-plugin/nvidia-k8s-device-plugin-conf): the host plugin's
    config gets `sharing.timeSlicing` with these `replicas`, `renameByDefault` (advertised as
    `nvidia.com/gpu.shared`, as on AL2023) and `failRequestsGreaterThanOne` (a pod asking for two slices is
    refused rather than given two slices of one GPU). Each set explicitly, not left to Bottlerocket's
    defaults (true, true, 2). None when the pool is not a time-sliced Bottlerocket pool."""
    sharing = pool.gpu_sharing
    if pool.ami_family != "bottlerocket" or sharing is None or sharing.time_slicing is None:
        return None
    return (
        "[settings.kubelet-device-plugins.nvidia]\n"
        'device-sharing-strategy = "time-slicing"\n'
        "\n"
        "[settings.kubelet-device-plugins.nvidia.time-slicing]\n"
        f"replicas = {sharing.time_slicing.replicas}\n"
        "rename-by-default = true\n"
        "fail-requests-greater-than-one = true\n"
    )
