"""ModelStorage: the storage concern's one entry point. Builds the model bucket and the platform's own
Pod Identity readers, held to the bucket's `platform/` prefix (each team's own come with its tenancy),
and, for models streamed from the bucket, the writer their fill Jobs run as; then the cache the stack
file chose (EFS, FSx for Lustre, or nothing shared for `local` and `none`), and returns the
CacheContext engines build their pods from."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from stacks.config.cluster import ClusterSection
from stacks.config.storage import StorageSection
from stacks.config.teams import PLATFORM_CLIENTS
from stacks.naming import TOKEN

from .bucket import ModelBucket, ModelBucketArgs, ModelReaders, ModelReadersArgs, ModelWriters, ModelWritersArgs
from .cache import CacheContext
from .efs import EfsCache, EfsCacheArgs
from .fsx import FsxCache, FsxCacheArgs


def subnet_count(cluster: ClusterSection) -> int:
    """Private subnets are known from the stack file: one per zone created, or those adopted."""
    vpc = cluster.vpc
    return len(vpc.private_subnet_ids) if vpc.adopted else vpc.availability_zones


@dataclass(frozen=True, kw_only=True)
class ModelStorageArgs:
    storage: StorageSection
    cluster: ClusterSection
    cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    cluster_security_group_id: pulumi.Input[str]
    namespaces: dict[str, pulumi.Resource]
    provider: k8s.Provider
    tags: dict[str, str]
    region: str
    # Model namespace -> bucket prefixes of the models streamed there (`models[].loadFormat`).
    streamed_prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)


class ModelStorage(pulumi.ComponentResource):
    """Where model weights live and how serving pods reach them."""

    context: CacheContext
    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    # The EFS StorageClass cache claims bind through (`modelCache: efs`), else None.
    claim_class: pulumi.Resource | None

    def __init__(self, name: str, args: ModelStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ModelStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cfg, cluster = args.storage, args.cluster.name
        bucket = ModelBucket(
            f"{name}-bucket",
            ModelBucketArgs(cluster_name=cluster, config=cfg.model_bucket, protect=cfg.protect, tags=args.tags),
            child,
        )
        readers = self._create_bucket_access(name, args, bucket, child)
        claim = self._create_cache(name, args, bucket, child)
        self.bucket_name = bucket.name
        self.bucket_arn = bucket.arn
        self.context = CacheContext(
            storage=cfg,
            bucket=bucket.name,
            claim_name=claim,
            reader_service_account=readers.service_account,
            region=args.region,
        )
        self.register_outputs({"bucketName": bucket.name})

    def _create_bucket_access(
        self, name: str, args: ModelStorageArgs, bucket: ModelBucket, child: pulumi.ResourceOptions
    ) -> ModelReaders:
        """The bucket's readers in every model namespace and, when some model is streamed, the writers
        that fill the streamed prefixes."""
        cluster = args.cluster.name
        readers = ModelReaders(
            f"{name}-readers",
            ModelReadersArgs(
                cluster_name=args.cluster_name,
                cluster=cluster,
                bucket_arn=bucket.arn,
                owner=PLATFORM_CLIENTS,
                namespaces=args.namespaces,
                provider=args.provider,
                tags=args.tags,
            ),
            child,
        )
        if args.streamed_prefixes:
            ModelWriters(
                f"{name}-writers",
                ModelWritersArgs(
                    cluster_name=args.cluster_name,
                    cluster=cluster,
                    bucket_arn=bucket.arn,
                    prefixes=args.streamed_prefixes,
                    namespaces=args.namespaces,
                    provider=args.provider,
                    tags=args.tags,
                ),
                child,
            )
        return readers

    def _create_cache(
        self, name: str, args: ModelStorageArgs, bucket: ModelBucket, child: pulumi.ResourceOptions
    ) -> str | None:
        """The shared model cache `modelCache` names (EFS or FSx), if any; its claim's name."""
        cfg, cluster = args.storage, args.cluster.name
        common = dict(
            cluster=cluster,
            cluster_name=args.cluster_name,
            kubernetes_version=args.cluster.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=args.private_subnet_ids,
            cluster_security_group_id=args.cluster_security_group_id,
            namespaces=args.namespaces,
            provider=args.provider,
            tags=args.tags,
        )
        claim: str | None = None
        self.claim_class = None
        if cfg.model_cache == "efs":
            efs = EfsCache(
                f"{name}-efs",
                EfsCacheArgs(config=cfg.efs, subnet_count=subnet_count(args.cluster), protect=cfg.protect, **common),
                child,
            )
            claim, self.claim_class = efs.claim_name, efs.storage_class
        elif cfg.model_cache == "fsx":
            claim = FsxCache(
                f"{name}-fsx", FsxCacheArgs(config=cfg.fsx, bucket=bucket.name, **common), child
            ).claim_name
        return claim
