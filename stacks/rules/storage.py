"""Storage rules: caches the chosen nodes can hold, volumes replicas can share, FSx settings that
are used, and stateful resources protected in production."""

from __future__ import annotations

import math
from collections.abc import Iterable

from components.storage.cache import CACHE_ROOT

from ..checks import rule, warning
from ..config import StackConfig
from ..config.base import absolute_path_problem
from ..config.storage import FSX_DEFAULT_QUOTA_GIB
from ..errors import Problem, key_path
from ..fit import ephemeral_mib, pool_types
from ..hardware import catalog
from ..sizing import BYTES_PER_PARAMETER

SINGLE_NODE_MODES = ("ReadWriteOnce", "ReadWriteOncePod")


def _cache_gib(config: StackConfig, params: int, dtype: str) -> int:
    headroom = config.storage.local.headroom_percent
    return max(1, math.ceil(params * BYTES_PER_PARAMETER[dtype] * (1 + headroom / 100) / 2**30))


@rule
def local_cache_needs_instance_store(config: StackConfig) -> Iterable[Problem]:
    """`modelCache: local` keeps weights on the node's RAID0 NVMe: every pool a model runs on must
    stripe its instance store, and every instance type it may launch must have one."""
    if config.storage.model_cache != "local":
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
def local_cache_is_sized_from_the_model(config: StackConfig) -> Iterable[Problem]:
    """The local volume is sized to the model, so the model must say how big it is, and that size
    must fit the NVMe of at least one instance type of its pool."""
    if config.storage.model_cache != "local":
        return
    for i, model in enumerate(config.models):
        if model.parameter_count is None or model.dtype is None:
            yield Problem(
                key_path(["models", i, "parameters"]),
                "modelCache: local sizes each pod's NVMe volume from the weights: set parameters "
                "(e.g. 8B) and dtype (e.g. bf16)",
            )
            continue
        pool = config.pool(model.pool)
        if pool is None or pool.local_nvme != "raid0":
            continue  # reported by the pool rules
        gib = _cache_gib(config, model.parameter_count, model.dtype)
        types = [t for t in pool_types(pool) if t.has_instance_store]
        best = max((ephemeral_mib(pool, t) for t in types), default=0)
        if types and gib * 1024 > best:
            yield Problem(
                key_path(["models", i, "pool"]),
                f"the local cache for {model.name} needs {gib}Gi but the largest instance store in pool "
                f"{pool.name} offers {best // 1024}Gi of ephemeral storage; add a larger type or use efs/fsx",
            )


@rule
def shared_claim_must_be_shareable(config: StackConfig) -> Iterable[Problem]:
    """A ReadWriteOnce volume mounts on one node only: a second replica (or autoscaling beyond one)
    would wait forever on another node."""
    claim = config.storage.existing_claim
    if claim is None or claim.access_mode not in SINGLE_NODE_MODES:
        return
    for i, model in enumerate(config.models):
        if model.most_replicas > 1:
            yield Problem(
                key_path(["models", i, "replicas"]),
                f"{model.name} may run {model.most_replicas} replicas but storage.existingClaim {claim.name} is "
                f"{claim.access_mode}, which mounts on one node only; use modelCache: efs or fsx "
                f"(ReadWriteMany), modelCache: local (a cache per pod), or one replica",
            )


@warning
def single_node_claim_and_rolling_updates(config: StackConfig) -> Iterable[Problem]:
    """One replica on a ReadWriteOnce claim works, but a rolling update's surge pod may land on
    another node and wait there for the volume."""
    claim = config.storage.existing_claim
    if claim is None or claim.access_mode not in SINGLE_NODE_MODES:
        return
    for i, model in enumerate(config.models):
        if model.replicas == 1:
            yield Problem(
                key_path(["models", i, "replicas"]),
                f"{claim.name} is {claim.access_mode}: a rollout's new pod can only start on the node "
                f"that holds it; prefer modelCache: efs, fsx or local",
            )


@rule
def fsx_import_path_needs_fsx(config: StackConfig) -> Iterable[Problem]:
    """`importPath` is what the FSx data repository association imports; without FSx it would be
    silently ignored."""
    storage = config.storage
    if storage.fsx.import_path is not None and storage.model_cache != "fsx":
        yield Problem(
            key_path(["storage", "fsx", "importPath"]),
            f"importPath only applies with modelCache: fsx (modelCache is {storage.model_cache}); "
            f"remove it, or set modelCache: fsx",
        )


@rule
def production_storage_is_protected(config: StackConfig) -> Iterable[Problem]:
    if config.stack.prod and not config.storage.protect:
        yield Problem(
            key_path(["storage", "protect"]),
            "production keeps the model bucket and file systems protected from deletion; remove "
            "protect: false (unprotect deliberately with `pulumi state unprotect` when retiring them)",
        )


# Where the NIM Operator mounts a NIMService's storage (NIM_CACHE_PATH; the operator's own tests and
# samples under shared/schemas/nim-operator/v3.1.2 use /model-store).
NIM_OPERATOR_ROOT = "/model-store"


@rule
def nim_model_path_stays_in_its_mount(config: StackConfig) -> Iterable[Problem]:
    """`nim.modelPath` is read inside the pod: it must name a directory of the model cache's mount
    (`/models` for the platform's Deployment, `/model-store` for a NIMService), never a path that
    walks out of it."""
    root = NIM_OPERATOR_ROOT if config.addons.nim_operator.enabled else CACHE_ROOT
    for i, model in enumerate(config.models):
        path = model.nim.model_path if model.nim is not None else None
        if path is None:
            continue
        why = absolute_path_problem(path, root)
        if why is not None:
            yield Problem(
                key_path(["models", i, "nim", "modelPath"]),
                f"{why}; give the prepared model's directory under {root}/",
            )


@warning
def fsx_capacity_within_the_default_quota(config: StackConfig) -> Iterable[Problem]:
    """Above the account's default Persistent_2 quota the file system is created only where the quota
    (Service Quotas L-8F1B9C74, adjustable) was raised."""
    fsx = config.storage.fsx
    if config.storage.model_cache == "fsx" and fsx.storage_capacity_gib > FSX_DEFAULT_QUOTA_GIB:
        yield Problem(
            key_path(["storage", "fsx", "storageCapacityGiB"]),
            f"{fsx.storage_capacity_gib} GiB is above the default FSx for Lustre Persistent_2 storage quota of "
            f"{FSX_DEFAULT_QUOTA_GIB} GiB per account and Region (Service Quotas L-8F1B9C74); raise the quota "
            f"first, or the file system's creation fails",
        )
