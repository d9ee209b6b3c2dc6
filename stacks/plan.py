"""`python -m stacks plan <stack> [--json]`: what each pool can launch and where each model fits.

For each pool, the instance types it allows with what a pod can request on a fresh node of each
(Karpenter's allocatable less the platform's DaemonSets, stacks/fit.py); for each model, every kind of
pod it runs, how many of it the workload asks for and exactly the requests the render gives its
serving container (`ResolvedModel.pods`: the builders render these, and tests/test_capacity_plan.py
compares the two for every shipped stack), and the types its pods on the pool fit; a canary is listed
after its model, as the workload of its own it is. Beside the fit, each model's cold-start estimate
(stacks/coldstart.py: node, image, weights and engine, each with its source in `--json`) and the waits
derived from it (the startup probe, the Pulumi await, a scale-to-zero model's wake budget). Reads the
resolved stack only: for a workloads stack, its platform's pools (its exports: the platform's stack file
in this repository, or the one `--platform` names). A workloads stack whose platform cannot be read has no
pools to plan on, and is refused (exit 1) naming `stack.platformStack` and the ways to give it.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError, Problem, key_path
from .fastpath import warm_chunk, warm_cost
from .fit import Requests, allocatable, fit
from .resolved import (
    EFA_RESOURCE,
    AheadCompile,
    ColdStartEstimate,
    PodShape,
    ResolvedModel,
    ResolvedPool,
    ResolvedStack,
)
from .sharing import slice_resource

COLUMNS = ("type", "cpu", "memory", "ephemeral", "gpu", "neuron", "neuroncore", "pods")
UNITS = {"nvidia": "GPUs", "neuron": "Neuron devices"}


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["    " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _pool_lines(pool: ResolvedPool, models: tuple[ResolvedModel, ...] = ()) -> list[str]:
    p = pool.config
    limits = pool.limits.manifest(p.accelerator)
    warm = warm_cost(pool, warm_chunk(pool, models) if pool.warm_nodes else None)
    lines = [
        f"pool {p.name}: accelerator {p.accelerator}, {'/'.join(p.capacity_order)}, {p.ami_alias}, "
        f"limits {limits or 'none'}{' per tier' if len(pool.tiers) > 1 else ''}",
        *_tier_lines(pool),
        f"  image pull {pool.image_pull}; {warm}",
        f"  after DaemonSets ({', '.join(pool.daemonsets)}: cpu {pool.overhead.cpu_m}m, "
        f"memory {pool.overhead.memory_mib}Mi):",
    ]
    shared = slice_resource(p)
    if shared is not None:
        lines.insert(2, f"  GPUs shared: each node advertises {shared} (the slices column), no nvidia.com/gpu")
    rows: list[tuple[str, ...]] = [COLUMNS + (("slices",) if shared else ())]
    for itype in pool.instance_types:
        a = allocatable(p, itype, pool.overhead)
        row = (
            a.instance_type,
            f"{a.cpu_m}m",
            f"{a.memory_mib}Mi",
            f"{a.ephemeral_mib}Mi",
            str(a.gpu),
            str(a.neuron),
            str(a.neuroncore),
            str(a.pods),
        )
        rows.append(row + ((str(a.gpu_shared or a.mig),) if shared else ()))
    return lines + (_table(rows) if len(rows) > 1 else ["    (no instance type the catalog knows)"])


def _tier_lines(pool: ResolvedPool) -> list[str]:
    """A tiered pool's NodePools in the order Karpenter tries them (highest weight first), each with its
    own copy of the limits: one pool to its models, which may land on any tier."""
    if len(pool.tiers) < 2:
        return []
    order = ", then ".join(f"{t.capacity_types[0]} (NodePool {t.name}, weight {t.weight})" for t in pool.tiers)
    return [f"  capacity preference: {order}; a full or short tier sends new nodes to the next"]


def _tiers_json(pool: ResolvedPool) -> list[dict[str, Any]]:
    return [{"nodePool": t.name, "capacityTypes": list(t.capacity_types), "weight": t.weight} for t in pool.tiers]


def _asked(pod: PodShape) -> str:
    r = pod.requests
    efa = pod.resources.get("requests", {}).get(EFA_RESOURCE)
    slices = f", gpu slices {r.gpu_shared or r.mig}" if r.gpu_shared or r.mig else ""
    asked = f"cpu {r.cpu_m}m, memory {r.memory_mib}Mi, gpu {r.gpu}, neuron {r.neuron}{slices}"
    return asked + (f", efa {efa}" if efa else "")


def fits(model: ResolvedModel, pod: PodShape) -> list[str]:
    """The pool's instance types one such pod fits on (after the platform's DaemonSets)."""
    return fit(pod.requests, model.pool.config, model.pool.overhead).fits


def _model_lines(model: ResolvedModel) -> list[str]:
    where = f"model {model.name}{' (canary)' if model.workload[2] != model.name else ''} on pool {model.pool.name}"
    if not model.pool.instance_types:
        verdict = "unchecked (no instance type of the pool is in the catalog)"
    else:
        found = [fits(model, p) for p in model.pods if p.pool]
        every = [t for t in found[0] if all(t in f for f in found)] if found else []
        verdict = ", ".join(every) if every else "NOTHING (see `stacks validate`)"
    group = model.group
    if group.multi_node:
        unit = UNITS.get(model.pool.accelerator, "accelerators")
        head = f"{where}: one replica is a group of {group.describe(unit)}: fits {verdict}"
    else:
        head = f"{where}: fits {verdict}"
    pods = [f"  {p.role}: {_count(p)}{'' if p.pool else ' (on the CPU nodes)'}, each {_asked(p)}" for p in model.pods]
    adapters = (
        [f"  adapters ({model.adapter_loader}), asked for by name on its route: {', '.join(model.adapter_model_names)}"]
        if model.adapter_model_names
        else []
    )
    helpers = _helper_lines(model)
    return [head, *pods, *helpers, *adapters, *_offload_lines(model), *_cold_start_lines(model), *_traffic_lines(model)]


def _helper_lines(model: ResolvedModel) -> list[str]:
    """The platform's helper pods in the model's namespace (a team's quota holds them too)."""
    return [
        f"  helper: {h.what} ({'awaited by pulumi up, ' if h.awaited else ''}"
        f"{'beside the replicas' if h.beside else 'before the replicas'}), cpu {h.requests.cpu_m}m, memory "
        f"{h.requests.memory_mib}Mi, gpu {h.requests.gpu}, neuron {h.requests.neuron}"
        for h in model.helpers
    ]


def _offload_lines(model: ResolvedModel) -> list[str]:
    """The model's KV-cache offload tiers (`kvCacheOffload`): the CPU tier in its pods' memory and the shared
    file tier, its directory and bound."""
    offload = model.config.kv_cache_offload
    if offload is None:
        return []
    lines = [f"  KV-cache offload: a {offload.cpu_gib}GiB CPU tier per pod (counted in its memory)"]
    if model.cache.kv_dir is not None:
        lines.append(
            f"  KV-cache file tier: {model.cache.kv_dir} on the shared cache, bounded to {model.cache.kv_gib}GiB "
            f"({model.cache.kv_rank_bytes / 2**30:.1f}GiB LRU cap for each of the {model.cache.kv_writers} SGLang "
            f"ranks that can write it at once; a pruning CronJob removes revisions no workload serves)"
        )
    return lines


def offload_json(model: ResolvedModel) -> dict[str, Any] | None:
    """`kvCacheOffload` as `plan --json` gives it (None without offload)."""
    offload = model.config.kv_cache_offload
    if offload is None:
        return None
    c = model.cache
    shared = (
        None
        if c.kv_dir is None
        else {"directory": c.kv_dir, "sizeGiB": c.kv_gib, "writers": c.kv_writers, "rankCapBytes": c.kv_rank_bytes}
    )
    return {"cpuGiB": offload.cpu_gib, "shared": shared}


def _traffic_lines(model: ResolvedModel) -> list[str]:
    """What the model's autoscaler follows and how the front door picks its pod, each with why."""
    lines = []
    if model.scaling is not None:
        lines.append(f"  scales on {model.scaling.describe()}")
    if model.routing is not None:
        lines.append(f"  routing: {model.routing.strategy} ({model.routing.reason})")
        if model.routing.adapter_metric:
            lines.append(f"  adapter affinity: lora-affinity-scorer on {model.routing.adapter_metric}")
        if model.routing.litellm_proxy:
            lines.append("  through LiteLLM: picked too, by the Envoy beside its picker")
    elif model.expose and model.routing_reason:
        lines.append(f"  routing: {model.routing_reason}")
    return lines


def traffic_json(model: ResolvedModel) -> dict[str, Any]:
    """`scaling` and `routing` as `plan --json` gives them (None without an autoscaler / a picked route)."""
    scaling, routing = model.scaling, model.routing
    return {
        "scaling": None
        if scaling is None
        else {"signal": scaling.source, "metric": scaling.metric, "target": scaling.target, "reason": scaling.reason},
        "routing": {"strategy": None if routing is None else routing.strategy, "reason": model.routing_reason},
    }


def _terms(est: ColdStartEstimate) -> str:
    return ", ".join(f"{name} {term.seconds}s" for name, term in est.terms().items())


def _cold_start_lines(model: ResolvedModel) -> list[str]:
    """The estimate beside the fit, and the waits it sets."""
    warm, first = model.cold_start_estimate, model.first_start_estimate
    waits = f"startup probe {model.startup_seconds}s, await {model.await_seconds}s"
    if model.wake is not None:
        waits += f", wake budget {model.wake.cold_start.seconds}s"
    lines = [
        f"  cold start: {warm.seconds}s ({_terms(warm)}); first start {first.seconds}s ({_terms(first)})",
        f"  waits: {waits}",
    ]
    if (ahead := model.ahead_compile) is not None:
        job = ahead.estimate
        lines.append(
            f"  neuron compile Job, before the serving pods: {job.seconds}s ({_terms(job)}); deadline "
            f"{ahead.deadline_seconds}s"
        )
    return lines


def cold_start_json(model: ResolvedModel) -> dict[str, Any]:
    """The model's cold-start estimate as `plan --json` gives it: seconds, each term with its source, the
    first start's, and the waits derived from them."""
    warm, first, ahead = model.cold_start_estimate, model.first_start_estimate, model.ahead_compile
    return {
        "coldStartSeconds": warm.seconds,
        "coldStartTerms": {k: {"seconds": t.seconds, "source": t.source} for k, t in warm.terms().items()},
        "firstStartSeconds": first.seconds,
        "firstStartTerms": {k: {"seconds": t.seconds, "source": t.source} for k, t in first.terms().items()},
        "waits": {
            "startupProbeSeconds": model.startup_seconds,
            "awaitSeconds": model.await_seconds,
            "wakeBudgetSeconds": model.wake.cold_start.seconds if model.wake is not None else None,
        },
        "aheadCompile": None if ahead is None else compile_json(ahead),
    }


def compile_json(ahead: AheadCompile) -> dict[str, Any]:
    """A Neuron model's compile Job (`neuron.compile: ahead`) as `plan --json` gives it: its own estimate, run
    before the serving pods (whose first start then loads the artifacts), and its deadline."""
    job = ahead.estimate
    return {
        "seconds": job.seconds,
        "terms": {k: {"seconds": t.seconds, "source": t.source} for k, t in job.terms().items()},
        "deadlineSeconds": ahead.deadline_seconds,
    }


def _count(pod: PodShape) -> str:
    """How many pods of the role the workload asks for: `replicas x pods per replica`."""
    per = f"{pod.count} pod{'s' if pod.count != 1 else ''}"
    if pod.replicas is None:
        return f"replicas as the autoscaler decides x {per}"
    return f"{pod.replicas} replica{'s' if pod.replicas != 1 else ''} x {per}"


def _served(stack: ResolvedStack) -> list[ResolvedModel]:
    """Every model the stack serves, each canary after its model (its own workload and pods)."""
    return [m for model in stack.models for m in (model, model.canary) if m is not None]


def unplanned(stack: ResolvedStack) -> list[Problem]:
    """Why the stack cannot be planned: a workloads stack whose platform's exports cannot be read here
    (no pools to fit on), or a model on a pool the platform does not have (the rules refuse that first;
    kept so a plan never prints a model it could not place)."""
    if not stack.owns_platform and not stack.platform.known:
        ref = stack.config.stack.platform_stack
        return [
            Problem(
                key_path(["stack", "platformStack"]),
                f"{stack.platform.where} cannot be read here, so its pools are unknown and nothing can be "
                f"planned: put its stack file (Pulumi.<stack>.yaml) at the project root or in stacks/examples, "
                f"or pass --platform with its stack file or with the output of "
                f"`pulumi stack output --json --stack {ref}`",
            )
        ]
    pools = ", ".join(p.name for p in stack.platform.pools) or "none"
    return [
        Problem(
            key_path(["models", entry.index, "pool"]),
            f"{stack.platform.where} has no pool named {entry.config.pool!r}; its pools: {pools}",
        )
        for entry in stack.entries
        if stack.placed(entry) is None
    ]


def _plannable(stack: ResolvedStack) -> None:
    problems = unplanned(stack)
    if problems:
        raise ConfigError(problems)


def plan(stack: ResolvedStack) -> str:
    """The plan as text (ConfigError when it cannot be planned: `unplanned`)."""
    _plannable(stack)
    lines = [line for pool in stack.platform.pools for line in _pool_lines(pool, stack.models)]
    for entry in stack.entries:
        model = stack.placed(entry)
        assert model is not None  # (`_plannable`)
        lines += [line for m in (model, model.canary) if m is not None for line in _model_lines(m)]
    return "\n".join(lines) + "\n"


def _requests_json(requests: Requests) -> dict[str, int]:
    out = {
        "cpuMillicores": requests.cpu_m,
        "memoryMiB": requests.memory_mib,
        "ephemeralMiB": requests.ephemeral_mib,
        "gpu": requests.gpu,
        "neuron": requests.neuron,
    }
    if requests.gpu_shared or requests.mig:
        # On a shared GPU pool only: the slices (nvidia.com/gpu.shared or nvidia.com/mig-<profile>) asked.
        out["gpuSlices"] = requests.gpu_shared or requests.mig
    return out


def helpers_json(model: ResolvedModel) -> list[dict[str, Any]]:
    """The platform's helper pods in the model's namespace, as `plan --json` gives them."""
    return [
        {
            "kind": h.kind,
            "key": h.key,
            "requests": _requests_json(h.requests),
            "beside": h.beside,
            "awaited": h.awaited,
        }
        for h in model.helpers
    ]


def plan_json(stack: ResolvedStack) -> dict[str, Any]:
    """The plan as data: each pool's DaemonSet overhead and allocatable per type, each model's pods
    (role, count, requests as numbers and the container resources as rendered) and where they fit
    (ConfigError when it cannot be planned: `unplanned`)."""
    _plannable(stack)
    pools = [
        {
            "name": pool.name,
            "accelerator": pool.accelerator,
            "daemonsets": list(pool.daemonsets),
            "overhead": _requests_json(pool.overhead),
            "limits": pool.limits.manifest(pool.accelerator),
            # The NodePools the pool renders, most preferred first; each carries `limits` whole.
            "tiers": _tiers_json(pool),
            "instanceTypes": [t.name for t in pool.instance_types],
            "imagePull": pool.image_pull,
            "warmNodes": pool.warm_nodes,
            "warmCost": warm_cost(pool, warm_chunk(pool, stack.models) if pool.warm_nodes else None),
        }
        for pool in stack.platform.pools
    ]
    models = []
    for model in _served(stack):
        api_version, kind, name = model.workload
        models.append(
            {
                "name": model.name,
                "workload": {"apiVersion": api_version, "kind": kind, "name": name},
                "pool": model.pool.name,
                "group": {"nodes": model.group.nodes, "tensor": model.group.tensor, "pipeline": model.group.pipeline},
                "pods": [
                    {
                        "role": p.role,
                        "count": p.count,
                        "replicas": p.replicas,
                        "pods": p.pods,
                        "perReplica": p.per_replica,
                        "onPool": p.pool,
                        "requests": _requests_json(p.requests),
                        "resources": {k: dict(v) for k, v in p.resources.items()},
                        "fits": fits(model, p) if p.pool else [],
                    }
                    for p in model.pods
                ],
                "adapters": {"loader": model.adapter_loader, "models": list(model.adapter_model_names)},
                "kvCacheOffload": offload_json(model),
                "helpers": helpers_json(model),
                **cold_start_json(model),
                **traffic_json(model),
            }
        )
    return {"stack": stack.platform.where, "pools": pools, "models": models}
