"""The root component: wires one validated stack config into every concern's component.

It only wires: each concern builds its own resources. Data flows one way, from the StackConfig
through args dataclasses into components; nothing here reads pulumi.Config. The order below is the
dependency order: cluster, capacity, load balancing, storage, serving platforms, models, front door, monitoring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks.capacity import pool_types
from stacks.config import StackConfig
from stacks.exports import effective_config, gateway_parent_export, platform_exports
from stacks.versions import chart

from . import k8s as manifests
from .capacity import Capacity, CapacityArgs
from .cluster import Cluster, ClusterArgs
from .gateway import FrontDoor, FrontDoorArgs, GatewayController, GatewayControllerArgs
from .gateway.manifests import AIBRIX_GATEWAY, load_balancer_annotations, parent_gateway
from .loadbalancer import LoadBalancerController, LoadBalancerControllerArgs, needs_load_balancer_controller
from .models import Models, ModelsArgs
from .monitoring import MONITORING_NAMESPACE, Monitoring, MonitoringArgs
from .naming import MANAGED_BY, TOKEN, tags
from .network import Network, NetworkArgs
from .platform_stack import PlatformStack
from .served import served_models
from .serving.platforms import (
    ModelAddons,
    ModelAddonsArgs,
    ServingPlatforms,
    ServingPlatformsArgs,
    controller_namespaces,
)
from .storage.component import ModelStorage, ModelStorageArgs
from .team import TeamStorage, TeamStorageArgs, guardrails

# Installers a LoadBalancer Service needs: created before it, deleted after it (the NLB goes with it).
LOAD_BALANCING = ("aws-load-balancer-controller",)


@dataclass(frozen=True, kw_only=True)
class PlatformArgs:
    config: StackConfig
    # The platform stack a workloads stack runs on (read in __main__.py before validation).
    platform: PlatformStack | None = None


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
    # Resources a custom resource must wait for (its CRD's installer), by add-on name.
    installers: dict[str, pulumi.Resource] = field(default_factory=dict)
    # The scheduler Neuron workloads must use, when the Neuron scheduler extension is installed.
    neuron_scheduler: pulumi.Input[str] | None = None
    namespaces: dict[str, k8s.core.v1.Namespace] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class Platform(pulumi.ComponentResource):
    """Everything one stack file asks for."""

    outputs: dict[str, pulumi.Input[object]]

    def __init__(self, name: str, args: PlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Platform", name, None, opts)
        self.config = args.config
        self.outputs = {}
        if self.config.stack.role == "workloads":
            self._workloads(name, args.platform)
        elif self.config.cluster is not None:
            wiring = self._foundation(name)
            self._capacity(name, wiring)
            self._load_balancing(name, wiring)
            self._namespaces(name, wiring)
            self._storage(name, wiring)
            self._gateway_controller(name, wiring)
            self._serving_platforms(name, wiring)
            self._models(name, wiring)
            self._model_addons(name, wiring)
            self._front_door(name, wiring)
            self._monitoring(name, wiring)
            self._export_platform(wiring)
        self.register_outputs(self.outputs)

    def _foundation(self, name: str) -> Wiring:
        config = self.config
        cluster_cfg = config.cluster
        assert cluster_cfg is not None
        base_tags = tags(cluster_cfg.name, config.stack.environment)
        child = pulumi.ResourceOptions(parent=self)
        nat = cluster_cfg.vpc.nat_gateways or ("perZone" if config.stack.prod else "single")
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
                prod=config.stack.prod,
                vpc_id=network.vpc_id,
                private_subnet_ids=network.private_subnet_ids,
                public_subnet_ids=network.public_subnet_ids,
                tags=base_tags,
            ),
            child,
        )
        self.outputs.update(
            {
                "clusterName": cluster.name,
                "clusterEndpoint": cluster.endpoint,
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
        if not self.config.addons.karpenter.enabled:
            return
        capacity = Capacity(
            f"{name}-capacity",
            CapacityArgs(
                config=self.config,
                cluster=wiring.cluster.name,
                provider=wiring.cluster.provider,
                tags=wiring.cluster.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.installers.update(capacity.installers)
        wiring.neuron_scheduler = capacity.neuron_scheduler
        wiring.extra["karpenter_node_role"] = capacity.node_role_name
        self.outputs["nodePools"] = [
            {"name": p.name, "accelerator": p.accelerator, "instanceTypes": [t.name for t in pool_types(p)]}
            for p in self.config.node_pools
        ]

    def _load_balancing(self, name: str, wiring: Wiring) -> None:
        """The AWS Load Balancer Controller, when something creates a LoadBalancer Service (the
        gateway's Envoy Service, or AIBrix's): it provisions the NLB those Services ask for."""
        config = self.config
        assert config.cluster is not None
        if not needs_load_balancer_controller(config):
            return
        controller = LoadBalancerController(
            f"{name}-load-balancer-controller",
            LoadBalancerControllerArgs(
                cluster_name=config.cluster.name,
                cluster=wiring.cluster.name,
                region=config.aws_region,
                vpc_id=wiring.cluster.vpc_id,
                chart=chart("aws-load-balancer-controller", config.addons.aws_load_balancer_controller.version),
                provider=wiring.cluster.provider,
                tags=wiring.cluster.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.installers["aws-load-balancer-controller"] = controller.release

    def _namespaces(self, name: str, wiring: Wiring) -> None:
        """One Namespace per distinct model namespace, before anything is put into them."""
        child = pulumi.ResourceOptions(parent=self, provider=wiring.cluster.provider)
        for ns in sorted({m.namespace for m in served_models(self.config)}):
            wiring.namespaces[ns] = k8s.core.v1.Namespace(
                f"{name}-ns-{ns}",
                metadata={"name": ns, "labels": {**MANAGED_BY, "inference-platform.io/models": "true"}},
                opts=child,
            )

    def _storage(self, name: str, wiring: Wiring) -> None:
        """Model bucket, EFS / FSx / local cache (issue: model storage)."""
        assert self.config.cluster is not None
        storage = ModelStorage(
            f"{name}-storage",
            ModelStorageArgs(
                storage=self.config.storage,
                cluster=self.config.cluster,
                cluster_name=wiring.cluster.name,
                vpc_id=wiring.cluster.vpc_id,
                private_subnet_ids=wiring.cluster.private_subnet_ids,
                cluster_security_group_id=wiring.cluster.security_group_id,
                namespaces=wiring.namespaces,
                provider=wiring.cluster.provider,
                tags=wiring.cluster.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.extra["cache"] = storage.context
        wiring.extra.setdefault("exports", {}).update(storage.exports)
        self.outputs["modelBucket"] = storage.bucket_name

    def _gateway_controller(self, name: str, wiring: Wiring) -> None:
        """The Envoy Gateway controller, before anything that attaches to it (issue: front door).
        AIBrix's gateway runs on Envoy Gateway too, so it is installed for either."""
        config = self.config
        if not config.addons.envoy_gateway.enabled:
            return
        if config.gateway.enabled or config.addons.aibrix.enabled:
            controller = GatewayController(
                f"{name}-gateway-controller",
                GatewayControllerArgs(
                    config=config,
                    provider=wiring.cluster.provider,
                    # Every Gateway it serves (ours, AIBrix's) gets a LoadBalancer Service.
                    depends_on=[wiring.installers[k] for k in LOAD_BALANCING if k in wiring.installers],
                ),
                pulumi.ResourceOptions(parent=self),
            )
            wiring.installers["envoy-gateway"] = controller.release

    def _serving_platforms(self, name: str, wiring: Wiring) -> None:
        """Dynamo, AIBrix, KubeRay, NIM Operator, LiteLLM installations (issue: serving platforms).
        Records which controller namespaces must reach which engine's pods (and what those pods
        call), and the load-balancer annotations AIBrix's Envoy Service needs."""
        config = self.config
        # AIBrix's chart owns its Envoy Service: it gets the front door's NLB annotations.
        wiring.extra["gateway_service_annotations"] = load_balancer_annotations(config.gateway)
        platforms = ServingPlatforms(
            f"{name}-serving",
            ServingPlatformsArgs(
                config=config,
                provider=wiring.cluster.provider,
                envoy_gateway=wiring.installers.get("envoy-gateway"),
                gateway_service_annotations=wiring.extra["gateway_service_annotations"],
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.installers.update(platforms.installers)
        wiring.extra["platform_namespaces"] = controller_namespaces(config)

    def _models(self, name: str, wiring: Wiring) -> None:
        """One workload per models[] entry (issue: inference engines)."""
        if not self.config.models:
            return
        models = Models(
            f"{name}-models",
            ModelsArgs(
                config=self.config,
                provider=wiring.cluster.provider,
                cache=wiring.extra.get("cache"),
                neuron_scheduler=wiring.neuron_scheduler,
                namespaces=dict(wiring.namespaces),
                installers=dict(wiring.installers),
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.extra["models"] = models
        # What each model became (Deployment, StatefulSet or NIMService), for scalers that target it.
        wiring.extra["model_workloads"] = models.workloads

    def _model_addons(self, name: str, wiring: Wiring) -> None:
        """Per-model objects of the serving platforms: AIBrix adapters and autoscalers (issue: serving
        platforms)."""
        ModelAddons(
            f"{name}-model-addons",
            ModelAddonsArgs(
                config=self.config,
                provider=wiring.cluster.provider,
                aibrix=wiring.installers.get("aibrix"),
                namespaces=dict(wiring.namespaces),
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _front_door(self, name: str, wiring: Wiring) -> None:
        """Gateway, routes, authentication, network policies (issue: front door)."""
        config = self.config
        served = served_models(config)
        exported = (wiring.extra.get("platform") or {}).get("gatewayParent")
        parent = parent_gateway(config, wiring.extra.get("aibrix_gateway", AIBRIX_GATEWAY), exported)
        wiring.extra["gateway_parent"] = parent
        installers = [wiring.installers[k] for k in ("envoy-gateway", *LOAD_BALANCING) if k in wiring.installers]
        if not parent.own and "aibrix" in wiring.installers:
            installers.append(wiring.installers["aibrix"])
        door = FrontDoor(
            f"{name}-front-door",
            FrontDoorArgs(
                config=config,
                provider=wiring.cluster.provider,
                parent_gateway=parent,
                served=served,
                depends_on=installers,
                namespaces=dict(wiring.namespaces),
                scraper_namespace=MONITORING_NAMESPACE if config.addons.monitoring.enabled else None,
                # A workloads stack has no serving-platforms step: the platform's add-ons (in its
                # effective config) name the same controllers.
                platform_namespaces=dict(wiring.extra.get("platform_namespaces", controller_namespaces(config))),
                litellm=wiring.installers.get("litellm"),
            ),
            pulumi.ResourceOptions(parent=self),
        )
        if any(s.expose for s in served) and (config.gateway.enabled or not parent.own):
            self.outputs["inferenceUrl"] = door.url

    def _monitoring(self, name: str, wiring: Wiring) -> None:
        """Prometheus, scrapers, dashboards and alerts (issue: front door and eyes)."""
        config = self.config
        if not config.addons.monitoring.enabled:
            return
        monitoring = Monitoring(
            f"{name}-monitoring",
            MonitoringArgs(
                config=config,
                provider=wiring.cluster.provider,
                served=served_models(config),
                namespaces=dict(wiring.namespaces),
                depends_on=[wiring.installers[k] for k in ("prometheus-operator",) if k in wiring.installers],
                models_only=config.stack.role == "workloads",
                litellm=wiring.installers.get("litellm"),
            ),
            pulumi.ResourceOptions(parent=self),
        )
        if monitoring.installer is not None:
            wiring.installers["kube-prometheus-stack"] = monitoring.installer

    # ---- stack roles (issue: self-service stacks) ------------------------------------------------

    def _export_platform(self, wiring: Wiring) -> None:
        """What workloads stacks read (stacks/exports.py): the config-derived contract, then the values
        only the cloud knows. Any concern may add export keys in `wiring.extra["exports"]`."""
        exports: dict[str, Any] = dict(platform_exports(self.config))
        if wiring.neuron_scheduler is not None:
            exports["schedulerNames"] = {"neuron": wiring.neuron_scheduler}
        parent = wiring.extra.get("gateway_parent")
        if parent is not None and exports.get("gatewayParent") is not None:
            # The listener the front door really attached to (AIBrix's name may be wired differently).
            exports["gatewayParent"] = gateway_parent_export(
                parent.namespace, parent.name, parent.section, self.config.gateway.hostname
            )
        exports.update(wiring.extra.get("exports", {}))
        exports["clusterSecurityGroupId"] = wiring.cluster.security_group_id
        for key, value in exports.items():
            self.outputs.setdefault(key, value)

    def _workloads(self, name: str, platform: PlatformStack | None) -> None:
        """A team's stack: its namespace, quota and models on the platform stack's cluster, nothing else."""
        if platform is None:
            raise ValueError("a workloads stack needs PlatformArgs.platform (read in __main__.py)")
        stack = self.config.stack
        assert stack.team is not None and stack.quota is not None
        # The model builders look pools, add-ons and gateway up in the config as for any stack.
        self.config = effective_config(self.config, platform.exports)
        provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=platform.output("kubeconfig"),
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
                tags=tags(platform.exports["clusterName"], stack.environment, team=stack.team),
            ),
            neuron_scheduler=(platform.exports.get("schedulerNames") or {}).get("neuron"),
        )
        wiring.extra["platform"] = platform.exports
        self._namespaces(name, wiring)
        if stack.team not in wiring.namespaces:  # a team stack with no models yet still gets its quota
            wiring.namespaces[stack.team] = k8s.core.v1.Namespace(
                f"{name}-ns-{stack.team}",
                metadata={"name": stack.team, "labels": {**MANAGED_BY, "inference-platform.io/models": "true"}},
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[wiring.namespaces[stack.team]])
        for obj in guardrails(stack.team, stack.team, stack.quota, stack.environment):
            wiring.extra.setdefault("guardrails", []).append(manifests.apply(obj, child))
        exported = platform.exports
        team_storage = TeamStorage(
            f"{name}-team-storage",
            TeamStorageArgs(
                team=stack.team,
                storage=self.config.storage,
                storage_class=(exported.get("storageClasses") or {}).get("modelCache"),
                bucket=platform.output("modelBucket"),
                reader_role_arn=platform.output("modelReaderRoleArn"),
                cluster_name=wiring.cluster.name,
                namespace=wiring.namespaces[stack.team],
                provider=provider,
                tags=wiring.cluster.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        wiring.extra["cache"] = team_storage.context
        self._models(name, wiring)
        self._model_addons(name, wiring)
        self._front_door(name, wiring)
        self._monitoring(name, wiring)
        self.outputs.update(
            {"team": stack.team, "namespace": stack.team, "models": [m.name for m in self.config.models]}
        )
