"""Group rules: a replica across nodes (`nodesPerReplica`, `parallelism`) is one the engine can run
and the pool can hold, before anything exists (stacks/groups.py is what these hold the stack to).

- tensor x pipeline is the replica's accelerators (the world size vLLM and SGLang build);
- the accelerators divide over the nodes, and every instance type the pool allows holds one node's
  share (each pod of a group owns one node);
- the tensor size divides the model's attention heads, and its KV heads divide it or it divides
  them: what vLLM 0.29 (`ModelConfig.verify_with_parallel_config`, "Total number of attention
  heads must be divisible by tensor parallel size", and QKVParallelLinear's KV-head replication)
  and SGLang 0.5.19 (the models' attention layers assert the same) enforce at start-up, on one node
  as on several; checked where the model's shape is known (stacks/architectures.py, or
  `models[].architecture`);
- the pool's limits admit one whole group: every node of it at once;
- a Dynamo replica is one tensor-parallel group over all its accelerators (`multinode.nodeCount x`
  each pod's GPUs, the operator's multi-node wiring; no pipeline flag is passed);
- a group needs EFA (`nodePools[].efa`) unless the stack accepts TCP (`allowTcp`), and only vLLM,
  SGLang, Dynamo and Ray Serve run groups; the other engines say why not.
Weights against the group's accelerator memory are stacks/rules/engines.py's (over the whole replica).
"""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..architectures import architecture
from ..checks import Lookup, platform_rule, platform_warning
from ..config import ModelSection, StackConfig
from ..config.pools import NodePoolSection
from ..errors import Problem, key_path
from ..fit import pool_limits, pool_types
from ..groups import per_node, replica_group
from ..resolve import resolve_pool
from .context import placed, platform_of

# Engines whose pinned version enforces the head divisibility rules.
HEAD_RULE_ENGINES = {"vllm": "vLLM 0.29", "sglang": "SGLang 0.5.19"}


@platform_rule
def groups_split_their_accelerators(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in placed(config, platform_of(config, lookup)):
        nodes, total = model.nodes_per_replica, model.accelerators_per_replica
        where = f"model {model.name} on pool {pool.name}"
        groups = ENGINES[model.engine].facts.groups
        if nodes > 1 and groups.builder is None:
            yield Problem(
                key_path(["models", i, "nodesPerReplica"]),
                f"{where}: nodesPerReplica {nodes} is refused for engine {model.engine}: "
                f"{groups.refused}; use nodesPerReplica: 1",
            )
            continue
        if total % nodes:
            yield Problem(
                key_path(["models", i, "acceleratorsPerReplica"]),
                f"{where}: acceleratorsPerReplica {total} does not divide over nodesPerReplica {nodes} nodes (each "
                f"pod of the group takes an equal share); use a multiple of {nodes}",
            )
            continue
        given = model.parallelism
        if given.tensor is not None or given.pipeline is not None:
            tensor, pipeline = replica_group(model, groups).tensor, replica_group(model, groups).pipeline
            if tensor * pipeline != total:
                yield Problem(
                    key_path(["models", i, "parallelism"]),
                    f"{where}: tensor {tensor} x pipeline {pipeline} = {tensor * pipeline}, but the replica has "
                    f"acceleratorsPerReplica {total}; the product must equal it (e.g. tensor {max(1, total // nodes)} "
                    f"x pipeline {nodes})",
                )
            elif model.engine == "dynamo" and (tensor, pipeline) != (total, 1):
                yield Problem(
                    key_path(["models", i, "parallelism"]),
                    f"{where}: tensor {tensor} x pipeline {pipeline} is refused for engine dynamo: a Dynamo worker "
                    f"runs one tensor-parallel group over the replica's {total} accelerators (tensor = "
                    f"multinode.nodeCount {nodes} x {total // nodes} per pod) and takes no pipeline size; use "
                    f"parallelism: {{tensor: {total}, pipeline: 1}}, or leave parallelism unset",
                )
        if nodes > 1:
            share = per_node(model)
            short = sorted(t.name for t in pool_types(pool) if t.accelerator_count < share)
            if short:
                yield Problem(
                    key_path(["models", i, "nodesPerReplica"]),
                    f"{where}: each of the {nodes} nodes of a group takes {share} accelerators, but pool {pool.name} "
                    f"also allows {', '.join(short)} with fewer; allow only types with at least {share}, or change "
                    f"nodesPerReplica",
                )


@platform_rule
def tensor_size_divides_the_heads(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in placed(config, platform_of(config, lookup)):
        engine = HEAD_RULE_ENGINES.get(model.engine)
        shape = architecture(model)
        if engine is None or shape is None or pool.accelerator != "nvidia" or model.accelerators_per_replica < 1:
            continue
        tensor = replica_group(model, ENGINES[model.engine].facts.groups).tensor
        key: list[str | int] = ["models", i, "parallelism" if model.parallelism.tensor else "acceleratorsPerReplica"]
        where = f"model {model.name} on pool {pool.name}"
        if shape.attention_heads % tensor:
            fits = [d for d in range(1, shape.attention_heads + 1) if not shape.attention_heads % d and d <= 64]
            yield Problem(
                key_path(key),
                f"{where}: tensor-parallel size {tensor} does not divide the model's {shape.attention_heads} "
                f"attention heads, which {engine} refuses at start-up; use a tensor size of "
                f"{', '.join(map(str, fits[-4:]))} ({shape.source})",
            )
        elif shape.kv_heads % tensor and tensor % shape.kv_heads:
            yield Problem(
                key_path(key),
                f"{where}: tensor-parallel size {tensor} and the model's {shape.kv_heads} KV heads neither divide "
                f"the other ({engine} splits KV heads over the ranks, or replicates them when the size is a "
                f"multiple); use a divisor or a multiple of {shape.kv_heads} ({shape.source})",
            )


@platform_rule
def groups_cross_nodes_over_efa(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in placed(config, platform_of(config, lookup)):
        if model.nodes_per_replica < 2 or ENGINES[model.engine].facts.groups.builder is None:
            continue
        if resolve_pool(pool).efa_per_node == 0 and not model.allow_tcp:
            yield Problem(
                key_path(["models", i, "pool"]),
                f"model {model.name} spans {model.nodes_per_replica} nodes of pool {pool.name}, which has no EFA "
                f"(efa_per_node 0): its collectives would run over TCP sockets, about 98 s to the first token "
                f"against about 1 s over EFA (Dynamo's measurement). Use a pool with efa: true, or set "
                f"allowTcp: true to accept it",
            )


@platform_rule
def pool_limits_admit_one_group(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in placed(config, platform_of(config, lookup)):
        nodes = model.nodes_per_replica
        if nodes < 2 or model.accelerators_per_replica % nodes:
            continue
        share = per_node(model)
        types = [t for t in pool_types(pool) if t.accelerator_count >= share]
        if not types:
            continue  # the fit rule names it
        limits = pool_limits(pool)
        small = min(types, key=lambda t: (t.vcpu, t.memory_gib))
        blocked = []
        if limits.accelerators is not None and nodes * small.accelerator_count > limits.accelerators:
            blocked.append(f"accelerators {nodes} x {small.accelerator_count} > {limits.accelerators}")
        if limits.cpu_m is not None and nodes * small.vcpu * 1000 > limits.cpu_m:
            blocked.append(f"cpu {nodes} x {small.vcpu} vCPU > {limits.cpu_m // 1000}")
        if limits.memory_mib is not None and nodes * small.memory_gib * 1024 > limits.memory_mib:
            blocked.append(f"memory {nodes} x {small.memory_gib:g}GiB > {limits.memory_mib // 1024}GiB")
        if blocked:
            # A workloads stack cannot change the platform's pools: point at its own key.
            own = [j for j, p in enumerate(config.node_pools) if p.name == pool.name]
            key: list[str | int] = ["nodePools", own[0], "limits"] if own else ["models", i, "nodesPerReplica"]
            yield Problem(
                key_path(key),
                f"model {model.name}: one group is {nodes} nodes of pool {pool.name} at once (at least "
                f"{small.name} each), and the pool's limits stop that ({'; '.join(blocked)}); raise the limits to "
                f"one whole group",
            )


def _held(model: ModelSection, pool: NodePoolSection) -> int | None:
    """Accelerators of the pool one replica holds: a group's nodes whole, else its own share; None
    where no allowed type holds a node's share (the fit rule names that)."""
    share = per_node(model)
    types = [t for t in pool_types(pool) if t.accelerator_count >= share]
    if not types:
        return None
    if model.nodes_per_replica > 1:
        return model.nodes_per_replica * min(t.accelerator_count for t in types)
    return model.accelerators_per_replica


@platform_rule
def a_canary_fits_the_pool_beside_a_replica(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """A canary runs beside the stable workload: the pool's accelerator limit must hold one replica of
    each at once, or the canary waits for capacity the stable replicas never free."""
    for i, model, pool in placed(config, platform_of(config, lookup)):
        limit = pool_limits(pool).accelerators
        if not model.canary_replicas or limit is None or model.accelerators_per_replica % model.nodes_per_replica:
            continue
        held = _held(model, pool)
        if held is None:
            continue
        need = (1 + model.canary_replicas) * held
        if need > limit:
            yield Problem(
                key_path(["models", i, "canary"]),
                f"model {model.name}: its canary runs beside at least one stable replica, {need} accelerators of "
                f"pool {pool.name} ({held} each), over the pool's limit of {limit}; raise "
                f"nodePools[].limits.accelerators or drop the canary",
            )


@platform_rule
def a_rollout_surge_fits_the_pool(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """`rollout.maxSurge` starts replicas above the most the model runs: the pool's accelerator limit
    must hold them all at once (a group holds its nodes whole), or the rollout waits on capacity
    that never comes while nothing old is stopped (maxUnavailable 0)."""
    for i, model, pool in placed(config, platform_of(config, lookup)):
        surge = model.rollout.max_surge
        limit = pool_limits(pool).accelerators
        if not surge or limit is None or model.accelerators_per_replica % model.nodes_per_replica:
            continue
        held = _held(model, pool)
        if held is None:
            continue  # the fit rule names it
        most = model.most_replicas + model.canary_replicas  # a canary holds its accelerators through the rollout too
        need = (most + surge) * held
        if need > limit:
            yield Problem(
                key_path(["models", i, "rollout", "maxSurge"]),
                f"model {model.name}: a rollout with maxSurge {surge} runs {most} + {surge} replicas at once, "
                f"{need} accelerators of pool {pool.name} ({held} each), over the pool's limit of {limit}; lower "
                f"maxSurge (0 replaces one replica at a time) or raise nodePools[].limits.accelerators",
            )


def _without_the_efa_stack(config: StackConfig, lookup: Lookup) -> Iterable[tuple[int, ModelSection, str]]:
    """Groups on an EFA pool that run the catalog's engine image, with what is known of that image:
    Dynamo's stock runtime images carry neither libfabric nor aws-ofi-nccl (its EFA guide builds an
    `aws` target with `container/render.py --make-efa`); for the vLLM and SGLang images it is not
    verified (nor for Ray's). Without them NCCL falls back to TCP sockets without an error, and NIXL's LIBFABRIC
    backend cannot start."""
    for i, model, pool in placed(config, platform_of(config, lookup)):
        if model.nodes_per_replica < 2 or not pool.efa or model.image.repository is not None:
            continue
        if model.engine == "dynamo":
            yield (
                i,
                model,
                "ships without libfabric and aws-ofi-nccl (Dynamo's EFA guide: build the `aws` target with "
                "container/render.py --make-efa), so NIXL over LIBFABRIC cannot start and NCCL runs over TCP",
            )
        else:
            yield (
                i,
                model,
                "is not verified to carry aws-ofi-nccl: without it NCCL runs over TCP sockets with no error (look "
                "for `NET/OFI` in the log with NCCL_DEBUG=INFO)",
            )


@platform_rule
def a_prod_group_on_efa_runs_an_image_with_the_efa_stack(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    if config.stack.environment != "prod":
        return
    for i, model, why in _without_the_efa_stack(config, lookup):
        if model.engine == "dynamo":
            yield Problem(
                key_path(["models", i, "image"]),
                f"model {model.name} spans nodes over EFA, and the catalog's runtime image {why}; set image to "
                "your EFA build of it (repository, tag and digest)",
            )


@platform_warning
def a_group_on_efa_names_an_image_with_the_efa_stack(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, why in _without_the_efa_stack(config, lookup):
        if config.stack.environment == "prod" and model.engine == "dynamo":
            continue  # refused above
        yield Problem(
            key_path(["models", i, "image"]),
            f"model {model.name} spans nodes over EFA on the catalog's engine image, which {why}; set image to an "
            "image built with the EFA installer and aws-ofi-nccl",
        )


# NIM Operator v3.1.2 NIMService multiNode: tensor is the GPUs of one node, pipeline the node count
# (nimservice_types.go: the LWS size is `parallelism.pipeline`), autoscaling is forbidden beside it
# (the CRD's CEL rule), and every pod of the group reads one model cache (the operator's multi-node
# sample mounts its NIMCache from a ReadWriteMany claim).
NIM_SHARED_CACHES = ("efs", "fsx")


@platform_rule
def a_multi_node_nim_is_a_nimservice_the_operator_can_run(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    platform = platform_of(config, lookup)
    if platform is None:
        return
    for i, model, _ in placed(config, platform):
        if model.engine != "nim" or model.nodes_per_replica < 2:
            continue
        group = replica_group(model, ENGINES[model.engine].facts.groups)
        if not platform.addons.nim_operator.enabled:
            yield Problem(
                key_path(["models", i, "nodesPerReplica"]),
                f"model {model.name}: a NIM across nodes is the NIM Operator's NIMService multiNode (a "
                f"LeaderWorkerSet it builds); {platform.addon('nimOperator')}",
            )
        if (group.tensor, group.pipeline) != (group.per_node, group.nodes):
            yield Problem(
                key_path(["models", i, "parallelism"]),
                f"model {model.name}: NIM's multiNode takes tensor as the GPUs of one node and pipeline as the "
                f"node count: tensor {group.per_node} x pipeline {group.nodes} here, not tensor {group.tensor} x "
                f"pipeline {group.pipeline}; leave parallelism unset",
            )
        if model.autoscaling.owner != "none":
            yield Problem(
                key_path(["models", i, "autoscaling", "owner"]),
                f"model {model.name}: the NIMService CRD forbids autoscaling beside multiNode; set autoscaling.owner: "
                f"none and replicas",
            )
        if platform.storage.model_cache not in NIM_SHARED_CACHES:
            yield Problem(
                key_path(["models", i, "nodesPerReplica"]),
                f"model {model.name}: every pod of a multi-node NIM reads one model cache, which needs a "
                f"ReadWriteMany claim: storage.modelCache efs or fsx (it is {platform.storage.model_cache})",
            )
