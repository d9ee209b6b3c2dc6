"""The platform a stack's models run on, resolved: its own (platform and all-in-one stacks) or the one
a workloads stack reads from its platform's exports, through the same two functions that write and
read those exports (stacks/exports.py `export_platform`, `read_platform`), so offline and live cannot
disagree.

Here the add-on defaults are decided once: the settings some model needs turned on (LeaderWorkerSet
for a group the platform builds as one, Dynamo's Grove for a graph across nodes, KEDA and its HTTP
add-on for KEDA-scaled and scale-to-zero models) are on in the resolved add-ons, which every rule and
builder reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.engines import ENGINES

from ..config import StackConfig
from ..config.addons import AddonsSection, MonitoringAddon
from ..config.gateway import GatewaySection
from ..config.models import ModelSection
from ..config.pools import NodePoolSection
from ..config.storage import StorageSection
from ..config.teams import TeamSection
from ..exports import resolve_pool
from ..fit import Installed
from ..groups import leader_worker_set
from ..resolved import (
    AIBRIX_GATEWAY,
    EFS_STORAGE_CLASS,
    EXPORTS_VERSION,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    HTTPS_LISTENER,
    MONITORING_NAMESPACE,
    NEURON_SCHEDULER,
    PROMETHEUS_SERVICE,
    GatewayParent,
    PlatformView,
    Team,
)
from .scaling import through_interceptor
from .tracing import trace_export

OWN = "this stack"


def neuron_scheduler(addons: AddonsSection, pools: Sequence[NodePoolSection]) -> str | None:
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
            namespace=GATEWAY_NAMESPACE,
            name=GATEWAY_NAME,
            listener=HTTPS_LISTENER,
            hostname=gateway.hostname,
            own=True,
            shared=True,
        )
    return None


def model_addons(model: ModelSection, addons: AddonsSection) -> tuple[str, ...]:
    """The add-on settings a model needs on: LeaderWorkerSet for a group the platform builds as one,
    and what its engine asks for (a Dynamo graph across nodes runs through Grove)."""
    spec = ENGINES[model.engine]
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
    on when some model's requests go through its interceptor (it scales to zero, or on the add-on's
    request count), as if `addons.keda` / `addons.kedaHttp` said so."""
    http = addons.keda_http.enabled or any(through_interceptor(m, ENGINES[m.engine].facts) for m in models)
    keda = addons.keda.enabled or http or any(m.autoscaling.owner == "keda" for m in models)
    if (keda, http) == (addons.keda.enabled, addons.keda_http.enabled):
        return addons
    return addons.model_copy(
        update={
            "keda": addons.keda.model_copy(update={"enabled": keda}),
            "keda_http": addons.keda_http.model_copy(update={"enabled": http}),
        }
    )


def effective_addons(config: StackConfig) -> AddonsSection:
    """The stack's add-ons with what its models need turned on: the one reading of `addons.*`."""
    return with_keda(with_model_addons(config.addons, config.models), config.models)


def adapter_prometheus(mon: MonitoringAddon) -> tuple[str, int | None] | None:
    """(URL, port) of the Prometheus prometheus-adapter and KEDA query: the platform's own
    kube-prometheus-stack (its `<release>-prometheus` Service), the stack's `prometheusUrl` for an
    existing one, or None when there is none to query."""
    if not mon.serves_custom_metrics:
        return None
    if mon.prometheus_url:
        return mon.prometheus_url, None
    return f"http://{PROMETHEUS_SERVICE}.{MONITORING_NAMESPACE}.svc", 9090


def prometheus_url(mon: MonitoringAddon) -> str | None:
    """The Prometheus the stack's scalers query, as one URL."""
    found = adapter_prometheus(mon)
    if found is None:
        return None
    url, port = found
    return url if port is None else f"{url}:{port}"


def own_platform(config: StackConfig) -> PlatformView:
    """The platform a platform or all-in-one stack creates."""
    if config.cluster is None:
        raise ValueError("only a stack with a cluster section (platform or all-in-one) has a platform of its own")
    addons = effective_addons(config)
    known = Installed(addons=addons, storage=config.storage)
    return PlatformView(
        where=OWN,
        known=True,
        exports_version=EXPORTS_VERSION,
        cluster_name=config.cluster.name,
        kubernetes_version=config.cluster.kubernetes_version,
        environment=config.stack.environment,
        region=config.aws_region,
        pools=tuple(resolve_pool(p, known) for p in config.node_pools),
        addons=addons,
        storage=config.storage,
        storage_classes={"modelCache": EFS_STORAGE_CLASS} if config.storage.model_cache == "efs" else {},
        gateway=config.gateway,
        gateway_parent=gateway_parent(addons, config.gateway),
        neuron_scheduler=neuron_scheduler(addons, config.node_pools),
        custom_metrics=addons.monitoring.serves_custom_metrics,
        prometheus=prometheus_url(addons.monitoring),
        teams=tuple(declared_team(t) for t in config.teams),
        tracing=trace_export(addons.tracing),
    )


def declared_team(team: TeamSection) -> Team:
    """A `teams[]` entry as the platform resolves (and exports) it."""
    return Team(
        name=team.name,
        namespaces=team.all_namespaces,
        quota=team.quota,
        api_keys_secret=team.api_keys_secret,
        litellm_models=tuple(team.litellm.models) if team.litellm else (),
        litellm_max_budget=team.litellm.max_budget if team.litellm else None,
        litellm_budget_duration=team.litellm.budget_duration if team.litellm else None,
        litellm_tpm_limit=team.litellm.tpm_limit if team.litellm else None,
        litellm_rpm_limit=team.litellm.rpm_limit if team.litellm else None,
        deployers=tuple(team.deployers),
    )


def unknown_platform(where: str) -> PlatformView:
    """A workloads stack's platform that cannot be read here (its stack file is elsewhere): no pools,
    the default add-ons and storage; what depends on it is checked at preview, against its exports."""
    return PlatformView(
        where=where,
        known=False,
        exports_version=EXPORTS_VERSION,
        cluster_name="",
        kubernetes_version="",
        environment="",
        region="",
        pools=(),
        addons=AddonsSection(),
        storage=StorageSection(),
        storage_classes={},
        gateway=GatewaySection(),
        gateway_parent=None,
        neuron_scheduler=None,
        custom_metrics=None,
        prometheus=None,
    )
