"""A team's ResourceQuota against everything the platform runs in the team's namespaces: the serving pods
and the platform's helper pods beside them (stacks/resolve/helpers.py: the acceptance Job, the benchmark
Job and CronJob, the KV-cache tier pruner, the Neuron compile Job, a streamed model's fill Job, the
endpoint picker).

The platform gives each of a team's namespaces the whole `teams[].quota` (components/team.py), so what
competes for one quota is what runs in one namespace. The API server charges every pod that is not
finished, a helper's as much as a replica's, and refuses the pod that would go over: a helper refused
leaves its model unchecked (an acceptance Job; a gated one fails `pulumi up`), its tier unbounded (the
pruner) or its revision never compiled. So:
- a helper pod that alone exceeds the quota is refused, naming the key that asks for it;
- a helper `pulumi up` waits for (a gated acceptance or benchmark Job, a compile Job, the picker) that does
  not fit beside the fewest replicas of the namespace's models is refused: every such `pulumi up` would fail;
- the replicas at their most (a rollout's surge and canaries included) with every helper that runs beside
  them over the quota is a warning at `stack.team`, naming the helpers; `pods` is held to `quota.pods` alike.
The comparison is stacks/guards.py `quota_shortfalls`, which the policy pack runs on each rendered pod
(workloads, Jobs and CronJobs alike) against the rendered ResourceQuota.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem, key_path
from ..fit import Requests, Shortfall
from ..guards import pod_count_shortfall, quota_shortfalls
from ..resolved import HelperPod, ModelEntry, ResolvedModel, ResolvedStack, Team
from .upgrades import fewest_replicas
from .workloads import QUOTA_KEYS, one_replica, quota_requests

KEYS = {**QUOTA_KEYS, "pods": "pods"}


def serving_load(stack: ResolvedStack, entry: ModelEntry, replicas: int) -> tuple[Requests, int]:
    """(requests, pods) of `replicas` replicas of the model and its canary, every pod of a replica counted
    (a group's workers, a Dynamo Frontend) as its quota charges it; a model not placed on a known pool counts
    its stated requests, one pod per node of a replica."""
    placed = stack.placed(entry)
    if placed is None:
        one, _ = one_replica(stack, entry)
        pods = replicas * entry.config.nodes_per_replica
        return _times(one, pods), pods
    need, pods = _pods(placed, replicas)
    if placed.canary is not None:
        extra, more = _pods(placed.canary, entry.config.canary_replicas)
        need, pods = need + extra, pods + more
    return need, pods


def _pods(model: ResolvedModel, replicas: int) -> tuple[Requests, int]:
    need, pods = Requests(), 0
    for shape in model.pods:
        n = shape.count * replicas if shape.per_replica else shape.count
        need, pods = need + _times(model.charged(shape), n), pods + n
    return need, pods


def _times(one: Requests, n: int) -> Requests:
    return Requests(*(v * n for v in one.as_tuple()))


def _namespaces(stack: ResolvedStack) -> dict[str, list[ModelEntry]]:
    found: dict[str, list[ModelEntry]] = {}
    for entry in stack.entries:
        found.setdefault(entry.namespace, []).append(entry)
    return found


def helpers_in(stack: ResolvedStack, namespace: str) -> list[HelperPod]:
    return [h for m in stack.models if m.namespace == namespace for h in m.helpers]


def _shortfalls(need: Requests, pods: int, limit: Requests, team: Team) -> list[Shortfall]:
    assert team.quota is not None
    short = pod_count_shortfall(pods, team.quota.pods)
    return [*quota_shortfalls(need, limit), *([short] if short is not None else [])]


@rule
def a_helper_pod_fits_the_team_quota(stack: ResolvedStack) -> Iterable[Problem]:
    """Each helper pod alone within the quota (a compile Job, which is a replica's pod, is left to the
    replica's own refusal: stacks/rules/workloads.py quota_holds_one_replica)."""
    limit, team = quota_requests(stack), stack.team
    if limit is None or team is None:
        return
    for model in stack.models:
        replica = {s.resource for s in quota_shortfalls(model.charged_serving_pod, limit)}
        for helper in model.helpers:
            for short in quota_shortfalls(helper.requests, limit):
                if helper.kind == "neuron-compile" and short.resource in replica:
                    continue
                yield Problem(
                    helper.key,
                    f"{helper.what} requests {short.requested} of {short.resource} but team {team.name}'s quota "
                    f"allows {short.available} ({stack.platform.where}'s teams[].quota.{KEYS[short.resource]}), so "
                    f"the API server would refuse its pod; ask the platform team to raise it, {helper.fix}",
                )


@rule
def an_awaited_helper_fits_beside_the_fewest_replicas(stack: ResolvedStack) -> Iterable[Problem]:
    """A helper `pulumi up` waits for, beside the fewest replicas of its namespace's models: over the quota
    its pod is refused and the update fails (resources the replicas alone already lack are not its doing)."""
    limit, team = quota_requests(stack), stack.team
    if limit is None or team is None:
        return
    for namespace, entries in _namespaces(stack).items():
        floor, pods = Requests(), 0
        for entry in entries:
            need, n = serving_load(stack, entry, fewest_replicas(entry))
            floor, pods = floor + need, pods + n
        lacking = {s.resource for s in _shortfalls(floor, pods, limit, team)}
        for helper in (h for h in helpers_in(stack, namespace) if h.awaited and h.beside):
            for short in _shortfalls(floor + helper.requests, pods + 1, limit, team):
                if short.resource not in lacking:
                    yield _awaited_problem(stack, team, namespace, helper, short)


def _awaited_problem(stack: ResolvedStack, team: Team, namespace: str, helper: HelperPod, short: Shortfall) -> Problem:
    when = (
        " (a new revision or engine image compiles while the running replicas keep their devices)"
        if helper.kind == "neuron-compile"
        else ""
    )
    return Problem(
        helper.key,
        f"`pulumi up` waits for {helper.what}, which runs beside the model's replicas{when}: with the fewest "
        f"replicas of namespace {namespace}'s models it makes {short.requested} of {short.resource}, but team "
        f"{team.name}'s quota allows {short.available} ({stack.platform.where}'s teams[].quota."
        f"{KEYS[short.resource]}), so the API server refuses its pod (or, created first, a replica's) and "
        f"`pulumi up` fails; ask the platform team to raise it, lower the replicas, {helper.fix}",
    )


@warning
def quota_holds_every_replica(stack: ResolvedStack) -> Iterable[Problem]:
    """Per namespace: its models at their most replicas with a rollout's surge, each canary, and the helper
    pods that run beside them, against the quota; the helpers are named when they are what goes over."""
    limit, team = quota_requests(stack), stack.team
    if limit is None or team is None:
        return
    for namespace, entries in _namespaces(stack).items():
        total, pods = Requests(), 0
        for entry in entries:
            # A rollout's surge starts beside the most replicas (as the pool limits count it).
            need, n = serving_load(stack, entry, entry.config.most_replicas + entry.config.rollout.max_surge)
            total, pods = total + need, pods + n
        alone = {s.resource for s in _shortfalls(total, pods, limit, team)}
        helpers = [h for h in helpers_in(stack, namespace) if h.beside]
        extra = sum((h.requests for h in helpers), Requests())
        where = f" in namespace {namespace}" if len(team.namespaces) > 1 else ""
        for short in _shortfalls(total + extra, pods + len(helpers), limit, team):
            yield Problem(key_path(["stack", "team"]), _every_message(short, short.resource in alone, where, helpers))


def _every_message(short: Shortfall, replicas_alone: bool, where: str, helpers: list[HelperPod]) -> str:
    key = KEYS[short.resource]
    if replicas_alone:
        beside = " with the platform's pods beside them" if helpers else ""
        return (
            f"all replicas together{where} need {short.requested} of {short.resource}{beside}, more than the team "
            f"quota's {short.available} (teams[].quota.{key} of the platform stack): some replicas will stay Pending"
        )
    named = "; ".join(f"{h.what} ({h.key})" for h in helpers)
    return (
        f"all replicas together{where} fit the team quota's {short.resource}, but with the platform's pods beside "
        f"them ({named}) they need {short.requested}, more than its {short.available} (teams[].quota.{key} of the "
        f"platform stack): at the most replicas the API server refuses whichever pod comes last, a helper's "
        f"(an unchecked model, an unbounded KV tier) or a replica's; ask the platform team to raise it, or lower "
        f"the models' maxReplicas"
    )
