"""The `nodePools` section: Karpenter NodePools for NVIDIA GPUs, Inferentia2 and plain CPU."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from .base import DnsLabel, Duration, Strict

Accelerator = Literal["nvidia", "neuron", "none"]
CapacityType = Literal["on-demand", "spot", "reserved"]
InstanceTypeName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")]
InstanceFamily = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*$")]
# Karpenter's alias format: family@version, family one of the Linux families we support.
AmiAlias = Annotated[str, StringConstraints(pattern=r"^(al2023|bottlerocket)@(latest|v[0-9][0-9a-zA-Z._-]*)$")]
Quantity = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti)?$")]


class PoolLimits(Strict):
    """Upper bounds for the whole pool; cpu and memory are derived when not given."""

    accelerators: int | None = Field(default=None, ge=1, le=10000)
    cpu: Quantity | None = None
    memory: Quantity | None = None


class DisruptionBudget(Strict):
    """A Karpenter disruption budget (karpenter.sh/v1 NodePool.spec.disruption.budgets[])."""

    nodes: Annotated[str, StringConstraints(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")]
    schedule: str | None = None
    duration: Duration | None = None
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = None

    @model_validator(mode="after")
    def _schedule_needs_duration(self) -> Self:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("schedule and duration go together: give both or neither")
        return self


class NodePoolSection(Strict):
    """One entry of `inference-platform:nodePools`."""

    name: DnsLabel
    accelerator: Accelerator = "none"
    instance_types: list[InstanceTypeName] = Field(default_factory=list)
    instance_families: list[InstanceFamily] = Field(default_factory=list)
    capacity_types: list[CapacityType] = Field(default_factory=lambda: list[CapacityType](["on-demand"]), min_length=1)
    architecture: Literal["amd64", "arm64"] = "amd64"
    ami_alias: AmiAlias = "al2023@latest"
    root_volume_gib: int = Field(default=200, ge=20, le=16384)
    local_nvme: Literal["raid0", "none"] = "none"
    limits: PoolLimits = Field(default_factory=PoolLimits)
    consolidate_after: Duration = "10m"
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = "WhenEmptyOrUnderutilized"
    disruption_budgets: list[DisruptionBudget] | None = None
    expire_after: Annotated[str, StringConstraints(pattern=r"^(([0-9]+(s|m|h))+|Never)$")] = "720h"
    weight: int | None = Field(default=None, ge=1, le=100)

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
    def ami_family(self) -> str:
        return self.ami_alias.split("@", 1)[0]

    @property
    def ami_pinned(self) -> bool:
        return not self.ami_alias.endswith("@latest")
