"""Which input changes make the provider replace a resource (delete and create it again), for the types
that matter to an upgrade: the ones that hold state, and the Kubernetes fields the API server will not
update in place. `stacks diff` (stacks/diff.py) reads this one table.

Where each row comes from:
- AWS types (pulumi-aws 7.51.1 bridges the Terraform AWS provider v6; its Python SDK does not carry
  ForceNew): the `ForceNew: true` attributes of hashicorp/terraform-provider-aws,
  internal/service/s3/bucket.go (`bucket`, `bucket_prefix`, `object_lock_enabled`; both names are also
  Computed, so dropping one from the inputs changes nothing), internal/service/efs/file_system.go
  (`availability_zone_name`, `creation_token`, `encrypted`, `kms_key_id`, `performance_mode`),
  internal/service/fsx/lustre_file_system.go (`backup_id`, `copy_tags_to_backups`, `deployment_type`,
  `drive_cache_type`, `export_path`, `import_path`, `imported_file_chunk_size`, `kms_key_id`,
  `per_unit_storage_throughput`, `security_group_ids`, `storage_type`, `subnet_ids`,
  `file_system_type_version`; its CustomizeDiff forces a new file system when `storage_capacity`
  shrinks), internal/service/kms/key.go (`custom_key_store_id`, `customer_master_key_spec`, `key_usage`,
  `multi_region`, `xks_key_id`).
- The EKS cluster (pulumi-eks 4.4.0 `eks:index:Cluster`, a component): it passes `name` to the
  aws.eks.Cluster whose `name` is ForceNew (terraform-provider-aws internal/service/eks/cluster.go), and
  its schema marks `ipFamily` replaceOnChanges; `kubernetesServiceIpAddressRange` becomes the cluster's
  `kubernetes_network_config.service_ipv4_cidr`, ForceNew. (Its `bootstrapSelfManagedAddons` is ForceNew
  upstream but pulumi-eks ignores changes to it.)
- Kubernetes (pulumi-kubernetes 4.34.2 provider/pkg/provider/diff.go `forceNewProperties`): every
  object's `metadata.name` and `metadata.namespace`; apps/v1 Deployment `spec.selector`; StatefulSet
  `spec.podManagementPolicy`, `spec.revisionHistoryLimit`, `spec.selector`, `spec.serviceName`,
  `spec.volumeClaimTemplates`; batch/v1 Job `spec.completions`, `spec.parallelism`, `spec.selector`,
  `spec.template`; core/v1 ConfigMap `data`, `binaryData`; Secret `type`, `data`, `stringData`; Service
  `spec.clusterIP`; PersistentVolumeClaim `spec`; PersistentVolume `spec.csi` (and its other volume
  sources); ResourceQuota `spec.scopes`; storage.k8s.io/v1 StorageClass `parameters`, `provisioner`;
  RoleBinding and ClusterRoleBinding `roleRef`. (Its DaemonSet row is keyed `Daemonset` and never
  matches, so a DaemonSet selector change is refused by the API server rather than replaced.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

BUCKET = "aws:s3/bucket:Bucket"
EFS = "aws:efs/fileSystem:FileSystem"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
KMS_KEY = "aws:kms/key:Key"
EKS_CLUSTER = "eks:index:Cluster"

# Types whose replacement loses data (the weights in the bucket, the caches on the file systems, the
# Secrets a KMS key encrypts) or everything running on them (the cluster): `stacks diff` refuses it
# unless the stack names the resource in stack.intendedReplacements.
STATEFUL = {
    BUCKET: "the model bucket and every weight in it",
    EFS: "the EFS model cache and everything cached on it",
    FSX: "the FSx for Lustre model cache and everything cached on it",
    KMS_KEY: "a KMS key, and with it what it encrypts (the cluster's Secrets)",
    EKS_CLUSTER: "the EKS cluster and everything running on it",
}

Compare = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]


@dataclass(frozen=True)
class ForcesNew:
    """One input (a dotted path of the inputs as the engine sees them) whose change replaces the resource."""

    path: str
    # When the change forces a new resource: any change, a change that sets a value (an Optional and
    # Computed attribute: dropping it keeps the live value), or a smaller number.
    when: str = "changed"
    # The stack key that sets it, for the message (None: the program's own choice).
    key: str | None = None


def _at(inputs: Mapping[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def forces(row: ForcesNew, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    before, after = _at(old, row.path), _at(new, row.path)
    if before == after:
        return False
    if row.when == "set":
        return after is not None
    if row.when == "decreased":
        return isinstance(before, int | float) and isinstance(after, int | float) and after < before
    return True


def _bucket_name_kept(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """A bucket first named from `bucketPrefix`, now given `bucket` that starts with that prefix: the
    name the prefix generated, kept if it is the live one (pinning storage.modelBucket.name does this)."""
    prefix, name = old.get("bucketPrefix"), new.get("bucket")
    return old.get("bucket") is None and isinstance(prefix, str) and isinstance(name, str) and name.startswith(prefix)


AWS: dict[str, tuple[ForcesNew, ...]] = {
    BUCKET: (
        ForcesNew("bucket", "set", key="storage.modelBucket.name"),
        ForcesNew("bucketPrefix", "set", key="cluster.name (the generated name's prefix)"),
        ForcesNew("objectLockEnabled"),
    ),
    EFS: tuple(
        ForcesNew(p) for p in ("availabilityZoneName", "creationToken", "encrypted", "kmsKeyId", "performanceMode")
    ),
    FSX: (
        *(
            ForcesNew(p)
            for p in (
                "backupId",
                "copyTagsToBackups",
                "deploymentType",
                "driveCacheType",
                "exportPath",
                "importPath",
                "importedFileChunkSize",
                "kmsKeyId",
                "securityGroupIds",
                "storageType",
                "subnetIds",
                "fileSystemTypeVersion",
            )
        ),
        ForcesNew("perUnitStorageThroughput", key="storage.fsx.throughputPerTiB"),
        ForcesNew("storageCapacity", "decreased", key="storage.fsx.storageCapacityGiB"),
    ),
    KMS_KEY: tuple(
        ForcesNew(p) for p in ("customKeyStoreId", "customerMasterKeySpec", "keyUsage", "multiRegion", "xksKeyId")
    ),
    EKS_CLUSTER: (
        ForcesNew("name", key="cluster.name"),
        ForcesNew("ipFamily"),
        ForcesNew("kubernetesServiceIpAddressRange"),
    ),
}

_SELECTOR = ("spec.selector",)
KUBERNETES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): _SELECTOR,
    ("apps", "StatefulSet"): (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    ("batch", "Job"): ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    ("core", "ConfigMap"): ("binaryData", "data"),
    ("core", "Secret"): ("type", "stringData", "data"),
    ("core", "Service"): ("spec.clusterIP",),
    ("core", "PersistentVolumeClaim"): ("spec",),
    ("core", "PersistentVolume"): ("spec.csi", "spec.nfs", "spec.hostPath", "spec.local"),
    ("core", "ResourceQuota"): ("spec.scopes",),
    ("storage.k8s.io", "StorageClass"): ("parameters", "provisioner"),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("roleRef",),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("roleRef",),
}
METADATA = ("metadata.name", "metadata.namespace")


def rows(resource_type: str) -> tuple[ForcesNew, ...]:
    """The replace-on-change inputs of a type (none for a type the table does not hold)."""
    if resource_type in AWS:
        return AWS[resource_type]
    if resource_type.startswith("kubernetes:") and resource_type.count(":") == 2:
        group_version, kind = resource_type.split(":")[1:]
        group = group_version.rpartition("/")[0] or "core"
        if group == "helm.sh":
            return ()
        return tuple(ForcesNew(p) for p in (*METADATA, *KUBERNETES.get((group, kind), ())))
    return ()


def replacing_inputs(resource_type: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ForcesNew]:
    """The inputs whose change from `old` to `new` replaces a resource of this type."""
    found = [row for row in rows(resource_type) if forces(row, old, new)]
    if resource_type == BUCKET and _bucket_name_kept(old, new):
        found = [row for row in found if row.path not in ("bucket", "bucketPrefix")]
    return found
