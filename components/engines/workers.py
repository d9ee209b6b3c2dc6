"""Sizing shared by the serving platforms' GPU workers (Dynamo workers, Ray workers)."""

from __future__ import annotations

from typing import Any

from stacks.config import ModelSection
from stacks.fit import requests_of
from stacks.groups import per_node
from stacks.resolved import PodShape


def worker_resources(model: ModelSection, ephemeral_mib: int | None = None) -> dict[str, Any]:
    """A GPU worker pod's requests and limits: its node's share of `acceleratorsPerReplica` GPUs (all
    of them, unless the replica spans `nodesPerReplica` pods) and, unless
    `models[].resources` says otherwise, 2 CPUs and 8Gi per GPU (small enough for a one-GPU g6 or
    g5 node, and Guaranteed memory so the worker is not the first evicted). `ephemeral_mib`: the
    node disk the replica needs (stacks/sizing.py, the node-local model cache included), requested
    so the scheduler only places the worker where the disk has room."""
    gpus = per_node(model)
    cpu = model.resources.cpu or str(2 * gpus)
    memory = model.resources.memory or f"{8 * gpus}Gi"
    requests = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus)}
    if ephemeral_mib:
        requests["ephemeral-storage"] = f"{ephemeral_mib}Mi"
    return {
        "requests": requests,
        "limits": {"memory": memory, "nvidia.com/gpu": str(gpus)},
    }


def shape(
    role: str, count: int, replicas: int | None, resources: dict[str, Any], *, per_replica: bool, pool: bool
) -> PodShape:
    """`count` pods per replica of the role, `replicas` of it as the workload asks (None: a scaler's)."""
    return PodShape(
        role=role,
        count=count,
        replicas=replicas,
        per_replica=per_replica,
        requests=requests_of(resources),
        resources=resources,
        pool=pool,
    )
