"""Accelerator capacity: Karpenter, one EC2NodeClass and NodePool (one per capacity tier with
`capacityPreference`) per `nodePools[]` entry, and the
device plugins those pools need.

`Capacity` builds the Karpenter component (components/capacity/karpenter.py), applies the pure
manifests of components/capacity/nodepools.py after the Karpenter release (which installs their
CRDs), and installs the NVIDIA device plugin and the AWS Neuron chart only where some pool needs
them (components/capacity/plugins.py), a CapacityBuffer per pool with `warmNodes` (its gate on), the
NodeOverlays of shared-GPU and g6f pools (the nodeOverlay gate on), with the
Neuron scheduler under the name the resolved stack
gives Neuron pods (stacks/resolved.py NEURON_SCHEDULER). When some pool has `efa: true` it also
installs the EFA device plugin and creates the EFA security group those pools' nodes carry beside the
cluster's: EFA needs all traffic to and from the group itself, in and out. (The EKS-created cluster
security group carries both self rules by default, EKS user guide "sec-group-reqs"; adding them to
it again would fail as duplicates, and a group of our own does not depend on EKS's defaults.) It
exposes the node role name and Karpenter's release.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.addons import AddonsSection
from stacks.fastpath import WarmChunk
from stacks.naming import TOKEN
from stacks.resolved import ResolvedPool
from stacks.versions import chart, crd_source

from ..k8s import register, release
from .karpenter import Karpenter, KarpenterArgs
from .nodepools import (
    EFA_SECURITY_GROUP_TAG,
    capacity_buffer,
    ec2_node_class,
    node_overlays,
    node_pool,
    warm_pod_template,
)
from .plugins import (
    efa_values,
    needs_capacity_buffer,
    needs_efa_plugin,
    needs_neuron_chart,
    needs_node_overlay,
    needs_nvidia_plugin,
    needs_static_capacity,
    neuron_values,
    nvidia_values,
)

__all__ = ["Capacity", "CapacityArgs", "Karpenter", "KarpenterArgs"]


@dataclass(frozen=True, kw_only=True)
class CapacityArgs:
    cluster_name: str  # as in the stack file: scopes Karpenter's policies and discovery tags
    region: str
    pools: tuple[ResolvedPool, ...]
    addons: AddonsSection
    cluster: pulumi.Input[str]  # the Cluster component's name output (carries the dependency)
    vpc_id: pulumi.Input[str]  # the cluster's VPC: the EFA security group lives there
    provider: k8s.Provider
    tags: dict[str, str]
    # The AWS Load Balancer Controller's release (its Service webhook fails closed): Karpenter's and the
    # Neuron chart's Services wait for it.
    service_webhook: pulumi.Resource | None = None
    # `warmNodes`: each pool that keeps warm nodes with the chunk one node holds (stacks/fastpath.py
    # `warm_chunk`), and the pinned placeholder image its buffer's PodTemplate names.
    warm: tuple[tuple[ResolvedPool, WarmChunk], ...] = ()
    placeholder_image: str | None = None
    # Karpenter's node repair gate (stacks/resolved.py PlatformView.node_repair).
    node_repair: bool = False


class Capacity(pulumi.ComponentResource):
    """Karpenter, the stack's NodePools and the device plugins they need."""

    node_role_name: pulumi.Output[str]
    release: pulumi.Resource  # Karpenter's: NodePools and EC2NodeClasses wait for it
    # Each pool's NodePools (one per capacity tier, most preferred first) by pool name: a model's workload
    # waits for its pool's (and, through them, the pool's EC2NodeClass).
    node_pools: dict[str, list[pulumi.Resource]]

    def __init__(self, name: str, args: CapacityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Capacity", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider)

        karpenter = Karpenter(
            f"{name}-karpenter",
            KarpenterArgs(
                cluster_name=args.cluster_name,
                cluster=args.cluster,
                region=args.region,
                chart=chart("karpenter", args.addons.karpenter.version),
                crd_chart=crd_source("karpenter", args.addons.karpenter.version).chart,
                static_capacity=needs_static_capacity(args.pools),
                capacity_buffer=needs_capacity_buffer(args.pools),
                node_overlay=needs_node_overlay(args.pools),
                node_repair=args.node_repair,
                provider=args.provider,
                tags=args.tags,
                service_webhook=args.service_webhook,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        self.release = karpenter.release
        self.node_role_name = karpenter.node_role_name
        self.node_pools = {}
        self._create_node_pools(name, args, karpenter, k8s_opts)
        self._install_device_plugins(name, args, k8s_opts)
        self.register_outputs(
            {
                "nodeRoleName": self.node_role_name,
                "interruptionQueue": karpenter.queue_name,
            }
        )

    def _create_node_pools(
        self, name: str, args: CapacityArgs, karpenter: Karpenter, k8s_opts: pulumi.ResourceOptions
    ) -> None:
        """One EC2NodeClass and NodePool per pool, after Karpenter's release (their CRDs) and, when
        some pool has EFA, after the EFA security group their nodes carry."""
        after_crds = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[karpenter.release]))
        if needs_efa_plugin(args.pools):
            efa_group = self._efa_security_group(name, args)
            after_crds = pulumi.ResourceOptions.merge(after_crds, pulumi.ResourceOptions(depends_on=efa_group))
        for resolved in args.pools:
            pool = resolved.config
            node_class = register(
                ec2_node_class(resolved, cluster=args.cluster_name, node_role=karpenter.node_role_name, tags=args.tags),
                after_crds,
                name=f"{name}-nodeclass-{pool.name}",
            )
            # A tiered pool (`capacityPreference`) is one pool to everything else: a model waits for every
            # tier, since its pods may land on any of them.
            self.node_pools[pool.name] = [
                register(
                    node_pool(pool, tier),
                    pulumi.ResourceOptions.merge(after_crds, pulumi.ResourceOptions(depends_on=[node_class])),
                    name=f"{name}-nodepool-{tier.name}",
                )
                for tier in resolved.tiers
            ]
            for overlay in node_overlays(pool):
                # Scoped to the pool by its name: Karpenter applies it to the pool's simulations once both exist.
                register(overlay, after_crds, name=f"{name}-overlay-{overlay['metadata']['name']}")
        self._create_warm_nodes(name, args, after_crds)

    def _create_warm_nodes(self, name: str, args: CapacityArgs, after_crds: pulumi.ResourceOptions) -> None:
        """Each warm pool's placeholder PodTemplate and CapacityBuffer, after its NodePool (the buffer's
        virtual pods land on it) and Karpenter's release (the CRD, and the gate that reads it)."""
        for resolved, chunk in args.warm:
            pool = resolved.config
            if args.placeholder_image is None:
                raise ValueError(f"pool {pool.name} keeps warm nodes, but no placeholder image was resolved")
            template = register(
                warm_pod_template(pool, chunk, args.placeholder_image),
                after_crds,
                name=f"{name}-warm-template-{pool.name}",
            )
            depends = pulumi.ResourceOptions(depends_on=[template, *self.node_pools[pool.name]])
            register(
                capacity_buffer(resolved),
                pulumi.ResourceOptions.merge(after_crds, depends),
                name=f"{name}-warm-buffer-{pool.name}",
            )

    def _install_device_plugins(self, name: str, args: CapacityArgs, k8s_opts: pulumi.ResourceOptions) -> None:
        """The NVIDIA device plugin, the Neuron chart and the EFA device plugin, each only where some
        pool needs it."""
        addons = args.addons
        if needs_nvidia_plugin(addons, args.pools):
            release(
                f"{name}-nvidia-device-plugin",
                chart("nvidia-device-plugin", addons.nvidia_device_plugin.version),
                release_name="nvidia-device-plugin",
                namespace="kube-system",
                values=nvidia_values(args.pools),
                opts=k8s_opts,
                service_webhook=args.service_webhook,
            )
        if needs_neuron_chart(addons, args.pools):
            release(
                f"{name}-neuron",
                chart("neuron", addons.neuron.version),
                release_name="neuron",
                namespace="kube-system",
                values=neuron_values(addons.neuron),
                opts=k8s_opts,
                service_webhook=args.service_webhook,
            )
        if needs_efa_plugin(args.pools):
            release(
                f"{name}-efa-device-plugin",
                chart("aws-efa-k8s-device-plugin"),
                release_name="aws-efa-k8s-device-plugin",
                namespace="kube-system",
                values=efa_values(args.pools),
                opts=k8s_opts,
                service_webhook=args.service_webhook,
            )

    def _efa_security_group(self, name: str, args: CapacityArgs) -> list[pulumi.Resource]:
        """The group EFA pools' nodes carry beside the cluster's, open to itself for all traffic in
        and out (EC2 efa-start "Prepare an EFA-enabled security group"; EKS device-management-efa)."""
        child = pulumi.ResourceOptions(parent=self)
        group = aws.ec2.SecurityGroup(
            f"{name}-efa",
            vpc_id=args.vpc_id,
            description=f"EFA traffic between the {args.cluster_name} nodes that carry this group",
            tags={**args.tags, EFA_SECURITY_GROUP_TAG: args.cluster_name, "Name": f"{args.cluster_name}-efa"},
            opts=child,
        )
        ingress = aws.vpc.SecurityGroupIngressRule(
            f"{name}-efa-from-self",
            security_group_id=group.id,
            referenced_security_group_id=group.id,
            ip_protocol="-1",
            description="EFA: all traffic from this group",
            tags=args.tags,
            opts=child,
        )
        egress = aws.vpc.SecurityGroupEgressRule(
            f"{name}-efa-to-self",
            security_group_id=group.id,
            referenced_security_group_id=group.id,
            ip_protocol="-1",
            description="EFA: all traffic to this group",
            tags=args.tags,
            opts=child,
        )
        return [group, ingress, egress]
