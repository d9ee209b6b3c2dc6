"""IAM and bucket policy documents for model storage, as pure functions (dict in, dict out)."""

from __future__ import annotations

from typing import Any

from ..iam import AWS_MANAGED

# AWS managed policies the EKS user guide names for each CSI driver add-on's controller.
EFS_CSI_POLICY = f"{AWS_MANAGED}/service-role/AmazonEFSCSIDriverPolicy"
# The FSx CSI controller's documented policy. Only static provisioning is used here, but the add-on
# documentation gives no narrower managed policy.
FSX_CSI_POLICY = f"{AWS_MANAGED}/AmazonFSxFullAccess"


def tls_only_policy(bucket_arn: str) -> dict[str, Any]:
    """Refuse every request to the bucket that does not arrive over TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def read_only_policy(bucket_arn: str) -> dict[str, Any]:
    """What a serving pod may do with the model bucket: list it and read objects, nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ListModelBucket",
                "Effect": "Allow",
                "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                "Resource": [bucket_arn],
            },
            {
                "Sid": "ReadModelObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"{bucket_arn}/*"],
            },
        ],
    }
