"""EC2NodeClass and NodePool manifests (karpenter.k8s.aws/v1, karpenter.sh/v1) for one `nodePools[]`
entry. Pure functions: a pool in, a manifest dict out.

What each object carries and why:
- EC2NodeClass: the AMI by alias (al2023 or bottlerocket; Karpenter pairs the NVIDIA and Neuron
  variants with accelerated types itself), subnets and security groups found by the cluster's
  `karpenter.sh/discovery` tag, the Karpenter node role, IMDSv2 with hop limit 1 (pods cannot reach
  the node's credentials), an encrypted gp3 root volume of `rootVolumeGiB`, and RAID0 over the
  instance store when `localNvme: raid0`.
  With `efa: true`, the type's EFA `networkInterfaces` (stacks/hardware.py `efa_layout`) and the EFA
  security group beside the cluster's (EFA_SECURITY_GROUP_TAG); with `capacityReservations`, the
  `capacityReservationSelectorTerms` that let the pool launch into them. With `imagePull: soci` (the
  default on accelerator pools that can), the userData that turns on SOCI parallel pull and the image
  volume's 600 MiB/s (stacks/fastpath.py). With `imagePull: snapshot` (Bottlerocket), the data volume
  created from the pre-pulled image cache's EBS snapshot (`ebs.snapshotID`) at the same 600 MiB/s.
- NodePool (one per capacity tier with `capacityPreference`, stacks/tiers.py: the first named after the
  pool, the others `<pool>-<type>`, each with one capacity type and a descending weight): requirements
  from the pool's instance types or families, capacity types and
  architecture; the accelerator taint and labels from components/scheduling.py (one source for the
  taint and its toleration); limits from stacks/fit.py; disruption with consolidateAfter and,
  by default on accelerator pools, a business-hours budget that keeps serving nodes in place; a
  static pool's `replicas`.
- With `warmNodes`, a PodTemplate and a Karpenter CapacityBuffer that keep that many of the pool's nodes
  launched for its largest model's pod (stacks/fastpath.py `warm_chunk`).
"""

from __future__ import annotations

from typing import Any

import pulumi

from stacks.config.pools import DisruptionBudget, NodePoolSection
from stacks.fastpath import (
    NODEADM_CONTENT_TYPE,
    SNAPSHOT,
    SOCI,
    SOCI_IOPS,
    SOCI_NODE_CONFIG,
    SOCI_THROUGHPUT_MIBPS,
    STANDARD,
    WarmChunk,
    bottlerocket_user_data,
    mime_archive,
    nodeadm_user_data,
)
from stacks.fit import pool_limits
from stacks.resolved import KARPENTER_NAMESPACE, ResolvedPool
from stacks.sharing import (
    bottlerocket_sharing_settings,
    mig_partition_script,
    overlay_capacity,
    pool_types,
    slice_resource,
)
from stacks.tiers import PoolTier, pool_tiers

from ..scheduling import POOL_LABEL, placement, pool_labels, pool_taints

DISCOVERY_TAG = "karpenter.sh/discovery"
# The security group EFA pools' nodes carry beside the cluster's (components/capacity/component.py),
# found by this tag with the cluster's name as its value.
EFA_SECURITY_GROUP_TAG = "inference-platform:efa"
NODE_CLASS_GROUP = "karpenter.k8s.aws"

# Mon-Fri 09:00-18:00 UTC: no consolidation or drift replacement of non-empty accelerator nodes, so a
# serving replica (minutes to load its weights) is not moved while users are on it.
BUSINESS_HOURS = DisruptionBudget.model_validate(
    {"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "9h", "reasons": ["Underutilized", "Drifted"]}
)
DEFAULT_BUDGET = DisruptionBudget.model_validate({"nodes": "10%"})


def block_devices(pool: NodePoolSection, image_pull: str = STANDARD) -> list[dict[str, Any]]:
    """AL2023 boots and runs containers from /dev/xvda; Bottlerocket keeps a small OS volume on
    /dev/xvda and its data (images, ephemeral storage) on /dev/xvdb, which is the `rootVolume`. On a SOCI
    pool the volume images land on gets the throughput parallel unpack needs; on a snapshot pool
    (Bottlerocket only, stacks/rules/fastpath.py) the data volume is created from the pre-pulled image
    cache, with the same throughput for the engine's reads of its image (stacks/fastpath.py)."""
    data: dict[str, Any] = {
        "volumeSize": f"{pool.root_volume_gib}Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
    }
    if image_pull in (SOCI, SNAPSHOT):
        data.update({"iops": SOCI_IOPS, "throughput": SOCI_THROUGHPUT_MIBPS})
    if image_pull == SNAPSHOT and pool.image_snapshot is not None and pool.image_snapshot.id is not None:
        data["snapshotID"] = pool.image_snapshot.id
        # EC2 launch templates take no encryption value for a volume created from a snapshot (the field's
        # doc in the EC2NodeClass CRD and LaunchTemplateEbsBlockDeviceRequest): the volume is encrypted as
        # the snapshot is, so the operator guide has the snapshot made encrypted.
        del data["encrypted"]
    if pool.ami_family == "bottlerocket":
        os_volume = {"volumeSize": "4Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
        return [
            {"deviceName": "/dev/xvda", "ebs": os_volume},
            {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": data},
        ]
    return [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": data}]


def user_data(pool: NodePoolSection) -> str:
    """The userData that turns on SOCI parallel pull for the pool's AMI family: a MIME part with nodeadm's
    NodeConfig on AL2023, the snapshotter setting on Bottlerocket (Karpenter merges either with its own)."""
    return bottlerocket_user_data() if pool.ami_family == "bottlerocket" else nodeadm_user_data()


def bottlerocket_node_user_data(pool: NodePoolSection, image_pull: str) -> str | None:
    """A Bottlerocket pool's userData: TOML settings (Karpenter merges its own cluster settings into them),
    the SOCI snapshotter when the pool pulls with SOCI and the device plugin's time-slicing on a shared pool
    (stacks/sharing.py `bottlerocket_sharing_settings`). None: nothing to add."""
    parts = [bottlerocket_user_data()] if image_pull == SOCI else []
    if (sharing := bottlerocket_sharing_settings(pool)) is not None:
        parts.append(sharing)
    return "\n".join(parts) if parts else None


def node_class_user_data(pool: NodePoolSection, image_pull: str) -> str | None:
    """The EC2NodeClass userData: the SOCI part when the pool pulls with SOCI and, on an AL2023 MIG pool,
    a shell-script part that partitions the GPUs (stacks/sharing.py `mig_partition_script`) in the same
    MIME archive (Karpenter appends its own NodeConfig part to it); on Bottlerocket, TOML settings. None:
    nothing to add."""
    if pool.ami_family == "bottlerocket":
        return bottlerocket_node_user_data(pool, image_pull)
    script = mig_partition_script(pool)
    if script is None:
        return user_data(pool) if image_pull == SOCI else None
    parts = [(NODEADM_CONTENT_TYPE, SOCI_NODE_CONFIG)] if image_pull == SOCI else []
    return mime_archive([*parts, ('text/x-shellscript; charset="us-ascii"', script)])


def ec2_node_class(
    resolved: ResolvedPool, *, cluster: str, node_role: pulumi.Input[str], tags: dict[str, str]
) -> dict[str, Any]:
    pool = resolved.config
    discovery = [{"tags": {DISCOVERY_TAG: cluster}}]
    security_groups = list(discovery)
    if resolved.network_interfaces:
        # Terms are ORed: the cluster's group and the EFA group, whose only rules let EFA traffic reach
        # the group itself (EFA needs that in and out; components/capacity/component.py).
        security_groups.append({"tags": {EFA_SECURITY_GROUP_TAG: cluster}})
    spec: dict[str, Any] = {
        "role": node_role,
        "amiSelectorTerms": [{"alias": pool.ami_alias}],
        "subnetSelectorTerms": discovery,
        "securityGroupSelectorTerms": security_groups,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "blockDeviceMappings": block_devices(pool, resolved.image_pull),
        "tags": {**tags, "inference-platform:pool": pool.name},
    }
    if pool.local_nvme == "raid0":
        spec["instanceStorePolicy"] = "RAID0"
    if (data := node_class_user_data(pool, resolved.image_pull)) is not None:
        spec["userData"] = data
    if resolved.network_interfaces:
        # Every node of the class gets this layout (Karpenter drops types it does not fit); efa-only
        # interfaces take no IPs, which is why the pool's pods per node drop (stacks/fit.py).
        spec["networkInterfaces"] = [n.manifest() for n in resolved.network_interfaces]
    if pool.capacity_reservations:
        spec["capacityReservationSelectorTerms"] = [term.manifest() for term in pool.capacity_reservations]
    return {
        "apiVersion": f"{NODE_CLASS_GROUP}/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": pool.name},
        "spec": spec,
    }


def requirements(pool: NodePoolSection, capacity_types: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The pool's instance types or families, the capacity types of one of its tiers (default: the
    pool's `capacityTypes`), its architecture and Linux."""
    if pool.instance_types:
        selector = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(pool.instance_types)}
    else:
        selector = {
            "key": f"{NODE_CLASS_GROUP}/instance-family",
            "operator": "In",
            "values": list(pool.instance_families),
        }
    return [
        selector,
        {
            "key": "karpenter.sh/capacity-type",
            "operator": "In",
            "values": list(pool.capacity_types if capacity_types is None else capacity_types),
        },
        {"key": "kubernetes.io/arch", "operator": "In", "values": [pool.architecture]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    ]


def budgets(pool: NodePoolSection) -> list[dict[str, Any]]:
    chosen = pool.disruption_budgets
    if chosen is None:
        chosen = [DEFAULT_BUDGET] if pool.accelerator == "none" else [DEFAULT_BUDGET, BUSINESS_HOURS]
    return [b.model_dump(by_alias=True, exclude_none=True) for b in chosen]


def node_pool(pool: NodePoolSection, tier: PoolTier | None = None) -> dict[str, Any]:
    """One NodePool of the pool: its only one, or one tier of a `capacityPreference` (stacks/tiers.py),
    which differs from its siblings only in name, capacity type and weight: the same EC2NodeClass, label,
    taints, limits (each tier its own, as Karpenter counts them per NodePool) and disruption."""
    tier = tier or pool_tiers(pool)[0]
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": "EC2NodeClass", "name": pool.name},
        "requirements": requirements(pool, tier.capacity_types),
        "expireAfter": pool.expire_after,
        # Without it a drain a PodDisruptionBudget blocks never ends, and the node is never replaced.
        "terminationGracePeriod": pool.termination_grace_period,
    }
    taints = pool_taints(pool)
    if taints:
        template_spec["taints"] = taints
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": pool_labels(pool)}, "spec": template_spec},
        "disruption": {
            "consolidationPolicy": pool.consolidation_policy,
            "consolidateAfter": pool.consolidate_after,
            "budgets": budgets(pool),
        },
    }
    limits = pool_limits(pool).manifest(pool.accelerator)
    if limits:
        spec["limits"] = limits
    if tier.weight is not None:
        spec["weight"] = tier.weight
    if pool.replicas is not None:
        spec["replicas"] = pool.replicas
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": tier.name}, "spec": spec}


# ---- warm nodes (`warmNodes`) --------------------------------------------------------------------------

# Karpenter 1.14's CapacityBuffer (autoscaling.x-k8s.io/v1beta1, its chart's crds/): Karpenter adds
# `replicas` virtual pods of the referenced PodTemplate to its scheduling and keeps nodes launched for
# them (kubernetes-sigs/karpenter designs/capacity-buffer.md: in-memory virtual pods, so the template's
# container is never pulled or run, and a real pod takes the room at once). Both live beside Karpenter.
BUFFER_API = "autoscaling.x-k8s.io/v1beta1"
BUFFER_NAMESPACE = KARPENTER_NAMESPACE


def warm_name(pool: NodePoolSection) -> str:
    return f"warm-{pool.name}"


def warm_pod_template(pool: NodePoolSection, chunk: WarmChunk, image: str) -> dict[str, Any]:
    """One warm node's placeholder: the chunk's resources, on the pool's nodes, tolerating its taint."""
    where = placement(pool)
    pod_spec = {
        "containers": [
            {
                "name": "placeholder",
                "image": image,
                "resources": {part: dict(values) for part, values in chunk.resources.items()},
            }
        ],
        "terminationGracePeriodSeconds": 0,
    }
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": warm_name(pool), "namespace": BUFFER_NAMESPACE},
        "template": {"metadata": {"labels": {POOL_LABEL: pool.name}}, "spec": where.place(pod_spec)},
    }


def capacity_buffer(pool: ResolvedPool) -> dict[str, Any]:
    """The pool's warm headroom: `warmNodes` chunks of its placeholder, active capacity (launched nodes)."""
    return {
        "apiVersion": BUFFER_API,
        "kind": "CapacityBuffer",
        "metadata": {"name": warm_name(pool.config), "namespace": BUFFER_NAMESPACE},
        "spec": {
            "podTemplateRef": {"name": warm_name(pool.config)},
            "replicas": pool.warm_nodes,
            "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
        },
    }


# ---- shared and fractional GPUs (`gpuSharing`, g6f) ------------------------------------------------------

OVERLAY_API = "karpenter.sh/v1alpha1"


def node_overlays(pool: NodePoolSection) -> list[dict[str, Any]]:
    """Karpenter NodeOverlays (karpenter.sh/v1alpha1, behind the nodeOverlay gate) that tell Karpenter what
    the pool's nodes will advertise beyond what EC2 reports: the slices of a shared pool
    (`nvidia.com/gpu.shared` or `nvidia.com/mig-<profile>`, per node) and a g6f's one vGPU as
    `nvidia.com/gpu`. One overlay per distinct capacity, scoped to the pool and the types it fits (its
    `capacity` replaces a resource EC2 reported, so a g6f's 0 GPUs become 1). Without them Karpenter never
    launches a node for a pod requesting a slice or a g6f's GPU."""
    groups: dict[tuple[tuple[str, int], ...], list[str]] = {}
    for itype in pool_types(pool):
        capacity = overlay_capacity(pool, itype)
        if capacity:
            groups.setdefault(tuple(sorted(capacity.items())), []).append(itype.name)
    kind = "gpu" if slice_resource(pool) is None else ("mig" if pool.gpu_sharing and pool.gpu_sharing.mig else "shared")
    return [
        {
            "apiVersion": OVERLAY_API,
            "kind": "NodeOverlay",
            "metadata": {"name": f"{pool.name}-{kind}-{'-'.join(str(v) for _, v in capacity)}"},
            "spec": {
                "requirements": [
                    # Every NodePool of the pool: its tiers too (capacityPreference), whose nodes are alike.
                    {"key": "karpenter.sh/nodepool", "operator": "In", "values": [t.name for t in pool_tiers(pool)]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
                ],
                "capacity": {name: str(count) for name, count in capacity},
            },
        }
        for capacity, types in groups.items()
    ]
