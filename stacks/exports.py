"""The platform stack's export contract: what app-team (workloads) stacks may rely on.

`platform_exports(config)` is the config-derived part, a pure function of a platform (or all-in-one)
stack's validated config: cluster name and version, node pools with their accelerators and resolved
instance types, add-ons, the model cache (kind, sizes, preparation settings) and its StorageClass,
the gateway settings and the Gateway routes attach to (namespace, name, listener, hostname), and
scheduler names. The Platform component exports it plus the values only the cloud knows (endpoint,
kubeconfig as a secret, OIDC provider, network ids, model bucket, the bucket reader's role).

The same function serves three readers, so they cannot disagree:
- `stacks validate` / `render` of a workloads stack, which finds the platform's own stack file in the
  repository (`platform_stack_file`) and computes its exports offline;
- the mocks, which answer the workloads stack's StackReference with them;
- `pulumi up`, where `__main__.py` reads them from the StackReference and `supply` hands them to the
  workloads rules before anything is registered.
`platform_pools(exports)` turns the exported pools back into NodePoolSection models so the
capacity checks (`stacks/capacity.py fit`) run against exactly the pools the platform created.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import PROJECT, StackConfig
from .config.addons import AddonsSection
from .config.gateway import GatewaySection
from .config.pools import NodePoolSection
from .config.storage import StorageSection
from .hardware import expand

# Bump when an export changes shape; a workloads stack refuses exports of another version.
# 2: storage carries the cache settings, storageClasses, gatewayParent, modelBucket, modelReaderRoleArn.
EXPORTS_VERSION = 2

# The Neuron Helm chart's second kube-scheduler (`scheduler.customScheduler`, fullnameOverride
# my-scheduler; shared/schemas/FINDINGS.md section 4). The Platform component exports the name the
# capacity concern actually installed when it differs.
NEURON_SCHEDULER = "my-scheduler"

# Keys whose values only exist once the platform is deployed (added by the Platform component).
OUTPUT_KEYS = (
    "clusterEndpoint",
    "kubeconfig",
    "oidcProviderArn",
    "clusterSecurityGroupId",
    "vpcId",
    "privateSubnetIds",
    "modelBucket",
    "modelReaderRoleArn",
)
# The storage settings a team's pods follow. Not existingClaim (a claim in the platform's namespaces,
# absent from a team's), nor the bucket and protection settings (the platform's resources).
STORAGE_KEYS = {"model_cache", "efs", "fsx", "local", "preparation"}
SECRET_KEYS = ("kubeconfig",)


def pool_export(pool: NodePoolSection) -> dict[str, Any]:
    """One pool as teams see it: enough to re-run the fit check and to place pods on it (labels and
    taints follow from name and accelerator through components/scheduling.py)."""
    return {
        "name": pool.name,
        "accelerator": pool.accelerator,
        "instanceTypes": [t.name for t in expand(pool.instance_types, pool.instance_families)],
        "capacityTypes": list(pool.capacity_types),
        "architecture": pool.architecture,
        "rootVolumeGiB": pool.root_volume_gib,
        "localNvme": pool.local_nvme,
        "limits": pool.limits.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def platform_exports(config: StackConfig) -> dict[str, Any]:
    """The config-derived exports of a platform or all-in-one stack (plain JSON values)."""
    if config.cluster is None:
        raise ValueError("only a stack with a cluster section (platform or all-in-one) has platform exports")
    addons = config.addons
    neuron_scheduler = NEURON_SCHEDULER if addons.neuron.enabled and addons.neuron.scheduler else None
    return {
        "exportsVersion": EXPORTS_VERSION,
        "clusterName": config.cluster.name,
        "kubernetesVersion": config.cluster.kubernetes_version,
        "environment": config.stack.environment,
        "region": config.aws_region,
        "nodePools": [pool_export(p) for p in config.node_pools],
        "addons": {
            (field.alias or name): getattr(addons, name).enabled for name, field in AddonsSection.model_fields.items()
        },
        "storage": config.storage.model_dump(mode="json", by_alias=True, exclude_none=True, include=STORAGE_KEYS),
        "storageClasses": storage_classes(config),
        "gateway": config.gateway.model_dump(mode="json", by_alias=True, exclude_none=True),
        "gatewayParent": gateway_parent(config),
        "schedulerNames": {"neuron": neuron_scheduler},
        # prometheus-adapter serves engine metrics to HPAs (autoscaling.owner: hpa). Added within
        # version 2: a reader treats its absence (an older platform) as unknown.
        "customMetrics": addons.monitoring.serves_custom_metrics,
    }


def storage_classes(config: StackConfig) -> dict[str, str]:
    """StorageClasses teams may claim from, by purpose: `modelCache` with `modelCache: efs` (dynamic
    EFS access points, one directory per claim). The storage component exports the same names."""
    from components.storage.manifests import EFS_STORAGE_CLASS

    return {"modelCache": EFS_STORAGE_CLASS} if config.storage.model_cache == "efs" else {}


def gateway_parent(config: StackConfig) -> dict[str, str] | None:
    """The Gateway listener model routes attach to (the stack's own, or AIBrix's), or None when the
    platform runs no gateway. The Platform component exports the one its front door actually used."""
    from components.gateway.manifests import parent_gateway

    if not (config.gateway.enabled or config.addons.aibrix.enabled):
        return None
    parent = parent_gateway(config)
    return gateway_parent_export(parent.namespace, parent.name, parent.section, config.gateway.hostname)


def gateway_parent_export(namespace: str, name: str, listener: str, hostname: str | None) -> dict[str, str]:
    out = {"namespace": namespace, "name": name, "listener": listener}
    return {**out, "hostname": hostname} if hostname else out


_POOL_KEYS = {f.alias or n for n, f in NodePoolSection.model_fields.items()}


def platform_pools(exports: dict[str, Any]) -> list[NodePoolSection]:
    """The exported pools as NodePoolSection models (instance types already resolved)."""
    return [
        NodePoolSection.model_validate({k: v for k, v in pool.items() if k in _POOL_KEYS})
        for pool in exports.get("nodePools") or []
    ]


def platform_addons(exports: dict[str, Any]) -> AddonsSection:
    return AddonsSection.model_validate({k: {"enabled": bool(v)} for k, v in (exports.get("addons") or {}).items()})


def platform_gateway(exports: dict[str, Any]) -> GatewaySection:
    return GatewaySection.model_validate(exports.get("gateway") or {})


def platform_storage(exports: dict[str, Any]) -> StorageSection:
    """The platform's model cache settings, as a team's pods and sizing see them."""
    return StorageSection.model_validate(exports.get("storage") or {})


def effective_config(config: StackConfig, exports: dict[str, Any]) -> StackConfig:
    """A workloads stack's config seen with the platform's pools, add-ons, storage and gateway, so the
    model builders and the sizing (stacks/sizing.py) look them up exactly as in an all-in-one stack.
    Validators do not re-run: a workloads stack still may not *set* these sections, it only reads them."""
    return config.model_copy(
        update={
            "node_pools": platform_pools(exports),
            "addons": platform_addons(exports),
            "storage": platform_storage(exports),
            "gateway": platform_gateway(exports),
        }
    )


# ---- where a workloads stack finds its platform's exports -------------------------------------------


@dataclass(frozen=True)
class PlatformSource:
    exports: dict[str, Any]
    where: str  # for messages: "stack reference acme/x/y" or a file path


_SUPPLIED: dict[str, PlatformSource] = {}


def supply(stack_ref: str, exports: dict[str, Any], where: str) -> None:
    """Record the exports read from the platform's StackReference (under `pulumi up`/preview)."""
    _SUPPLIED[stack_ref] = PlatformSource(exports, where)


def forget() -> None:
    _SUPPLIED.clear()


def platform_stack_file(stack_ref: str, root: Path | None = None) -> Path | None:
    """`org/project/<stack>` -> Pulumi.<stack>.yaml at the project root or in stacks/examples."""
    from .load import ROOT

    base = root or ROOT
    _, project, stack = stack_ref.split("/")
    if project != PROJECT:
        return None
    for candidate in (base / f"Pulumi.{stack}.yaml", base / "stacks" / "examples" / f"Pulumi.{stack}.yaml"):
        if candidate.exists():
            return candidate
    return None


def exports_from_file(path: Path) -> dict[str, Any]:
    """The config-derived exports of a platform stack file (ConfigError if that file is invalid).
    Cached per file version: every rule and model of a workloads stack asks for them."""
    return copy.deepcopy(_exports_cached(str(path), path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _exports_cached(path: str, mtime_ns: int) -> dict[str, Any]:
    from .errors import ConfigError, Problem, key_path
    from .load import load_stack_file

    config = load_stack_file(Path(path))
    if config.cluster is None:
        raise ConfigError(
            [
                Problem(
                    key_path(["stack", "role"]),
                    f"is {config.stack.role}: only a platform or all-in-one stack exports a cluster",
                )
            ],
            path,
        )
    return platform_exports(config)


def platform_for(stack_ref: str) -> PlatformSource | None:
    """The platform's exports: from the StackReference when the program supplied them, else from the
    platform's stack file when it is in this repository, else None (cannot be checked offline)."""
    if stack_ref in _SUPPLIED:
        return _SUPPLIED[stack_ref]
    path = platform_stack_file(stack_ref)
    if path is None:
        return None
    return PlatformSource(exports_from_file(path), str(path))
