"""The EKS cluster: control plane (pulumi-eks), KMS secrets encryption, managed add-ons, the system
node group, and the one explicit Kubernetes provider every Kubernetes object uses.

Later components get plain values from `Cluster` (name, endpoint, OIDC, security group, provider),
never the pulumi-eks object, so they stay testable under mocks and independent of its internals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from stacks.config.cluster import ClusterSection
from stacks.naming import SYSTEM_NODE_LABEL, TOKEN, iam_role_name
from stacks.versions import EKS_ADDONS

from . import iam, podidentity
from .scheduling import TAINT_KEYS

ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
EBS_CSI_POLICY = f"{iam.AWS_MANAGED}/service-role/AmazonEBSCSIDriverPolicy"

# Managed add-ons in install order; `before_nodes` ones must exist for a node to become Ready.
ADDONS = (
    ("vpc-cni", True),
    ("kube-proxy", True),
    ("eks-pod-identity-agent", True),
    ("coredns", False),
    ("aws-ebs-csi-driver", False),
)


# The EKS node monitoring agent (`addons.nodeMonitoringAgent`): created after the system nodes, like
# the add-ons nodes do not need, and, like every add-on, outlived by the Kubernetes provider.
NODE_MONITORING_AGENT = "eks-node-monitoring-agent"

# Managed add-on settings (the keys of `aws eks describe-addon-configuration`, which follow the add-on's
# chart values). The VPC CNI only enforces NetworkPolicies, which the front door relies on to isolate
# model namespaces, with its network policy agent turned on; the value is a string upstream.
# The node monitoring agent (configuration schema: aws/eks-node-monitoring-agent
# charts/configuration.schema.json, v1.6.7) runs two DaemonSets: the agent itself, whose default
# tolerations (`operator: Exists`) already admit every tainted accelerator node, written here so that
# stays true; and `dcgm-server` (the nv-hostengine the agent's GPU checks talk to on NVIDIA nodes),
# whose default tolerations are none, so on a tainted GPU pool it would never start and the agent
# could not read DCGM: it tolerates the GPU pools' taint.
ADDON_CONFIGURATION: dict[str, dict[str, Any]] = {
    "vpc-cni": {"enableNetworkPolicy": "true"},
    NODE_MONITORING_AGENT: {
        "nodeAgent": {"tolerations": [{"operator": "Exists"}]},
        "dcgmAgent": {"tolerations": [{"key": TAINT_KEYS["nvidia"], "operator": "Exists", "effect": "NoSchedule"}]},
    },
}


def addon_configuration(addon: str) -> str | None:
    """The add-on's `configuration_values` JSON, or None to keep its defaults."""
    values = ADDON_CONFIGURATION.get(addon)
    return json.dumps(values, sort_keys=True) if values else None


def admin_access_entries(admins: list[str]) -> dict[str, eks.AccessEntryArgs]:
    return {
        f"admin-{i}": eks.AccessEntryArgs(
            principal_arn=arn,
            access_policies={
                "cluster-admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=ADMIN_POLICY,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                )
            },
        )
        for i, arn in enumerate(admins)
    }


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    config: ClusterSection
    prod: bool
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    public_subnet_ids: pulumi.Input[list[str]]
    tags: dict[str, str]
    # `addons.nodeMonitoringAgent.enabled`: the EKS node monitoring agent add-on.
    node_monitoring_agent: bool = False


class Cluster(pulumi.ComponentResource):
    """An EKS cluster with API authentication, OIDC, KMS-encrypted secrets and a system node group."""

    name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    # The API server's CA bundle (base64), what a team's kubeconfig trusts the endpoint by.
    certificate_authority: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    system_node_group: aws.eks.NodeGroup
    addon_versions: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Cluster", name, None, opts)
        # The AWS side: control plane, the add-ons nodes need, the system node group, the rest of the
        # add-ons; then the one Kubernetes provider everything in the cluster goes through.
        cluster = self._control_plane(name, args, self._secrets_key(name, args))
        eks_cluster = cluster.eks_cluster
        self.name = eks_cluster.name
        self.endpoint = eks_cluster.endpoint
        self.certificate_authority = eks_cluster.certificate_authority.apply(lambda ca: ca.data)
        self.oidc_provider_arn = cluster.oidc_provider_arn
        self.oidc_issuer = cluster.oidc_issuer
        self.security_group_id = cluster.cluster_security_group_id
        self.kubeconfig = pulumi.Output.secret(cluster.kubeconfig_json)
        # Karpenter discovers the security group for its nodes by this tag.
        aws.ec2.Tag(
            f"{name}-sg-discovery",
            resource_id=self.security_group_id,
            key="karpenter.sh/discovery",
            value=args.config.name,
            opts=pulumi.ResourceOptions(parent=self),
        )
        addons = {a: self._addon(name, a, args, before) for a, before in ADDONS if before}
        self.system_node_group = self._system_nodes(name, args, list(addons.values()))
        for addon, before in ADDONS:
            if not before:
                addons[addon] = self._addon(name, addon, args, before)
        if args.node_monitoring_agent:
            addons[NODE_MONITORING_AGENT] = self._addon(name, NODE_MONITORING_AGENT, args, False)
        self.addon_versions = pulumi.Output.all(**{a: r.addon_version for a, r in addons.items()})

        # Every Kubernetes object goes through this provider, so it is created after, and deleted before,
        # the system nodes and every add-on: on destroy the controllers that clean up AWS resources
        # (Karpenter terminating its instances, the load balancer controller deleting NLBs) keep their
        # nodes, their Pod Identity credentials and CoreDNS, without which they cannot resolve the AWS
        # APIs they call.
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group, *addons.values()]),
        )
        self.register_outputs(
            {
                "name": self.name,
                "endpoint": self.endpoint,
                "oidcProviderArn": self.oidc_provider_arn,
                "securityGroupId": self.security_group_id,
            }
        )

    def _secrets_key(self, name: str, args: ClusterArgs) -> aws.kms.Key:
        """The rotating KMS key that encrypts the cluster's Secrets."""
        child = pulumi.ResourceOptions(parent=self)
        cfg = args.config
        key = aws.kms.Key(
            f"{name}-secrets",
            description=f"EKS secrets encryption for {cfg.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=args.tags,
            opts=child,
        )
        aws.kms.Alias(f"{name}-secrets", name=f"alias/eks/{cfg.name}", target_key_id=key.key_id, opts=child)
        return key

    def _control_plane(self, name: str, args: ClusterArgs, key: aws.kms.Key) -> eks.Cluster:
        cfg = args.config
        return eks.Cluster(
            f"{name}-eks",
            name=cfg.name,
            version=cfg.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=args.private_subnet_ids,
            public_subnet_ids=args.public_subnet_ids,
            endpoint_private_access=True,
            endpoint_public_access=cfg.endpoint.public_access,
            public_access_cidrs=cfg.endpoint.public_access_cidrs or None,
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=admin_access_entries(cfg.admins),
            create_oidc_provider=True,
            skip_default_node_group=True,
            skip_default_security_groups=True,
            # Add-ons are EKS managed add-ons created below, pinned in stacks/versions.py.
            bootstrap_self_managed_addons=False,
            use_default_vpc_cni=True,
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=False),
            encryption_config_key_arn=key.arn,
            enabled_cluster_log_types=list(cfg.log_types),
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type="STANDARD"),
            deletion_protection=args.prod,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _system_nodes(self, name: str, args: ClusterArgs, addons: list[aws.eks.Addon]) -> aws.eks.NodeGroup:
        """The managed AL2023 node group controllers run on, after the add-ons nodes need."""
        child = pulumi.ResourceOptions(parent=self)
        cfg = args.config
        node_role = aws.iam.Role(
            f"{name}-system-node",
            name=iam_role_name(cfg.name, "system-node"),
            assume_role_policy=json.dumps(iam.ec2_trust()),
            tags=args.tags,
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-system-node-{i}", role=node_role.name, policy_arn=arn, opts=child)
            for i, arn in enumerate(iam.NODE_POLICIES)
        ]
        sys = cfg.system_nodes
        return aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=self.name,
            node_group_name="system",
            node_role_arn=node_role.arn,
            subnet_ids=args.private_subnet_ids,
            instance_types=list(sys.instance_types),
            ami_type="AL2023_x86_64_STANDARD",
            capacity_type="ON_DEMAND",
            disk_size=sys.disk_size_gib,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=sys.min, max_size=sys.max, desired_size=sys.desired or sys.min
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            labels=dict(SYSTEM_NODE_LABEL),
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[*addons, *attachments], ignore_changes=["scalingConfig.desiredSize"]
            ),
        )

    def _addon(self, name: str, addon: str, args: ClusterArgs, before_nodes: bool) -> aws.eks.Addon:
        pinned = args.config.addon_versions.get(addon) or EKS_ADDONS.get(args.config.kubernetes_version, {}).get(addon)
        version = podidentity.addon_version(addon, args.config.kubernetes_version, pinned, self)
        associations = None
        if addon == "aws-ebs-csi-driver":
            role = podidentity.role(
                f"{name}-ebs-csi", cluster=args.config.name, purpose="ebs-csi", tags=args.tags, parent=self
            )
            aws.iam.RolePolicyAttachment(
                f"{name}-ebs-csi", role=role.name, policy_arn=EBS_CSI_POLICY, opts=pulumi.ResourceOptions(parent=self)
            )
            associations = [
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account="ebs-csi-controller-sa")
            ]
        depends = [] if before_nodes else [self.system_node_group]
        return aws.eks.Addon(
            f"{name}-{addon}",
            cluster_name=self.name,
            addon_name=addon,
            addon_version=version,
            configuration_values=addon_configuration(addon),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            pod_identity_associations=associations,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
        )
