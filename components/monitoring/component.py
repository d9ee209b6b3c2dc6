"""The eyes: kube-prometheus-stack (or an existing Prometheus), the accelerator exporters, one
PodMonitor per served model (and one on the LiteLLM proxy when it runs), Grafana dashboards and
the SLO alert rules.

prometheus-adapter serves the engines' gauges to HorizontalPodAutoscalers (custom.metrics.k8s.io).

With `addons.monitoring.existingPrometheus: true` nothing is installed but the PodMonitors,
PrometheusRules and dashboard ConfigMaps (the Prometheus Operator CRDs must then already exist), and
prometheus-adapter when `prometheusUrl` says where that Prometheus answers.
Builders live in `collection.py` and `dashboards.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from stacks.config.addons import AddonsSection, LiteLLM, MonitoringAddon
from stacks.engine_facts import EngineFacts
from stacks.naming import MANAGED_BY, TOKEN
from stacks.resolved import ImageTable, ManagedSecret, ResolvedCost, ResolvedModel
from stacks.versions import chart, crd_source

from .. import crds, peers
from ..k8s import register
from ..k8s import release as release_chart
from ..secrets import create_secrets
from .autoscaling import scaling_dashboard, scaling_prometheus_rule
from .collection import (
    MONITORING_NAMESPACE,
    dcgm_exporter_values,
    flow_control_prometheus_rule,
    litellm_pod_monitor,
    monitoring_storage_class,
    neuron_monitor,
    picker_pod_monitor,
    pod_monitor,
    prometheus_adapter_values,
    prometheus_rule,
    prometheus_stack_values,
)
from .cost import cost_prometheus_rule, platform_dashboard, team_dashboard
from .dashboards import dashboard_configmap, dashboards
from .health import node_health_rule
from .policies import monitoring_policies

__all__ = ["MONITORING_NAMESPACE", "Monitoring", "MonitoringArgs"]


@dataclass(frozen=True, kw_only=True)
class MonitoringArgs:
    addon: MonitoringAddon
    provider: k8s.Provider
    models: list[ResolvedModel]
    # Accelerators of the platform's pools (their exporters) and the engines dashboards are for.
    accelerators: frozenset[str] = frozenset()
    # Every engine the platform knows (prometheus-adapter serves their gauges) and those with a dashboard.
    engines: Mapping[str, EngineFacts] = field(default_factory=dict)
    dashboard_engines: frozenset[str] = frozenset()
    # The LiteLLM proxy, when it runs in this stack: its PodMonitor.
    litellm_addon: LiteLLM | None = None
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)
    # A workloads stack: only its models' PodMonitors and rules; the platform stack owns the rest.
    models_only: bool = False
    # The LiteLLM proxy's installer (its namespace must exist before its PodMonitor).
    litellm: pulumi.Resource | None = None
    # The stack's pinned platform images (neuron-monitor).
    images: ImageTable
    # (URL, port) of the Prometheus prometheus-adapter queries (ResolvedStack.prometheus_adapter); None:
    # no adapter in this stack.
    prometheus_adapter: tuple[str, int | None] | None = None
    # The platform's add-ons (who queries Prometheus, who reads the DCGM exporter) and the cluster's
    # address blocks (where the API server calls webhooks from): the monitoring namespace's policies.
    addons: AddonsSection | None = None
    address_blocks: tuple[str, ...] = ()
    # The AWS Load Balancer Controller's release, when this stack runs it: its Service webhook fails
    # closed, so every Service, and every release creating one, waits for it.
    service_webhook: pulumi.Resource | None = None
    # The Secrets of the monitoring namespace the program creates from Pulumi secrets (Alertmanager's
    # configuration, Grafana's admin), and their values: created before kube-prometheus-stack mounts them.
    secrets: tuple[ManagedSecret, ...] = ()
    secret_values: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    # Tokens and cost per team and model (ResolvedStack.cost): its rules and dashboards; None: off.
    cost: ResolvedCost | None = None


class Monitoring(pulumi.ComponentResource):
    """Prometheus, exporters, PodMonitors, dashboards and rules."""

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Monitoring", name, None, opts)
        if args.models_only:
            self._model_monitors(args, [])
            self.register_outputs({})
            return
        mon = args.addon
        plain = pulumi.ResourceOptions(parent=self, provider=args.provider)
        ns = k8s.core.v1.Namespace(
            f"{name}-ns", metadata={"name": MONITORING_NAMESPACE, "labels": {**MANAGED_BY}}, opts=plain
        )
        # An existing Prometheus's operator CRDs already exist; ours are the program's (prometheus-operator-crds
        # at the operator version the kube-prometheus-stack release runs), then the operator's release.
        crd_deps: list[pulumi.Resource] = []

        def release(
            key: str, version: str | None, values: dict, depends_on: list[pulumi.Resource], skip_crds: bool = False
        ) -> k8s.helm.v3.Release:
            """A pinned chart of the catalog (`key` is also the release name) in the monitoring namespace."""
            return release_chart(
                f"{name}-{key}",
                chart(key, version),
                release_name=key,
                namespace=MONITORING_NAMESPACE,
                values=values,
                skip_crds=skip_crds,
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends_on),
                service_webhook=args.service_webhook,
            )

        after_ns = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[ns])
        mounted = create_secrets(name, args.secrets, args.secret_values, after_ns)
        if not mon.existing_prometheus:
            volumes = register(monitoring_storage_class(), plain)
            source = crd_source("kube-prometheus-stack", mon.version, mon.crds_version)
            crd_deps.append(crds.install(f"{name}-crds", source, plain))
            values = prometheus_stack_values(mon)
            crd_deps.append(
                release("kube-prometheus-stack", mon.version, values, [ns, volumes, *crd_deps, *mounted], True)
            )
        prometheus = args.prometheus_adapter
        if prometheus is not None:
            workload_engines = [e for e in args.engines.values() if e.platform_workload]
            values = prometheus_adapter_values(*prometheus, workload_engines)
            release("prometheus-adapter", mon.adapter_version, values, [ns, *crd_deps])
        accelerators = args.accelerators
        if "nvidia" in accelerators:
            release("dcgm-exporter", mon.dcgm_exporter_version, dcgm_exporter_values(), [ns, *crd_deps])
        after_crds = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[ns, *crd_deps])
        if "neuron" in accelerators:
            for obj in neuron_monitor(args.images["neuron-monitor"], peers.prometheus(mon.existing_prometheus)):
                register(obj, after_crds if obj["kind"] == "PodMonitor" else after_ns)
        self._node_health(accelerators, after_crds)
        self._policies(args, after_ns)
        self._model_monitors(args, crd_deps)
        self._litellm_monitor(args, crd_deps)
        self._dashboards(args, after_ns)
        self._cost(args, after_crds, after_ns)
        self.register_outputs({})

    def _dashboards(self, args: MonitoringArgs, after_ns: pulumi.ResourceOptions) -> None:
        """The engines' serving dashboards (and the accelerators' panels), after the namespace."""
        engines = {name: args.engines[name] for name in args.dashboard_engines}
        for obj in dashboards(engines, set(args.accelerators)):
            register(obj, after_ns)

    def _node_health(self, accelerators: frozenset[str], opts: pulumi.ResourceOptions) -> None:
        """The accelerator node-health alerts (health.py), after the operator's CRDs."""
        health = node_health_rule(accelerators)
        if health is not None:
            register(health, opts)

    def _cost(self, args: MonitoringArgs, after_crds: pulumi.ResourceOptions, after_ns: pulumi.ResourceOptions) -> None:
        """Tokens and cost per team and model (cost.py): the recording rules after the operator's CRDs,
        the team and platform dashboards after the namespace; nothing when the stack does not record cost."""
        if args.cost is None:
            return
        register(cost_prometheus_rule(args.cost, args.engines), after_crds)
        register(dashboard_configmap("team-cost", team_dashboard()), after_ns)
        register(dashboard_configmap("platform-cost", platform_dashboard()), after_ns)

    def _litellm_monitor(self, args: MonitoringArgs, crd_deps: list[pulumi.Resource]) -> None:
        """LiteLLM's PodMonitor, after the operator's CRDs and the proxy, when the stack runs LiteLLM."""
        if args.litellm_addon is None:
            return
        deps = [*crd_deps, *([args.litellm] if args.litellm is not None else [])]
        register(
            litellm_pod_monitor(args.litellm_addon),
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=deps),
        )

    def _policies(self, args: MonitoringArgs, opts: pulumi.ResourceOptions) -> None:
        """The monitoring namespace's NetworkPolicies (policies.py), when this stack runs its
        kube-prometheus-stack."""
        if args.addons is None:
            return
        for obj in monitoring_policies(
            args.addons,
            accelerators=frozenset(args.accelerators),
            adapter=args.prometheus_adapter is not None,
            blocks=args.address_blocks,
            accepted_in=sorted({m.namespace for m in args.models if m.acceptance is not None}),
        ):
            register(obj, opts)

    def _model_monitors(self, args: MonitoringArgs, crd_deps: list[pulumi.Resource]) -> None:
        """A PodMonitor on each model's real metrics endpoint (and on its endpoint picker's, with
        `routing`), its SLO rules when the stack sets some, and its scaling and benchmark rules and
        dashboard (in the model's namespace: a team's stack brings its own) when it has an autoscaler
        or a benchmark (autoscaling.py)."""
        for served in args.models:
            model_ns = [args.namespaces[served.namespace]] if served.namespace in args.namespaces else []
            opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*model_ns, *crd_deps])
            board = scaling_dashboard(served, args.images)
            for maybe in (
                pod_monitor(served),
                picker_pod_monitor(served),
                flow_control_prometheus_rule(served),
                prometheus_rule(served.config, served),
                scaling_prometheus_rule(served, args.images),
                dashboard_configmap(f"scaling-{served.name}", board, served.namespace) if board else None,
            ):
                if maybe is not None:
                    register(maybe, opts)
