"""Storage rules: caches the chosen nodes can hold, volumes replicas can share, FSx settings that are
used, and stateful resources protected in production. A team's models are held to its platform's
storage choice like the platform's own."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config.storage import FSX_DEFAULT_QUOTA_GIB
from ..errors import Problem, key_path
from ..fit import ephemeral_mib
from ..hardware import catalog
from ..resolved import ResolvedStack

SINGLE_NODE_MODES = ("ReadWriteOnce", "ReadWriteOncePod")


@rule
def local_cache_needs_instance_store(stack: ResolvedStack) -> Iterable[Problem]:
    """`modelCache: local` keeps weights on the node's RAID0 NVMe: every pool a model runs on must
    stripe its instance store, and every instance type it may launch must have one."""
    config = stack.config
    if not stack.owns_platform or config.storage.model_cache != "local":
        return
    known = catalog()
    used = {m.pool for m in config.models}
    for i, pool in enumerate(config.node_pools):
        if pool.name not in used:
            continue
        if pool.local_nvme != "raid0":
            yield Problem(
                key_path(["nodePools", i, "localNvme"]),
                f"storage.modelCache is local but pool {pool.name} does not use its instance store; "
                f"set localNvme: raid0 (on instance types with NVMe, e.g. g6, g6e) or choose efs or fsx",
            )
        for j, name in enumerate(pool.instance_types):
            itype = known.get(name)
            if itype is not None and not itype.has_instance_store:
                yield Problem(
                    key_path(["nodePools", i, "instanceTypes", j]),
                    f"{name} has no instance store, so modelCache: local has nowhere to keep weights; "
                    f"use a type with NVMe (e.g. g6.xlarge, g6e.xlarge) or set storage.modelCache: efs or fsx",
                )
        for j, fam in enumerate(pool.instance_families):
            bare = sorted(t.name for t in known.values() if t.family == fam and not t.has_instance_store)
            if bare:
                yield Problem(
                    key_path(["nodePools", i, "instanceFamilies", j]),
                    f"family {fam} includes types without instance store ({', '.join(bare[:4])}); "
                    f"modelCache: local needs NVMe on every type: list instanceTypes that have it",
                )


@rule
def local_cache_is_sized_from_the_model(stack: ResolvedStack) -> Iterable[Problem]:
    """The local volume is sized to the model (`ModelCache.local_gib`), so the model must say how big it
    is, and that size must fit the NVMe of at least one instance type of its pool."""
    if not stack.platform.known or stack.platform.storage.model_cache != "local":
        return
    platform = "" if stack.owns_platform else f"{stack.platform.where} caches models on local NVMe; "
    for entry in stack.entries:
        model = entry.config
        if model.parameter_count is None or model.dtype is None:
            yield Problem(
                entry.key("parameters"),
                f"{platform}modelCache: local sizes each pod's NVMe volume from the weights: set parameters "
                f"(e.g. 8B) and dtype (e.g. bf16)",
            )
            continue
        placed = stack.placed(entry)
        if placed is None or placed.pool.config.local_nvme != "raid0" or placed.cache.local_gib is None:
            continue  # reported by the pool rules
        gib = placed.cache.local_gib
        types = [t for t in placed.pool.instance_types if t.has_instance_store]
        best = max((ephemeral_mib(placed.pool.config, t) for t in types), default=0)
        if types and gib * 1024 > best:
            yield Problem(
                entry.key("pool"),
                f"the local cache for {model.name} needs {gib}Gi but the largest instance store in "
                f"{'pool' if stack.owns_platform else 'the platform' + chr(39) + 's pool'} {placed.pool.name} "
                f"offers {best // 1024}Gi of ephemeral storage; add a larger type or use efs/fsx",
            )


@rule
def shared_claim_must_be_shareable(stack: ResolvedStack) -> Iterable[Problem]:
    """A ReadWriteOnce volume mounts on one node only: a second replica (or autoscaling beyond one)
    would wait forever on another node."""
    claim = stack.config.storage.existing_claim
    if claim is None or claim.access_mode not in SINGLE_NODE_MODES:
        return
    for entry in stack.entries:
        model = entry.config
        if model.most_replicas > 1:
            yield Problem(
                entry.key("replicas"),
                f"{model.name} may run {model.most_replicas} replicas but storage.existingClaim {claim.name} is "
                f"{claim.access_mode}, which mounts on one node only; use modelCache: efs or fsx "
                f"(ReadWriteMany), modelCache: local (a cache per pod), or one replica",
            )


@warning
def single_node_claim_and_rolling_updates(stack: ResolvedStack) -> Iterable[Problem]:
    """One replica on a ReadWriteOnce claim works, but a rolling update's surge pod may land on
    another node and wait there for the volume."""
    claim = stack.config.storage.existing_claim
    if claim is None or claim.access_mode not in SINGLE_NODE_MODES:
        return
    for entry in stack.entries:
        if entry.config.replicas == 1:
            yield Problem(
                entry.key("replicas"),
                f"{claim.name} is {claim.access_mode}: a rollout's new pod can only start on the node "
                f"that holds it; prefer modelCache: efs, fsx or local",
            )


@rule
def fsx_import_path_needs_fsx(stack: ResolvedStack) -> Iterable[Problem]:
    """`importPath` is what the FSx data repository association imports; without FSx it would be
    silently ignored."""
    storage = stack.config.storage
    if storage.fsx.import_path is not None and storage.model_cache != "fsx":
        yield Problem(
            key_path(["storage", "fsx", "importPath"]),
            f"importPath only applies with modelCache: fsx (modelCache is {storage.model_cache}); "
            f"remove it, or set modelCache: fsx",
        )


@rule
def production_storage_is_protected(stack: ResolvedStack) -> Iterable[Problem]:
    if stack.prod and not stack.config.storage.protect:
        yield Problem(
            key_path(["storage", "protect"]),
            "production keeps the model bucket and the EFS file system protected from deletion; remove "
            "protect: false (unprotect deliberately with `pulumi state unprotect` when retiring them)",
        )


@warning
def fsx_capacity_within_the_default_quota(stack: ResolvedStack) -> Iterable[Problem]:
    """Above the account's default Persistent_2 quota the file system is created only where the quota
    (Service Quotas L-8F1B9C74, adjustable) was raised."""
    storage = stack.config.storage
    fsx = storage.fsx
    if storage.model_cache == "fsx" and fsx.storage_capacity_gib > FSX_DEFAULT_QUOTA_GIB:
        yield Problem(
            key_path(["storage", "fsx", "storageCapacityGiB"]),
            f"{fsx.storage_capacity_gib} GiB is above the default FSx for Lustre Persistent_2 storage quota of "
            f"{FSX_DEFAULT_QUOTA_GIB} GiB per account and Region (Service Quotas L-8F1B9C74); raise the quota "
            f"first, or the file system's creation fails",
        )
