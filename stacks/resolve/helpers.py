"""The platform's helper pods in each model's namespace, resolved (stacks/resolved.py HelperPod): what a
team's ResourceQuota charges besides the serving pods, from the figures the builders render
(stacks/helper_pods.py) and, for the Neuron compile Job, the serving pod it copies.

- the acceptance Job (`models[].acceptance`): after the model is ready, beside its replicas (it calls them);
- the benchmark Job (`models[].benchmark`, run once or gated) and its CronJob (`benchmark.schedule`);
- the KV-cache file tier's pruning CronJob (`kvCacheOffload.shared`), one per workload (a canary's too);
- the Neuron compile Job (`neuron.compile: ahead`): the serving pod itself, on the pool, with its devices;
  the first time before any replica, but a new revision or image compiles while the old replicas serve;
- a streamed model's bucket fill Job (`loadFormat`), which the serving pods wait for in their init step;
- a picked model's endpoint picker (`routing`: prefix-cache or load), one pod of the llm-d router's chart,
  whose release `pulumi up` waits for.

The serving pods' own init containers (the preparation steps) are charged with the pod
(`ResolvedModel.preparation`). Nothing else the platform runs lands in a model's namespace: warm-node
placeholders are Karpenter's virtual pods in its own namespace, and AIBrix's runtime sidecar is in the
serving pod's requests already.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..fit import Requests
from ..helper_pods import (
    ACCEPTANCE_CHECK,
    ACCEPTANCE_UPLOAD,
    BENCH_GUIDELLM,
    BENCH_HUB_TOKENIZER,
    BENCH_TOKENIZER,
    BENCH_UPLOAD,
    KV_PRUNE,
    PICKER,
    PICKER_PROXY,
    PREPARATION_STEP,
    bench_runs_once,
    effective,
)
from ..resolved import HelperKind, HelperPod, ResolvedModel


def preparation(model: ResolvedModel) -> Requests:
    """What the model's largest preparation init container asks: a prepared or streamed model runs the
    preparation steps (components/storage/cache.py), every one of them PREPARATION_STEP."""
    return effective(init=[PREPARATION_STEP]) if model.prepared or model.cache.streamed else Requests()


def _pod(model: ResolvedModel, kind: HelperKind, what: str, key: str, requests: Requests, **when: bool) -> HelperPod:
    fixes = {
        "acceptance": f"or set {model.key('acceptance')}: false",
        "benchmark": f"or remove {model.key('benchmark')}",
        "benchmark-schedule": f"or remove {model.key('benchmark', 'schedule')}",
        "kv-prune": f"or remove {model.key('kvCacheOffload', 'shared')}",
        "neuron-compile": f"or set {model.key('neuron', 'compile')}: on-start (the first replica compiles)",
        "bucket-fill": f"or remove {model.key('loadFormat')} (the replicas copy the weights instead)",
        "endpoint-picker": f"or set {model.key('routing', 'strategy')}: round-robin (no picker)",
    }
    return HelperPod(
        kind=kind,
        what=f"{what} of {model.name}",
        key=key,
        namespace=model.namespace,
        requests=requests,
        beside=when.get("beside", True),
        awaited=when.get("awaited", False),
        fix=fixes[kind],
    )


def _per_workload(model: ResolvedModel) -> Iterable[HelperPod]:
    """The helpers of each of the model's workloads (the model's, its canary's)."""
    for served, whose in ((model, "the "), (model.canary, "the canary's ")):
        if served is None:
            continue
        if served.cache.kv_dir is not None:
            what = f"{whose}KV-cache tier pruner (CronJob)"
            yield _pod(model, "kv-prune", what, model.key("kvCacheOffload", "shared"), effective(containers=[KV_PRUNE]))
        if served.ahead_compile is not None:
            yield _pod(
                model,
                "neuron-compile",
                f"{whose}Neuron compile Job",
                model.key("neuron", "compile"),
                served.charged_serving_pod,
                awaited=True,
            )
        if served.cache.streamed:
            need = effective(init=[PREPARATION_STEP], containers=[PREPARATION_STEP])
            # Both steps ask the node for the download's scratch room (components/storage/prepare.py).
            need = replace(need, ephemeral_mib=(served.cache.staging_gib or 0) * 1024)
            yield _pod(model, "bucket-fill", f"{whose}bucket fill Job", model.key("loadFormat"), need)


def _benchmark(model: ResolvedModel) -> Iterable[HelperPod]:
    bench = model.config.benchmark
    if bench is None:
        return
    tokenizers = [BENCH_TOKENIZER, *([BENCH_HUB_TOKENIZER] if model.hub_repo is not None else [])]
    need = effective(init=[*tokenizers, BENCH_GUIDELLM], containers=[BENCH_UPLOAD])
    if bench_runs_once(bench):
        yield _pod(model, "benchmark", "the benchmark Job", model.key("benchmark"), need, awaited=bench.gate)
    if bench.schedule is not None:
        what = "the scheduled benchmark (CronJob)"
        yield _pod(model, "benchmark-schedule", what, model.key("benchmark", "schedule"), need)


def helper_pods(model: ResolvedModel) -> tuple[HelperPod, ...]:
    """Every helper pod the platform runs for the model, in its namespace."""
    found = []
    if model.acceptance is not None:
        need = effective(init=[ACCEPTANCE_CHECK], containers=[ACCEPTANCE_UPLOAD])
        gate = model.acceptance.gate
        found.append(_pod(model, "acceptance", "the acceptance Job", model.key("acceptance"), need, awaited=gate))
    if model.routing is not None and model.routing.picker:
        # A Helm release `pulumi up` waits for: its Deployment must become ready.
        need = effective(containers=[PICKER, *([PICKER_PROXY] if model.routing.litellm_proxy else [])])
        found.append(_pod(model, "endpoint-picker", "the endpoint picker", model.key("routing"), need, awaited=True))
    found += _benchmark(model)
    found += _per_workload(model)
    return tuple(found)


def with_helpers(model: ResolvedModel) -> ResolvedModel:
    """The model (and its canary) with its preparation step's requests, then with its helper pods."""
    canary = model.canary
    if canary is not None:
        canary = replace(canary, preparation=preparation(canary))
    prepared = replace(model, preparation=preparation(model), canary=canary)
    return replace(prepared, helpers=helper_pods(prepared))
