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

# Engines whose tensor-parallel group spans the replica's nodes by default (Dynamo: always).
WHOLE_REPLICA_TENSOR = frozenset({"sglang", "dynamo"})
# Engines whose groups the platform builds as LeaderWorkerSets (components/engines/group.py).
LWS_ENGINES = frozenset({"vllm", "sglang"})
# Engines the platform runs across nodes, and why the others do not. Dynamo's operator and Ray's
# placement groups and the NIM Operator's NIMService multiNode form their own groups:
# components/engines/dynamo.py, ray_serve.py and nim.py.
MULTI_NODE_ENGINES = LWS_ENGINES | {"dynamo", "ray-serve", "nim"}
SINGLE_NODE_ONLY = {
    "tgi": "TGI's launcher shards a model over the GPUs of one machine only (`--num-shard` starts local "
    "processes); it has no multi-node mode",
    "ollama": "Ollama runs a model on the accelerators of one machine; it has no multi-node mode",
    "neuron-vllm": "the NxD Inference vLLM image (vLLM 0.16 with vllm-neuron) is built and documented for one "
    "Inferentia/Trainium instance per replica here; multi-node Neuron serving is not supported by the platform",
}


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


def leader_worker_set(model: ModelSection) -> bool:
    """Whether the model's replicas are LeaderWorkerSet groups (and need the LWS controller)."""
    return model.nodes_per_replica > 1 and model.engine in LWS_ENGINES


def dynamo_multinode(model: ModelSection) -> bool:
    """Whether the model is a multi-node Dynamo graph (and needs the operator's Grove orchestrator)."""
    return model.nodes_per_replica > 1 and model.engine == "dynamo"


def per_node(model: ModelSection) -> int:
    """Accelerators each pod of the replica requests (the replica's total when it spans one node);
    stacks/rules/groups.py refuses a total that does not divide."""
    return model.accelerators_per_replica // model.nodes_per_replica


def parallel_sizes(model: ModelSection) -> tuple[int, int]:
    """(tensor, pipeline): the stack's where given, else the engine's recipe (module docstring)."""
    total = max(1, model.accelerators_per_replica)
    given = model.parallelism
    if given.tensor is not None and given.pipeline is not None:
        return given.tensor, given.pipeline
    if given.tensor is not None:
        return given.tensor, max(1, total // given.tensor)
    if given.pipeline is not None:
        return max(1, total // given.pipeline), given.pipeline
    if model.engine in WHOLE_REPLICA_TENSOR or model.nodes_per_replica == 1:
        return total, 1
    return max(1, per_node(model)), model.nodes_per_replica


def replica_group(model: ModelSection) -> ReplicaGroup:
    tensor, pipeline = parallel_sizes(model)
    return ReplicaGroup(nodes=model.nodes_per_replica, per_node=per_node(model), tensor=tensor, pipeline=pipeline)
