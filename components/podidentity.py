"""IAM for pods through EKS Pod Identity: the role every controller and reader here assumes, and the
EKS add-on version the cluster and CSI add-ons install (the cluster runs eks-pod-identity-agent)."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from stacks.naming import iam_role_name

from . import iam


def scope(cluster: str, parent: pulumi.Resource) -> pulumi.Output[iam.Scope]:
    """This cluster's account, region and partition, as the provider reports them."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    return pulumi.Output.all(
        aws.get_caller_identity_output(opts=invoke).account_id,
        aws.get_region_output(opts=invoke).region,
        aws.get_partition_output(opts=invoke).partition,
    ).apply(lambda v: iam.Scope(cluster=cluster, account=v[0], region=v[1], partition=v[2]))


def role(name: str, *, cluster: str, purpose: str, tags: dict[str, str], parent: pulumi.Resource) -> aws.iam.Role:
    """A role only EKS Pod Identity may assume (and tag the session of), for this account and a Pod
    Identity association of this cluster, named after the cluster and its purpose; its permissions
    are attached by the caller."""
    return aws.iam.Role(
        name,
        name=iam_role_name(cluster, purpose),
        assume_role_policy=scope(cluster, parent).apply(lambda s: json.dumps(iam.pod_identity_trust(s))),
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def addon_version(
    addon: str, kubernetes_version: str, pinned: str | None, parent: pulumi.Resource
) -> pulumi.Input[str]:
    """The pinned version of an EKS managed add-on, else the default EKS ships for the Kubernetes
    minor (resolved at deploy time)."""
    if pinned is not None:
        return pinned
    return aws.eks.get_addon_version_output(
        addon_name=addon,
        kubernetes_version=kubernetes_version,
        most_recent=False,
        opts=pulumi.InvokeOutputOptions(parent=parent),
    ).version
