"""A platform's exports: written from its resolved view (`export_platform`) and read back as that view
(`read_platform`) by a workloads stack, through these two functions only; which export keys only the
cloud knows; and a pool as the platform resolves and exports it (`resolve_pool`).

The exports come from one of three places, each passed explicitly to the pipeline
(stacks/pipeline.py), so offline and live cannot disagree:
- `pulumi up` / preview: `__main__.py` reads them from the platform's StackReference
  (components/platform_stack.py);
- `stacks validate` / `render` of a workloads stack: the platform's own stack file in this repository
  (stacks/pipeline.py `repo_platform`), checked and resolved offline;
- the mocks, which answer the StackReference's read with the same file's exports (or a test's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config.addons import AddonsSection
from .config.gateway import GatewaySection
from .config.pools import NodePoolSection
from .config.stack import Quota
from .config.storage import StorageSection
from .fastpath import image_pull
from .fit import Installed, daemonset_overhead, daemonsets_on, pool_limits
from .hardware import expand
from .resolved import EXPORTS_VERSION, GatewayParent, PlatformView, ResolvedPool, Team, TraceExport
from .tiers import pool_tiers

__all__ = [
    "EXPORTS_VERSION",
    "OUTPUT_KEYS",
    "SECRET_KEYS",
    "PlatformExports",
    "export_platform",
    "read_platform",
    "resolve_pool",
]

# The storage settings a team's pods follow. Not existingClaim (a claim in the platform's namespaces,
# absent from a team's), nor the bucket and protection settings (the platform's resources).
STORAGE_KEYS = {"model_cache", "efs", "fsx", "local", "preparation"}
_POOL_KEYS = {f.alias or n for n, f in NodePoolSection.model_fields.items()}

# Keys whose values only exist once the platform is deployed (added by the InferencePlatform component).
OUTPUT_KEYS = (
    "clusterEndpoint",
    # What a team's stack builds its kubeconfig from, with clusterName, region and its deploy role.
    "clusterCertificateAuthority",
    # The cluster creator's kubeconfig, for the platform team: a team's stack never reads it.
    "kubeconfig",
    "oidcProviderArn",
    "clusterSecurityGroupId",
    "vpcId",
    "privateSubnetIds",
    "modelBucket",
    # Team name -> the ARN of the role its workloads stack deploys as (components/tenancy.py).
    "teamDeployRoleArns",
)
SECRET_KEYS = ("kubeconfig",)


@dataclass(frozen=True)
class PlatformExports:
    """A platform's exports (plain JSON values) and where they were read, for messages: `stack
    org/project/stack` or the platform's stack file."""

    exports: dict[str, Any]
    where: str


def resolve_pool(pool: NodePoolSection, platform: Installed | None) -> ResolvedPool:
    """A pool with its instance types from the hardware catalog, and the DaemonSets on its nodes: exactly
    those the platform runs when its add-ons and storage are known (None: every one that may run there,
    so a borderline replica is refused rather than left Pending)."""
    types = tuple(expand(pool.instance_types, pool.instance_families))
    return ResolvedPool(
        config=pool,
        instance_types=types,
        overhead=daemonset_overhead(pool, platform),
        daemonsets=tuple(d.name for d in daemonsets_on(pool, platform)),
        limits=pool_limits(pool),
        image_pull=image_pull(pool, types),
        warm_nodes=pool.warm_nodes,
        tiers=pool_tiers(pool),
    )


def _pool_export(pool: ResolvedPool) -> dict[str, Any]:
    """One pool as teams see it: enough to re-run the fit check and to place pods on it."""
    p = pool.config
    out: dict[str, Any] = {
        "name": p.name,
        "accelerator": p.accelerator,
        "instanceTypes": [t.name for t in pool.instance_types],
        "capacityTypes": list(p.capacity_order),
        "architecture": p.architecture,
        "rootVolumeGiB": p.root_volume_gib,
        # A team's multi-node group requests the pool's EFA devices (ResolvedPool.efa_per_node).
        "efa": p.efa,
        "localNvme": p.local_nvme,
        "limits": p.limits.model_dump(mode="json", by_alias=True, exclude_none=True),
        # Added within version 3: how its nodes pull images and the warm nodes kept for it, as resolved (a
        # team's cold-start estimate reads them); absent (an older platform): the defaults.
        "imagePull": pool.image_pull,
        "warmNodes": pool.warm_nodes,
    }
    if p.capacity_preference:
        # Added within version 3, only on a tiered pool: a team's plan lists the tiers its models may land on.
        out["capacityPreference"] = list(p.capacity_preference)
        if p.weight is not None:
            out["weight"] = p.weight
    if p.image_snapshot is not None:
        # Added within version 3, only on a snapshot pool: whether its image cache has fast snapshot
        # restore decides a team's image term (stacks/coldstart.py); absent: no cache.
        out["imageSnapshot"] = p.image_snapshot.model_dump(mode="json", by_alias=True)
    if p.gpu_sharing is not None:
        # Added within version 3, only on a shared pool: a team's replica there requests one slice
        # (stacks/sharing.py) and is fitted and counted against its quota as one; absent: whole GPUs.
        out["gpuSharing"] = p.gpu_sharing.model_dump(mode="json", by_alias=True, exclude_none=True)
    return out


def _parent_export(parent: GatewayParent | None) -> dict[str, Any] | None:
    if parent is None:
        return None
    out: dict[str, Any] = {"namespace": parent.namespace, "name": parent.name, "listener": parent.listener}
    if parent.hostname:
        out["hostname"] = parent.hostname
    # Added within version 2: the listener admits routes from the namespaces the platform labels (a team's
    # routes live in the team's namespace); absent (an older platform): only its own namespace's.
    out["shared"] = parent.shared
    return out


def export_platform(view: PlatformView) -> dict[str, Any]:
    """The platform's exports (plain JSON values): what workloads stacks may rely on."""
    return {
        "exportsVersion": view.exports_version,
        "clusterName": view.cluster_name,
        "kubernetesVersion": view.kubernetes_version,
        "environment": view.environment,
        "region": view.region,
        "nodePools": [_pool_export(p) for p in view.pools],
        "addons": {
            (f.alias or name): getattr(view.addons, name).enabled for name, f in AddonsSection.model_fields.items()
        },
        "storage": view.storage.model_dump(mode="json", by_alias=True, exclude_none=True, include=STORAGE_KEYS),
        "storageClasses": dict(view.storage_classes),
        "gateway": view.gateway.model_dump(mode="json", by_alias=True, exclude_none=True),
        "gatewayParent": _parent_export(view.gateway_parent),
        "schedulerNames": {"neuron": view.neuron_scheduler},
        # Added within version 2: a reader treats its absence (an older platform) as unknown.
        "customMetrics": view.custom_metrics,
        # Added within version 2: the Prometheus a team's KEDA triggers query; absent: unknown.
        "prometheus": view.prometheus,
        # Added within version 2: the app teams the platform declares; absent: an older platform, which
        # declares none (every workloads stack on it is refused until it does).
        "teams": [_team_export(t) for t in view.teams],
        # Added within version 3, only while the platform traces: a team's models export spans to it.
        **({"tracing": _tracing_export(view.tracing)} if view.tracing is not None else {}),
    }


def _tracing_export(tracing: TraceExport) -> dict[str, Any]:
    """Where a team's traced engines send spans: the platform's in-cluster collector (never the backend,
    which only the collector reaches) and the head sampling ratio every hop follows."""
    return {"endpoint": tracing.endpoint, "samplingRatio": tracing.sampling_ratio}


def read_tracing(exports: dict[str, Any]) -> TraceExport | None:
    """The platform's tracing as exported; absent (a platform that does not trace, or an older one that
    did not say): off."""
    tracing = exports.get("tracing")
    if not tracing:
        return None
    return TraceExport(endpoint=str(tracing["endpoint"]), sampling_ratio=float(tracing["samplingRatio"]))


def _quota_export(quota: Quota) -> dict[str, Any]:
    """A team's quota as exported. Added within version 3: `sharedGpus` and `migInstances`, only when set,
    so a platform that shares no GPUs exports what an older workloads stack reads."""
    out = quota.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not quota.shared_gpus:
        out.pop("sharedGpus", None)
    if not quota.mig_instances:
        out.pop("migInstances", None)
    return out


def _team_export(team: Team) -> dict[str, Any]:
    """What a team's stack reads of its declaration (its deployers stay with the platform)."""
    assert team.quota is not None
    out: dict[str, Any] = {
        "name": team.name,
        "namespaces": list(team.namespaces),
        "quota": _quota_export(team.quota),
        "apiKeysSecret": team.api_keys_secret,
    }
    if team.litellm_models:
        litellm: dict[str, Any] = {"models": list(team.litellm_models)}
        if team.litellm_max_budget is not None:
            litellm["maxBudget"] = team.litellm_max_budget
        if team.litellm_budget_duration is not None:
            litellm["budgetDuration"] = team.litellm_budget_duration
        for key, limit in (("tpmLimit", team.litellm_tpm_limit), ("rpmLimit", team.litellm_rpm_limit)):
            if limit is not None:
                litellm[key] = limit
        out["litellm"] = litellm
    return out


def read_teams(exports: dict[str, Any]) -> tuple[Team, ...]:
    return tuple(
        Team(
            name=str(t["name"]),
            namespaces=tuple(str(n) for n in t["namespaces"]),
            quota=Quota.model_validate(t["quota"]),
            api_keys_secret=str(t["apiKeysSecret"]),
            litellm_models=tuple(str(m) for m in (t.get("litellm") or {}).get("models") or ()),
            litellm_max_budget=(t.get("litellm") or {}).get("maxBudget"),
            litellm_budget_duration=(t.get("litellm") or {}).get("budgetDuration"),
            litellm_tpm_limit=(t.get("litellm") or {}).get("tpmLimit"),
            litellm_rpm_limit=(t.get("litellm") or {}).get("rpmLimit"),
        )
        for t in exports.get("teams") or []
    )


# Add-ons a team stack reads as off whatever the platform runs: tracing's settings (the backend) are the
# platform's collector's alone; a team's models read where to export from `tracing` (read_tracing).
PLATFORM_ONLY_ADDONS = frozenset({"tracing"})


def read_addons(exports: dict[str, Any]) -> AddonsSection:
    flags = {
        k: {"enabled": bool(v) and k not in PLATFORM_ONLY_ADDONS} for k, v in (exports.get("addons") or {}).items()
    }
    return AddonsSection.model_validate(flags)


def read_storage(exports: dict[str, Any]) -> StorageSection:
    return StorageSection.model_validate(exports.get("storage") or {})


def read_pools(exports: dict[str, Any]) -> tuple[ResolvedPool, ...]:
    """The exported pools (instance types already resolved by the platform). The exports carry the
    add-ons' on/off only, not every setting that decides a DaemonSet, so every DaemonSet that may run
    counts on them."""
    return tuple(
        resolve_pool(NodePoolSection.model_validate({k: v for k, v in pool.items() if k in _POOL_KEYS}), None)
        for pool in exports.get("nodePools") or []
    )


def read_parent(exports: dict[str, Any]) -> GatewayParent | None:
    parent = exports.get("gatewayParent")
    if not parent:
        return None
    return GatewayParent(
        namespace=str(parent["namespace"]),
        name=str(parent["name"]),
        listener=str(parent["listener"]),
        hostname=parent.get("hostname"),
        own=False,
        shared=bool(parent.get("shared")),
    )


def read_platform(exports: dict[str, Any], where: str) -> PlatformView:
    """A platform's exports read back as the view it was exported from (`where` names them)."""
    return PlatformView(
        where=where,
        known=True,
        exports_version=int(exports.get("exportsVersion") or 0),
        cluster_name=str(exports.get("clusterName") or ""),
        kubernetes_version=str(exports.get("kubernetesVersion") or ""),
        environment=str(exports.get("environment") or ""),
        region=str(exports.get("region") or ""),
        pools=read_pools(exports),
        addons=read_addons(exports),
        storage=read_storage(exports),
        storage_classes=dict(exports.get("storageClasses") or {}),
        gateway=GatewaySection.model_validate(exports.get("gateway") or {}),
        gateway_parent=read_parent(exports),
        neuron_scheduler=(exports.get("schedulerNames") or {}).get("neuron"),
        custom_metrics=exports.get("customMetrics"),
        prometheus=exports.get("prometheus"),
        teams=read_teams(exports),
        tracing=read_tracing(exports),
    )
