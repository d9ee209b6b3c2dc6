"""What a pool can hold against what a model's pods ask, by accelerators: shared by the capacity rules
(stacks/rules/capacity.py) and the engines' own checks (a Dynamo graph's worker roles together). Pure."""

from __future__ import annotations

from .resolved import ResolvedModel, ResolvedPool


def node_accelerators(pool: ResolvedPool) -> int:
    """Accelerators every node of the pool has at least (the smallest allowed type's)."""
    return min((t.accelerator_count for t in pool.instance_types), default=0)


def role_accelerators(model: ResolvedModel) -> list[tuple[str, int, int]]:
    """(role, pods at most, accelerators each) of every kind of pod the model runs on its pool: a role the
    workload counts at its count, the role an autoscaler owns at its maxReplicas (a Dynamo graph's fixed
    prefill workers beside its scaled decode workers)."""
    out = []
    for pod in model.pods:
        each = pod.requests.gpu or pod.requests.neuron
        if not pod.pool or not each:
            continue
        replicas = pod.replicas if pod.replicas is not None else model.config.autoscaling.max_replicas
        out.append((pod.role, pod.count * replicas, each))
    return out


def roles_over_the_pool(model: ResolvedModel) -> tuple[str, int, int, str] | None:
    """Where several worker roles of one model on its pool (a disaggregated graph's prefill and decode
    workers) hold more accelerators at once than the pool allows: (each role's share, the sum, the limit,
    the pool key to raise); None where they fit or one role runs."""
    roles = role_accelerators(model)
    if len(roles) < 2:
        return None
    need = sum(pods * each for _, pods, each in roles)
    nodes, per_node = model.pool.config.replicas, node_accelerators(model.pool)
    limit = model.pool.limits.accelerators if nodes is None else nodes * per_node
    if limit is None or need <= limit:
        return None
    parts = " + ".join(f"{role} {pods} x {each}" for role, pods, each in roles)
    where = f"static pool {model.pool.name}'s {nodes} nodes" if nodes is not None else f"pool {model.pool.name}'s"
    return f"{parts} = {need}", need, limit, f"{where} limit of {limit}"
