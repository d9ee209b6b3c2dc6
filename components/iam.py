"""IAM policy documents as pure functions: trust policies and managed-policy ARNs."""

from __future__ import annotations

from typing import Any

AWS_MANAGED = "arn:aws:iam::aws:policy"

NODE_POLICIES = (
    f"{AWS_MANAGED}/AmazonEKSWorkerNodePolicy",
    f"{AWS_MANAGED}/AmazonEKS_CNI_Policy",
    f"{AWS_MANAGED}/AmazonEC2ContainerRegistryReadOnly",
    f"{AWS_MANAGED}/AmazonSSMManagedInstanceCore",
)


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


def pod_identity_trust() -> dict[str, Any]:
    """Trust for EKS Pod Identity: the agent assumes the role and tags the session."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }
