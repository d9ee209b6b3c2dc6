"""The one resolution step: a validated StackConfig (plus, for a workloads stack, its platform's
exports) becomes one frozen `ResolvedStack`. Pure: no Pulumi, no I/O.

Every derived fact is computed here and nowhere else: the pools' instance types, the Neuron
scheduler name, the model-cache StorageClass, the Gateway routes attach to, whether custom metrics
are served, and per model its namespace, served name, image, Service, metrics endpoint and the
workload its engine builds. A platform stack exports its `PlatformView` through `export_platform`;
a workloads stack reads the same view back through `read_platform`, so the offline render of a
team's stack and `pulumi up` see exactly what the platform created.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from components.engines import ENGINES, EngineSpec
from components.engines.spec import overridden
from components.monitoring.collection import adapter_prometheus
from components.serving.litellm import litellm_image

from .coldstart import cold_start
from .config import StackConfig
from .config.addons import AddonsSection
from .config.gateway import GatewaySection
from .config.images import ImagePin
from .config.models import Autoscaling, ModelSection
from .config.pools import NodePoolSection
from .config.storage import StorageSection
from .engine_facts import EngineFacts, ModelFacts
from .groups import leader_worker_set, replica_group
from .hardware import expand
from .resolved import (
    AIBRIX_GATEWAY,
    CANARY_SUFFIX,
    CONTROLLER_NAMESPACES,
    DEFAULT_NAMESPACE,
    EFS_STORAGE_CLASS,
    EXPORTS_VERSION,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    HTTPS_LISTENER,
    NEURON_SCHEDULER,
    READER_SERVICE_ACCOUNT,
    GatewayParent,
    ImageTable,
    PlatformView,
    ResolvedModel,
    ResolvedPool,
    ResolvedStack,
    RoutePicking,
    Team,
    Wake,
)
from .versions import IMAGES, Image

# The storage settings a team's pods follow. Not existingClaim (a claim in the platform's namespaces,
# absent from a team's), nor the bucket and protection settings (the platform's resources).
STORAGE_KEYS = {"model_cache", "efs", "fsx", "local", "preparation"}
_POOL_KEYS = {f.alias or n for n, f in NodePoolSection.model_fields.items()}


# ---- the platform -----------------------------------------------------------------------------------


def resolve_pool(pool: NodePoolSection) -> ResolvedPool:
    return ResolvedPool(config=pool, instance_types=tuple(expand(pool.instance_types, pool.instance_families)))


def neuron_scheduler(addons: AddonsSection, pools: tuple[ResolvedPool, ...]) -> str | None:
    """The scheduler Neuron pods must name: set only when the capacity concern installs the Neuron
    chart (Karpenter on, some Neuron pool) with its scheduler extension."""
    installed = addons.karpenter.enabled and addons.neuron.enabled and any(p.accelerator == "neuron" for p in pools)
    return NEURON_SCHEDULER if installed and addons.neuron.scheduler else None


def gateway_parent(addons: AddonsSection, gateway: GatewaySection) -> GatewayParent | None:
    """The listener model routes attach to: AIBrix's Gateway when AIBrix runs (its plugin routes),
    else the front door's own HTTPS listener; None when neither exists."""
    if addons.aibrix.enabled:
        ns, name, listener = AIBRIX_GATEWAY
        return GatewayParent(namespace=ns, name=name, listener=listener, hostname=gateway.hostname, own=False)
    if gateway.enabled:
        return GatewayParent(
            namespace=GATEWAY_NAMESPACE, name=GATEWAY_NAME, listener=HTTPS_LISTENER, hostname=gateway.hostname, own=True
        )
    return None


def model_addons(model: ModelSection, addons: AddonsSection) -> tuple[str, ...]:
    """The add-on settings a model needs on: LeaderWorkerSet for a group the platform builds as one,
    and what its engine asks for (a Dynamo graph across nodes runs through Grove)."""
    spec = engine(model.engine)
    lws = ("lws",) if leader_worker_set(model, spec.facts.groups) else ()
    return (*lws, *spec.model_facts(model, addons).addons)


def with_model_addons(addons: AddonsSection, models: Sequence[ModelSection]) -> AddonsSection:
    """The add-ons with every setting some model needs turned on (`lws` is `addons.lws.enabled`,
    `dynamo.grove` is `addons.dynamo.grove`), as if the stack file said so: the platform installs them
    and exports them on."""
    for setting in sorted({s for m in models for s in model_addons(m, addons)}):
        name, _, flag = setting.partition(".")
        addon = getattr(addons, name)
        field = flag or "enabled"
        if not getattr(addon, field):
            addons = addons.model_copy(update={name: addon.model_copy(update={field: True})})
    return addons


def with_keda(addons: AddonsSection, models: Sequence[ModelSection]) -> AddonsSection:
    """The add-ons with KEDA on when some model is KEDA-scaled, and its HTTP add-on (which needs KEDA)
    on when some model scales to zero, as if `addons.keda` / `addons.kedaHttp` said so."""
    http = addons.keda_http.enabled or any(m.autoscaling.to_zero for m in models)
    keda = addons.keda.enabled or http or any(m.autoscaling.owner == "keda" for m in models)
    if (keda, http) == (addons.keda.enabled, addons.keda_http.enabled):
        return addons
    return addons.model_copy(
        update={
            "keda": addons.keda.model_copy(update={"enabled": keda}),
            "keda_http": addons.keda_http.model_copy(update={"enabled": http}),
        }
    )


def prometheus_url(addons: AddonsSection) -> str | None:
    """The Prometheus the stack's scalers query: the one prometheus-adapter reads (the platform's own
    kube-prometheus-stack, or the stack's `prometheusUrl`)."""
    found = adapter_prometheus(addons.monitoring)
    if found is None:
        return None
    url, port = found
    return url if port is None else f"{url}:{port}"


def own_platform(config: StackConfig) -> PlatformView:
    """The platform a platform or all-in-one stack creates."""
    if config.cluster is None:
        raise ValueError("only a stack with a cluster section (platform or all-in-one) has a platform of its own")
    pools = tuple(resolve_pool(p) for p in config.node_pools)
    addons = with_keda(with_model_addons(config.addons, config.models), config.models)
    return PlatformView(
        exports_version=EXPORTS_VERSION,
        cluster_name=config.cluster.name,
        kubernetes_version=config.cluster.kubernetes_version,
        environment=config.stack.environment,
        region=config.aws_region,
        pools=pools,
        addons=addons,
        storage=config.storage,
        storage_classes={"modelCache": EFS_STORAGE_CLASS} if config.storage.model_cache == "efs" else {},
        gateway=config.gateway,
        gateway_parent=gateway_parent(addons, config.gateway),
        neuron_scheduler=neuron_scheduler(addons, pools),
        custom_metrics=addons.monitoring.serves_custom_metrics,
        prometheus=prometheus_url(addons),
    )


def _pool_export(pool: ResolvedPool) -> dict[str, Any]:
    """One pool as teams see it: enough to re-run the fit check and to place pods on it."""
    p = pool.config
    return {
        "name": p.name,
        "accelerator": p.accelerator,
        "instanceTypes": [t.name for t in pool.instance_types],
        "capacityTypes": list(p.capacity_types),
        "architecture": p.architecture,
        "rootVolumeGiB": p.root_volume_gib,
        # A team's multi-node group requests the pool's EFA devices (ResolvedPool.efa_per_node).
        "efa": p.efa,
        "localNvme": p.local_nvme,
        "limits": p.limits.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def _parent_export(parent: GatewayParent | None) -> dict[str, str] | None:
    if parent is None:
        return None
    out = {"namespace": parent.namespace, "name": parent.name, "listener": parent.listener}
    return {**out, "hostname": parent.hostname} if parent.hostname else out


def export_platform(view: PlatformView) -> dict[str, Any]:
    """The platform's exports (plain JSON values): what workloads stacks may rely on."""
    return {
        "exportsVersion": view.exports_version,
        "clusterName": view.cluster_name,
        "kubernetesVersion": view.kubernetes_version,
        "environment": view.environment,
        "region": view.region,
        "nodePools": [_pool_export(p) for p in view.pools],
        "addons": {
            (f.alias or name): getattr(view.addons, name).enabled for name, f in AddonsSection.model_fields.items()
        },
        "storage": view.storage.model_dump(mode="json", by_alias=True, exclude_none=True, include=STORAGE_KEYS),
        "storageClasses": dict(view.storage_classes),
        "gateway": view.gateway.model_dump(mode="json", by_alias=True, exclude_none=True),
        "gatewayParent": _parent_export(view.gateway_parent),
        "schedulerNames": {"neuron": view.neuron_scheduler},
        # Added within version 2: a reader treats its absence (an older platform) as unknown.
        "customMetrics": view.custom_metrics,
        # Added within version 2: the Prometheus a team's KEDA triggers query; absent: unknown.
        "prometheus": view.prometheus,
    }


def read_pools(exports: dict[str, Any]) -> tuple[ResolvedPool, ...]:
    """The exported pools (instance types already resolved by the platform)."""
    return tuple(
        resolve_pool(NodePoolSection.model_validate({k: v for k, v in pool.items() if k in _POOL_KEYS}))
        for pool in exports.get("nodePools") or []
    )


def read_addons(exports: dict[str, Any]) -> AddonsSection:
    return AddonsSection.model_validate({k: {"enabled": bool(v)} for k, v in (exports.get("addons") or {}).items()})


def read_storage(exports: dict[str, Any]) -> StorageSection:
    return StorageSection.model_validate(exports.get("storage") or {})


def read_platform(exports: dict[str, Any]) -> PlatformView:
    """A platform's exports read back as the view it was exported from."""
    parent = exports.get("gatewayParent")
    gateway = GatewaySection.model_validate(exports.get("gateway") or {})
    return PlatformView(
        exports_version=int(exports.get("exportsVersion") or 0),
        cluster_name=str(exports.get("clusterName") or ""),
        kubernetes_version=str(exports.get("kubernetesVersion") or ""),
        environment=str(exports.get("environment") or ""),
        region=str(exports.get("region") or ""),
        pools=read_pools(exports),
        addons=read_addons(exports),
        storage=read_storage(exports),
        storage_classes=dict(exports.get("storageClasses") or {}),
        gateway=gateway,
        gateway_parent=None
        if not parent
        else GatewayParent(
            namespace=str(parent["namespace"]),
            name=str(parent["name"]),
            listener=str(parent["listener"]),
            hostname=parent.get("hostname"),
            own=False,
        ),
        neuron_scheduler=(exports.get("schedulerNames") or {}).get("neuron"),
        custom_metrics=exports.get("customMetrics"),
        prometheus=exports.get("prometheus"),
    )


# ---- the platform's own images ---------------------------------------------------------------------


def rendered_images(
    *,
    owns_platform: bool,
    addons: AddonsSection,
    accelerators: frozenset[str],
    models: Sequence[ModelSection],
    routed: bool,
) -> tuple[str, ...]:
    """The catalog names of the platform's own images a stack renders, under the conditions the
    builders render them: the preparation steps for every model whose artifacts the platform
    prepares (its engine's `ModelFacts.prepared`), the images an engine renders beside the model's own
    (Dynamo's planner for a profiling request), the
    endpoint picker for every model routed through one,
    and, in a stack that owns the platform, LiteLLM (and its Redis), AIBrix's Envoy pair and init
    image, and neuron-monitor on Neuron pools under monitoring. Builders look their images up in the
    table built from this list, so one left out here fails the render instead of going unpinned."""
    names: list[str] = []
    facts = [engine(m.engine).model_facts(m, addons) for m in models]
    if any(f.prepared for f in facts):
        names += ["model-prep-s3", "model-prep-hub"]
    names += sorted({image for f in facts for image in f.platform_images})
    if any(picked(m, routed) for m in models):
        names.append("endpoint-picker")
    if any(m.benchmark is not None for m in models):
        names += ["guidellm", *([] if "model-prep-s3" in names else ["model-prep-s3"])]
    if owns_platform:
        if addons.litellm.enabled:
            names += ["litellm", *(["redis"] if addons.litellm.redis else [])]
        if addons.aibrix.enabled:
            names += ["envoy-proxy", "envoy-gateway", "busybox"]
        if addons.monitoring.enabled and "neuron" in accelerators:
            names.append("neuron-monitor")
    return tuple(names)


def images_rendered_by(config: StackConfig) -> tuple[str, ...]:
    """`rendered_images` for a stack file: a workloads stack renders only its models' images (the
    platform's own run in the platform stack), so its own sections are all it takes."""
    return rendered_images(
        owns_platform=config.stack.role != "workloads",
        addons=config.addons,
        accelerators=frozenset(p.accelerator for p in config.node_pools),
        models=config.models,
        routed=has_routes(config),
    )


def has_routes(config: StackConfig) -> bool:
    """The stack's exposed models get routes: on the front door's Gateway or AIBrix's; a team's on its
    platform's."""
    return config.stack.role == "workloads" or config.gateway.enabled or config.addons.aibrix.enabled


def catalog_image(name: str, addons: AddonsSection) -> Image:
    """The catalog's image before the stack's pin: LiteLLM's is the release `addons.litellm.version`
    names, when it names one."""
    return litellm_image(addons.litellm, IMAGES[name]) if name == "litellm" else IMAGES[name]


def image_table(names: Sequence[str], addons: AddonsSection, pins: Mapping[str, ImagePin]) -> ImageTable:
    return ImageTable({name: overridden(catalog_image(name, addons), pins.get(name)) for name in names})


# ---- the models -------------------------------------------------------------------------------------


def engine(name: str) -> EngineSpec:
    return ENGINES[name]


def resolve_model(index: int, model: ModelSection, view: PlatformView, team: str | None) -> ResolvedModel | None:
    """One model on its platform; None when its pool is unknown (validation refuses that first)."""
    pool = view.pool(model.pool)
    if pool is None:
        return None
    spec = engine(model.engine)
    facts = spec.facts
    made: ModelFacts = spec.model_facts(model, view.addons)
    served = ResolvedModel(
        name=model.name,
        engine=model.engine,
        expose=model.expose,
        config=model,
        index=index,
        facts=facts,
        dialect=made.dialect,
        hub_repo=made.hub_repo,
        prepared=made.prepared,
        operator_names=made.names,
        pool=pool,
        namespace=model.namespace or team or DEFAULT_NAMESPACE,
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
        group=replica_group(model, facts.groups),
        routing=route_picking(model, view.gateway_parent is not None),
        # KEDA scales the workload, or a Dynamo graph's scaling adapters (its CRD has no scale subresource).
        keda_targets=made.keda_targets if model.autoscaling.owner == "keda" else (),
        wake=wake_of(model, facts, pool.accelerator == "neuron"),
    )
    return served if model.canary is None else replace(served, canary=canary_of(served))


def wake_of(model: ModelSection, facts: EngineFacts, neuron: bool) -> Wake | None:
    """A model that scales to zero comes back through its InterceptorRoute (named after it), and its
    requests wait through its cold-start budget; None for every other model."""
    if not model.autoscaling.to_zero:
        return None
    return Wake(route=model.name, cold_start=cold_start(model, facts, neuron))


def canary_of(stable: ResolvedModel) -> ResolvedModel:
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
    api_version, kind, _ = stable.workload
    return replace(
        stable, config=config, service=name, workload=(api_version, kind, name), scaler="none", keda_targets=()
    )


def routing_strategy(model: ModelSection, routed: bool) -> str | None:
    """The strategy the front door routes the model's requests by, the one reading of `routing`:
    the stack's; unset, `prefix-cache` for an exposed model of an engine the endpoint picker reads
    (vLLM, SGLang) that does not scale to zero; None (Envoy Gateway's own balancing) for the others,
    and where the model has no route (`expose: false`, or a stack without a gateway: `routed` False)."""
    if not model.expose or not routed:
        return None
    if model.routing is not None:
        return model.routing.strategy
    if model.autoscaling.to_zero:
        # The picker would send requests past the interceptor that wakes the model (stacks/rules/scaling.py).
        return None
    return "prefix-cache" if engine(model.engine).facts.picker_engine is not None else None


def route_picking(model: ModelSection, routed: bool) -> RoutePicking | None:
    """The model's routing with the engine's picker name (the stack rules refuse a picker strategy on
    an engine without one, so a None here for one is a bug)."""
    strategy = routing_strategy(model, routed)
    if strategy is None:
        return None
    if strategy == "round-robin":
        return RoutePicking(strategy=strategy, engine_type=None)
    engine_type = engine(model.engine).facts.picker_engine
    if engine_type is None:
        raise ValueError(f"routing.strategy {strategy} on engine {model.engine}, which the picker cannot read")
    return RoutePicking(strategy=strategy, engine_type=engine_type)


def picked(model: ModelSection, routed: bool) -> bool:
    """The model gets an endpoint picker (its own chart release)."""
    return routing_strategy(model, routed) not in (None, "round-robin")


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
    )


def resolve(config: StackConfig, platform_exports: dict[str, Any] | None = None) -> ResolvedStack:
    """The stack, resolved. A workloads stack needs its platform's exports; other stacks ignore them."""
    stack = config.stack
    team: Team | None = None
    if stack.role == "workloads":
        if platform_exports is None:
            raise ValueError("a workloads stack resolves against its platform's exports")
        assert stack.team is not None and stack.quota is not None
        view = read_platform(platform_exports)
        team = Team(name=stack.team, quota=stack.quota)
    else:
        view = own_platform(config)
    models = tuple(
        m
        for m in (resolve_model(i, m, view, team.name if team else None) for i, m in enumerate(config.models))
        if m is not None
    )
    images = image_table(images_rendered_by(config), config.addons, config.images.pins())
    dashboards = {m.engine for m in models}
    if stack.role == "platform":
        # Teams deploy later, from their own stacks: a dashboard for every engine the pools can run.
        dashboards |= {name for name, e in ENGINES.items() if view.accelerators & set(e.facts.accelerators)}
    return ResolvedStack(
        environment=stack.environment,
        region=config.aws_region,
        platform=view,
        models=models,
        cluster=config.cluster if stack.role != "workloads" else None,
        team=team,
        platform_stack=stack.platform_stack,
        controller_namespaces=controller_namespaces(view.addons, {m.engine for m in config.models}),
        route_parent=route_parent(view, stack.role != "workloads"),
        engines={name: e.facts for name, e in ENGINES.items()},
        dashboard_engines=frozenset(dashboards),
        images=images,
    )
