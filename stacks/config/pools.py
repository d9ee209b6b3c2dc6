"""The `nodePools` section: Karpenter NodePools for NVIDIA GPUs, Inferentia2 and plain CPU."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from .base import CpuQuantity, DnsLabel, Duration, MemoryQuantity, Strict

Accelerator = Literal["nvidia", "neuron", "none"]
CapacityType = Literal["on-demand", "spot", "reserved"]
# Both become Karpenter requirement values (at most 63 characters, karpenter.sh_nodepools.yaml).
InstanceTypeName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$", max_length=63)]
InstanceFamily = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*$", max_length=63)]
# Karpenter's alias format: family@version, family one of the Linux families we support.
AmiAlias = Annotated[str, StringConstraints(pattern=r"^(al2023|bottlerocket)@(latest|v[0-9][0-9a-zA-Z._-]*)$")]
# Karpenter's NodePool disruption budget `duration` and `schedule` patterns (karpenter.sh_nodepools.yaml
# v1.14.1): hours and minutes only, and a five-field cron expression or one of its macros.
BudgetDuration = Annotated[str, StringConstraints(pattern=r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?$", max_length=32)]
CronSchedule = Annotated[
    str,
    StringConstraints(
        pattern=r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*/,?-]+( [0-9A-Za-z*/,?-]+){4})$",
        max_length=128,
    ),
]


class PoolLimits(Strict):
    """Upper bounds for the whole pool; cpu and memory are derived when not given."""

    accelerators: int | None = Field(
        default=None,
        ge=1,
        le=10000,
        description="Most GPUs or Neuron devices the pool may hold; unset CPU and memory limits are then derived "
        "so this one binds and one whole largest instance always fits. Not on an `accelerator: none` pool.",
    )
    cpu: CpuQuantity | None = Field(
        default=None,
        description='Pool-wide CPU limit as a Kubernetes quantity (e.g. `"256"`, no finer than 1m); unset: derived '
        "from `accelerators`, else none.",
    )
    memory: MemoryQuantity | None = Field(
        default=None,
        description="Pool-wide memory limit as a Kubernetes quantity that is a whole number of MiB (e.g. `1024Gi`); "
        "unset: derived from `accelerators`, else none.",
    )
    nodes: int | None = Field(
        default=None,
        ge=1,
        le=10000,
        description="Most nodes the pool may hold; only on a static pool (`replicas`), where it is the only "
        "limit Karpenter takes and `replicas` may not exceed it.",
    )


class DisruptionBudget(Strict):
    """A Karpenter disruption budget (karpenter.sh/v1 NodePool.spec.disruption.budgets[])."""

    nodes: Annotated[str, StringConstraints(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = Field(
        description='How many of the pool\'s nodes Karpenter may disrupt at once: a count (`"0"` blocks) or '
        "a percentage (`10%`)."
    )
    schedule: CronSchedule | None = Field(
        default=None,
        description="Cron schedule (UTC, five fields or a macro such as `@daily`) of when the budget starts to "
        "apply, e.g. `0 9 * * 1-5`; with `duration`. Unset: always.",
    )
    duration: BudgetDuration | None = Field(
        default=None,
        description="How long the budget applies after each `schedule` start, in hours and minutes as Karpenter "
        "takes it (e.g. `9h`, `1h30m`; no seconds or days); with `schedule`.",
    )
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = Field(
        default=None,
        description="Disruption reasons the budget limits; unset: all of them.",
    )

    @model_validator(mode="after")
    def _schedule_needs_duration(self) -> Self:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("schedule and duration go together: give both or neither")
        return self


class CapacityReservation(Strict):
    """One EC2NodeClass `capacityReservationSelectorTerms[]` entry (karpenter.k8s.aws/v1, v1.14.1): an
    On-Demand Capacity Reservation or Capacity Block by its id, or every active one carrying tags."""

    id: Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-z]+$")] | None = Field(
        default=None,
        description="The reservation's id, e.g. `cr-0123456789abcdef0`; give exactly one of this and `tags`.",
    )
    tags: dict[str, str] | None = Field(
        default=None,
        min_length=1,
        max_length=20,
        description="EC2 tags every selected reservation carries (at most 20; `*` matches any value); give "
        "exactly one of this and `id`.",
    )
    owner_id: Annotated[str, StringConstraints(pattern=r"^[0-9]{12}$")] | None = Field(
        default=None,
        description="With `tags`: only reservations this AWS account (12 digits) owns, e.g. one shared "
        "through AWS RAM.",
    )

    @model_validator(mode="after")
    def _id_or_tags(self) -> Self:
        if (self.id is None) == (self.tags is None):
            raise ValueError("give exactly one of id (e.g. cr-0123456789abcdef0) or tags (e.g. {team: ml})")
        if self.id is not None and self.owner_id is not None:
            # Karpenter treats id as exclusive of every other field of a term (CRD CEL rule).
            raise ValueError("ownerId goes with tags, not with id: an id names one reservation already")
        if self.tags is not None and any(not k or not v for k, v in self.tags.items()):
            raise ValueError("tag keys and values must not be empty (use '*' for any value)")
        return self

    def manifest(self) -> dict[str, object]:
        if self.id is not None:
            return {"id": self.id}
        term: dict[str, object] = {"tags": dict(self.tags or {})}
        if self.owner_id is not None:
            term["ownerID"] = self.owner_id
        return term


# An EBS snapshot id as EC2 issues them: `snap-` and 8 (older) or 17 hex digits.
SNAPSHOT_ID = re.compile(r"^snap-([0-9a-f]{8}|[0-9a-f]{17})$")


class ImageSnapshot(Strict):
    """A pre-pulled image cache (`nodePools[].imageSnapshot`): an EBS snapshot of a Bottlerocket data
    volume whose containerd store already holds the pool's engine images; each node's data volume is
    created from it, so the kubelet finds the images present (`IfNotPresent`) and pulls nothing."""

    # Optional here only so a missing id is refused by the rules with its fix (stacks/fastpath.py), not
    # with pydantic's bare "required".
    id: str | None = Field(
        default=None,
        description="Required. The snapshot's id, `snap-` and 17 (or 8) hex digits, e.g. `snap-0123456789abcdef0`: a "
        "snapshot of a Bottlerocket data volume (/dev/xvdb) holding the images (docs/operator-guide.md, "
        '"Cold start: the fast path"). Its size must not exceed `rootVolumeGiB`.',
    )
    fast_snapshot_restore: bool = Field(
        default=False,
        description="Whether EBS fast snapshot restore is enabled on the snapshot in every Availability Zone the "
        "pool launches into (the operator enables it, billed per snapshot and zone by the hour). With it a new "
        "volume delivers its full throughput at once; without it blocks load lazily from S3 at a rate AWS does "
        "not publish, and the cold-start estimate counts the image as a standard pull.",
    )

    @field_validator("id")
    @classmethod
    def _snapshot_id(cls, value: str | None) -> str | None:
        if value is not None and not SNAPSHOT_ID.match(value):
            raise ValueError(
                "an EBS snapshot id is snap- and 17 (or 8) lowercase hex digits, e.g. snap-0123456789abcdef0"
            )
        return value


# A MIG profile as NVIDIA names it: compute slices `g` and memory `gb` (e.g. `1g.10gb`, `3g.40gb`).
MigProfileName = Annotated[str, StringConstraints(pattern=r"^[1-7]g\.[0-9]+gb$", max_length=16)]


class TimeSlicing(Strict):
    """The NVIDIA device plugin's time-slicing: each GPU advertised `replicas` times as
    `nvidia.com/gpu.shared`; pods take turns on the whole GPU, with no memory or fault isolation."""

    replicas: int = Field(
        ge=2,
        le=16,
        description="Pods that share one GPU (2-16); each is advertised as one `nvidia.com/gpu.shared`. Time-slicing "
        "isolates nothing: the platform caps each replica's engine at the GPU's memory divided by this (vLLM "
        "`--gpu-memory-utilization`; other engines, which have no per-instance cap, are refused on the pool) and the "
        "fit rule checks the weights against that share.",
    )


class Mig(Strict):
    """Multi-Instance GPU: every GPU of the pool partitioned into instances of one profile, each a
    hardware-isolated slice (its own compute, memory and cache) advertised as `nvidia.com/mig-<profile>`."""

    profile: MigProfileName = Field(
        description="The MIG profile every GPU of the pool is cut into (mig-parted's `all-<profile>` layout), e.g. "
        "`1g.10gb` (7 per H100) or `3g.40gb` (2 per H100); it must be one the pool's GPU offers (A100, H100, H200, "
        "B200: stacks/data/mig-profiles.json). A10G, L4 and L40S have no MIG; the RTX PRO Blackwell of g7/g7e has MIG "
        "per NVIDIA but no profile table in the catalog, so it is refused there. One profile: mixed layouts (several "
        "profiles on one GPU) are refused.",
    )

    @field_validator("profile", mode="before")
    @classmethod
    def _one_profile(cls, value: object) -> object:
        # A mixed layout (mig-parted's `all-balanced`, or a list) would advertise several slice resources per
        # node, while a model picks a pool, not a profile, and the fit, quotas and NodeOverlay count one.
        if isinstance(value, list) or (isinstance(value, str) and any(c in value for c in ",+ ")):
            raise ValueError(
                f"{value!r} is a mixed MIG layout (several profiles on one GPU), which the platform does not "
                "offer: a model picks a pool, not a profile, and the fit, team quotas and NodeOverlay count one "
                "slice resource per pool; give one profile (e.g. 3g.40gb) and make one pool per profile"
            )
        return value


class GpuSharing(Strict):
    """How the pool's GPUs are shared among pods: time-slicing or MIG, exactly one."""

    time_slicing: TimeSlicing | None = Field(
        default=None, description="`{replicas: N}`: N pods per GPU, taking turns, no isolation."
    )
    mig: Mig | None = Field(
        default=None, description="`{profile: 1g.10gb}`: each GPU cut into hardware-isolated MIG instances."
    )

    @model_validator(mode="after")
    def _one_mode(self) -> Self:
        if (self.time_slicing is None) == (self.mig is None):
            raise ValueError("give exactly one of timeSlicing ({replicas: 4}) or mig ({profile: 1g.10gb})")
        return self


class NodePoolSection(Strict):
    """One entry of `inference-platform:nodePools`: a Karpenter NodePool and EC2NodeClass that launch
    nodes on demand when a pod asks for the pool's devices, and remove them when empty."""

    name: DnsLabel = Field(
        description="Name of the NodePool and its EC2NodeClass, unique in the stack; `models[].pool` refers to it."
    )
    accelerator: Accelerator = Field(
        default="none",
        description="The pool's devices: `nvidia` GPUs or `neuron` (Inferentia/Trainium) pools are tainted and "
        "labelled for them; must match the instance types in the catalog.",
    )
    instance_types: list[InstanceTypeName] = Field(
        default_factory=list,
        description="Exact EC2 instance types Karpenter may launch, e.g. `[g6.xlarge, g6.12xlarge]`; give "
        "exactly one of this and `instanceFamilies`.",
    )
    instance_families: list[InstanceFamily] = Field(
        default_factory=list,
        description="Instance families Karpenter may launch any size of, e.g. `[g6, g6e]`; give exactly one of "
        "this and `instanceTypes`.",
    )
    capacity_types: list[CapacityType] = Field(
        default_factory=lambda: list[CapacityType](["on-demand"]),
        min_length=1,
        description="EC2 capacity types Karpenter may use (`on-demand`, `spot`, `reserved`), each at most once, in "
        "one NodePool. With more than one, Karpenter chooses the order itself: `reserved`, then `spot`, then "
        "`on-demand` (a warning says so); to choose the order, use `capacityPreference` instead.",
    )
    capacity_preference: list[CapacityType] | None = Field(
        default=None,
        description="Capacity types in the order the pool should use them, e.g. `[on-demand, spot]` (on-demand "
        "first, spot when on-demand is short) or `[reserved, on-demand]`: one Karpenter NodePool per type (a "
        "tier), the first named after the pool and the others `<pool>-<type>`, with descending weights (from "
        "`weight`, else from the number of tiers) and one EC2NodeClass. Every tier carries the pool's label, "
        "taints and `limits` (each tier its own: Karpenter counts limits per NodePool, so a full tier sends new "
        "nodes to the next). Instead of `capacityTypes`; not on a static pool (`replicas`).",
    )
    architecture: Literal["amd64", "arm64"] = Field(
        default="amd64", description="CPU architecture of the nodes; must match the instance types."
    )
    ami_alias: AmiAlias = Field(
        default="al2023@latest",
        description="Karpenter AMI alias, `al2023@<version>` or `bottlerocket@<version>`; Karpenter picks the "
        "NVIDIA or Neuron variant per type. `environment: prod` refuses `@latest` (pin e.g. `al2023@v20261015`).",
    )
    root_volume_gib: int = Field(
        default=200,
        ge=20,
        le=16384,
        description="Size in GiB of each node's encrypted gp3 root volume (Bottlerocket: its data volume), the "
        "node's ephemeral storage unless `localNvme: raid0`.",
    )
    local_nvme: Literal["raid0", "none"] = Field(
        default="none",
        description="`raid0` stripes the instance store and makes it the node's ephemeral storage; refused on "
        "types without instance store (inf2). A pool that runs models needs it with `storage.modelCache: local`.",
    )
    limits: PoolLimits = Field(default_factory=PoolLimits, description="Upper bounds on the whole pool's capacity.")
    consolidate_after: Duration = Field(
        default="10m",
        description="How long a node stays empty or underused before Karpenter consolidates it (`s`, `m`, `h`).",
    )
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        default="WhenEmptyOrUnderutilized",
        description="Which nodes Karpenter consolidates: only empty ones, or underused ones too.",
    )
    disruption_budgets: list[DisruptionBudget] | None = Field(
        default=None,
        max_length=50,
        description="Karpenter disruption budgets (at most 50, as the NodePool schema takes). Unset: `nodes: 10%` "
        "and, on accelerator pools, also "
        '`nodes: "0"` for `Underutilized` and `Drifted` Mon-Fri 09:00-18:00 UTC.',
    )
    expire_after: Annotated[str, StringConstraints(pattern=r"^(([0-9]+(s|m|h))+|Never)$")] = Field(
        default="720h",
        description="Node lifetime before Karpenter replaces it (`s`, `m`, `h`), or `Never` to keep nodes.",
    )
    termination_grace_period: Duration = Field(
        default="1h",
        description="The longest Karpenter drains one of the pool's nodes (NodePool "
        "`spec.template.spec.terminationGracePeriod`, `s`, `m`, `h`) once it is being replaced (expiry, drift, "
        "consolidation): past it the pods still there are deleted, even if a PodDisruptionBudget holds them. It must "
        "exceed the graceful shutdown of every model on the pool (60s); the default leaves an hour for a "
        "PodDisruptionBudget to wait for a replacement replica. Unset upstream, a blocked drain never ends.",
    )
    weight: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Preference among pools that could serve the same pod (higher first); unset: no weight. With "
        "`capacityPreference`, the first tier's weight; each further tier takes one less, so it must be at least "
        "the number of tiers.",
    )
    efa: bool = Field(
        default=False,
        description="Attach every EFA interface the instance type has (the EC2NodeClass's `networkInterfaces` "
        "layout: the primary on card 0, one `efa-only` per network card), install the EFA device plugin and "
        "open the node security group to itself, for multi-node groups (`models[].nodesPerReplica`). Refused on "
        "types without EFA, or whose allowed types differ in EFA layout or accelerator count.",
    )
    capacity_reservations: list[CapacityReservation] = Field(
        default_factory=list,
        max_length=30,
        description="Capacity reservations (On-Demand Capacity Reservations or Capacity Blocks) the pool may "
        "launch into, each `{id: cr-...}` or `{tags: {...}, ownerId?}`; any one matches. Requires `reserved` "
        "in `capacityTypes`, and `reserved` requires these: Karpenter uses a reservation only when a pool "
        "selects it. Capacity Block nodes are drained 40 minutes before the block ends.",
    )
    image_pull: Literal["soci", "standard", "snapshot"] | None = Field(
        default=None,
        description="How nodes pull images: `soci` turns on the SOCI snapshotter's parallel pull and unpack (AL2023: "
        "nodeadm's `FastImagePull` feature gate in the EC2NodeClass userData; Bottlerocket 1.44.0 or later: "
        "`settings.container-runtime.snapshotter`) and gives the image volume 600 MiB/s of gp3 throughput; "
        "`snapshot` (Bottlerocket only) creates each node's data volume from `imageSnapshot`, a pre-pulled image "
        "cache, at the same 600 MiB/s; `standard` pulls one layer at a time. Unset: `soci` on accelerator pools "
        "whose types all have at least 4 vCPUs and 8 GiB (below that nodeadm ignores the gate), `standard` "
        "elsewhere.",
    )
    image_snapshot: ImageSnapshot | None = Field(
        default=None,
        description="The pre-pulled image cache of an `imagePull: snapshot` pool, `{id: snap-..., "
        "fastSnapshotRestore: false}`; only with `imagePull: snapshot`.",
    )
    warm_nodes: int = Field(
        default=0,
        ge=0,
        le=100,
        description="Nodes kept launched and empty for models that scale to zero (a Karpenter CapacityBuffer of "
        "this many chunks, each one node's worth of the pool's largest model replica; turns on Karpenter's "
        "`capacityBuffer` feature gate). They are paid for while idle: `stacks plan` states the cost. The pool's "
        "limits must leave room for them; not on a static pool (`replicas`).",
    )
    replicas: int | None = Field(
        default=None,
        ge=0,
        le=10000,
        description="A static pool (Karpenter static capacity, alpha): this many nodes run whatever the pods "
        "ask, never consolidated; turns on Karpenter's `staticCapacity` feature gate. Only `limits.nodes`, no "
        "`weight` and no consolidation settings; a pool cannot switch between static and dynamic in place.",
    )

    gpu_sharing: GpuSharing | None = Field(
        default=None,
        description="Share each GPU among pods (nvidia pools): `{timeSlicing: {replicas: N}}` (AL2023, or "
        "Bottlerocket v1.25.0+ through its userData settings) or `{mig: {profile: 1g.10gb}}` (AL2023 only). "
        "Models on the pool then request one slice (`nvidia.com/gpu.shared` or "
        "`nvidia.com/mig-<profile>`, `acceleratorsPerReplica: 1`), a Karpenter NodeOverlay tells Karpenter how many "
        "slices each type holds, and the device plugin gets the pool's sharing config through the node label "
        "`nvidia.com/device-plugin.config`. Unset: whole GPUs.",
    )

    @model_validator(mode="after")
    def _one_selector(self) -> Self:
        if bool(self.instance_types) == bool(self.instance_families):
            raise ValueError(
                "give exactly one of instanceTypes (e.g. [g6.xlarge]) or instanceFamilies (e.g. [g6, g6e])"
            )
        if len(set(self.capacity_types)) != len(self.capacity_types):
            raise ValueError("capacityTypes lists a value twice")
        return self

    @property
    def capacity_order(self) -> tuple[CapacityType, ...]:
        """Every capacity type the pool may launch, in the order it prefers them: `capacityPreference` when
        given (one NodePool each), else `capacityTypes` (one NodePool, Karpenter's own order)."""
        return tuple(self.capacity_preference or self.capacity_types)

    @property
    def ami_family(self) -> str:
        return self.ami_alias.split("@", 1)[0]

    @property
    def ami_pinned(self) -> bool:
        return not self.ami_alias.endswith("@latest")

    @property
    def bottlerocket_version(self) -> tuple[int, ...] | None:
        """The release a pinned Bottlerocket alias names (`bottlerocket@v1.44.0` -> (1, 44, 0)); None: latest,
        or not Bottlerocket."""
        found = re.match(r"^bottlerocket@v([0-9]+)\.([0-9]+)\.([0-9]+)", self.ami_alias)
        return tuple(int(p) for p in found.groups()) if found else None
