"""Node repair's limits as warnings.

Karpenter's node repair (`addons.karpenter.nodeRepair`) replaces a node only while few enough of its
NodePool's nodes are unhealthy: at most 20% of them, rounded up (kubernetes-sigs/karpenter v1.14.1,
pkg/controllers/node/health/controller.go `allowedUnhealthyPercent` and `areNodesHealthy`,
`GetScaledValueFromIntOrPercent(..., roundUp=true)`). Above that it repairs none of them and only
records a `NodeRepairBlocked` event (karpenter#2134, #2321 ask for the share to be configurable). One
bad node is always within the share (a NodePool of n nodes allows ceil(n/5) >= 1), but a NodePool of
two to five nodes allows exactly one: when a shared cause (a driver, an AMI, a rack) breaks two of its
nodes together, neither is repaired. GPU pools are that small. Not an error: repair still covers the
single failure, and the node-health alerts fire either way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..checks import warning
from ..errors import Problem, key_path
from ..resolved import ResolvedPool, ResolvedStack

# Karpenter v1.14.1's share of a NodePool's nodes that may be unhealthy for repair to proceed.
UNHEALTHY_SHARE = 0.2


def repairable_at_once(nodes: int) -> int:
    """How many unhealthy nodes a NodePool of `nodes` nodes may have while Karpenter still repairs."""
    return math.ceil(nodes * UNHEALTHY_SHARE)


def most_nodes(pool: ResolvedPool) -> tuple[int, str] | None:
    """The most nodes one of the pool's NodePools can hold, and the key that bounds it: a static pool's
    `replicas`, else `limits.accelerators` over its smallest type's accelerators; None: unbounded."""
    if pool.config.replicas is not None:
        return pool.config.replicas, "replicas"
    limit = pool.limits.accelerators
    if limit is None or not pool.instance_types:
        return None
    per_node = min(t.gpu_count if pool.accelerator == "nvidia" else t.neuron_devices for t in pool.instance_types)
    return (limit // per_node, "limits.accelerators") if per_node else None


@warning
def node_repair_stops_at_two_bad_nodes_in_a_small_pool(stack: ResolvedStack) -> Iterable[Problem]:
    """An accelerator pool whose NodePool holds two to five nodes, with node repair on: a second
    unhealthy node at the same time blocks repair of both."""
    if not (stack.owns_platform and stack.platform.node_repair):
        return
    for i, written in enumerate(stack.config.node_pools):
        pool = stack.platform.pool(written.name)
        if pool is None or pool.accelerator not in ("nvidia", "neuron"):
            continue
        bound = most_nodes(pool)
        if bound is None:
            continue
        nodes, key = bound
        if nodes < 2 or repairable_at_once(nodes) > 1:
            continue
        yield Problem(
            key_path(["nodePools", i, *key.split(".")]),
            f"pool {pool.name} holds at most {nodes} nodes per NodePool, and Karpenter's node repair (1.14.1) acts "
            f"only while at most 20% of a NodePool's nodes, rounded up, are unhealthy: here one. A single bad node "
            f"is replaced; two at once (a shared driver, AMI or hardware fault) are both left in place with a "
            f"NodeRepairBlocked event. The node-health alerts (GpuHardwareXid, GpuDeviceUnhealthy, "
            f"NeuronUncorrectableEcc) still fire: then cordon and drain the nodes and delete their NodeClaims by "
            f"hand (docs/operator-guide.md, Node health and repair). No setting changes the share (karpenter#2321)",
        )
