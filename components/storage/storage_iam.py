"""IAM and bucket policy documents for model storage, as pure functions (dict in, dict out)."""

from __future__ import annotations

from typing import Any

from stacks.resolved import RESULTS_DIR

from ..iam import AWS_MANAGED

# AWS managed policies the EKS user guide names for each CSI driver add-on's controller.
EFS_CSI_POLICY = f"{AWS_MANAGED}/service-role/AmazonEFSCSIDriverPolicy"


def fsx_csi_policy() -> dict[str, Any]:
    """The FSx CSI controller's policy for static provisioning, the only kind the platform uses: the
    file system is created by this program and bound to one PersistentVolume per model namespace
    (reclaim policy Retain), so the driver never creates, resizes or deletes a file system. Of its
    AWS calls only ValidateVolumeCapabilities runs on such a volume, and it calls DescribeFileSystems
    (aws-fsx-csi-driver pkg/driver/controller.go); the node plugin mounts from the volume's attributes
    and calls no AWS API. The EKS user guide's AmazonFSxFullAccess would let it delete any file system
    in the account. DescribeFileSystems is read-only; it is granted on `*` as AmazonFSxReadOnlyAccess
    grants it (components/iam.py WILDCARD_STATEMENTS)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DescribeFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:DescribeFileSystems"],
                "Resource": "*",
            }
        ],
    }


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


def reader_policy(bucket_arn: str, prefix: str) -> dict[str, Any]:
    """What a serving pod (and its model's benchmark Job) may do with the model bucket: list and read
    its owner's prefix (`platform` or `teams/<team>`, stacks/resolved.py `owner_prefix`) and nothing
    else, and write objects only under that prefix's `_benchmarks/` (no delete, no ACLs), never beside
    the weights. Listing is held to the prefix by the `s3:prefix` condition key (the IAM User Guide's
    per-folder example): a List request without a prefix, or with another owner's, is denied."""
    folder = f"{prefix.strip('/')}/"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "LocateModelBucket",
                "Effect": "Allow",
                "Action": ["s3:GetBucketLocation"],
                "Resource": [bucket_arn],
            },
            {
                "Sid": "ListOwnersPrefix",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [bucket_arn],
                "Condition": {"StringLike": {"s3:prefix": [f"{folder}*"]}},
            },
            {
                "Sid": "ReadOwnersObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"{bucket_arn}/{folder}*"],
            },
            {
                "Sid": "WriteBenchmarkResults",
                "Effect": "Allow",
                "Action": ["s3:PutObject"],
                "Resource": [f"{bucket_arn}/{folder}{RESULTS_DIR}/*"],
            },
        ],
    }


def prefix_writer_policy(bucket_arn: str, prefixes: list[str]) -> dict[str, Any]:
    """What the one-time fill of a streamed model's prefix may do: list the bucket only under those
    prefixes, and read and write objects only inside them (`platform/<model>/<revision>/`). No delete: a fill
    that finds its prefix filled (the `.prepared` marker) stops; it never rewrites what is there."""
    folders = sorted({p.rstrip("/") + "/" for p in prefixes})
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ListStreamedPrefixes",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [bucket_arn],
                "Condition": {"StringLike": {"s3:prefix": [f"{f}*" for f in folders]}},
            },
            {
                "Sid": "FillStreamedPrefixes",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject"],
                "Resource": [f"{bucket_arn}/{f}*" for f in folders],
            },
        ],
    }
