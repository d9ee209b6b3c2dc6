"""Upgrade rules: what a rollout or a node replacement does to a running model.

- A model the platform runs as its own workload (a Deployment, or a LeaderWorkerSet of groups) rolls
  out with `maxUnavailable: 1` unless `rollout.maxSurge` is set (components/engines/workload.py
  `rolling_update`). With one replica that stops the only pod before its replacement is ready: every
  `pulumi up` that changes the pod template is an outage, and so is every node replacement (Karpenter
  replaces a node at `nodePools[].expireAfter`, on drift and on consolidation; a PodDisruptionBudget of
  `maxUnavailable: 1` does not hold the only pod). Prod refuses it unless `models[].acceptDowntime` says
  the downtime is intended; dev and staging warn. A model that scales to zero (`minReplicas: 0`) is
  already one that stops, and one run by its operator (Dynamo, KubeRay, the NIM Operator) rolls out as
  its operator decides, so neither is checked here.
- A pool's drain limit (`nodePools[].terminationGracePeriod`, the NodePool's
  `spec.template.spec.terminationGracePeriod`) must exceed the graceful shutdown of every model on it:
  Karpenter deletes a pod at the limit less the pod's own grace period, so a shorter limit cuts a
  model's in-flight requests off when its node drains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..checks import rule, warning
from ..engine_facts import SHUTDOWN_SECONDS
from ..errors import Problem, key_path
from ..resolved import ModelEntry, ResolvedStack

_DURATION_PART = re.compile(r"([0-9]+)(s|m|h)")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


def duration_seconds(value: str) -> int:
    """A Karpenter duration (`^([0-9]+(s|m|h))+$`, e.g. `1h30m`) in seconds."""
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(value))


def fewest_replicas(entry: ModelEntry) -> int:
    """The fewest replicas the model's own workload may run: its fixed count, or its autoscaler's minimum."""
    config = entry.config
    return config.replicas if config.autoscaling.owner == "none" else config.autoscaling.min_replicas


def _every_rollout_stops_it(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        config = entry.config
        if not entry.facts.platform_workload or config.accept_downtime:
            continue
        if fewest_replicas(entry) != 1 or config.rollout.max_surge:
            continue
        count = "replicas: 1" if config.autoscaling.owner == "none" else "autoscaling.minReplicas: 1"
        yield Problem(
            entry.key("acceptDowntime"),
            f"model {entry.name} runs one replica ({count}) and rolls out with rollout.maxSurge 0, so every "
            f"rollout stops its only pod before the new one is ready (maxUnavailable 1), and so does every "
            f"replacement of its node (nodePools[].expireAfter, drift, consolidation): each is an outage. Run "
            f"2 replicas, or set rollout.maxSurge: 1 (a second replica's accelerators during the rollout), or "
            f"accept the downtime with {entry.key('acceptDowntime')}: true",
        )


@rule
def prod_rollouts_keep_a_replica_serving(stack: ResolvedStack) -> Iterable[Problem]:
    if stack.config.stack.prod:
        yield from _every_rollout_stops_it(stack)


@warning
def rollouts_that_stop_the_only_replica(stack: ResolvedStack) -> Iterable[Problem]:
    if not stack.config.stack.prod:
        yield from _every_rollout_stops_it(stack)


@rule
def a_pool_drains_longer_than_its_models_shut_down(stack: ResolvedStack) -> Iterable[Problem]:
    """Only the pools this stack declares: a workloads stack's pools are its platform's to check."""
    index = {pool.name: i for i, pool in enumerate(stack.config.node_pools)}
    for model in stack.models:
        i = index.get(model.pool.name)
        if i is None:
            continue
        limit = stack.config.node_pools[i].termination_grace_period
        if duration_seconds(limit) <= SHUTDOWN_SECONDS:
            yield Problem(
                key_path(["nodePools", i, "terminationGracePeriod"]),
                f"{limit} does not exceed the {SHUTDOWN_SECONDS}s graceful shutdown of model {model.name} "
                f"({model.key('pool')} is {model.pool.name}): Karpenter deletes a pod at the drain limit less "
                f"its own grace period, so the model's in-flight requests would be cut off when a node drains; "
                f"set a longer limit, e.g. 1h (the default)",
            )
