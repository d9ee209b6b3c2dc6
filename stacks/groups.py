"""A replica's group: how many nodes one replica spans and how its accelerators split the model.

The one place `nodesPerReplica` and `parallelism` are interpreted. A replica of N > 1 nodes is one
group of N pods, one per node, each with `acceleratorsPerReplica / N` accelerators (a LeaderWorkerSet
of size N, components/engines/group.py). Tensor x pipeline is the replica's accelerators; unset, the
engine's own multi-node recipe decides: vLLM runs tensor parallel within a node and one pipeline
stage per node (`--tensor-parallel-size 8 --pipeline-parallel-size 2` across two 8-GPU nodes,
vLLM docs/serving/parallelism_scaling.md), SGLang runs one tensor-parallel group over the whole
replica (`--tp 16 --nnodes 2`, SGLang docs multi_node.md). Pure: no Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config.models import ModelSection
from .engine_facts import Groups


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica's shape: `nodes` pods of `per_node` accelerators each, split tensor x pipeline."""

    nodes: int
    per_node: int
    tensor: int
    pipeline: int

    @property
    def accelerators(self) -> int:
        return self.nodes * self.per_node

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1

    def describe(self, unit: str = "accelerators") -> str:
        """`2 nodes x 8 GPUs (tensor 8 x pipeline 2)`."""
        split = f"tensor {self.tensor} x pipeline {self.pipeline}"
        if not self.multi_node:
            return f"1 node x {self.per_node} {unit} ({split})"
        return f"{self.nodes} nodes x {self.per_node} {unit} ({split})"


def leader_worker_set(model: ModelSection, groups: Groups) -> bool:
    """Whether the model's replicas are LeaderWorkerSet groups (and need the LWS controller)."""
    return model.nodes_per_replica > 1 and groups.builder == "lws"


def per_node(model: ModelSection) -> int:
    """Accelerators each pod of the replica requests (the replica's total when it spans one node);
    stacks/rules/groups.py refuses a total that does not divide."""
    return model.accelerators_per_replica // model.nodes_per_replica


def parallel_sizes(model: ModelSection, groups: Groups) -> tuple[int, int]:
    """(tensor, pipeline): the stack's where given, else the engine's recipe (module docstring)."""
    total = max(1, model.accelerators_per_replica)
    given = model.parallelism
    if given.tensor is not None and given.pipeline is not None:
        return given.tensor, given.pipeline
    if given.tensor is not None:
        return given.tensor, max(1, total // given.tensor)
    if given.pipeline is not None:
        return max(1, total // given.pipeline), given.pipeline
    if groups.tensor_spans_nodes or model.nodes_per_replica == 1:
        return total, 1
    return max(1, per_node(model)), model.nodes_per_replica


def replica_group(model: ModelSection, groups: Groups) -> ReplicaGroup:
    tensor, pipeline = parallel_sizes(model, groups)
    return ReplicaGroup(nodes=model.nodes_per_replica, per_node=per_node(model), tensor=tensor, pipeline=pipeline)
