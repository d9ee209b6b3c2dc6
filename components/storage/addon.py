"""A CSI driver installed as an EKS managed add-on, with its controller's IAM role bound through
EKS Pod Identity (the cluster runs the eks-pod-identity-agent add-on)."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from stacks.versions import EKS_ADDONS

from .. import podidentity


def csi_addon(
    name: str,
    *,
    addon: str,
    cluster_name: pulumi.Input[str],
    cluster: str,
    kubernetes_version: str,
    service_account: str,
    policy_arn: str | None = None,
    policy: pulumi.Input[str] | None = None,
    tags: dict[str, str],
    parent: pulumi.Resource,
) -> aws.eks.Addon:
    """The add-on and its controller's role, with the AWS managed `policy_arn` its user guide names
    or, where that grants more than the platform uses, the inline `policy` document instead."""
    if (policy_arn is None) == (policy is None):
        raise ValueError(f"{name}: give the controller exactly one of a managed policy or an inline policy")
    child = pulumi.ResourceOptions(parent=parent)
    role = podidentity.role(f"{name}-role", cluster=cluster, purpose=addon, tags=tags, parent=parent)
    attachment: pulumi.Resource
    if policy_arn is not None:
        attachment = aws.iam.RolePolicyAttachment(f"{name}-policy", role=role.name, policy_arn=policy_arn, opts=child)
    else:
        attachment = aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=policy, opts=child)
    pinned = EKS_ADDONS.get(kubernetes_version, {}).get(addon)
    version = podidentity.addon_version(addon, kubernetes_version, pinned, parent)
    return aws.eks.Addon(
        name,
        cluster_name=cluster_name,
        addon_name=addon,
        addon_version=version,
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="OVERWRITE",
        pod_identity_associations=[
            aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=service_account)
        ],
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[attachment]),
    )
