"""Workloads-stack rules: a team's models must fit the platform's pools and the team's quota.

The platform's pools and storage come from its exports (stacks/exports.py): read from the
StackReference under `pulumi up`, or computed from the platform's stack file when it is in this
repository. A replica's requests are `stacks/sizing.py replica_requests` on the platform's pool and
storage: the very figures the engine builders put into the container, so the fit and the quota are
checked against what is deployed, default sizing included. Fit uses the same `stacks/fit.py`
functions as an all-in-one stack, and the quota comparison is `stacks/guards.py quota_shortfalls`,
which the policy pack runs on the rendered ResourceQuota and pods at preview.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..checks import Lookup, platform_rule, platform_warning, rule
from ..config import ModelSection, StackConfig
from ..config.pools import NodePoolSection
from ..config.storage import StorageSection
from ..errors import ConfigError, Problem, key_path
from ..exports import EXPORTS_VERSION, PlatformSource
from ..fit import Requests, daemonset_overhead, ephemeral_mib, explain_no_fit, fit, pool_types
from ..guards import QUOTA_RESOURCES, quota_shortfalls
from ..quantity import mebibytes, millicores
from ..resolve import read_addons, read_pools, read_storage
from ..sizing import BYTES_PER_PARAMETER, replica_requests
from .models import ENGINE_ACCELERATORS, ENGINE_ADDONS


def cpu_millis(quantity: str) -> int:
    """The stack file's cpu in millicores (stacks/quantity.py; validated exact by the config model)."""
    return millicores(quantity)


def memory_mib(quantity: str) -> int:
    """The stack file's memory in MiB (stacks/quantity.py; validated whole MiB by the config model)."""
    return mebibytes(quantity)


def stated_requests(model: ModelSection, accelerator: str) -> Requests:
    """A lower bound of one replica's requests when the platform's pools are not known offline: its
    accelerators, and cpu/memory only where the stack file states them. The full check
    (`replica_requests` on the platform's pool) runs at preview, against the StackReference."""
    accel = model.accelerators_per_replica
    return Requests(
        cpu_m=cpu_millis(model.resources.cpu) if model.resources.cpu else 0,
        memory_mib=memory_mib(model.resources.memory) if model.resources.memory else 0,
        gpu=accel if accelerator == "nvidia" else 0,
        neuron=accel if accelerator == "neuron" else 0,
    )


def _source(config: StackConfig, lookup: Lookup) -> tuple[PlatformSource | None, list[Problem]]:
    ref = config.stack.platform_stack
    assert ref is not None
    try:
        source = lookup(ref)
    except ConfigError as exc:
        first = exc.problems[0] if exc.problems else "invalid"
        return None, [
            Problem(
                key_path(["stack", "platformStack"]),
                f"the platform stack file {exc.source} is invalid ({first}); fix the platform stack first",
            )
        ]
    if source is not None and source.exports.get("exportsVersion") != EXPORTS_VERSION:
        return None, [
            Problem(
                key_path(["stack", "platformStack"]),
                f"{source.where} exports contract version {source.exports.get('exportsVersion')!r}, this "
                f"program reads version {EXPORTS_VERSION}; update the platform stack or this checkout",
            )
        ]
    return source, []


def _model_on_platform(
    i: int, model: ModelSection, pools: dict[str, NodePoolSection], storage: StorageSection, source: PlatformSource
) -> Iterable[Problem]:
    pool = pools.get(model.pool)
    if pool is None:
        yield Problem(
            key_path(["models", i, "pool"]),
            f"the platform ({source.where}) exports no pool named {model.pool!r}; its pools: "
            f"{', '.join(pools) or '(none)'}",
        )
        return
    allowed = ENGINE_ACCELERATORS[model.engine]
    if pool.accelerator not in allowed:
        yield Problem(
            key_path(["models", i, "engine"]),
            f"engine {model.engine} runs on {' or '.join(allowed)} but the platform's pool {pool.name} is "
            f"{pool.accelerator}; choose one of the platform's {allowed[0]} pools",
        )
        return
    requests = replica_requests(model, pool, storage)
    report = fit(requests, pool, daemonset_overhead(pool))
    if not report.ok:
        yield Problem(key_path(["models", i]), explain_no_fit(f"a replica of {model.name}", requests, pool, report))
    limit = pool.limits.accelerators
    if limit is not None and model.accelerators_per_replica > limit:
        yield Problem(
            key_path(["models", i, "acceleratorsPerReplica"]),
            f"{model.accelerators_per_replica} accelerators per replica exceed the platform pool "
            f"{pool.name}'s limit of {limit}; ask the platform team to raise limits.accelerators",
        )


@platform_rule
def workloads_fit_the_platform(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    if config.stack.role != "workloads":
        return
    source, problems = _source(config, lookup)
    yield from problems
    if source is None:
        return
    pools = {p.name: p.config for p in read_pools(source.exports)}
    addons = read_addons(source.exports)
    storage = read_storage(source.exports)
    yield from _storage_for_teams(config, storage, source)
    for i, model in enumerate(config.models):
        yield from _model_on_platform(i, model, pools, storage, source)
        yield from _local_cache_on_platform(i, model, pools, storage, source)
        if model.expose and not source.exports.get("gatewayParent"):
            yield Problem(
                key_path(["models", i, "expose"]),
                f"the platform ({source.where}) exports no gatewayParent (it runs no gateway), so "
                f"{model.name} has nothing to attach a route to; set expose: false or ask the platform "
                f"team to enable gateway",
            )
        if model.autoscaling.owner == "hpa" and source.exports.get("customMetrics") is False:
            yield Problem(
                key_path(["models", i, "autoscaling", "owner"]),
                f"an HPA reads {model.engine}'s metrics through prometheus-adapter, which the platform "
                f"({source.where}) does not run; use autoscaling.owner: none (or aibrix, which scrapes "
                f"pods itself) or ask the platform team to enable addons.monitoring",
            )
        addon = ENGINE_ADDONS.get(model.engine)
        if addon and not getattr(addons, addon).enabled:
            yield Problem(
                key_path(["models", i, "engine"]),
                f"engine {model.engine} needs the {addon} add-on, which the platform ({source.where}) does "
                f"not install; ask the platform team to enable addons.{addon}",
            )


def _local_cache_on_platform(
    i: int, model: ModelSection, pools: dict[str, NodePoolSection], storage: StorageSection, source: PlatformSource
) -> Iterable[Problem]:
    """The platform's `modelCache: local` sizes each pod's NVMe volume from the weights, for a team's
    model as for its own (stacks/rules/storage.py local_cache_is_sized_from_the_model)."""
    if storage.model_cache != "local":
        return
    if model.parameter_count is None or model.dtype is None:
        yield Problem(
            key_path(["models", i, "parameters"]),
            f"the platform ({source.where}) caches models on local NVMe, sized from the weights: set parameters "
            f"(e.g. 8B) and dtype (e.g. bf16)",
        )
        return
    pool = pools.get(model.pool)
    if pool is None or pool.local_nvme != "raid0":
        return
    headroom = storage.local.headroom_percent
    gib = max(1, math.ceil(model.parameter_count * BYTES_PER_PARAMETER[model.dtype] * (1 + headroom / 100) / 2**30))
    types = [t for t in pool_types(pool) if t.has_instance_store]
    best = max((ephemeral_mib(pool, t) for t in types), default=0)
    if types and gib * 1024 > best:
        yield Problem(
            key_path(["models", i, "pool"]),
            f"the local cache for {model.name} needs {gib}Gi but the largest instance store in the platform's pool "
            f"{pool.name} offers {best // 1024}Gi of ephemeral storage; choose a pool with larger NVMe",
        )


def _one_replica(config: StackConfig, model: ModelSection, lookup: Lookup) -> tuple[Requests, bool]:
    """(requests of one replica, exact): the sizing on the platform's pool and storage when the
    platform is known, else the stated lower bound."""
    source = lookup(config.stack.platform_stack) if config.stack.platform_stack else None
    if source is not None:
        pool = {p.name: p.config for p in read_pools(source.exports)}.get(model.pool)
        if pool is not None:
            return replica_requests(model, pool, read_storage(source.exports)), True
    # Without the platform's pool, the engine tells the accelerator kind.
    return stated_requests(model, ENGINE_ACCELERATORS[model.engine][0]), False


def quota_requests(config: StackConfig) -> Requests:
    quota = config.stack.quota
    assert quota is not None
    return Requests(
        cpu_m=cpu_millis(quota.cpu), memory_mib=memory_mib(quota.memory), gpu=quota.gpus, neuron=quota.neuron_devices
    )


QUOTA_KEYS = {"requests.nvidia.com/gpu": "gpus", "requests.aws.amazon.com/neuron": "neuronDevices"} | {
    "requests.cpu": "cpu",
    "requests.memory": "memory",
}
assert set(QUOTA_KEYS) == set(QUOTA_RESOURCES)


@platform_rule
def quota_holds_one_replica(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    if config.stack.role != "workloads" or config.stack.quota is None:
        return
    try:
        limit = quota_requests(config)
        for i, model in enumerate(config.models):
            need, exact = _one_replica(config, model, lookup)
            for short in quota_shortfalls(need, limit):
                key = QUOTA_KEYS[short.resource]
                sized = "" if exact else "at least "
                yield Problem(
                    key_path(["stack", "quota", key]),
                    f"one replica of models[{i}] ({model.name}) needs {sized}{short.requested} of "
                    f"{short.resource} but the team quota allows {short.available}, so the API server "
                    f"would refuse every pod; raise quota.{key}, or set models[{i}].resources / use fewer "
                    f"accelerators per replica",
                )
    except ConfigError:
        return  # an invalid platform stack is reported by workloads_fit_the_platform


@platform_warning
def quota_holds_every_replica(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    if config.stack.role != "workloads" or config.stack.quota is None:
        return
    try:
        limit = quota_requests(config)
        total = Requests()
        for model in config.models:
            one, _ = _one_replica(config, model, lookup)
            # An autoscaler's maximum, and a canary's pod beside the model's.
            for _ in range(model.most_replicas + model.canary_replicas):
                total = total + one
    except ConfigError:
        return
    for short in quota_shortfalls(total, limit):
        key = QUOTA_KEYS[short.resource]
        yield Problem(
            key_path(["stack", "quota", key]),
            f"all replicas together need {short.requested} of {short.resource}, more than the quota's "
            f"{short.available}: some replicas will stay Pending",
        )


def _storage_for_teams(config: StackConfig, storage: StorageSection, source: PlatformSource) -> Iterable[Problem]:
    """A team's pods reach the platform's cache from the team's own namespace (components/team.py)."""
    if storage.model_cache == "fsx" and config.models:
        yield Problem(
            key_path(["stack", "platformStack"]),
            f"the platform ({source.where}) sets storage.modelCache: fsx, which workloads stacks cannot use: "
            f"a Lustre file system is mounted whole through a static volume, so every team would share one "
            f"writable tree (and each other's completion markers). Ask the platform team for "
            f"storage.modelCache: efs (one access point per team namespace), local or none, or serve "
            f"these models from the platform's own (all-in-one) stack",
        )
    if storage.model_cache == "efs" and not (source.exports.get("storageClasses") or {}).get("modelCache"):
        yield Problem(
            key_path(["stack", "platformStack"]),
            f"the platform ({source.where}) sets storage.modelCache: efs but exports no "
            f"storageClasses.modelCache for the team's cache claim; update and deploy the platform stack",
        )


@platform_warning
def platform_checked_offline(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    ref = config.stack.platform_stack
    if config.stack.role == "workloads" and ref is not None:
        try:
            found = lookup(ref)
        except ConfigError:
            return
        if found is None:
            yield Problem(
                key_path(["stack", "platformStack"]),
                f"{ref} has no stack file in this repository, so the models are checked against its pools "
                f"only at preview (through the StackReference)",
            )


@rule
def models_stay_in_the_team_namespace(config: StackConfig) -> Iterable[Problem]:
    team = config.stack.team
    if config.stack.role != "workloads" or team is None:
        return
    for i, model in enumerate(config.models):
        if model.namespace is not None and model.namespace != team:
            yield Problem(
                key_path(["models", i, "namespace"]),
                f"a workloads stack deploys only into its team's namespace {team!r}; remove namespace "
                f"(it defaults to the team) or set it to {team}",
            )


@platform_rule
def workloads_stack_is_in_its_platforms_region(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """A team stack creates its Pod Identity associations and reads its cluster through the AWS
    provider of its own aws:region: in another region than its platform's cluster, `pulumi up` finds
    no cluster."""
    if config.stack.role != "workloads" or config.stack.platform_stack is None:
        return
    source, _ = _source(config, lookup)  # an unreadable platform is reported by the rule above
    region = str((source.exports if source is not None else {}).get("region") or "")
    if region and region != config.aws_region:
        yield Problem(
            "aws:region",
            f"is {config.aws_region}, but the platform {source.where if source else ''} runs its cluster in "
            f"{region}: a workloads stack deploys into its platform's cluster, so set aws:region: {region}",
        )
