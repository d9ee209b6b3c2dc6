"""The root component: wires one validated stack config into every concern's component.

It only wires: each concern builds its own resources. Data flows one way, from the StackConfig
through args dataclasses into components; nothing here reads pulumi.Config.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from stacks.config import StackConfig

from .cluster import Cluster, ClusterArgs
from .naming import TOKEN, tags
from .network import Network, NetworkArgs


@dataclass(frozen=True, kw_only=True)
class PlatformArgs:
    config: StackConfig


class Platform(pulumi.ComponentResource):
    """Everything one stack file asks for."""

    outputs: dict[str, pulumi.Input[object]]

    def __init__(self, name: str, args: PlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Platform", name, None, opts)
        config = args.config
        self.outputs = {}
        if config.cluster is not None:
            self._platform(name, config)
        self.register_outputs(self.outputs)

    def _platform(self, name: str, config: StackConfig) -> None:
        cluster_cfg = config.cluster
        assert cluster_cfg is not None
        base_tags = tags(cluster_cfg.name, config.stack.environment)
        child = pulumi.ResourceOptions(parent=self)
        nat = cluster_cfg.vpc.nat_gateways or ("perZone" if config.stack.prod else "single")
        network = Network(
            f"{name}-network",
            NetworkArgs(
                cluster_name=cluster_cfg.name,
                vpc=cluster_cfg.vpc,
                nat_per_zone=nat == "perZone",
                tags=base_tags,
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
        self.network, self.cluster = network, cluster
        self.outputs.update(
            {
                "clusterName": cluster.name,
                "clusterEndpoint": cluster.endpoint,
                "kubeconfig": cluster.kubeconfig,
                "oidcProviderArn": cluster.oidc_provider_arn,
                "vpcId": network.vpc_id,
                "privateSubnetIds": network.private_subnet_ids,
            }
        )
