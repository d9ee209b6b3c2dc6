"""GPU-sharing rules (`nodePools[].gpuSharing`, stacks/sharing.py): where a pool may share its GPUs, and
what a model on a shared pool may ask.

- Sharing is a config of the NVIDIA device plugin: on AL2023 the chart the platform installs
  (`addons.nvidiaDevicePlugin` on); on Bottlerocket the NVIDIA variant's own host plugin, configured by the
  pool's userData settings, which time-slice (from Bottlerocket 1.25.0) but whose MIG advertises instances
  as `nvidia.com/gpu` (migStrategy single), not the platform's slices: MIG is refused there.
- MIG only on GPUs that have it, with a profile that GPU offers (stacks/data/mig-profiles.json: A100,
  H100, H200, B200); A10G, L4, L40S and the g6f L4 fractions have none. The RTX PRO Blackwell GPUs of
  g7/g7e have MIG per NVIDIA, but their profile tables are not in the catalog: refused, saying so. A g6f
  is already a vGPU fraction: it is not shared further.
- A model on a shared pool asks for one slice (`acceleratorsPerReplica: 1`, one node): a slice is one
  device to the engine, so tensor parallelism over slices is not offered. Its engine must be one the
  platform can hold to the slice (`EngineFacts.gpu_sharing`): on a time-sliced GPU vLLM, whose
  `--gpu-memory-utilization` is a per-instance fraction the platform sets (so `engineArgs` may not); on
  MIG vLLM and SGLang, to which an instance is a GPU of its own.
The weights-per-slice check is stacks/rules/engines.py's; the pod's fit, stacks/rules/provisioning.py's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from components.engines import ENGINES

from ..checks import rule, warning
from ..config.pools import NodePoolSection
from ..errors import Problem, key_path
from ..guards import mig_quota_shortfalls
from ..resolved import ResolvedModel, ResolvedStack
from ..sharing import (
    BOTTLEROCKET_TIME_SLICING_SINCE,
    fractional_gpus,
    mig_model,
    mig_models,
    mig_untabled,
    pool_types,
    without_mig,
)
from .engine_args import owned_flag

MEMORY_FLAG = "--gpu-memory-utilization"


def _mig_gpus() -> str:
    return ", ".join(f"{m.gpu_name.upper()} {m.memory_gib:g} GiB" for m in mig_models().values())


def _pool_problems(i: int, pool: NodePoolSection, plugin: bool) -> Iterable[Problem]:
    where: list[str | int] = ["nodePools", i, "gpuSharing"]
    if pool.accelerator != "nvidia":
        yield Problem(key_path(where), f"gpuSharing shares NVIDIA GPUs, but pool {pool.name} is {pool.accelerator}")
        return
    if pool.ami_family == "bottlerocket":
        yield from _bottlerocket_problems(i, pool)
    elif not plugin:
        yield Problem(
            key_path(where),
            "gpuSharing is the NVIDIA device plugin's sharing config, and addons.nvidiaDevicePlugin.enabled is "
            "false; enable it or remove gpuSharing",
        )
    if fraction := fractional_gpus(pool):
        yield Problem(
            key_path(where),
            f"{', '.join(t.name for t in fraction)} already carry a fraction of an L4 (NVIDIA vGPU), which the "
            f"device plugin advertises as one nvidia.com/gpu and cannot share further; remove gpuSharing or "
            f"use whole-GPU types",
        )


def _bottlerocket_problems(i: int, pool: NodePoolSection) -> Iterable[Problem]:
    """Bottlerocket's host device plugin time-slices from its userData settings (stacks/sharing.py
    `bottlerocket_sharing_settings`), since BOTTLEROCKET_TIME_SLICING_SINCE; its MIG is not the platform's."""
    sharing = pool.gpu_sharing
    assert sharing is not None
    if sharing.mig is not None:
        yield Problem(
            key_path(["nodePools", i, "gpuSharing", "mig"]),
            "Bottlerocket's NVIDIA variant partitions MIG itself (settings.kubelet-device-plugins.nvidia.mig.profile, "
            "one profile per GPU model) and its device plugin then runs migStrategy single, advertising every "
            "instance as nvidia.com/gpu, not the nvidia.com/mig-<profile> slices the platform's fit, team quotas "
            "and NodeOverlay count; use amiAlias: al2023@<version> on this pool (the platform partitions MIG there), "
            "or timeSlicing on Bottlerocket",
        )
    version = pool.bottlerocket_version
    if sharing.time_slicing is not None and version is not None and version < BOTTLEROCKET_TIME_SLICING_SINCE:
        since = ".".join(str(p) for p in BOTTLEROCKET_TIME_SLICING_SINCE)
        yield Problem(
            key_path(["nodePools", i, "amiAlias"]),
            f"{pool.ami_alias} has no settings.kubelet-device-plugins.nvidia.time-slicing (Bottlerocket has them "
            f"from v{since}), so its nodes would advertise whole GPUs the NodeOverlay counts as slices; pin "
            f"bottlerocket@v{since} or later, or use amiAlias: al2023@<version>",
        )


def _mig_problems(i: int, pool: NodePoolSection) -> Iterable[Problem]:
    sharing = pool.gpu_sharing
    if sharing is None or sharing.mig is None or pool.accelerator != "nvidia":
        return
    profile = sharing.mig.profile
    for itype in pool_types(pool):
        model = mig_model(itype)
        if model is None:
            if itype.gpu_fraction is not None:
                continue  # refused above as a vGPU fraction
            gpu = (itype.gpu_name or "no").upper()
            why = (
                "which have no MIG"
                if itype.gpu_name in without_mig()
                else "whose MIG profiles the catalog does not hold (stacks/data/mig-profiles.json)"
            )
            if itype.gpu_name in mig_untabled():
                why = f"{why}: {mig_untabled()[itype.gpu_name]}"
            yield Problem(
                key_path(["nodePools", i, "gpuSharing", "mig"]),
                f"{itype.name} has {gpu} GPUs, {why}; MIG is on {_mig_gpus()} (p4d, p4de, p5, p5e, p5en, "
                f"p6-b200). Use timeSlicing on this pool, or MIG-capable types",
            )
        elif profile not in model.profiles:
            yield Problem(
                key_path(["nodePools", i, "gpuSharing", "mig", "profile"]),
                f"{itype.name}'s {model.name.upper()} offers no MIG profile {profile}; it offers "
                f"{', '.join(model.profiles)}",
            )


@rule
def gpu_sharing_only_where_the_plugin_can_share(stack: ResolvedStack) -> Iterable[Problem]:
    plugin = stack.config.addons.nvidia_device_plugin.enabled
    for i, pool in enumerate(stack.config.node_pools):
        if pool.gpu_sharing is not None:
            yield from _pool_problems(i, pool, plugin)
            yield from _mig_problems(i, pool)


@rule
def models_on_shared_pools_take_one_slice(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        sharing = model.pool.config.gpu_sharing
        if sharing is None or model.pool.accelerator != "nvidia":
            continue
        mode, key = ("MIG", "mig") if sharing.mig is not None else ("time-sliced", "timeSlicing")
        if key not in model.facts.gpu_sharing:
            engines = sorted(name for name, spec in ENGINES.items() if key in spec.facts.gpu_sharing)
            yield Problem(
                model.key("pool"),
                f"pool {model.pool.name} is {mode}, and the platform holds only {' and '.join(engines)} to one "
                f"slice there ({_why(mode)}); serve {model.engine} on a pool of whole GPUs",
            )
        if model.config.accelerators_per_replica != 1:
            yield Problem(
                model.key("acceleratorsPerReplica"),
                f"a replica on shared pool {model.pool.name} takes one slice (acceleratorsPerReplica: 1): each slice "
                f"is a device of its own to the engine, and slices of one GPU share its compute, so tensor "
                f"parallelism over them gains nothing; use a pool of whole GPUs for "
                f"{model.config.accelerators_per_replica} accelerators",
            )
        if mode == "time-sliced":
            yield from _memory_share_kept(model)


def _memory_share_kept(model: ResolvedModel) -> Iterable[Problem]:
    """`engineArgs` may not set the memory share on a time-sliced pool, in any spelling the engine's
    parser reads as that flag (a prefix, `_` for `-`: stacks/rules/engine_args.py `owned_flag`)."""
    why = (
        f"is set by the platform on time-sliced pool {model.pool.name}: the GPU's memory divided by its replicas "
        f"is all that keeps the replicas on one GPU apart; remove it"
    )
    dialect = replace(model.dialect, owned={MEMORY_FLAG: why}, exact=frozenset())
    for j, token in enumerate(model.config.engine_args):
        if owned_flag(token, dialect) is not None:
            yield Problem(model.key("engineArgs", j), f"{token.split('=', 1)[0]} sets {MEMORY_FLAG}, which {why}")


def _why(mode: str) -> str:
    if mode == "MIG":
        return "a MIG instance is a GPU of its own to these engines"
    return (
        "a time-sliced GPU isolates no memory, and only vLLM's --gpu-memory-utilization is a per-instance "
        "fraction the platform can set; SGLang sizes its cache from the memory free at start"
    )


def _mig_profiles(pools: Iterable[NodePoolSection]) -> list[str]:
    return sorted({p.gpu_sharing.mig.profile for p in pools if p.gpu_sharing is not None and p.gpu_sharing.mig})


@rule
def team_quotas_name_every_mig_profile(stack: ResolvedStack) -> Iterable[Problem]:
    """A ResourceQuota bounds only the resources it names: a team quota without a MIG profile of the
    platform's pools would let the team take every instance of it. Each must be listed (0 forbids it)."""
    profiles = _mig_profiles(stack.config.node_pools)
    for i, team in enumerate(stack.config.teams):
        missing = [p for p in profiles if p not in team.quota.mig_instances]
        if missing:
            yield Problem(
                key_path(["teams", i, "quota", "migInstances"]),
                f"the platform's pools offer MIG {', '.join(missing)}, which team {team.name}'s quota does not "
                f"name, so its ResourceQuota would not bound them; add e.g. "
                f"migInstances: {{{', '.join(f'{p}: 0' for p in missing)}}} (0 forbids them)",
            )


@rule
def team_quota_holds_one_mig_replica(stack: ResolvedStack) -> Iterable[Problem]:
    """A team's model on a MIG pool needs its profile's instances in the team's quota (the API server
    refuses a pod over it); the comparison is stacks/guards.py `mig_quota_shortfalls`, which the policy pack
    runs on the rendered pod and ResourceQuota. The other resources are stacks/rules/workloads.py's."""
    team = stack.team
    if team is None or team.quota is None:
        return
    for model in stack.models:
        sharing = model.pool.config.gpu_sharing
        if sharing is None or sharing.mig is None or not model.requests.mig:
            continue
        need = {sharing.mig.profile: model.requests.mig}
        for short in mig_quota_shortfalls(need, team.quota.mig_instances):
            yield Problem(
                model.key(),
                f"one replica of {model.name} needs {short.requested} of nvidia.com/mig-{sharing.mig.profile} "
                f"but team {team.name}'s quota allows {short.available} ({short.resource}, teams[].quota."
                f"migInstances of the platform stack), so the API server would refuse every pod; ask the platform "
                f"team to raise it",
            )


@warning
def team_quota_holds_every_mig_replica(stack: ResolvedStack) -> Iterable[Problem]:
    """All the team's replicas at their autoscaler maximum, and canaries, per MIG profile against the team's
    `quota.migInstances` (the MIG side of stacks/rules/quota.py `quota_holds_every_replica`): beyond it
    the API server refuses the extra pods, which stay unscheduled."""
    team = stack.team
    if team is None or team.quota is None:
        return
    # Per namespace: each of the team's namespaces has the whole quota.
    needs: dict[str, dict[str, int]] = {}
    for model in stack.models:
        sharing = model.pool.config.gpu_sharing
        if sharing is None or sharing.mig is None or not model.requests.mig:
            continue
        pods = model.config.most_replicas + model.config.canary_replicas
        need = needs.setdefault(model.namespace, {})
        need[sharing.mig.profile] = need.get(sharing.mig.profile, 0) + pods * model.requests.mig
    for short in (s for need in needs.values() for s in mig_quota_shortfalls(need, team.quota.mig_instances)):
        yield Problem(
            key_path(["stack", "team"]),
            f"all replicas together need {short.requested} of {short.resource}, more than the team quota's "
            f"{short.available} (teams[].quota.migInstances of the platform stack): some replicas will stay Pending",
        )
