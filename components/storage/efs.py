"""EFS model cache (`modelCache: efs`): an encrypted file system (elastic throughput by default), a
mount target in every private subnet behind a security group that admits NFS (2049) only from the
cluster security group, the EFS CSI driver as an EKS add-on with its Pod Identity role, a
StorageClass for dynamic access points, and one ReadWriteMany `model-cache` claim per model
namespace.

With `storage.protect` the file system is protected and retained, but never its mount targets: they
are the cache's only network interfaces in the VPC, so `pulumi destroy` deletes them (and their
security group) with the VPC, and the retained file system, a regional resource outside any VPC,
blocks nothing."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.storage import Efs
from stacks.naming import TOKEN

from ..k8s import register
from .addon import csi_addon
from .claims import CACHE_CLAIM, EFS_STORAGE_CLASS, cache_claim, efs_storage_class
from .storage_iam import EFS_CSI_POLICY

NFS_PORT = 2049


def _nth(i: int, ids: list[str]) -> str:
    return ids[i]


@dataclass(frozen=True, kw_only=True)
class EfsCacheArgs:
    config: Efs
    cluster: str
    cluster_name: pulumi.Input[str]
    kubernetes_version: str
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    subnet_count: int  # known from the stack file (zones created, or subnets adopted)
    cluster_security_group_id: pulumi.Input[str]
    namespaces: dict[str, pulumi.Resource]
    provider: k8s.Provider
    protect: bool
    tags: dict[str, str]


class EfsCache(pulumi.ComponentResource):
    """A shared EFS model cache reachable from every private subnet."""

    file_system_id: pulumi.Output[str]
    # The StorageClass every claim on the cache binds through (a team's too, components/tenancy.py).
    storage_class: pulumi.Resource
    claim_name: str = CACHE_CLAIM

    def __init__(self, name: str, args: EfsCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:EfsCache", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cfg = args.config
        sg = self._create_security_group(name, args, child)
        fs = aws.efs.FileSystem(
            f"{name}-fs",
            encrypted=True,
            performance_mode="generalPurpose",
            throughput_mode=cfg.throughput_mode,
            provisioned_throughput_in_mibps=cfg.provisioned_throughput_mibps,
            tags={**args.tags, "Name": f"{args.cluster}-models"},
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect),
        )
        subnets = pulumi.Output.from_input(args.private_subnet_ids)
        targets = [
            aws.efs.MountTarget(
                f"{name}-mount-{i}",
                file_system_id=fs.id,
                subnet_id=subnets.apply(functools.partial(_nth, i)),
                security_groups=[sg.id],
                # Never protected or retained, even when the file system is: see the module's docstring.
                opts=pulumi.ResourceOptions(parent=self, protect=False, retain_on_delete=False),
            )
            for i in range(args.subnet_count)
        ]
        driver = csi_addon(
            f"{name}-csi",
            addon="aws-efs-csi-driver",
            cluster_name=args.cluster_name,
            cluster=args.cluster,
            kubernetes_version=args.kubernetes_version,
            service_account="efs-csi-controller-sa",
            policy_arn=EFS_CSI_POLICY,
            tags=args.tags,
            parent=self,
        )
        self.storage_class = self._create_claims(name, args, fs, driver, targets)
        self.file_system_id = fs.id
        self.register_outputs({"fileSystemId": fs.id})

    def _create_security_group(
        self, name: str, args: EfsCacheArgs, child: pulumi.ResourceOptions
    ) -> aws.ec2.SecurityGroup:
        """The mount targets' security group: NFS from the cluster security group only."""
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"EFS model cache of {args.cluster}: NFS from the cluster only",
            tags={**args.tags, "Name": f"{args.cluster}-efs-models"},
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nfs",
            security_group_id=sg.id,
            referenced_security_group_id=args.cluster_security_group_id,
            ip_protocol="tcp",
            from_port=NFS_PORT,
            to_port=NFS_PORT,
            description="NFS from the cluster security group",
            opts=child,
        )
        return sg

    def _create_claims(
        self,
        name: str,
        args: EfsCacheArgs,
        fs: aws.efs.FileSystem,
        driver: aws.eks.Addon,
        targets: list[aws.efs.MountTarget],
    ) -> pulumi.Resource:
        """The EFS StorageClass, after the CSI driver and every mount target, and a `model-cache`
        claim from it in every model namespace; the StorageClass."""
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[driver, *targets])
        storage_class = register(efs_storage_class(fs.id, retain=args.protect), k8s_opts, name=f"{name}-class")
        for ns, namespace in sorted(args.namespaces.items()):
            register(
                cache_claim(ns, args.config.cache_size_gib, storage_class=EFS_STORAGE_CLASS),
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[storage_class, namespace]),
                name=f"{name}-claim-{ns}",
            )
        return storage_class
