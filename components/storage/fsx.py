"""FSx for Lustre model cache (`modelCache: fsx`): a PERSISTENT_2 file system in one private subnet,
a security group admitting the Lustre ports (988, 1018-1023) from the cluster security group and
from itself (file servers talk to each other), a data repository association that imports the model
bucket (or `fsx.importPath`) and follows its changes, the FSx CSI driver as an EKS add-on with its
Pod Identity role, and per model namespace a static PersistentVolume bound to a `model-cache` claim.

Files appear in Lustre as S3 metadata first; content is loaded from S3 on first read. The cache does
not push anything back to S3.

The file system is a cache of the bucket, so it is neither protected nor retained, whatever
`storage.protect` says: the bucket (outside the VPC) is the retained copy, and a cache refills itself
(the preparation init containers). A retained file system would keep its network interfaces in the
stack's private subnet and its security group, and the VPC's deletion would fail on them; a protected
one would stop `pulumi destroy` and, with `--exclude-protected`, keep everything it depends on (its
subnet, the VPC, the cluster whose security group its rules name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.storage import Fsx
from stacks.naming import TOKEN

from ..k8s import register
from .addon import csi_addon
from .claims import CACHE_CLAIM, cache_claim, fsx_volume, fsx_volume_name
from .storage_iam import fsx_csi_policy

# FSx for Lustre User Guide, "File system access control with Amazon VPC".
LUSTRE_PORTS = ((988, 988), (1018, 1023))
LUSTRE_VERSION = "2.15"


def data_repository_path(import_path: str | None, bucket: str) -> str:
    """The S3 path the association imports: `importPath`, or the whole model bucket."""
    path = import_path or f"s3://{bucket}/"
    return path if path.endswith("/") else f"{path}/"


@dataclass(frozen=True, kw_only=True)
class FsxCacheArgs:
    config: Fsx
    cluster: str
    cluster_name: pulumi.Input[str]
    kubernetes_version: str
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    cluster_security_group_id: pulumi.Input[str]
    bucket: pulumi.Input[str]
    namespaces: dict[str, pulumi.Resource]
    provider: k8s.Provider
    tags: dict[str, str]


class FsxCache(pulumi.ComponentResource):
    """A shared FSx for Lustre model cache linked to the model bucket."""

    file_system_id: pulumi.Output[str]
    claim_name: str = CACHE_CLAIM

    def __init__(self, name: str, args: FsxCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:FsxCache", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        sg, rules = self._create_security_group(name, args, child)
        fs = self._create_file_system(name, args, sg, rules)
        association = self._create_association(name, args, fs, child)
        driver = csi_addon(
            f"{name}-csi",
            addon="aws-fsx-csi-driver",
            cluster_name=args.cluster_name,
            cluster=args.cluster,
            kubernetes_version=args.kubernetes_version,
            service_account="fsx-csi-controller-sa",
            policy=json.dumps(fsx_csi_policy()),
            tags=args.tags,
            parent=self,
        )
        self._create_claims(name, args, fs, driver, association)
        self.file_system_id = fs.id
        self.register_outputs({"fileSystemId": fs.id})

    def _create_security_group(
        self, name: str, args: FsxCacheArgs, child: pulumi.ResourceOptions
    ) -> tuple[aws.ec2.SecurityGroup, list[pulumi.Resource]]:
        """The file system's security group and its Lustre rules: both ways, with the cluster's
        security group and with itself (file servers talk to each other)."""
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"FSx for Lustre model cache of {args.cluster}: Lustre from the cluster only",
            tags={**args.tags, "Name": f"{args.cluster}-fsx-models"},
            opts=child,
        )
        sources = {"cluster": args.cluster_security_group_id, "self": sg.id}
        rules: list[pulumi.Resource] = []
        directions = ((aws.vpc.SecurityGroupIngressRule, "from"), (aws.vpc.SecurityGroupEgressRule, "to"))
        for who, source in sources.items():
            for rule_class, way in directions:
                for low, high in LUSTRE_PORTS:
                    rules.append(
                        rule_class(
                            f"{name}-lustre-{low}-{way}-{who}",
                            security_group_id=sg.id,
                            referenced_security_group_id=source,
                            ip_protocol="tcp",
                            from_port=low,
                            to_port=high,
                            description=f"Lustre {low}-{high} {way} the {who} security group",
                            opts=child,
                        )
                    )
        return sg, rules

    def _create_file_system(
        self, name: str, args: FsxCacheArgs, sg: aws.ec2.SecurityGroup, rules: list[pulumi.Resource]
    ) -> aws.fsx.LustreFileSystem:
        """The PERSISTENT_2 file system in the first private subnet, after its security group's rules."""
        cfg = args.config
        first_subnet = pulumi.Output.from_input(args.private_subnet_ids).apply(lambda ids: ids[0])
        return aws.fsx.LustreFileSystem(
            f"{name}-fs",
            deployment_type="PERSISTENT_2",
            storage_type="SSD",
            storage_capacity=cfg.storage_capacity_gib,
            per_unit_storage_throughput=cfg.throughput_per_tib,
            data_compression_type=cfg.data_compression,
            file_system_type_version=LUSTRE_VERSION,
            subnet_ids=first_subnet,  # one subnet: PERSISTENT_2 lives in one zone
            security_group_ids=[sg.id],
            # A cache of the bucket: the bucket holds the data, so no backups of the cache itself.
            automatic_backup_retention_days=0,
            skip_final_backup=True,
            tags={**args.tags, "Name": f"{args.cluster}-models"},
            # Deleted with the stack, before its subnet, security group and VPC (see the module's docstring).
            opts=pulumi.ResourceOptions(parent=self, depends_on=rules),
        )

    def _create_association(
        self, name: str, args: FsxCacheArgs, fs: aws.fsx.LustreFileSystem, child: pulumi.ResourceOptions
    ) -> aws.fsx.DataRepositoryAssociation:
        """The data repository association: imports the bucket (or `importPath`) and follows its changes."""
        cfg = args.config
        events = ["NEW", "CHANGED", "DELETED"]
        return aws.fsx.DataRepositoryAssociation(
            f"{name}-dra",
            file_system_id=fs.id,
            file_system_path="/",
            data_repository_path=pulumi.Output.from_input(args.bucket).apply(
                lambda b: data_repository_path(cfg.import_path, b)
            ),
            batch_import_meta_data_on_create=True,
            delete_data_in_filesystem=False,
            s3=aws.fsx.DataRepositoryAssociationS3Args(
                auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=events),
            ),
            tags=args.tags,
            opts=child,
        )

    def _create_claims(
        self,
        name: str,
        args: FsxCacheArgs,
        fs: aws.fsx.LustreFileSystem,
        driver: aws.eks.Addon,
        association: aws.fsx.DataRepositoryAssociation,
    ) -> None:
        """Per model namespace, a static PersistentVolume on the file system and its `model-cache` claim."""
        cfg = args.config
        for ns, namespace in sorted(args.namespaces.items()):
            volume = register(
                fsx_volume(
                    ns,
                    # NodePublishVolume mounts `<dnsname>@tcp:/<mountname>` from the volume attributes
                    # and uses the handle only as an id (aws-fsx-csi-driver pkg/driver/node.go).
                    pulumi.Output.format("{0}::{1}", fs.id, ns),
                    fs.dns_name,
                    fs.mount_name,
                    cfg.storage_capacity_gib,
                ),
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[driver, association]),
                name=f"{name}-pv-{ns}",
            )
            register(
                cache_claim(ns, cfg.storage_capacity_gib, storage_class=None, volume_name=fsx_volume_name(ns)),
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[volume, namespace]),
                name=f"{name}-claim-{ns}",
            )
