"""The model bucket and the read-only identities serving pods use to read it.

`ModelBucket` creates an S3 bucket (SSE-S3 encryption, which an FSx data repository association reads
without extra key grants; versioning, every public-access block, owner-
enforced objects, a TLS-only policy) or adopts an existing one by name. `ModelReaders` creates, for
one owner of models (the platform, or one team), an IAM role trusted by EKS Pod Identity that may list
and read that owner's prefix of the bucket only (`platform/` or `teams/<team>/`, stacks/resolved.py
`owner_prefix`) and write its benchmark results there, and, in each of the owner's namespaces, a
ServiceAccount `model-reader` plus the Pod Identity association binding the two. Serving pods get
bucket credentials only through that account, never from the node's instance role, so one team's pods
cannot read another team's weights. `ModelWriters` exists only for models streamed from the bucket
(`models[].loadFormat`, the platform's own models): one role that may write only those models'
`platform/<model>/<revision>/` prefixes, and a ServiceAccount `model-writer` with its association only
in the namespaces of those models; only their one-time fill Jobs run as it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.storage import ModelBucketSettings
from stacks.naming import TOKEN, physical, reader_role_purpose
from stacks.resolved import WRITER_SERVICE_ACCOUNT, owner_prefix

from .. import podidentity
from ..k8s import register
from .claims import READER_SERVICE_ACCOUNT, service_account
from .storage_iam import prefix_writer_policy, reader_policy, tls_only_policy


@dataclass(frozen=True, kw_only=True)
class ModelBucketArgs:
    cluster_name: str
    config: ModelBucketSettings
    protect: bool
    tags: dict[str, str]


class ModelBucket(pulumi.ComponentResource):
    """The S3 bucket model weights are kept in (created, or adopted by name)."""

    name: pulumi.Output[str]
    arn: pulumi.Output[str]

    def __init__(self, name: str, args: ModelBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ModelBucket", name, None, opts)
        cfg = args.config
        if not cfg.create:
            assert cfg.name is not None  # the config model requires a name to adopt
            partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
            self.name = pulumi.Output.from_input(cfg.name)
            self.arn = pulumi.Output.format("arn:{0}:s3:::{1}", partition, cfg.name)
        else:
            self._create(name, args)
        self.register_outputs({"name": self.name, "arn": self.arn})

    def _create(self, name: str, args: ModelBucketArgs) -> None:
        stateful = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        # The bucket's settings stay with a retained bucket: deleting them would suspend its versioning,
        # lift its public access block and drop its TLS-only policy while the weights stay behind.
        child = pulumi.ResourceOptions(parent=self, retain_on_delete=args.protect)
        bucket = aws.s3.Bucket(
            f"{name}-bucket",
            bucket=args.config.name,
            # A generated, globally unique name when none is given (a prefix is at most 37 characters).
            bucket_prefix=None if args.config.name else f"{physical(args.cluster_name, 'models', limit=36)}-",
            force_destroy=False,
            tags=args.tags,
            opts=stateful,
        )
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership",
            bucket=bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            opts=child,
        )
        block = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    ),
                )
            ],
            opts=child,
        )
        aws.s3.BucketVersioning(
            f"{name}-versioning",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
            opts=child,
        )
        aws.s3.BucketPolicy(
            f"{name}-tls-only",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(tls_only_policy(arn))),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[block])),
        )
        self.name = bucket.bucket
        self.arn = bucket.arn


@dataclass(frozen=True, kw_only=True)
class ModelReadersArgs:
    cluster_name: pulumi.Input[str]
    cluster: str  # the stack's cluster name, for physical names
    bucket_arn: pulumi.Input[str]
    # Whose models read: PLATFORM_CLIENTS (the platform's own) or a team's name; it names the role and the
    # bucket prefix the role may read.
    owner: str
    # The owner's namespaces: a ServiceAccount and its association in each.
    namespaces: Mapping[str, pulumi.Resource]
    provider: k8s.Provider
    tags: dict[str, str]


class ModelReaders(pulumi.ComponentResource):
    """One owner's bucket access for serving pods: read its prefix, write its benchmark results (and
    nothing of another owner's); one role, and one ServiceAccount and Pod Identity association per
    namespace of the owner."""

    role_arn: pulumi.Output[str]
    service_account: str = READER_SERVICE_ACCOUNT

    def __init__(self, name: str, args: ModelReadersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ModelReaders", name, None, opts)
        role = podidentity.role(
            f"{name}-role", cluster=args.cluster, purpose=reader_role_purpose(args.owner), tags=args.tags, parent=self
        )
        prefix = owner_prefix(args.owner)
        aws.iam.RolePolicy(
            f"{name}-read",
            role=role.id,
            policy=pulumi.Output.from_input(args.bucket_arn).apply(lambda arn: json.dumps(reader_policy(arn, prefix))),
            opts=pulumi.ResourceOptions(parent=self),
        )
        bind_accounts(
            self, name, READER_SERVICE_ACCOUNT, sorted(args.namespaces.items()), role,
            cluster_name=args.cluster_name, provider=args.provider, tags=args.tags,
        )  # fmt: skip
        self.role_arn = role.arn
        self.register_outputs({"roleArn": self.role_arn})


def bind_accounts(
    owner: pulumi.Resource,
    name: str,
    account_name: str,
    namespaces: list[tuple[str, pulumi.Resource]],
    role: aws.iam.Role,
    *,
    cluster_name: pulumi.Input[str],
    provider: k8s.Provider,
    tags: dict[str, str],
) -> None:
    """In each namespace, the service account and its Pod Identity association with `role`."""
    for ns, namespace in namespaces:
        account = register(
            service_account(account_name, ns),
            pulumi.ResourceOptions(parent=owner, provider=provider, depends_on=[namespace]),
            name=f"{name}-sa-{ns}",
        )
        aws.eks.PodIdentityAssociation(
            f"{name}-{ns}",
            cluster_name=cluster_name,
            namespace=ns,
            service_account=account_name,
            role_arn=role.arn,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=owner, depends_on=[account]),
        )


@dataclass(frozen=True, kw_only=True)
class ModelWritersArgs:
    cluster_name: pulumi.Input[str]
    cluster: str  # the stack's cluster name, for physical names
    bucket_arn: pulumi.Input[str]
    # Model namespace -> the streamed models' bucket prefixes there (components/storage/cache.py).
    prefixes: dict[str, tuple[str, ...]]
    namespaces: dict[str, pulumi.Resource]
    provider: k8s.Provider
    tags: dict[str, str]


class ModelWriters(pulumi.ComponentResource):
    """Write access to the streamed models' bucket prefixes, for their fill Jobs only."""

    service_account: str = WRITER_SERVICE_ACCOUNT

    def __init__(self, name: str, args: ModelWritersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ModelWriters", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = podidentity.role(
            f"{name}-role", cluster=args.cluster, purpose="model-writer", tags=args.tags, parent=self
        )
        prefixes = sorted({p for ps in args.prefixes.values() for p in ps})
        aws.iam.RolePolicy(
            f"{name}-write",
            role=role.id,
            policy=pulumi.Output.from_input(args.bucket_arn).apply(
                lambda arn: json.dumps(prefix_writer_policy(arn, prefixes))
            ),
            opts=child,
        )
        bind_accounts(
            self, name, WRITER_SERVICE_ACCOUNT, [(ns, args.namespaces[ns]) for ns in sorted(args.prefixes)], role,
            cluster_name=args.cluster_name, provider=args.provider, tags=args.tags,
        )  # fmt: skip
        self.register_outputs({"roleArn": role.arn})
