"""IAM policy documents as pure functions: trust policies, managed-policy ARNs, and the one register
of every statement the platform leaves on `Resource: "*"` with the reason it must.

Least privilege here means: each controller's document starts from its upstream project's
recommended policy and is scoped further wherever the action allows it (this account, region,
cluster and VPC in resource ARNs; the upstream tag conditions). What stays on `*` is an action that
supports no resource-level permission (Describe/List/Get calls, a create whose resource does not
exist yet), each listed in WILDCARD_STATEMENTS by Sid; tests/test_iam_least_privilege.py holds every
rendered policy to it, and the README's table lists the same entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

AWS_MANAGED = "arn:aws:iam::aws:policy"

NODE_POLICIES = (
    f"{AWS_MANAGED}/AmazonEKSWorkerNodePolicy",
    f"{AWS_MANAGED}/AmazonEKS_CNI_Policy",
    f"{AWS_MANAGED}/AmazonEC2ContainerRegistryReadOnly",
    f"{AWS_MANAGED}/AmazonSSMManagedInstanceCore",
)


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Where the controller acts: one cluster in one region of one account."""

    cluster: str
    region: str
    account: str
    partition: str = "aws"

    def ec2(self, resource: str, account: str | None = None) -> str:
        """An EC2 ARN in this region and, unless `account` says otherwise, this account (Karpenter's
        upstream policy leaves the account open, `*`, for VPCs shared from another account; the
        platform's subnets, security groups, capacity reservations and instances are its own)."""
        return f"arn:{self.partition}:ec2:{self.region}:{self.account if account is None else account}:{resource}"

    @property
    def cluster_tag(self) -> str:
        return f"kubernetes.io/cluster/{self.cluster}"

    @property
    def cluster_arn(self) -> str:
        return f"arn:{self.partition}:eks:{self.region}:{self.account}:cluster/{self.cluster}"

    @property
    def instance_profiles(self) -> str:
        return f"arn:{self.partition}:iam::{self.account}:instance-profile/*"

    @property
    def pod_identity_associations(self) -> str:
        """The ARN of every Pod Identity association of this cluster (the aws:SourceArn EKS Pod
        Identity presents when it assumes a role for a pod)."""
        return f"arn:{self.partition}:eks:{self.region}:{self.account}:podidentityassociation/{self.cluster}/*"


def ec2_trust() -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def pod_identity_trust(scope: Scope) -> dict[str, Any]:
    """Trust for EKS Pod Identity (the EKS user guide's trust policy): the service assumes the role
    and tags the session, only on behalf of this account (aws:SourceAccount) and of a Pod Identity
    association of this cluster (aws:SourceArn): the confused-deputy conditions, so no other
    cluster's association, in this account or another, can hand the role to its pods."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowEksPodIdentityForThisCluster",
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": scope.account},
                    "ArnLike": {"aws:SourceArn": scope.pod_identity_associations},
                },
            }
        ],
    }


# Every statement a rendered policy may leave on `Resource: "*"`, by Sid: why it cannot be scoped.
WILDCARD_STATEMENTS: dict[str, str] = {
    # AWS Load Balancer Controller (components/loadbalancer_iam.py)
    "DescribeNetworkAndLoadBalancers": (
        "EC2 and Elastic Load Balancing Describe/Get calls support no resource-level permissions"
    ),
    "LookUpCertificatesAndProtections": (
        "ACM, IAM server-certificate, WAF, Shield and Cognito lookups (read-only) support no resource-level "
        "permissions; the mutating WAF and Shield calls upstream grants are left out"
    ),
    # FSx CSI driver (components/storage/storage_iam.py)
    "DescribeFileSystems": (
        "read-only, the one call the driver makes on a statically provisioned volume; granted on * as "
        "AWS's AmazonFSxReadOnlyAccess grants it (instead of the AmazonFSxFullAccess the user guide names)"
    ),
    # Karpenter (components/capacity/karpenter_iam.py)
    "AllowRegionalReadActions": (
        "EC2 Describe calls support no resource-level permissions; held to this region by aws:RequestedRegion"
    ),
    "AllowPricingReadActions": "the Price List API supports no resource-level permissions",
    "AllowUnscopedInstanceProfileListAction": "iam:ListInstanceProfiles supports no resource-level permissions",
}
