"""IAM and SQS policy documents for Karpenter, as pure functions.

The controller's permissions are the ones Karpenter v1.14 documents in its getting-started
CloudFormation template (aws/karpenter-provider-aws
website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml), one
document per upstream managed policy, each scoped to this cluster by name, tag, region and account.
Nothing is granted on `*` except what upstream grants there (read-only Describe calls pinned to the
region, pricing, and listing instance profiles). The zonal-shift policy is left out because
`settings.enableZonalShift` stays off.
"""

from __future__ import annotations

from typing import Any

from components.iam import AWS_MANAGED, Scope

# The node role: worker, CNI, ECR pull and SSM, as upstream's KarpenterNodeRole.
NODE_POLICIES = (
    f"{AWS_MANAGED}/AmazonEKSWorkerNodePolicy",
    f"{AWS_MANAGED}/AmazonEKS_CNI_Policy",
    f"{AWS_MANAGED}/AmazonEC2ContainerRegistryPullOnly",
    f"{AWS_MANAGED}/AmazonSSMManagedInstanceCore",
)


def _doc(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def node_lifecycle(s: Scope) -> dict[str, Any]:
    """Launch, tag and terminate only instances and templates tagged for this cluster and a NodePool."""
    launched = [s.ec2(f"{r}/*") for r in ("fleet", "instance", "volume", "network-interface", "launch-template")]
    launched.append(s.ec2("spot-instances-request/*"))
    owned = {f"aws:ResourceTag/{s.cluster_tag}": "owned"}
    request_tags = {f"aws:RequestTag/{s.cluster_tag}": "owned", "aws:RequestTag/eks:eks-cluster-name": s.cluster}
    return _doc(
        *_launch_statements(s, launched, owned, request_tags),
        *_tag_and_delete_statements(s, launched, owned, request_tags),
    )


def _launch_statements(
    s: Scope, launched: list[str], owned: dict[str, str], request_tags: dict[str, str]
) -> list[dict[str, Any]]:
    """RunInstances and CreateFleet: from this cluster's images, subnets and security groups, with an
    owned launch template, creating only resources tagged for this cluster and a NodePool."""
    return [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                s.ec2("image/*", account=""),
                s.ec2("snapshot/*", account=""),
                s.ec2("security-group/*"),
                s.ec2("subnet/*"),
                s.ec2("capacity-reservation/*"),
                s.ec2("placement-group/*"),
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": s.ec2("launch-template/*"),
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": launched,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {
                "StringEquals": request_tags,
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
    ]


def _tag_and_delete_statements(
    s: Scope, launched: list[str], owned: dict[str, str], request_tags: dict[str, str]
) -> list[dict[str, Any]]:
    """Tagging what a launch creates, retagging owned instances (node claim and name only), and
    terminating owned instances and templates."""
    return [
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": launched,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {
                    **request_tags,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": s.ec2("instance/*"),
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": owned,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": s.cluster},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [s.ec2("instance/*"), s.ec2("launch-template/*")],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
    ]


def iam_integration(s: Scope, node_role_arn: str) -> dict[str, Any]:
    """Pass only the node role to EC2; manage only instance profiles tagged for this cluster and region."""
    owned_here = {
        f"aws:ResourceTag/{s.cluster_tag}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": s.region,
    }
    request_here = {
        f"aws:RequestTag/{s.cluster_tag}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": s.cluster,
        "aws:RequestTag/topology.kubernetes.io/region": s.region,
    }
    return _doc(
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": s.instance_profiles,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {
                "StringEquals": request_here,
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": s.instance_profiles,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {**owned_here, **request_here},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": s.instance_profiles,
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Condition": {
                "StringEquals": owned_here,
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
    )


def eks_integration(s: Scope) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": s.cluster_arn,
            "Action": "eks:DescribeCluster",
        }
    )


def interruption(queue_arn: str) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        }
    )


def resource_discovery(s: Scope) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": s.region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{s.partition}:ssm:{s.region}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": s.instance_profiles,
            "Action": "iam:GetInstanceProfile",
        },
    )


def controller_policies(s: Scope, *, node_role_arn: str, queue_arn: str) -> dict[str, dict[str, Any]]:
    """Every controller policy document, by a short name used in the physical policy name."""
    return {
        "node-lifecycle": node_lifecycle(s),
        "iam-integration": iam_integration(s, node_role_arn),
        "eks-integration": eks_integration(s),
        "interruption": interruption(queue_arn),
        "resource-discovery": resource_discovery(s),
    }


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS) may send to the queue; nothing may use it without TLS."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }
