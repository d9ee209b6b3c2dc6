"""Engine rules: a model replica can run where the stack puts it, and each engine's own refusals.

- the pool's limits allow at least one replica's cpu;
- with `parameters` and `dtype`, the weights fit the replica's accelerator memory with headroom for
  the KV cache, on every instance type of the pool that could host it (Karpenter picks the cheapest);
- an autoscaler reads a gauge the engine really exports;
- every engine's own refusals and warnings (`EngineSpec.checks`, `warnings` in its module: NIM's
  credentials, Dynamo's graph, vLLM on Neuron's instance families ...).
The fit of each pod is stacks/rules/provisioning.py's; engine x accelerator is stacks/rules/models.py's.
"""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import rule, warning
from ..errors import Problem
from ..resolve.scaling import scaling_signal
from ..resolved import ResolvedModel, ResolvedStack
from ..sharing import slice_memory_gib, slices_per_node
from ..sizing import WEIGHTS_FRACTION, weights
from .groups import neuron_heads_split


def sized(stack: ResolvedStack) -> Iterable[ResolvedModel]:
    """Each placed model the platform sizes as its own workload, on a pool of its engine's accelerator
    (stacks/rules/models.py reports the wrong accelerator)."""
    for model in stack.models:
        if model.facts.platform_workload and model.pool.accelerator in model.facts.accelerators:
            yield model


@rule
def no_accelerators_on_cpu_pools(stack: ResolvedStack) -> Iterable[Problem]:
    for model in sized(stack):
        if model.pool.accelerator == "none" and model.config.accelerators_per_replica > 0:
            yield Problem(
                model.key("acceleratorsPerReplica"),
                f"pool {model.pool.name} has no accelerators; set acceleratorsPerReplica: 0 to run on its "
                f"CPUs, or choose a GPU pool",
            )


@rule
def pool_limits_allow_one_replica(stack: ResolvedStack) -> Iterable[Problem]:
    # The accelerator limit is checked with the fit (stacks/rules/provisioning.py).
    for model in sized(stack):
        limit = model.pool.limits.cpu_m if model.pool.config.limits.cpu is not None else None
        if limit is not None and model.requests.cpu_m > limit:
            yield Problem(
                model.key("resources", "cpu"),
                f"one replica requests {model.requests.cpu_m}m cpu but pool {model.pool.name} is limited to "
                f"{model.pool.config.limits.cpu}; raise nodePools[].limits.cpu or lower resources.cpu",
            )


@rule
def weights_fit_accelerator_memory(stack: ResolvedStack) -> Iterable[Problem]:
    for model in sized(stack):
        w = weights(model.config)
        apr = model.config.accelerators_per_replica
        types = [t for t in model.pool.instance_types if t.accelerator_count >= model.group.per_node]
        if w is None or not types or apr == 0:
            continue
        pool = model.pool.config
        if pool.gpu_sharing is not None:
            yield from _weights_fit_a_slice(model, w.gib)
            continue
        small = min(types, key=lambda t: t.memory_per_accelerator_gib)
        total = apr * small.memory_per_accelerator_gib
        usable = total * WEIGHTS_FRACTION
        if w.gib > usable:
            unit = small.gpu_name or small.neuron_accelerator or "accelerator"
            need = -(-w.gib // (small.memory_per_accelerator_gib * WEIGHTS_FRACTION))
            yield Problem(
                model.key("acceleratorsPerReplica"),
                f"weights do not fit: {model.config.parameters} parameters x {w.bytes / w.parameters:g} bytes "
                f"({w.dtype}) = {w.gib:.1f} GiB, but {apr} x {small.memory_per_accelerator_gib:g} GiB "
                f"({unit} on {small.name}) = {total:.1f} GiB, of which {WEIGHTS_FRACTION:.0%} "
                f"({usable:.1f} GiB) may hold weights, leaving the rest for the KV cache. Use at least "
                f"{int(need)} accelerators per replica on a type that has them, larger accelerators, "
                f"or a smaller dtype",
            )


def _weights_fit_a_slice(model: ResolvedModel, weights_gib: float) -> Iterable[Problem]:
    """On a shared GPU pool a replica holds one slice: a MIG instance's own memory, or a time-sliced GPU's
    memory divided by the replicas sharing it (its engine is capped there: nothing else isolates it)."""
    pool = model.pool.config
    sliced = [(t, slice_memory_gib(pool, t)) for t in model.pool.instance_types if slices_per_node(pool, t)]
    if not sliced:
        return  # no type offers the slice: stacks/rules/sharing.py names that
    small, memory = min(sliced, key=lambda pair: pair[1])
    usable = memory * WEIGHTS_FRACTION
    if weights_gib > usable:
        sharing = pool.gpu_sharing
        what = (
            f"MIG {sharing.mig.profile} instance"
            if sharing is not None and sharing.mig is not None
            else f"1/{sharing.time_slicing.replicas if sharing and sharing.time_slicing else 1} of a time-sliced GPU"
        )
        yield Problem(
            model.key("pool"),
            f"weights do not fit a slice: {weights_gib:.1f} GiB of weights, but one slice of pool {pool.name} "
            f"({what} on {small.name}) holds {memory:.1f} GiB, of which {WEIGHTS_FRACTION:.0%} ({usable:.1f} GiB) "
            f"may hold weights. Use a larger MIG profile, fewer time-slicing replicas, a pool of whole GPUs, or a "
            f"smaller dtype",
        )


@warning
def neuron_devices_in_powers_of_two(stack: ResolvedStack) -> Iterable[Problem]:
    for model in sized(stack):
        apr = model.config.accelerators_per_replica
        # Where the model's heads are known, a count that does not split is refused (groups.py).
        if neuron_heads_split(model) is not None:
            continue
        if model.pool.accelerator == "neuron" and apr & (apr - 1):
            yield Problem(
                model.key("acceleratorsPerReplica"),
                f"{apr} Neuron devices: Karpenter asks for power-of-two aws.amazon.com/neuron requests, "
                f"and the tensor parallel degree ({model.tensor_parallel} NeuronCores) must divide "
                f"the model's attention heads; 1, 2, 4 or 8 devices are the usual choices",
            )


@rule
def autoscalers_read_a_gauge_the_engine_exports(stack: ResolvedStack) -> Iterable[Problem]:
    """An HPA (through prometheus-adapter), an AIBrix PodAutoscaler or a KEDA trigger reads one gauge: it
    must be one the model's engine really exports, or nothing ever scales."""
    for entry in stack.entries:
        scaling, facts = entry.config.autoscaling, entry.facts
        if scaling.owner not in ("hpa", "aibrix", "keda"):
            continue
        # An operator-run engine is scaled only through what KEDA targets of it (a Dynamo graph's
        # adapters); the others' autoscalers are refused before this matters.
        if not facts.platform_workload and not (scaling.owner == "keda" and entry.made.keda_targets):
            continue
        signal = scaling_signal(entry.config, facts)
        if signal is not None and signal.requests:
            continue  # the HTTP add-on's request count (stacks/rules/scaling.py checks its path)
        gauges = [m.name for m in facts.gauges]
        if not gauges:
            yield Problem(
                entry.key("autoscaling", "signal" if scaling.signal else "owner"),
                f"engine {entry.config.engine} exports no Prometheus metrics to scale on; use owner: keda without "
                f"signal: gauge (KEDA then scales it on the HTTP add-on's count of its requests, through its "
                f"front-door route), or owner: none and a fixed replicas count",
            )
        elif scaling.metric is not None and scaling.metric not in gauges:
            yield Problem(
                entry.key("autoscaling", "metric"),
                f"{scaling.metric} is not a gauge engine {entry.config.engine} exports (an autoscaler averages a "
                f"per-pod value); use one of {', '.join(gauges)}, or leave metric unset for its queue "
                f"depth, {facts.scaling_metric(None)}",
            )


@rule
def each_engines_own_refusals(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        yield from ENGINES[entry.config.engine].checks(entry, stack)


@warning
def each_engines_own_warnings(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        yield from ENGINES[entry.config.engine].warnings(entry, stack)
