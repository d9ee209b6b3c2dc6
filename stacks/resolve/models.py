"""The models, resolved: every `models[]` entry with what its engine makes of it (`ModelEntry`), and
each entry whose pool the platform has, placed on it (`ResolvedModel`): its requests per pod and the
pods a replica runs, its group, tensor-parallel size, cache, startup allowance, routing, the way back
from zero and its canary. Builders, rules and `stacks plan` read these figures; none recomputes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.engines import ENGINES

from ..architectures import architecture
from ..coldstart import await_seconds, budget, compile_job_deadline, estimate, first_start, probe_allowance
from ..config.addons import AddonsSection
from ..config.gateway import DEFAULT_CLIENT_HEADER, GatewaySection
from ..config.models import Autoscaling, ModelSection
from ..config.storage import StorageSection
from ..config.teams import PLATFORM_CLIENTS
from ..engine_facts import EngineFacts, ModelFacts
from ..fastpath import SHARED_CACHES, image_key, shape_key
from ..fit import Requests, aibrix_runtime_requests
from ..groups import ReplicaGroup, replica_group
from ..offload import kv_writers, picker_tier_blocks
from ..resolved import (
    CANARY_SUFFIX,
    CONTROLLER_NAMESPACES,
    DEFAULT_NAMESPACE,
    EFA_RESOURCE,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    HTTPS_LISTENER,
    READER_SERVICE_ACCOUNT,
    SERVING_ROLES,
    AheadCompile,
    ColdStartEstimate,
    FlowLimits,
    GatewayParent,
    ModelCache,
    ModelEntry,
    PlatformView,
    PodShape,
    ResolvedModel,
    ResolvedPool,
    RoutePicking,
    Team,
    Wake,
    adapter_loader,
)
from ..sharing import MIG_RESOURCE_PREFIX, slice_resource
from ..sizing import replica_requests, tensor_parallel
from .access import callers, key_secrets
from .cache import model_cache
from .scaling import scaling_signal, through_interceptor


def model_entry(index: int, model: ModelSection, addons: AddonsSection, team: Team | None) -> ModelEntry:
    """One entry with its engine's facts and what the engine makes of it on these add-ons; a team's
    model is the team's, in its home namespace unless it names another of the team's."""
    spec = ENGINES[model.engine]
    return ModelEntry(
        index=index,
        config=model,
        facts=spec.facts,
        made=spec.model_facts(model, addons),
        namespace=model.namespace or (team.home if team else DEFAULT_NAMESPACE),
        owner=team.name if team else PLATFORM_CLIENTS,
    )


def route_prefix(entry: ModelEntry) -> str:
    """`/<name>` for a platform model; `/<namespace>/<name>` for a team's, so that two teams' models of one
    name never share a path (the platform, which sees no team stack, could not refuse the second)."""
    if entry.owner == PLATFORM_CLIENTS:
        return f"/{entry.name}"
    return f"/{entry.namespace}/{entry.name}"


def wake_of(entry: ModelEntry, warm: ColdStartEstimate) -> Wake:
    """The way back from zero: the InterceptorRoute named after the model in its namespace, matched by the
    header value `<namespace>/<name>`, unique in the cluster (a namespace holds one model of a name, and one
    interceptor serves every namespace), and the cold start its requests wait through: its warm estimate
    times the safety factor (a woken model finds its shared cache filled and its compile cache kept)."""
    return Wake(route=entry.name, header=f"{entry.namespace}/{entry.name}", cold_start=budget(warm))


# Why a model reached through the interceptor has no endpoint picker: the KEDA HTTP add-on 0.15.0 forwards
# each request to `<service>.<namespace>:<port>` (interceptor/middleware/routing.go resolveUpstreamURL), so
# the Service, not a picker, chooses the pod, and at zero there is no pod for a picker to choose.
INTERCEPTOR_ROUND_ROBIN = (
    "round-robin, because its requests go through the KEDA HTTP add-on's interceptor (it scales to zero or on "
    "the add-on's request count), which forwards to the model's Service, so no endpoint picker can choose its pod"
)


def picking_and_reason(model: ModelSection, facts: EngineFacts, routed: bool) -> tuple[str | None, str]:
    """The strategy the front door routes the model's requests by, the one reading of `routing`, and why:
    the stack's; unset, `prefix-cache` for an exposed model of an engine the endpoint picker reads (vLLM,
    SGLang), except `round-robin` for one whose requests go through the interceptor (it scales to zero);
    None (Envoy Gateway's own balancing) for the other engines, and where the model has no route
    (`expose: false`, or a stack without a gateway: `routed` False)."""
    if not model.expose or not routed:
        return None, "no route (expose: false or no gateway)"
    if model.routing is not None:
        return model.routing.strategy, "routing.strategy as written"
    if facts.picker_engine is None:
        if through_interceptor(model, facts):
            return None, "the KEDA HTTP add-on's interceptor forwards to the model's Service, which picks the pod"
        return None, f"Envoy Gateway's own balancing: the endpoint picker cannot read {facts.title}'s metrics"
    if through_interceptor(model, facts):
        return "round-robin", INTERCEPTOR_ROUND_ROBIN
    return "prefix-cache", f"the default for {facts.title}, whose metrics the endpoint picker reads"


def routing_strategy(model: ModelSection, facts: EngineFacts, routed: bool) -> str | None:
    return picking_and_reason(model, facts, routed)[0]


def route_picking(
    model: ModelSection, facts: EngineFacts, routed: bool, client_header: str, *, litellm: bool = False
) -> dict[str, Any]:
    """The model's routing with the llm-d router's name for its engine and the reason, and the reason
    alone where none is resolved (`routing_reason`: Envoy Gateway's balancing, or no route); a picker
    strategy on an engine the picker cannot read has none (engine_type None), which the routing rule
    refuses. Flow control only where a picker runs (the flow-control rule refuses it elsewhere). With
    `litellm` (litellm_through_picker), a picked model is called through its picker's proxy."""
    strategy, reason = picking_and_reason(model, facts, routed)
    picking = None
    if strategy == "round-robin":
        picking = RoutePicking(strategy=strategy, engine_type=None, reason=reason)
    elif strategy is not None:
        tier = picker_tier_blocks(model, architecture(model)) if strategy == "prefix-cache" else None
        picking = RoutePicking(
            strategy=strategy,
            engine_type=facts.picker_engine,
            reason=reason,
            cpu_tier_blocks=tier,
            flow_control=flow_limits(model, client_header) if facts.picker_engine else None,
            adapter_metric=picked_adapter_metric(model, facts),
            litellm_proxy=litellm and facts.picker_engine is not None,
        )
    return {"routing": picking, "routing_reason": reason}


def litellm_calls(entry: ModelEntry, view: PlatformView) -> bool:
    """Whether this stack's LiteLLM proxy calls the model's own pods: it runs in the stack that owns the
    platform and lists that stack's exposed models (components/serving/litellm.py internal_models), never a
    team's; a model the KEDA HTTP add-on's interceptor wakes it calls through the interceptor instead."""
    listed = view.addons.litellm.enabled and entry.owner == PLATFORM_CLIENTS and entry.config.expose
    return listed and not through_interceptor(entry.config, entry.facts)


def litellm_through_picker(entry: ModelEntry, view: PlatformView) -> bool:
    """Whether LiteLLM would call the model through its picker's proxy, were it picked: where it calls the
    model's pods, except beside a canary. The proxy sends each request straight to the pod the picker
    names, and the picker selects stable and canary pods alike (by the model's label), so the canary's
    weight would not hold; such a model stays at its stable Service, as before."""
    return litellm_calls(entry, view) and entry.config.canary is None


def picked_adapter_metric(model: ModelSection, facts: EngineFacts) -> str | None:
    """The series the picker scores adapter affinity by: only where the engine itself loads the model's
    adapters at start (`lora`), so every pod serves every adapter and the scorer only prefers the pod
    already running it. Not for AIBrix's adapters: its controller loads each on the pods it picks
    (`replicas`), and the scorer, which rates a pod with a free adapter slot nearly as high as one
    running the adapter, would send requests to pods that do not have it."""
    if facts.picker_engine is None or adapter_loader(model, facts) != "engine":
        return None
    return facts.picker_adapter_metric


def client_header(gateway: GatewaySection) -> str:
    """The header the gateway writes the authenticated client id into (the API key's name, the JWT `sub`)."""
    return gateway.rate_limit.client_header if gateway.rate_limit else DEFAULT_CLIENT_HEADER


def flow_limits(model: ModelSection, client_header: str) -> FlowLimits | None:
    """`routing.flowControl` with the header the gateway writes the authenticated client id into."""
    fc = model.routing.flow_control if model.routing is not None else None
    if fc is None:
        return None
    return FlowLimits(
        queue_timeout_seconds=fc.queue_timeout_seconds,
        max_requests=fc.max_requests,
        max_queued_mib=fc.max_queued_mib,
        client_header=client_header,
    )


def with_efa(pods: tuple[PodShape, ...], efa: int) -> tuple[PodShape, ...]:
    """The pods on the pool of a group across nodes with every EFA device of their node (the device
    plugin does not share them, and a pod that owns its node takes them all), requested and limited;
    the pods unchanged on a pool without EFA or for a replica on one node."""
    if not efa:
        return pods
    return tuple(
        replace(
            p,
            resources={
                part: {**values, EFA_RESOURCE: str(efa)} if part in ("requests", "limits") else dict(values)
                for part, values in p.resources.items()
            },
        )
        if p.pool
        else p
        for p in pods
    )


def pod_shapes(
    model: ModelSection, pool: ResolvedPool, requests: Requests, group: ReplicaGroup, *, aibrix_loads: bool = False
) -> tuple[PodShape, ...]:
    """The engine's pods for the model, with a multi-node group's EFA devices, a MIG pool's instances and,
    where AIBrix loads the model's adapters (`aibrix_loads`), its runtime sidecar's requests."""
    pods = ENGINES[model.engine].pods(model, requests, group)
    pods = with_slices(with_efa(pods, pool.efa_per_node if group.multi_node else 0), pool)
    return with_runtime_sidecar(pods) if aibrix_loads else pods


def with_runtime_sidecar(pods: tuple[PodShape, ...]) -> tuple[PodShape, ...]:
    """The pods with AIBrix's runtime sidecar's requests added to each serving pod's (the pod's requests
    are its containers' sum: what Karpenter packs and the team's ResourceQuota charges). The serving
    container's own resources are unchanged: the sidecar renders its own."""
    extra = aibrix_runtime_requests()
    return tuple(replace(p, requests=p.requests + extra) if p.role in SERVING_ROLES else p for p in pods)


def with_slices(pods: tuple[PodShape, ...], pool: ResolvedPool) -> tuple[PodShape, ...]:
    """The pool's pods with their MIG instances requested and limited under the pool's profile
    (`nvidia.com/mig-<profile>`, stacks/sharing.py); the pods unchanged elsewhere."""
    resource = slice_resource(pool.config)
    if resource is None or not resource.startswith(MIG_RESOURCE_PREFIX):
        return pods
    return tuple(
        replace(
            p,
            resources={
                part: {**values, resource: str(p.requests.mig)} if part in ("requests", "limits") else dict(values)
                for part, values in p.resources.items()
            },
        )
        if p.pool and p.requests.mig
        else p
        for p in pods
    )


def keeps_compile_cache(model: ModelSection, facts: EngineFacts, storage: StorageSection) -> bool:
    """`models[].compileCache` as written, else on where every replica can share it (`efs`, `fsx`) and the
    engine keeps compiled artifacts the platform can place (its `compile_cache_env`). An explicit `true`
    the storage or engine cannot honour stays true here and is refused (stacks/rules/fastpath.py)."""
    if model.compile_cache is not None:
        return model.compile_cache
    return storage.model_cache in SHARED_CACHES and bool(facts.compile_cache_env)


def compiles_ahead(model: ModelSection, facts: EngineFacts, view: PlatformView) -> bool:
    """`models[].neuron.compile` resolved: as written, else `ahead` for a Neuron engine on a prod platform
    whose cache every pod shares (where a compile is worth doing once, before any serving pod). An explicit
    `ahead` the storage or revision cannot honour stays true here and is refused (stacks/rules/fastpath.py)."""
    if "neuron" not in facts.accelerators:
        return False
    chosen = model.neuron.compile if model.neuron is not None else None
    if chosen is not None:
        return chosen == "ahead"
    return view.environment == "prod" and view.storage.model_cache in SHARED_CACHES


def starts(
    entry: ModelEntry, pool: ResolvedPool, view: PlatformView, cache: ModelCache, compile_cache: bool
) -> tuple[ColdStartEstimate, ColdStartEstimate, AheadCompile | None]:
    """The model's cold-start estimates: with its caches warm (a restart, a wake from zero), and its first
    (loading what an ahead-of-time compile Job compiled, when it has one); and that Job's own."""
    model, made = entry.config, entry.made
    ahead = compiles_ahead(model, entry.facts, view)

    def at(first: bool, compiled: bool) -> ColdStartEstimate:
        return estimate(
            model,
            pool,
            view.storage,
            cache,
            made.image,
            prepared=made.prepared,
            compile_cache=compile_cache,
            first=first,
            ahead=compiled,
        )

    job = at(True, False) if ahead else None
    compiled = None if job is None else AheadCompile(estimate=job, deadline_seconds=compile_job_deadline(job))
    return at(False, ahead), at(True, ahead), compiled


def placed_cache(
    entry: ModelEntry, pool: ResolvedPool, view: PlatformView, tensor: int, group: ReplicaGroup
) -> tuple[ModelCache, bool]:
    """The model's cache on its pool, and whether it keeps compiled artifacts there, under a key of its
    engine image and shape (a new image or shape compiles afresh)."""
    model, facts, made = entry.config, entry.facts, entry.made
    compiles = keeps_compile_cache(model, facts, view.storage)
    key = f"{image_key(made.image.tag, made.image.digest)}/{shape_key(tensor, group.pipeline)}"
    writers = kv_writers(model, tensor, group.pipeline)
    return model_cache(model, pool.config, view.storage, entry.owner, key if compiles else None, writers), compiles


def scaler_fields(entry: ModelEntry, warm: ColdStartEstimate) -> dict[str, Any]:
    """What scales the model: KEDA's targets (the workload, or a Dynamo graph's scaling adapters: its CRD
    has no scale subresource), the way through the interceptor (named after the model) for one that
    scales to zero or on the add-on's request count, and the signal its autoscaler follows."""
    model, facts = entry.config, entry.facts
    return {
        **keda_scaling(model, entry.made),
        "wake": wake_of(entry, warm) if through_interceptor(model, facts) else None,
        "scaling": scaling_signal(model, facts),
    }


def place(entry: ModelEntry, view: PlatformView, routed: bool) -> ResolvedModel | None:
    """The entry on its pool of the platform; None when the platform has no such pool (refused)."""
    model, facts, made = entry.config, entry.facts, entry.made
    if (pool := view.pool(model.pool)) is None:
        return None
    requests = replica_requests(model, pool.config, view.storage)
    group = replica_group(model, facts.groups)
    tensor = tensor_parallel(model, pool.config, facts.groups)
    cache, compiles = placed_cache(entry, pool, view, tensor, group)
    warm, first, compiled = starts(entry, pool, view, cache, compiles)
    startup = probe_allowance(first)
    allowance = first_start(first, startup)
    served = ResolvedModel(
        name=model.name,
        engine=model.engine,
        expose=model.expose,
        config=model,
        index=entry.index,
        facts=facts,
        dialect=made.dialect,
        hub_repo=made.hub_repo,
        prepared=made.prepared,
        operator_names=made.names,
        pool=pool,
        namespace=entry.namespace,
        owner=entry.owner,
        callers=callers(entry),
        key_secrets=key_secrets(entry, view),
        acceptance=entry.acceptance,
        route_prefix=route_prefix(entry),
        served_model_name=model.name,
        image=made.image,
        service=made.service,
        port=made.port,
        metrics_path=facts.metrics_path,
        metrics_port=facts.metrics_port or (facts.port if facts.metrics_path else None),
        route_paths=facts.route_paths,
        management_paths=facts.management_paths,
        workload=made.workload,
        service_account=READER_SERVICE_ACCOUNT,
        scaler=model.autoscaling.owner,
        aibrix=view.addons.aibrix.enabled,
        tracing=view.tracing if model.tracing else None,
        group=group,
        requests=requests,
        pods=pod_shapes(model, pool, requests, group, aibrix_loads=adapter_loader(model, facts) == "aibrix"),
        tensor_parallel=tensor,
        cache=cache,
        compile_cache=compiles,
        ahead_compile=compiled,
        startup_seconds=startup,
        cold_start_estimate=warm,
        first_start_estimate=first,
        allowance=allowance,
        await_seconds=await_seconds(model, allowance),
        **route_picking(model, facts, routed, client_header(view.gateway), litellm=litellm_through_picker(entry, view)),
        **scaler_fields(entry, warm),
    )
    return served if model.canary is None else replace(served, canary=canary_of(entry, served, view, routed))


def keda_scaling(model: ModelSection, made: ModelFacts) -> dict[str, Any]:
    """What KEDA scales (the workload, or a Dynamo graph's scaling adapters: its CRD has no scale
    subresource) and the floor the engine's own count sets; nothing without `autoscaling.owner: keda`."""
    if model.autoscaling.owner != "keda":
        return {"keda_targets": (), "scale_floor": None}
    return {"keda_targets": made.keda_targets, "scale_floor": made.keda_floor}


def canary_of(entry: ModelEntry, stable: ResolvedModel, view: PlatformView, routed: bool) -> ResolvedModel:
    """The canary beside a stable model: the same entry at the canary's revision (so its cache path and
    preparation follow that revision), one fixed replica without an autoscaler (a canary compares a
    revision, it does not carry load spikes), and its own workload and Service `<name>-canary`. It keeps
    the model's name, so its pods carry the model's selector label (network policies, the PodMonitor)."""
    assert stable.config.canary is not None
    name = stable.name + CANARY_SUFFIX
    config = stable.config.model_copy(
        update={
            "revision": stable.config.canary.revision,
            "canary": None,
            "replicas": stable.config.canary_replicas,
            "autoscaling": Autoscaling(),
        }
    )
    placed = place(replace(entry, config=config), view, routed)
    assert placed is not None, "the canary runs on its model's pool"
    api_version, kind, _ = stable.workload
    return replace(
        placed,
        # The canary's config names no canary: the live revisions are the stable model's (both).
        cache=replace(placed.cache, kv_live=stable.cache.kv_live),
        service=name,
        workload=(api_version, kind, name),
        scaler="none",
        keda_targets=(),
        scale_floor=None,
        routing=stable.routing,
        routing_reason=stable.routing_reason,
        wake=None,
        scaling=None,
    )


def controller_namespaces(addons: AddonsSection, engines: set[str]) -> dict[str, tuple[str, ...]]:
    """Engine -> namespaces whose controllers must reach that engine's pods: the engine's own operator
    (Dynamo, KubeRay, the NIM Operator) when installed and, with AIBrix, its controller manager and
    gateway plugin (adapter loading, per-pod metrics) for every engine."""
    out: dict[str, tuple[str, ...]] = {}
    for name in sorted(engines):
        namespaces = []
        addon = ENGINES[name].facts.controller
        if addon and getattr(addons, addon.replace("-", "_")).enabled:
            namespaces.append(CONTROLLER_NAMESPACES[addon])
        if addons.aibrix.enabled:
            namespaces.append(CONTROLLER_NAMESPACES["aibrix"])
        if namespaces:
            out[name] = tuple(namespaces)
    return out


def route_parent(view: PlatformView, owns_platform: bool) -> GatewayParent:
    """Where this stack's model routes attach: the platform's listener when it exports one (its own
    Gateway's, or AIBrix's), else the front door's own Gateway (which only a stack that owns the
    platform creates)."""
    if view.gateway_parent is not None:
        return view.gateway_parent
    return GatewayParent(
        namespace=GATEWAY_NAMESPACE,
        name=GATEWAY_NAME,
        listener=HTTPS_LISTENER,
        hostname=view.gateway.hostname,
        own=owns_platform,
        shared=True,
    )
