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
- a group needs EFA (`nodePools[].efa`) unless the stack accepts TCP (`allowTcp`), and only the engines
  whose facts say how they build a group run one; the others say why not (`Groups.refused`);
- a group on EFA runs an image with the EFA stack (`EngineFacts.efa_stack`: refused in prod where the
  catalog image is known to lack it, warned where it is not verified).
The engines' own group rules (Dynamo's single tensor group, NIM's multiNode) are in their modules.
Weights against the group's accelerator memory are stacks/rules/engines.py's (over the whole replica).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..architectures import architecture
from ..checks import rule, warning
from ..errors import Problem, key_path
from ..fit import over_limits
from ..resolved import ResolvedModel, ResolvedPool, ResolvedStack


@rule
def groups_split_their_accelerators(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        config = model.config
        nodes, total = config.nodes_per_replica, config.accelerators_per_replica
        where = f"model {model.name} on pool {model.pool.name}"
        groups = model.facts.groups
        if nodes > 1 and groups.builder is None:
            yield Problem(
                model.key("nodesPerReplica"),
                f"{where}: nodesPerReplica {nodes} is refused for engine {config.engine}: {groups.refused}; use "
                f"nodesPerReplica: 1",
            )
            continue
        if total % nodes:
            yield Problem(
                model.key("acceleratorsPerReplica"),
                f"{where}: acceleratorsPerReplica {total} does not divide over nodesPerReplica {nodes} nodes (each "
                f"pod of the group takes an equal share); use a multiple of {nodes}",
            )
            continue
        given = config.parallelism
        tensor, pipeline = model.group.tensor, model.group.pipeline
        if (given.tensor is not None or given.pipeline is not None) and tensor * pipeline != total:
            yield Problem(
                model.key("parallelism"),
                f"{where}: tensor {tensor} x pipeline {pipeline} = {tensor * pipeline}, but the replica has "
                f"acceleratorsPerReplica {total}; the product must equal it (e.g. tensor {max(1, total // nodes)} "
                f"x pipeline {nodes})",
            )
        if nodes > 1:
            share = model.group.per_node
            short = sorted(t.name for t in model.pool.instance_types if t.accelerator_count < share)
            if short:
                yield Problem(
                    model.key("nodesPerReplica"),
                    f"{where}: each of the {nodes} nodes of a group takes {share} accelerators, but pool "
                    f"{model.pool.name} also allows {', '.join(short)} with fewer; allow only types with at least "
                    f"{share}, or change nodesPerReplica",
                )


def neuron_heads_split(model: ResolvedModel) -> Problem | None:
    """A Neuron replica's NeuronCores (its tensor-parallel degree: `acceleratorsPerReplica` devices x the
    cores each holds) must divide the model's attention heads: vLLM 0.16's ModelConfig refuses any other
    degree at start-up on every platform, vllm-neuron's included ("Total number of attention heads must
    be divisible by tensor parallel size"), as it does on GPUs. The KV-head rule below is not applied:
    NxD Inference shards the KV heads itself. None when it divides, or the shape is unknown."""
    engine = model.facts.groups.head_rule
    shape = architecture(model.config)
    tensor = model.tensor_parallel
    if engine is None or shape is None or model.pool.accelerator != "neuron" or tensor < 1:
        return None
    if not shape.attention_heads % tensor:
        return None
    per_device = tensor // max(1, model.config.accelerators_per_replica)
    fits = [d for d in range(1, 65) if not shape.attention_heads % (d * per_device)]
    return Problem(
        model.key("acceleratorsPerReplica"),
        f"model {model.name} on pool {model.pool.name}: {model.config.accelerators_per_replica} Neuron devices are "
        f"{tensor} NeuronCores, the tensor-parallel degree, which does not divide the model's "
        f"{shape.attention_heads} attention heads, and {engine} refuses it at start-up (as on GPUs); use "
        f"{', '.join(map(str, fits[:4]))} devices per replica ({shape.source})",
    )


@rule
def neuron_cores_divide_the_heads(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        problem = neuron_heads_split(model)
        if problem is not None:
            yield problem


@rule
def tensor_size_divides_the_heads(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        engine = model.facts.groups.head_rule
        shape = architecture(model.config)
        apr = model.config.accelerators_per_replica
        if engine is None or shape is None or model.pool.accelerator != "nvidia" or apr < 1:
            continue
        tensor = model.group.tensor
        key = model.key("parallelism" if model.config.parallelism.tensor else "acceleratorsPerReplica")
        where = f"model {model.name} on pool {model.pool.name}"
        if shape.attention_heads % tensor:
            fits = [d for d in range(1, shape.attention_heads + 1) if not shape.attention_heads % d and d <= 64]
            yield Problem(
                key,
                f"{where}: tensor-parallel size {tensor} does not divide the model's {shape.attention_heads} "
                f"attention heads, which {engine} refuses at start-up; use a tensor size of "
                f"{', '.join(map(str, fits[-4:]))} ({shape.source})",
            )
        elif shape.kv_heads % tensor and tensor % shape.kv_heads:
            yield Problem(
                key,
                f"{where}: tensor-parallel size {tensor} and the model's {shape.kv_heads} KV heads neither divide "
                f"the other ({engine} splits KV heads over the ranks, or replicates them when the size is a "
                f"multiple); use a divisor or a multiple of {shape.kv_heads} ({shape.source})",
            )


@rule
def groups_cross_nodes_over_efa(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        if model.config.nodes_per_replica < 2 or model.facts.groups.builder is None:
            continue
        if model.pool.efa_per_node == 0 and not model.config.allow_tcp:
            yield Problem(
                model.key("pool"),
                f"model {model.name} spans {model.config.nodes_per_replica} nodes of pool {model.pool.name}, which "
                f"has no EFA (efa_per_node 0): its collectives would run over TCP sockets, about 98 s to the first "
                f"token against about 1 s over EFA (Dynamo's measurement). Use a pool with efa: true, or set "
                f"allowTcp: true to accept it",
            )


def _limits_key(stack: ResolvedStack, model: ResolvedModel) -> str:
    """The pool's limits when this stack owns the pool; a workloads stack cannot change its platform's
    pools, so its own key."""
    own = [j for j, p in enumerate(stack.config.node_pools) if p.name == model.pool.name]
    return key_path(["nodePools", own[0], "limits"]) if own else model.key("nodesPerReplica")


@rule
def pool_limits_admit_one_group(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        nodes = model.config.nodes_per_replica
        if nodes < 2 or model.config.accelerators_per_replica % nodes:
            continue
        types = [t for t in model.pool.instance_types if t.accelerator_count >= model.group.per_node]
        if not types:
            continue  # the fit rule names it
        limits = model.pool.limits
        small = min(types, key=lambda t: (t.vcpu, t.memory_gib))
        exceeded = over_limits(limits, small, nodes)
        blocked = []
        if "accelerators" in exceeded:
            blocked.append(f"accelerators {nodes} x {small.accelerator_count} > {exceeded['accelerators']}")
        if "cpu" in exceeded:
            blocked.append(f"cpu {nodes} x {small.vcpu} vCPU > {exceeded['cpu'] // 1000}")
        if "memory" in exceeded:
            blocked.append(f"memory {nodes} x {small.memory_gib:g}GiB > {exceeded['memory'] // 1024}GiB")
        if blocked:
            yield Problem(
                _limits_key(stack, model),
                f"model {model.name}: one group is {nodes} nodes of pool {model.pool.name} at once (at least "
                f"{small.name} each), and the pool's limits stop that ({'; '.join(blocked)}); raise the limits to "
                f"one whole group",
            )


def held(model: ResolvedModel) -> int | None:
    """Accelerators of the pool one replica holds: a group's nodes whole, else its own share; None
    where no allowed type holds a node's share (the fit rule names that)."""
    types = [t for t in model.pool.instance_types if t.accelerator_count >= model.group.per_node]
    if not types:
        return None
    if model.group.multi_node:
        return model.group.nodes * min(t.accelerator_count for t in types)
    return model.config.accelerators_per_replica


def _limit_text(pool: ResolvedPool) -> str:
    """The pool's accelerator limit as a message names it: per tier on a `capacityPreference` pool."""
    if len(pool.tiers) > 1:
        tiers, each = len(pool.tiers), pool.limits.accelerators
        return f"the {pool.accelerators_at_most} its {tiers} capacity tiers hold ({each} each)"
    return f"the pool's limit of {pool.limits.accelerators}"


@rule
def a_canary_fits_the_pool_beside_a_replica(stack: ResolvedStack) -> Iterable[Problem]:
    """A canary runs beside the stable workload: the pool's accelerator limit must hold one replica of
    each at once, or the canary waits for capacity the stable replicas never free (every tier of a
    `capacityPreference` pool counts: ResolvedPool.accelerators_at_most)."""
    for model in stack.models:
        config, limit = model.config, model.pool.accelerators_at_most
        if not config.canary_replicas or limit is None or config.accelerators_per_replica % config.nodes_per_replica:
            continue
        each = held(model)
        if each is None:
            continue
        need = (1 + config.canary_replicas) * each
        if need > limit:
            yield Problem(
                model.key("canary"),
                f"model {model.name}: its canary runs beside at least one stable replica, {need} accelerators of "
                f"pool {model.pool.name} ({each} each), over {_limit_text(model.pool)}; raise "
                f"nodePools[].limits.accelerators or drop the canary",
            )


@rule
def a_rollout_surge_fits_the_pool(stack: ResolvedStack) -> Iterable[Problem]:
    """`rollout.maxSurge` starts replicas above the most the model runs: the pool's accelerator limit
    must hold them all at once (a group holds its nodes whole), or the rollout waits on capacity that
    never comes while nothing old is stopped (maxUnavailable 0). Every tier of a `capacityPreference`
    pool counts (ResolvedPool.accelerators_at_most)."""
    for model in stack.models:
        config, limit = model.config, model.pool.accelerators_at_most
        surge = config.rollout.max_surge
        if not surge or limit is None or config.accelerators_per_replica % config.nodes_per_replica:
            continue
        each = held(model)
        if each is None:
            continue  # the fit rule names it
        most = config.most_replicas + config.canary_replicas  # a canary holds its accelerators through it too
        need = (most + surge) * each
        if need > limit:
            yield Problem(
                model.key("rollout", "maxSurge"),
                f"model {model.name}: a rollout with maxSurge {surge} runs {most} + {surge} replicas at once, "
                f"{need} accelerators of pool {model.pool.name} ({each} each), over {_limit_text(model.pool)}; "
                f"lower maxSurge (0 replaces one replica at a time) or raise nodePools[].limits.accelerators",
            )


def _on_efa_with_the_catalog_image(stack: ResolvedStack) -> Iterable[ResolvedModel]:
    """Groups on an EFA pool that run the catalog's engine image: without libfabric and aws-ofi-nccl
    NCCL falls back to TCP sockets without an error, and NIXL's LIBFABRIC backend cannot start."""
    for model in stack.models:
        if model.config.nodes_per_replica >= 2 and model.pool.config.efa and model.config.image.repository is None:
            yield model


@rule
def a_prod_group_on_efa_runs_an_image_with_the_efa_stack(stack: ResolvedStack) -> Iterable[Problem]:
    if not stack.prod:
        return
    for model in _on_efa_with_the_catalog_image(stack):
        if model.facts.efa_stack.missing:
            yield Problem(
                model.key("image"),
                f"model {model.name} spans nodes over EFA, and the catalog's runtime image "
                f"{model.facts.efa_stack.why}; set image to your EFA build of it (repository, tag and digest)",
            )


@warning
def a_group_on_efa_names_an_image_with_the_efa_stack(stack: ResolvedStack) -> Iterable[Problem]:
    for model in _on_efa_with_the_catalog_image(stack):
        if stack.prod and model.facts.efa_stack.missing:
            continue  # refused above
        yield Problem(
            model.key("image"),
            f"model {model.name} spans nodes over EFA on the catalog's engine image, which "
            f"{model.facts.efa_stack.why}; set image to an image built with the EFA installer and aws-ofi-nccl",
        )
