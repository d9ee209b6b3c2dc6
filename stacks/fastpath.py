"""The cold start's fast path, as facts every layer reads: when a pool can pull images with the SOCI
snapshotter's parallel pull, what its image volume needs for it, and where a model's compiled artifacts
live on the shared cache.

SOCI parallel pull and unpack (awslabs/soci-snapshotter `parallel_pull_unpack` mode):
- AL2023: nodeadm turns it on with the `FastImagePull` feature gate of its NodeConfig
  (awslabs/amazon-eks-ami nodeadm/api/v1alpha1/nodeconfig_types.go: `Feature` enum
  `InstanceIdNodeName;FastImagePull`), and only on a node with at least 4 vCPUs and 7 GiB of memory as
  the kernel reports it (nodeadm/internal/containerd/config.go `UseSOCISnapshotter`: below that the gate
  is ignored without a word, so a pool whose types are smaller is refused rather than left slow). The
  catalog's nominal memory is a little above what the kernel reports, hence 8 GiB here.
- Bottlerocket: `settings.container-runtime.snapshotter = "soci"` (bottlerocket-os/bottlerocket-core-kit
  #576, #582), whose default pull mode is parallel-pull-unpack (bottlerocket#4785); the settings arrived in
  Bottlerocket 1.44.0 (the project website's 1.44.x settings reference), so an older pinned alias is refused.
- Parallel unpack writes layers as fast as they arrive: gp3's 125 MiB/s baseline would be the bottleneck,
  so the volume images live on gets 600 MiB/s, with the 3000 IOPS gp3 includes (gp3 allows at most
  0.25 MiB/s per provisioned IOPS, so 600 MiB/s needs at least 2400).

A pre-pulled image cache (`imagePull: snapshot`, `imageSnapshot`): on Bottlerocket, containerd keeps
images on the data volume /dev/xvdb (Karpenter's Bottlerocket block device defaults: /dev/xvda for the
OS, /dev/xvdb for data), so a node whose data volume is created from an EBS snapshot of a volume that
already pulled the images starts its containers without a pull (aws-samples/bottlerocket-images-cache; AWS
containers blog "Reduce container startup time on Amazon EKS with Bottlerocket data volume"). The
EC2NodeClass gives the data volume `ebs.snapshotID` (karpenter.k8s.aws/v1 blockDeviceMappings[].ebs)
and the same 600 MiB/s as a SOCI pool: the engine reads the image's files off that volume as it starts.
AL2023 keeps images on its root volume, which comes from the AMI: a cache there needs a custom AMI, so
the mode is refused on AL2023 pools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .config.pools import NodePoolSection
from .fit import ACCELERATOR_RESOURCE, Requests, over_limits
from .hardware import InstanceType
from .resolved import ResolvedModel, ResolvedPool
from .sharing import SHARED_RESOURCE, slice_resource, slices_per_node

SOCI = "soci"
STANDARD = "standard"
SNAPSHOT = "snapshot"

SOCI_MIN_VCPU = 4
SOCI_MIN_MEMORY_GIB = 8
SOCI_THROUGHPUT_MIBPS = 600
SOCI_IOPS = 3000
BOTTLEROCKET_SOCI_SINCE = (1, 44, 0)

# nodeadm's NodeConfig (node.eks.aws/v1alpha1) in the EC2NodeClass userData: Karpenter puts its own
# NodeConfig first and this part after it in one MIME multipart archive
# (karpenter-provider-aws pkg/providers/amifamily/bootstrap/nodeadm.go), and nodeadm merges the parts in
# order (nodeadm/doc/examples.md), so the feature gate joins the cluster settings Karpenter writes.
NODEADM_CONTENT_TYPE = "application/node.eks.aws"
MIME_BOUNDARY = "//"


def _too_small(types: Iterable[InstanceType]) -> list[str]:
    return sorted(t.name for t in types if t.vcpu < SOCI_MIN_VCPU or t.memory_gib < SOCI_MIN_MEMORY_GIB)


def soci_refusal(pool: NodePoolSection, types: Iterable[InstanceType]) -> str | None:
    """Why the pool's nodes cannot pull with SOCI, as a message with the fix; None when they can."""
    small = _too_small(types)
    if small:
        return (
            f"nodeadm pulls with SOCI only on nodes of {SOCI_MIN_VCPU}+ vCPUs and {SOCI_MIN_MEMORY_GIB}+ GiB; "
            f"{', '.join(small)} are smaller: use xlarge or larger types, or imagePull: standard"
        )
    if pool.ami_family == "bottlerocket":
        version = pool.bottlerocket_version
        if version is not None and version < BOTTLEROCKET_SOCI_SINCE:
            since = ".".join(str(p) for p in BOTTLEROCKET_SOCI_SINCE)
            return (
                f"Bottlerocket has the SOCI snapshotter setting from v{since}; {pool.ami_alias} is older: pin "
                f"bottlerocket@v{since} or later, or set imagePull: standard"
            )
    return None


def snapshot_refusal(pool: NodePoolSection) -> tuple[str, str] | None:
    """Why the pool cannot start from its pre-pulled image cache, as (the key, the message with the fix);
    None when it can or does not ask to."""
    if pool.image_pull != SNAPSHOT:
        if pool.image_snapshot is not None:
            return (
                "imageSnapshot",
                f"imageSnapshot is read only with imagePull: snapshot (this pool pulls with "
                f"{pool.image_pull or 'the default'}): set imagePull: snapshot, or remove imageSnapshot",
            )
        return None
    if pool.ami_family != "bottlerocket":
        return (
            "imagePull",
            f"{pool.ami_alias} keeps container images on its root volume, which comes from the AMI: a pre-pulled "
            f"cache there needs a custom AMI. Use amiAlias: bottlerocket@<version> (its images live on the data "
            f"volume the snapshot restores), or imagePull: soci",
        )
    if pool.image_snapshot is None:
        return (
            "imageSnapshot",
            "imagePull: snapshot needs the snapshot to create data volumes from: add imageSnapshot: "
            '{id: snap-0123456789abcdef0, fastSnapshotRestore: false} (docs/operator-guide.md, "Cold start: the '
            'fast path", builds one)',
        )
    if pool.image_snapshot.id is None:
        return (
            "imageSnapshot.id",
            "the image cache's EBS snapshot id is missing: add id: snap-0123456789abcdef0 (yours, from "
            'docs/operator-guide.md, "Cold start: the fast path")',
        )
    return None


def image_pull(pool: NodePoolSection, types: Iterable[InstanceType]) -> str:
    """The pool's pull path: as the stack file says, else `soci` on an accelerator pool that can (its
    multi-GB engine images are what a cold start waits for) and `standard` elsewhere."""
    if pool.image_pull is not None:
        return pool.image_pull
    if pool.accelerator == "none" or soci_refusal(pool, types) is not None:
        return STANDARD
    return SOCI


SOCI_NODE_CONFIG = (
    "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  featureGates:\n    FastImagePull: true\n"
)


def mime_archive(parts: list[tuple[str, str]]) -> str:
    """An AL2023 userData MIME multipart archive of (content type, body) parts, in order."""
    body = "".join(f"--{MIME_BOUNDARY}\nContent-Type: {kind}\n\n{text}\n" for kind, text in parts)
    return (
        f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n\n{body}--{MIME_BOUNDARY}--\n'
    )


def nodeadm_user_data() -> str:
    """The AL2023 EC2NodeClass userData of a SOCI pool: one MIME part, a NodeConfig enabling FastImagePull."""
    return mime_archive([(NODEADM_CONTENT_TYPE, SOCI_NODE_CONFIG)])


def bottlerocket_user_data() -> str:
    """The Bottlerocket EC2NodeClass userData of a SOCI pool (TOML settings Karpenter merges with its own)."""
    return '[settings.container-runtime]\nsnapshotter = "soci"\n'


# ---- compile caches --------------------------------------------------------------------------------

# Where compiled artifacts live on the shared cache, beside the owners' weight trees (`platform/`,
# `teams/`): `_` starts no owner prefix or model name, so the tree never collides with weights.
COMPILE_DIR = "_compile"
# The caches every replica of a model mounts alike (ReadWriteMany): where a compile cache can be shared.
SHARED_CACHES = ("efs", "fsx")


def image_key(tag: str, digest: str | None) -> str:
    """The engine image's part of the compile key: its tag, and the digest's first 12 hex digits when
    pinned (two builds under one tag compile differently)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", tag)
    return f"{safe}-{digest.split(':', 1)[-1][:12]}" if digest else safe


def shape_key(tensor: int, pipeline: int) -> str:
    """The replica's parallel shape: a compiled graph is per tensor and pipeline split."""
    return f"tp{tensor}-pp{pipeline}"


# ---- warm nodes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarmChunk:
    """One warm node of a pool (`warmNodes`): the placeholder pod Karpenter's CapacityBuffer keeps room
    for (the pool's largest model pod, or the pool's smallest type's accelerators when it runs none: on a
    shared pool its slices, `nvidia.com/gpu.shared` or `nvidia.com/mig-<profile>`), its
    accelerators and host requests, and the instance type one chunk is expected to launch: the smallest of
    the pool's types that holds it (Karpenter launches the cheapest that fits)."""

    resources: Mapping[str, Mapping[str, str]]
    requests: Requests
    instance: InstanceType | None
    # What sized it: `models[i]` of the largest pod, or the pool's instance type.
    sized_by: str


def _holds(pool: NodePoolSection, itype: InstanceType, want: Requests) -> bool:
    return (
        itype.accelerator_count >= max(want.gpu, want.neuron)
        and slices_per_node(pool, itype) >= want.gpu_shared + want.mig
        and itype.alloc_cpu_m >= want.cpu_m
        and itype.alloc_memory_mib >= want.memory_mib
    )


def _whole_node(pool: ResolvedPool, smallest: list[InstanceType]) -> WarmChunk | None:
    """A warm node of a pool no model runs on: the accelerators of the pool's smallest type, as its nodes
    advertise them. A shared pool's nodes advertise slices and no whole GPU (time-slicing renames them,
    MIG cuts them), so its chunk asks for the slices a node of that type holds (the NodeOverlay's count),
    never an `nvidia.com/gpu` no node of the pool offers."""
    sliced = slice_resource(pool.config)
    if sliced is not None:
        types = [t for t in smallest if slices_per_node(pool.config, t)]
        if not types:
            return None
        itype, resource = types[0], sliced
        count = slices_per_node(pool.config, itype)
        want = Requests(gpu_shared=count) if sliced == SHARED_RESOURCE else Requests(mig=count)
    else:
        accelerator = ACCELERATOR_RESOURCE.get(pool.accelerator)
        if accelerator is None or not smallest:
            return None
        itype, resource, count = smallest[0], accelerator, smallest[0].accelerator_count
        want = Requests(**({"gpu": count} if pool.accelerator == "nvidia" else {"neuron": count}))
    return WarmChunk(
        resources={"requests": {resource: str(count)}, "limits": {resource: str(count)}},
        requests=want,
        instance=itype,
        sized_by=f"the pool's instance type {itype.name}",
    )


def warm_chunk(pool: ResolvedPool, models: Iterable[ResolvedModel]) -> WarmChunk | None:
    """The chunk a warm node of `pool` is sized to; None for a pool with neither a model nor accelerators
    to size it by."""
    mine = [m for m in models if m.pool.name == pool.name]
    smallest = sorted(pool.instance_types, key=lambda t: (t.accelerator_count, t.vcpu, t.memory_gib))
    if mine:
        largest = max(mine, key=lambda m: (max(m.requests.gpu, m.requests.neuron), m.requests.memory_mib))
        want = largest.requests
        fits = [t for t in smallest if _holds(pool.config, t, want)]
        return WarmChunk(
            resources=largest.serving_resources,
            requests=want,
            instance=fits[0] if fits else None,
            sized_by=largest.key(),
        )
    return _whole_node(pool, smallest)


def warm_room(pool: ResolvedPool, chunk: WarmChunk) -> str | None:
    """Why `pool.warm_nodes` chunks do not fit under the pool's limits (each a whole node of the chunk's
    type: Karpenter counts node capacity against limits); None when they do."""
    n, itype, limits = pool.warm_nodes, chunk.instance, pool.limits
    if itype is None:
        return f"no instance type of the pool holds one warm chunk (sized by {chunk.sized_by})"
    exceeded = over_limits(limits, itype, n)
    over = []
    if "accelerators" in exceeded:
        over.append(f"{n * itype.accelerator_count} accelerators > limits.accelerators {exceeded['accelerators']}")
    if "cpu" in exceeded:
        over.append(f"{n * itype.vcpu} vCPUs > the cpu limit {exceeded['cpu'] / 1000:g}")
    if "memory" in exceeded:
        over.append(f"{n * itype.memory_gib:g} GiB > the memory limit {exceeded['memory'] / 1024:g} GiB")
    if not over:
        return None
    return f"{n} warm {itype.name} node(s) need {'; '.join(over)}"


def warm_pools(
    pools: Iterable[ResolvedPool], models: Iterable[ResolvedModel]
) -> tuple[tuple[ResolvedPool, WarmChunk], ...]:
    """Every pool with `warmNodes` and the chunk one of its warm nodes holds (a pool with nothing to size
    one by is refused before this runs)."""
    placed = tuple(models)
    found = []
    for pool in pools:
        chunk = warm_chunk(pool, placed) if pool.warm_nodes else None
        if chunk is not None:
            found.append((pool, chunk))
    return tuple(found)


def warm_cost(pool: ResolvedPool, chunk: WarmChunk | None) -> str:
    """What a pool's warm nodes cost while idle, in words: the hardware catalog holds no prices, so it is
    said in instance-hours of the type one warm node launches, to price at the region's on-demand rate."""
    n = pool.warm_nodes
    if not n:
        return "no warm nodes"
    itype = chunk.instance.name if chunk and chunk.instance else "an instance of the pool"
    return (
        f"{n} warm node(s) kept launched and idle: {n} x {itype} on-demand, {n * 730} instance-hours a month "
        f"(priced at the region's on-demand rate for {itype}; the catalog holds no prices)"
    )
