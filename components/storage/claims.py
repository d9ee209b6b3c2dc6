"""Kubernetes objects of model storage as pure functions: the reader ServiceAccount, the EFS
StorageClass for dynamic access points, the FSx static PersistentVolume, and the cache claims.

Values such as a file system id may be Pulumi Outputs; they sit inside the dicts unchanged and
resolve when the object is applied.
"""

from __future__ import annotations

from typing import Any

from stacks.naming import labels
from stacks.resolved import CACHE_CLAIM, EFS_STORAGE_CLASS, READER_SERVICE_ACCOUNT

__all__ = ["CACHE_CLAIM", "EFS_STORAGE_CLASS", "READER_SERVICE_ACCOUNT"]

EFS_DRIVER = "efs.csi.aws.com"
FSX_DRIVER = "fsx.csi.aws.com"


def _labels() -> dict[str, str]:
    return labels("model-storage", "model-cache")


def service_account(name: str, namespace: str) -> dict[str, Any]:
    """Pods using this account get read-only bucket credentials through EKS Pod Identity (the
    association is made on the AWS side; no annotation is needed)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels()},
    }


def efs_storage_class(file_system_id: Any, retain: bool) -> dict[str, Any]:
    """Dynamic provisioning through EFS access points (`efs-ap`): each claim gets its own directory
    under /models with its own POSIX identity."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": EFS_STORAGE_CLASS, "labels": _labels()},
        "provisioner": EFS_DRIVER,
        "parameters": {
            "provisioningMode": "efs-ap",
            "fileSystemId": file_system_id,
            "directoryPerms": "700",
            "basePath": "/models",
        },
        "reclaimPolicy": "Retain" if retain else "Delete",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": False,
    }


def cache_claim(
    namespace: str,
    size_gib: int,
    access_mode: str = "ReadWriteMany",
    storage_class: str | None = EFS_STORAGE_CLASS,
    volume_name: str | None = None,
) -> dict[str, Any]:
    """The model-cache claim of one namespace."""
    spec: dict[str, Any] = {
        "accessModes": [access_mode],
        # "" binds only to a pre-created volume (static provisioning) and never to a default class.
        "storageClassName": storage_class if storage_class is not None else "",
        "resources": {"requests": {"storage": f"{size_gib}Gi"}},
    }
    if volume_name:
        spec["volumeName"] = volume_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": CACHE_CLAIM, "namespace": namespace, "labels": _labels()},
        "spec": spec,
    }


def fsx_volume_name(namespace: str) -> str:
    return f"fsx-model-cache-{namespace}"


def fsx_volume(namespace: str, volume_handle: Any, dns_name: Any, mount_name: Any, size_gib: int) -> dict[str, Any]:
    """A static PersistentVolume for the existing Lustre file system, reserved for one namespace's
    claim (a volume binds to exactly one claim, so each namespace gets its own view)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": fsx_volume_name(namespace), "labels": _labels()},
        "spec": {
            "capacity": {"storage": f"{size_gib}Gi"},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["noatime", "flock"],
            "claimRef": {"namespace": namespace, "name": CACHE_CLAIM},
            "csi": {
                "driver": FSX_DRIVER,
                "volumeHandle": volume_handle,
                "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
            },
        },
    }
