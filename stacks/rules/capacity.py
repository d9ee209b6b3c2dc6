"""Capacity feasibility: every capacity ask against every limit that can block it, before anything exists.

What a model asks at once: its fewest replicas (`replicas`, or `autoscaling.minReplicas`), its most
(`autoscaling.maxReplicas`), a canary's pod beside them (`canary`) and a rollout's surge
(`rollout.maxSurge`: the new replicas start before any old one stops, maxUnavailable 0). The limits here:
- a static pool (`nodePools[].replicas`): that many nodes and never more, so what its models ask must fit
  in their accelerators (a replica's group holds its nodes whole), each model alone and all together;
- a team's quota (`teams[].quota`, read in a workloads stack): a rollout's surge pod or a canary the quota
  cannot hold beside the fewest replicas is refused by the API server, and the rollout never ends;
- a single-node volume (`storage.existingClaim` ReadWriteOnce/ReadWriteOncePod): a surge or canary pod on
  another node can never attach it;
- every worker role of one model together (stacks/feasibility.py `roles_over_the_pool`; a disaggregated
  graph's prefill and decode workers, checked in its engine's module) against the pool's accelerator
  limit or a static pool's nodes;
- a dynamic pool's cpu and memory limits the stack file gives (node capacity, as fit.over_limits counts
  it): the least capacity Karpenter must launch for those replicas, whatever types it picks.
The dynamic pools' limits against a surge or a canary are stacks/rules/groups.py's (a_rollout_surge_fits_
the_pool, a_canary_fits_the_pool_beside_a_replica); one replica against the quota is stacks/rules/
workloads.py's. Every message names the key that asks and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..errors import Problem, key_path
from ..feasibility import node_accelerators
from ..fit import Requests
from ..guards import quota_shortfalls
from ..resolved import ResolvedModel, ResolvedStack
from .groups import held
from .storage import SINGLE_NODE_MODES
from .upgrades import fewest_replicas
from .workloads import QUOTA_KEYS, one_replica, quota_requests


def replicas_that_fit(model: ResolvedModel, nodes: int) -> int | None:
    """How many replicas of the model `nodes` nodes of its pool hold, by accelerators (a group holds its
    nodes whole, single-node replicas pack per node); None where accelerators do not bound it."""
    per_node = node_accelerators(model.pool)
    apr = model.config.accelerators_per_replica
    if per_node < 1 or apr < 1 or model.group.per_node > per_node:
        return None  # the fit rule names a replica no node holds
    if model.group.multi_node:
        return nodes // model.group.nodes
    return nodes * (per_node // apr)


def _asks(model: ResolvedModel) -> Iterable[tuple[str, int, str]]:
    """(key under the model, replicas at once, what asks them), smallest first."""
    config = model.config
    fewest, canary, surge = fewest_replicas_of(model), config.canary_replicas, config.rollout.max_surge
    key = "replicas" if config.autoscaling.owner == "none" else "autoscaling.minReplicas"
    yield key, fewest, f"its fewest replicas ({key} {fewest})"
    if canary:
        yield "canary", fewest + canary, f"its canary's pod beside its {fewest} fewest replicas"
    most = config.most_replicas
    if most > fewest:
        yield (
            "autoscaling.maxReplicas",
            most + canary,
            f"its autoscaler's maxReplicas {most}" + (" and its canary" if canary else ""),
        )
    if surge:
        yield "rollout.maxSurge", most + canary + surge, f"a rollout with maxSurge {surge} beside its {most + canary}"


def fewest_replicas_of(model: ResolvedModel) -> int:
    """The fewest replicas the model runs: its fixed count, its autoscaler's floor (a Dynamo graph's worker
    count under KEDA)."""
    return model.config.replicas if model.config.autoscaling.owner == "none" else model.min_replicas


@rule
def a_static_pool_holds_what_its_models_ask(stack: ResolvedStack) -> Iterable[Problem]:
    """A static pool never adds a node: a replica, canary or surge beyond its nodes stays Pending forever."""
    for model in stack.models:
        nodes = model.pool.config.replicas
        if nodes is None:
            continue
        fits = replicas_that_fit(model, nodes)
        if fits is None:
            continue
        for key, count, what in _asks(model):
            if count > fits:
                yield Problem(
                    model.key(*key.split(".")),
                    f"model {model.name} runs {count} replicas at once for {what}, but static pool "
                    f"{model.pool.name} is {nodes} node{'s' if nodes != 1 else ''} of {node_accelerators(model.pool)} "
                    f"accelerators, which "
                    f"hold {fits} replicas of {model.config.accelerators_per_replica} accelerators"
                    f"{' over ' + str(model.group.nodes) + ' nodes' if model.group.multi_node else ''} and never "
                    f"grow; lower {key} or raise {_pool_key(stack, model)}.replicas",
                )
                break


@rule
def a_static_pool_holds_all_its_models_together(stack: ResolvedStack) -> Iterable[Problem]:
    """Every model of a static pool at its most (and each canary) together, by accelerators."""
    for i, pool in enumerate(stack.config.node_pools):
        if pool.replicas is None:
            continue
        on = [m for m in stack.models if m.pool.name == pool.name]
        per_node = node_accelerators(on[0].pool) if on else 0
        need = sum((m.config.most_replicas + m.config.canary_replicas) * (held(m) or 0) for m in on)
        if len(on) < 2 or per_node < 1 or need <= pool.replicas * per_node:
            continue
        names = ", ".join(m.name for m in on)
        yield Problem(
            key_path(["nodePools", i, "replicas"]),
            f"static pool {pool.name} is {pool.replicas} nodes of {per_node} accelerators ({pool.replicas * per_node} "
            f"in all) and never grows, but its models ({names}) at their most replicas with their canaries hold "
            f"{need}; raise replicas to at least {-(-need // per_node)} or lower the models' replicas",
        )


def _pool_key(stack: ResolvedStack, model: ResolvedModel) -> str:
    own = [j for j, p in enumerate(stack.config.node_pools) if p.name == model.pool.name]
    return key_path(["nodePools", own[0]]).split(":", 1)[1] if own else f"the platform's pool {model.pool.name}"


@rule
def a_team_quota_holds_a_rollout_and_a_canary(stack: ResolvedStack) -> Iterable[Problem]:
    """A surge pod or a canary beyond the team's ResourceQuota is refused by the API server: the rollout
    waits forever (nothing old stops with maxUnavailable 0), the canary never starts."""
    limit = quota_requests(stack)
    if limit is None or stack.team is None:
        return
    # Each of the team's namespaces has the whole quota: what competes is what runs in one namespace.
    floors: dict[str, Requests] = {}
    for entry in stack.entries:
        one, _ = one_replica(stack, entry)
        for _ in range(fewest_replicas(entry) * entry.config.nodes_per_replica):
            floors[entry.namespace] = floors.get(entry.namespace, Requests()) + one
    for entry in stack.entries:
        config = entry.config
        one, _ = one_replica(stack, entry)
        floor = floors.get(entry.namespace, Requests())
        # What the fewest replicas already lack is not the surge's or the canary's doing.
        short_already = {s.resource for s in quota_shortfalls(floor, limit)}
        for key, extra in (("canary", config.canary_replicas), ("rollout.maxSurge", config.rollout.max_surge)):
            need = floor
            for _ in range(extra * config.nodes_per_replica):
                need = need + one
            for short in [s for s in quota_shortfalls(need, limit) if s.resource not in short_already] if extra else ():
                yield Problem(
                    entry.key(*key.split(".")),
                    f"{key} adds {extra} replica(s) of {entry.name} beside the fewest replicas of the team's models in "
                    f"namespace {entry.namespace}, "
                    f"{short.requested} of {short.resource} at once, but team {stack.team.name}'s quota allows "
                    f"{short.available} (teams[].quota.{QUOTA_KEYS[short.resource]}), so the API server refuses "
                    f"the extra pod; ask the platform team to raise the quota, or drop {key}",
                )
                break


@rule
def a_single_node_volume_takes_no_second_pod(stack: ResolvedStack) -> Iterable[Problem]:
    """A ReadWriteOnce claim attaches to one node: a rollout's surge pod or a canary scheduled on another
    node waits for it forever (with maxUnavailable 0 nothing old ever stops)."""
    claim = stack.config.storage.existing_claim
    if claim is None or claim.access_mode not in SINGLE_NODE_MODES:
        return
    for entry in stack.entries:
        config = entry.config
        for key, extra in (("rollout.maxSurge", config.rollout.max_surge), ("canary", config.canary_replicas)):
            if extra:
                yield Problem(
                    entry.key(*key.split(".")),
                    f"{key} starts a second pod of {entry.name} beside the running one, but storage.existingClaim "
                    f"{claim.name} is {claim.access_mode}, which attaches to one node only, so a pod on another node "
                    f"never starts; drop {key} (rollout.maxSurge: 0 stops the old pod first), or use a "
                    f"ReadWriteMany claim (modelCache: efs or fsx) or modelCache: local",
                )


def _lower_bound(model: ResolvedModel, replicas: int) -> tuple[int, int] | None:
    """The least node capacity (millicores, MiB) `replicas` replicas make Karpenter launch on the model's pool,
    whatever types it picks: each replica costs at least the cheapest allowed type's capacity over the
    replicas one node of it holds (a group: its nodes whole). None where accelerators do not bound it."""
    apr, group = model.config.accelerators_per_replica, model.group
    costs: list[tuple[float, float]] = []
    for t in model.pool.instance_types:
        if t.accelerator_count < max(1, group.per_node) or apr < 1:
            continue
        per = 1 / group.nodes if group.multi_node else t.accelerator_count // apr
        costs.append((t.vcpu * 1000 / per, t.memory_gib * 1024 / per))
    if not costs:
        return None
    return int(replicas * min(c for c, _ in costs)), int(replicas * min(m for _, m in costs))


def _over(model: ResolvedModel, replicas: int) -> list[str]:
    """The cpu and memory limits the stack file gives the pool that `replicas` replicas surely exceed, worded
    (derived ones follow the accelerator limit, which its own rule checks)."""
    bound, limits, given = _lower_bound(model, replicas), model.pool.limits, model.pool.config.limits
    if bound is None:
        return []
    return [
        f"{name} {need // scale}{unit} > {limit // scale}{unit}"
        for name, need, limit, scale, unit in (
            ("cpu", bound[0], limits.cpu_m, 1000, ""),
            ("memory", bound[1], limits.memory_mib, 1024, "Gi"),
        )
        if limit is not None and need > limit and getattr(given, name) is not None
    ]


@rule
def pool_cpu_and_memory_limits_hold_the_rollout(stack: ResolvedStack) -> Iterable[Problem]:
    """A pool's cpu and memory limits (node capacity, as fit.over_limits counts it) must hold the model's
    replicas, its canary and a rollout's surge at once, as its accelerator limit must (groups.py
    a_rollout_surge_fits_the_pool): Karpenter launches no node past a limit. The first ask that cannot fit
    is named."""
    for model in stack.models:
        limits = model.pool.limits
        if model.pool.static or (limits.cpu_m is None and limits.memory_mib is None):
            continue
        for key, count, what in _asks(model):
            over = _over(model, count)
            if over:
                yield Problem(
                    model.key(*key.split(".")),
                    f"model {model.name} runs {count} replicas at once for {what}, at least {'; '.join(over)} of "
                    f"node capacity on pool {model.pool.name}, over its limits; lower {key} or raise "
                    f"{_pool_key(stack, model)}.limits",
                )
                break
