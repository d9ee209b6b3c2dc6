"""The root component: wires one resolved stack (stacks/resolve) into every concern's component.

It only wires: each concern builds its own resources from its slice of the ResolvedStack; nothing
here reads pulumi.Config or derives a fact of its own. The order below is the dependency order:
cluster, load balancing (the AWS Load Balancer Controller's Service webhook fails closed for every
Service in the cluster, so every Service and every release creating one waits for its release),
capacity (a model's workload waits for its pool's NodePool), storage, the admission policies on teams'
routes, the teams' tenancy (whose deploy identity is bound only once those policies are), serving
platforms, models, front door, monitoring.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from stacks.exports import export_platform
from stacks.fastpath import warm_pools
from stacks.naming import MANAGED_BY, TOKEN, tags
from stacks.resolved import AIBRIX_GATEWAY, LITELLM_NAMESPACE, MONITORING_NAMESPACE, TEAM_LABEL, ResolvedStack
from stacks.versions import chart, crd_source

from . import peers
from .acceptance import AcceptanceChecks, AcceptanceChecksArgs
from .autoscaling.component import ModelScalers, ModelScalersArgs
from .benchmark import Benchmarks, BenchmarksArgs
from .capacity.component import Capacity, CapacityArgs
from .cluster import Cluster, ClusterArgs
from .gateway import isolation
from .gateway.component import FrontDoor, FrontDoorArgs, GatewayController, GatewayControllerArgs, RouteAdmission
from .gateway.routing import load_balancer_annotations
from .k8s import register
from .loadbalancer import LoadBalancerController, LoadBalancerControllerArgs
from .loadbalancer_iam import needs_load_balancer_controller
from .model_servers import Models, ModelsArgs
from .monitoring.component import Monitoring, MonitoringArgs
from .network import Network, NetworkArgs
from .platform_stack import PlatformStack
from .secrets import create_secrets
from .serving.litellm_keys import LiteLLMKeys, LiteLLMKeysArgs
from .serving.platforms import ModelAddons, ModelAddonsArgs, ServingPlatforms, ServingPlatformsArgs
from .storage.cache import CacheContext, streamed_prefixes
from .storage.claims import CACHE_CLAIM, READER_SERVICE_ACCOUNT
from .storage.component import ModelStorage, ModelStorageArgs
from .team import stack_record
from .team_access import team_kubeconfig
from .tenancy import TeamTenancy, TeamTenancyArgs
from .tracing import Collector, CollectorArgs


@dataclass(frozen=True, kw_only=True)
class InferencePlatformArgs:
    stack: ResolvedStack
    # The platform stack a workloads stack runs on (read in __main__.py before validation).
    platform: PlatformStack | None = None
    # The stack's Pulumi secrets the `secrets` section names, by config key, as secret Outputs (read in
    # __main__.py with Config.require_secret: components never read config).
    secret_values: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ClusterRef:
    """Plain values describing the cluster, from the Cluster component or a platform stack."""

    name: pulumi.Input[str]
    endpoint: pulumi.Input[str]
    oidc_provider_arn: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    provider: k8s.Provider
    tags: dict[str, str]


@dataclass
class Wiring:
    """What one concern hands the next. Filled in dependency order by Platform."""

    cluster: ClusterRef
    # What later objects wait for: the load balancer controller (its Service webhook fails closed),
    # Envoy Gateway (Gateway API CRDs), the serving platforms' releases by add-on name (the engines'
    # `FACTS.controller`, and AIBrix), the LiteLLM proxy.
    load_balancer: pulumi.Resource | None = None
    # Each pool's NodePools (one per capacity tier) by pool name: the models scheduled on it wait for them.
    node_pools: dict[str, list[pulumi.Resource]] = field(default_factory=dict)
    envoy_gateway: pulumi.Resource | None = None
    operators: dict[str, pulumi.Resource] = field(default_factory=dict)
    litellm: pulumi.Resource | None = None
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)
    # The model cache the storage concern created (or, in a team's stack, the platform's).
    cache: CacheContext | None = None
    # The storage concern: the bucket and the StorageClass the teams' tenancy reads.
    storage: ModelStorage | None = None
    # Export keys only the cloud knows (the teams' deploy roles, the cluster security group).
    cloud_exports: dict[str, pulumi.Input[object]] = field(default_factory=dict)
    # What a benchmark Job waits for: the model servers and their routes.
    served: list[pulumi.Resource] = field(default_factory=list)
    # The admission policies on teams' routes, in force (their bindings): a team's deploy identity waits for them.
    route_admission: list[pulumi.Resource] = field(default_factory=list)
    # The Secrets the program created from Pulumi secrets, by namespace: what mounts one waits for it.
    secrets: dict[str, list[pulumi.Resource]] = field(default_factory=dict)


class InferencePlatform(pulumi.ComponentResource):
    """Everything one stack file asks for."""

    outputs: dict[str, pulumi.Input[object]]

    def __init__(self, name: str, args: InferencePlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Platform", name, None, opts)
        self.stack = args.stack
        self.secret_values = args.secret_values
        self.outputs = {}
        if self.stack.cluster is None:
            self._workloads(name, args.platform)
        else:
            wiring = self._foundation(name)
            self._load_balancing(name, wiring)
            self._capacity(name, wiring)
            self._namespaces(name, wiring)
            self._storage(name, wiring)
            self._route_admission(name, wiring)
            self._tenancy(name, wiring)
            self._gateway_controller(name, wiring)
            self._serving_platforms(name, wiring)
            self._models(name, wiring)
            self._model_addons(name, wiring)
            self._scalers(name, wiring)
            self._front_door(name, wiring)
            self._litellm_keys(name, wiring)
            self._benchmarks(name, wiring)
            self._acceptance(name, wiring)
            self._monitoring(name, wiring)
            self._tracing(name, wiring)
            self._export_platform(wiring)
        self.register_outputs(self.outputs)

    def _foundation(self, name: str) -> Wiring:
        stack = self.stack
        cluster_cfg = stack.cluster
        assert cluster_cfg is not None
        base_tags = tags(cluster_cfg.name, stack.environment)
        child = pulumi.ResourceOptions(parent=self)
        nat = cluster_cfg.vpc.nat_gateways or ("perZone" if stack.prod else "single")
        network = Network(
            f"{name}-network",
            NetworkArgs(
                cluster_name=cluster_cfg.name, vpc=cluster_cfg.vpc, nat_per_zone=nat == "perZone", tags=base_tags
            ),
            child,
        )
        cluster = Cluster(
            f"{name}-cluster",
            ClusterArgs(
                config=cluster_cfg,
                prod=stack.prod,
                vpc_id=network.vpc_id,
                private_subnet_ids=network.private_subnet_ids,
                public_subnet_ids=network.public_subnet_ids,
                tags=base_tags,
                node_monitoring_agent=stack.platform.addons.node_monitoring_agent.enabled,
            ),
            child,
        )
        self.outputs.update(
            {
                "clusterName": cluster.name,
                "clusterEndpoint": cluster.endpoint,
                "clusterCertificateAuthority": cluster.certificate_authority,
                "kubeconfig": cluster.kubeconfig,
                "oidcProviderArn": cluster.oidc_provider_arn,
                "eksAddonVersions": cluster.addon_versions,
                "vpcId": network.vpc_id,
                "privateSubnetIds": network.private_subnet_ids,
            }
        )
        return Wiring(
            cluster=ClusterRef(
                name=cluster.name,
                endpoint=cluster.endpoint,
                oidc_provider_arn=cluster.oidc_provider_arn,
                security_group_id=cluster.security_group_id,
                vpc_id=network.vpc_id,
                private_subnet_ids=network.private_subnet_ids,
                provider=cluster.provider,
                tags=base_tags,
            )
        )

    def _capacity(self, name: str, wiring: Wiring) -> None:
        """Karpenter, NodePools and device plugins (issue: accelerator capacity)."""
        platform = self.stack.platform
        if not platform.addons.karpenter.enabled:
            return
        capacity = Capacity(
            f"{name}-capacity",
            CapacityArgs(
                cluster_name=platform.cluster_name,
                region=platform.region,
                pools=platform.pools,
                addons=platform.addons,
                cluster=wiring.cluster.name,
                vpc_id=wiring.cluster.vpc_id,
                provider=wiring.cluster.provider,
                tags=wiring.cluster.tags,
                service_webhook=wiring.load_balancer,
                warm=warm_pools(platform.pools, self.stack.models),
                placeholder_image=self.stack.images["busybox"].ref if "busybox" in self.stack.images else None,
                node_repair=platform.node_repair,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.node_pools.update(capacity.node_pools)
        self.outputs["nodePools"] = [
            {"name": p.name, "accelerator": p.accelerator, "instanceTypes": [t.name for t in p.instance_types]}
            for p in platform.pools
        ]

    def _load_balancing(self, name: str, wiring: Wiring) -> None:
        """The AWS Load Balancer Controller, when something creates a LoadBalancer Service (the
        gateway's Envoy Service, or AIBrix's): it provisions the NLB those Services ask for."""
        platform = self.stack.platform
        if not needs_load_balancer_controller(platform.addons, platform.gateway):
            return
        controller = LoadBalancerController(
            f"{name}-load-balancer-controller",
            LoadBalancerControllerArgs(
                cluster_name=platform.cluster_name,
                cluster=wiring.cluster.name,
                region=platform.region,
                vpc_id=wiring.cluster.vpc_id,
                chart=chart("aws-load-balancer-controller", platform.addons.aws_load_balancer_controller.version),
                crds=crd_source("aws-load-balancer-controller", platform.addons.aws_load_balancer_controller.version),
                provider=wiring.cluster.provider,
                tags=wiring.cluster.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.load_balancer = controller.release

    def _namespaces(self, name: str, wiring: Wiring) -> None:
        """One Namespace per model namespace (a team's, even with no models yet), before anything is
        put into them."""
        child = pulumi.ResourceOptions(parent=self, provider=wiring.cluster.provider)
        # Whose namespace it is (TEAM_LABEL: a team's, or the platform's own): the front door's listener
        # admits the routes of labelled namespaces only.
        for ns in self.stack.namespaces:
            labels = {**MANAGED_BY, "inference-platform.io/models": "true", TEAM_LABEL: self.stack.owner_of(ns)}
            wiring.namespaces[ns] = k8s.core.v1.Namespace(
                f"{name}-ns-{ns}", metadata={"name": ns, "labels": labels}, opts=child
            )
            self._secrets(name, wiring, ns, [wiring.namespaces[ns]])

    def _secrets(self, name: str, wiring: Wiring, namespace: str, after: list[pulumi.Resource]) -> None:
        """The Secrets the stack sources from Pulumi secrets in one namespace, once, after what creates
        that namespace (none in a team's stack: its namespaces are the platform's)."""
        if namespace in wiring.secrets:
            return
        opts = pulumi.ResourceOptions(parent=self, provider=wiring.cluster.provider, depends_on=after)
        wiring.secrets[namespace] = create_secrets(name, self.stack.secrets_in(namespace), self.secret_values, opts)

    def _storage(self, name: str, wiring: Wiring) -> None:
        """Model bucket, EFS / FSx / local cache (issue: model storage)."""
        assert self.stack.cluster is not None
        storage = ModelStorage(
            f"{name}-storage",
            ModelStorageArgs(
                storage=self.stack.platform.storage,
                cluster=self.stack.cluster,
                cluster_name=wiring.cluster.name,
                vpc_id=wiring.cluster.vpc_id,
                private_subnet_ids=wiring.cluster.private_subnet_ids,
                cluster_security_group_id=wiring.cluster.security_group_id,
                namespaces=wiring.namespaces,
                provider=wiring.cluster.provider,
                tags=wiring.cluster.tags,
                region=self.stack.region,
                streamed_prefixes=streamed_prefixes(self.stack.models),
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.cache = storage.context
        wiring.storage = storage
        self.outputs["modelBucket"] = storage.bucket_name

    def _route_admission(self, name: str, wiring: Wiring) -> None:
        """What a team's HTTPRoutes and InterceptorRoutes may claim (issue: front door, tenancy): the
        platform's admission policies and their bindings, in every stack that owns the cluster, whether
        or not it declares teams or runs a Gateway yet: the API server never re-checks an object that
        exists, so the policies are there before any team namespace can hold a route."""
        admission = RouteAdmission(
            f"{name}-route-admission", wiring.cluster.provider, pulumi.ResourceOptions(parent=self)
        )
        wiring.route_admission = admission.bindings

    def _tenancy(self, name: str, wiring: Wiring) -> None:
        """Each declared team's namespaces, guardrails, cache claims, bucket reader and deploy identity
        (issue: separate tenants): everything its own stack may not create."""
        stack, storage = self.stack, wiring.storage
        assert stack.cluster is not None and storage is not None
        roles: dict[str, pulumi.Output[str]] = {}
        for team in stack.platform.teams:
            tenancy = TeamTenancy(
                f"{name}-team-{team.name}",
                TeamTenancyArgs(
                    team=team,
                    environment=stack.environment,
                    cluster=stack.cluster.name,
                    cluster_name=wiring.cluster.name,
                    storage=stack.platform.storage,
                    bucket_arn=storage.bucket_arn,
                    claim_class=storage.claim_class,
                    provider=wiring.cluster.provider,
                    tags=tags(stack.cluster.name, stack.environment, team=team.name),
                    bound_after=list(wiring.route_admission),
                ),
                pulumi.ResourceOptions(parent=self),
            )
            roles[team.name] = tenancy.deploy_role_arn
            # What the platform writes into a team's namespaces (its key grants, LiteLLM key Secret) waits
            # for them.
            wiring.namespaces.update(tenancy.namespaces)
            for ns, created in tenancy.namespaces.items():
                self._secrets(name, wiring, ns, [created])
        wiring.cloud_exports["teamDeployRoleArns"] = pulumi.Output.all(**roles) if roles else {}

    def _gateway_controller(self, name: str, wiring: Wiring) -> None:
        """The Envoy Gateway controller, before anything that attaches to it (issue: front door).
        AIBrix's gateway runs on Envoy Gateway too, so it is installed for either."""
        platform = self.stack.platform
        addons = platform.addons
        if not addons.envoy_gateway.enabled or not (platform.gateway.enabled or addons.aibrix.enabled):
            return
        controller = GatewayController(
            f"{name}-gateway-controller",
            GatewayControllerArgs(
                chart=chart("envoy-gateway", addons.envoy_gateway.version),
                crds=crd_source("envoy-gateway", addons.envoy_gateway.version),
                prod=self.stack.prod,
                aibrix=addons.aibrix.enabled,
                provider=wiring.cluster.provider,
                # Every Gateway it serves (ours, AIBrix's) gets a LoadBalancer Service.
                depends_on=[r for r in (wiring.load_balancer,) if r is not None],
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.envoy_gateway = controller.release

    def _serving_platforms(self, name: str, wiring: Wiring) -> None:
        """Dynamo, AIBrix, KubeRay, NIM Operator, LiteLLM installations (issue: serving platforms)."""
        platform = self.stack.platform
        platforms = ServingPlatforms(
            f"{name}-serving",
            ServingPlatformsArgs(
                addons=platform.addons,
                gateway=platform.gateway,
                models=list(self.stack.models),
                provider=wiring.cluster.provider,
                images=self.stack.images,
                envoy_gateway=wiring.envoy_gateway,
                # AIBrix's chart owns its Envoy Service: it gets the front door's NLB annotations.
                gateway_service_annotations=load_balancer_annotations(platform.gateway),
                route_parent=self.stack.route_parent,
                virtual_keys=bool(self.stack.access.virtual_keys),
                service_webhook=wiring.load_balancer,
                secrets=self.stack.secrets_in(LITELLM_NAMESPACE),
                secret_values=self.secret_values,
                cluster_name=platform.cluster_name,
                cluster=wiring.cluster.name,
                tags=wiring.cluster.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.operators.update(platforms.releases)
        wiring.litellm = platforms.litellm
        wiring.secrets.update(platforms.secrets)
        if "aibrix" in platforms.releases:
            # AIBrix's release creates aibrix-system (its Gateway, and the platform's key Secret beside it).
            self._secrets(name, wiring, AIBRIX_GATEWAY[0], [platforms.releases["aibrix"]])

    def _models(self, name: str, wiring: Wiring) -> None:
        """One workload per models[] entry (issue: inference engines)."""
        if not self.stack.models:
            return
        models = Models(
            f"{name}-models",
            ModelsArgs(
                models=list(self.stack.models),
                storage=self.stack.platform.storage,
                provider=wiring.cluster.provider,
                cache=wiring.cache,
                neuron_scheduler=self.stack.platform.neuron_scheduler,
                images=self.stack.images,
                namespaces=dict(wiring.namespaces),
                operators=dict(wiring.operators),
                node_pools=dict(wiring.node_pools),
                service_webhook=wiring.load_balancer,
                secrets=dict(wiring.secrets),
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.served.append(models)

    def _model_addons(self, name: str, wiring: Wiring) -> None:
        """Per-model objects of the serving platforms: AIBrix adapters and autoscalers (issue: serving
        platforms)."""
        ModelAddons(
            f"{name}-model-addons",
            ModelAddonsArgs(
                models=list(self.stack.models),
                provider=wiring.cluster.provider,
                aibrix=wiring.operators.get("aibrix"),
                namespaces=dict(wiring.namespaces),
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _scalers(self, name: str, wiring: Wiring) -> None:
        """KEDA ScaledObjects of the models KEDA scales (scaling on LLM signals)."""
        if not any(m.keda_targets for m in self.stack.models):
            return
        ModelScalers(
            f"{name}-scalers",
            ModelScalersArgs(
                models=list(self.stack.models),
                provider=wiring.cluster.provider,
                prometheus=self.stack.platform.prometheus,
                keda=wiring.operators.get("keda"),
                keda_http=wiring.operators.get("keda-http"),
                namespaces=dict(wiring.namespaces),
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _front_door(self, name: str, wiring: Wiring) -> None:
        """Gateway, routes, authentication, network policies (issue: front door)."""
        stack = self.stack
        platform = stack.platform
        mon = platform.addons.monitoring
        parent = stack.route_parent
        installers = [r for r in (wiring.envoy_gateway, wiring.load_balancer) if r is not None]
        if not parent.own and "aibrix" in wiring.operators:
            installers.append(wiring.operators["aibrix"])
        door = FrontDoor(
            f"{name}-front-door",
            FrontDoorArgs(
                gateway=platform.gateway,
                provider=wiring.cluster.provider,
                parent_gateway=parent,
                served=list(stack.models),
                owns_listener=stack.owns_platform,
                access=stack.access,
                litellm_route=stack.owns_platform and platform.addons.litellm.enabled,
                depends_on=installers,
                load_balancer=wiring.load_balancer,
                namespaces=dict(wiring.namespaces),
                scraper=peers.prometheus(mon.existing_prometheus) if mon.enabled else None,
                platform_namespaces=dict(stack.controller_namespaces),
                litellm=wiring.litellm,
                interceptor=wiring.operators.get("keda-http"),
                picker_chart=chart("llm-d-router-standalone"),
                picker_image=stack.images.images.get("endpoint-picker"),
                picker_proxy_image=stack.images.images.get("picker-proxy"),
                service_webhook=wiring.load_balancer,
                tracing=stack.tracing,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.served.append(door)
        wiring.namespaces.update(door.created)
        for ns, created in door.created.items():
            self._secrets(name, wiring, ns, [created])
        if any(m.expose for m in stack.models) and (platform.gateway.enabled or not parent.own):
            self.outputs["inferenceUrl"] = door.url

    def _litellm_keys(self, name: str, wiring: Wiring) -> None:
        """The LiteLLM virtual keys of the proxy's callers (teams with access, the platform's clients)."""
        stack = self.stack
        if not stack.access.virtual_keys:
            return
        LiteLLMKeys(
            f"{name}-litellm-keys",
            LiteLLMKeysArgs(
                addon=stack.platform.addons.litellm,
                keys=stack.access.virtual_keys,
                image=stack.images["litellm"],
                provider=wiring.cluster.provider,
                proxy=wiring.litellm,
                namespaces=dict(wiring.namespaces),
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _benchmarks(self, name: str, wiring: Wiring) -> None:
        """SLO benchmark Jobs through the front door."""
        stack = self.stack
        measured = [m for m in stack.models if m.config.benchmark is not None]
        if not measured:
            return
        hostname = stack.route_parent.hostname
        bucket = wiring.cache.bucket if wiring.cache is not None else None
        if hostname is None or bucket is None:
            # The stack rules refuse both (stacks/rules/benchmark.py); this is their backstop.
            raise ValueError("models[].benchmark needs the front door's gateway.hostname and the model bucket")
        Benchmarks(
            f"{name}-benchmarks",
            BenchmarksArgs(
                models=measured,
                hostname=hostname,
                bucket=bucket,
                images=stack.images,
                provider=wiring.cluster.provider,
                depends_on=[
                    *wiring.served,
                    *wiring.namespaces.values(),
                    *(s for v in wiring.secrets.values() for s in v),
                ],
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _tracing(self, name: str, wiring: Wiring) -> None:
        """The trace collector the gateway, pickers and engines export to (`addons.tracing`)."""
        stack = self.stack
        addon = stack.platform.addons.tracing
        if not addon.enabled:
            return
        Collector(
            f"{name}-tracing",
            CollectorArgs(
                addon=addon,
                image=stack.images["otel-collector"],
                prod=stack.environment == "prod",
                provider=wiring.cluster.provider,
                exporters=self._trace_exporters(),
                team_namespaces=tuple(ns for team in stack.platform.teams for ns in team.namespaces),
                service_webhook=wiring.load_balancer,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _trace_exporters(self) -> list[peers.Pods]:
        """The pods that export spans: the Gateway's proxies (its EnvoyProxy's tracer, where this stack
        owns the listener), then each model's tracing engine and picker, as their egress policies name them."""
        stack = self.stack
        parent = stack.route_parent
        # The front door renders the Gateway and its EnvoyProxy under these conditions (FrontDoor._create_routes).
        traced = stack.owns_platform and (stack.platform.gateway.enabled or not parent.own)
        proxies = peers.proxies(parent) if traced else None
        callers = isolation.Callers(proxies=proxies, tracing=True)
        models = [pods for m in stack.models for _, pods in isolation.trace_exporters(m, callers)]
        return [*([proxies] if proxies is not None else []), *models]

    def _acceptance(self, name: str, wiring: Wiring) -> None:
        """Acceptance Jobs through the front door (components/acceptance.py)."""
        stack = self.stack
        if not any(m.acceptance is not None for m in stack.models):
            return
        hostname = stack.route_parent.hostname
        bucket = wiring.cache.bucket if wiring.cache is not None else None
        if hostname is None or bucket is None:
            # The stack rules refuse a missing front door (stacks/rules/acceptance.py); this is their backstop.
            raise ValueError("models[].acceptance needs the front door's gateway.hostname and the model bucket")
        AcceptanceChecks(
            f"{name}-acceptance",
            AcceptanceChecksArgs(
                models=stack.models,
                gateway=stack.platform.gateway,
                hostname=hostname,
                bucket=bucket,
                images=stack.images,
                provider=wiring.cluster.provider,
                prometheus=stack.acceptance_prometheus,
                depends_on=[
                    *wiring.served,
                    *wiring.namespaces.values(),
                    *(s for v in wiring.secrets.values() for s in v),
                ],
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _monitoring(self, name: str, wiring: Wiring) -> None:
        """Prometheus, scrapers, dashboards and alerts (issue: front door and eyes)."""
        stack = self.stack
        addons = stack.platform.addons
        if not addons.monitoring.enabled:
            return
        Monitoring(
            f"{name}-monitoring",
            MonitoringArgs(
                addon=addons.monitoring,
                provider=wiring.cluster.provider,
                models=list(stack.models),
                accelerators=stack.platform.accelerators,
                engines=stack.engines,
                dashboard_engines=stack.dashboard_engines,
                litellm_addon=addons.litellm if addons.litellm.enabled else None,
                namespaces=dict(wiring.namespaces),
                models_only=not stack.owns_platform,
                litellm=wiring.litellm,
                images=stack.images,
                prometheus_adapter=stack.prometheus_adapter,
                addons=addons,
                address_blocks=stack.cluster.vpc.address_blocks if stack.cluster is not None else (),
                service_webhook=wiring.load_balancer,
                secrets=stack.secrets_in(MONITORING_NAMESPACE) if stack.owns_platform else (),
                secret_values=self.secret_values,
                cost=stack.cost,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    # ---- stack roles (issue: self-service stacks) ------------------------------------------------

    def _export_platform(self, wiring: Wiring) -> None:
        """What workloads stacks read: the platform view exactly as resolved (stacks/resolve
        export_platform, which a workloads stack reads back with read_platform), then the values only
        the cloud knows."""
        exports: dict[str, pulumi.Input[object]] = dict(export_platform(self.stack.platform))
        exports.update(wiring.cloud_exports)
        exports["clusterSecurityGroupId"] = wiring.cluster.security_group_id
        for key, value in exports.items():
            self.outputs.setdefault(key, value)

    def _workloads(self, name: str, platform: PlatformStack | None) -> None:
        """A team's stack: its models, their routes, scalers, benchmarks and scrapers, in the team's
        namespaces on the platform stack's cluster. The namespaces, their quota and limits, the
        `model-reader` account and the cache claim are the platform's (components/tenancy.py)."""
        if platform is None:
            raise ValueError("a workloads stack needs InferencePlatformArgs.platform (read in __main__.py)")
        stack = self.stack
        assert stack.team is not None
        team = stack.team
        provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self._team_kubeconfig(platform),
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        wiring = Wiring(
            cluster=ClusterRef(
                name=platform.output("clusterName"),
                endpoint=platform.output("clusterEndpoint"),
                oidc_provider_arn=platform.output("oidcProviderArn"),
                security_group_id=platform.output("clusterSecurityGroupId"),
                vpc_id=platform.output("vpcId"),
                private_subnet_ids=platform.output("privateSubnetIds"),
                provider=provider,
                tags=tags(stack.platform.cluster_name, stack.environment, team=team.name),
            ),
            cache=self._team_cache(platform),
        )
        record = stack_record(team.name, team.home, stack.environment, stack.platform_stack or "")
        register(record, pulumi.ResourceOptions(parent=self, provider=provider))
        for ns in dict.fromkeys([*team.namespaces, *(m.namespace for m in stack.models)]):
            self._secrets(name, wiring, ns, [])
        self._models(name, wiring)
        self._model_addons(name, wiring)
        self._scalers(name, wiring)
        self._front_door(name, wiring)
        self._benchmarks(name, wiring)
        self._acceptance(name, wiring)
        self._monitoring(name, wiring)
        self.outputs.update(
            {"team": team.name, "namespace": team.home, "namespaces": list(team.namespaces)}
            | {"models": [m.name for m in stack.models]}
        )

    def _team_kubeconfig(self, platform: PlatformStack) -> pulumi.Output[str]:
        """The team's way into the cluster: the platform's endpoint and CA, and a token signed as the
        team's deploy role (its access entry's group, bound in the team's namespaces only), never the
        cluster creator's `kubeconfig` export."""
        view, team = self.stack.platform, self.stack.team
        assert team is not None
        return pulumi.Output.all(
            endpoint=platform.output("clusterEndpoint"),
            ca=platform.output("clusterCertificateAuthority"),
            role=platform.output("teamDeployRoleArns").apply(lambda roles: roles[team.name]),
        ).apply(
            lambda v: json.dumps(
                team_kubeconfig(
                    cluster=view.cluster_name,
                    endpoint=v["endpoint"],
                    certificate_authority=v["ca"],
                    region=view.region,
                    role_arn=v["role"],
                )
            )
        )

    def _team_cache(self, platform: PlatformStack) -> CacheContext:
        """The platform's cache as a team's pods reach it: the claim the platform made in each team
        namespace (efs), the `model-reader` account bound there to the team's reader role, the bucket."""
        storage = self.stack.platform.storage
        return CacheContext(
            storage=storage,
            bucket=platform.output("modelBucket"),
            claim_name=CACHE_CLAIM if storage.model_cache == "efs" else None,
            reader_service_account=READER_SERVICE_ACCOUNT,
            region=self.stack.region,
        )
