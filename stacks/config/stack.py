"""The `stack` section: what this stack is for (role), how strict its guardrails are, and, for a
team's workloads stack, which platform it runs on and the team's quota there."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from .base import CpuQuantity, DnsLabel, KeyedError, MemoryQuantity, PositiveCpu, PositiveMemory, Strict
from .pools import MigProfileName

Role = Literal["all-in-one", "platform", "workloads"]
Environment = Literal["dev", "staging", "prod"]

# A resource's logical name, the last part of its URN (`platform-storage-bucket-bucket`).
ResourceName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]

StackRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]


class ContainerDefaults(Strict):
    """LimitRange defaults for a container that states no requests or limits of its own."""

    cpu: PositiveCpu = Field(
        default="250m",
        description="CPU request the team namespace's LimitRange gives a container that states none: a Kubernetes "
        "quantity in cores or millicores (e.g. `250m`, `2`), no finer than 1m.",
    )
    memory: PositiveMemory = Field(
        default="512Mi",
        description="Memory request, and memory limit, the LimitRange gives a container that states none: a "
        "Kubernetes quantity that is a whole number of MiB (e.g. `512Mi`, `2Gi`).",
    )


class Quota(Strict):
    """The team's share of the platform: a ResourceQuota on each of its namespaces, and a LimitRange so a
    container without requests still counts against it. One replica of every model must fit the quota (a
    warning says when all replicas do not), and so must the platform's helper pods in the namespace (the
    acceptance and benchmark Jobs, the KV-cache tier pruner, the compile and fill Jobs, the endpoint picker),
    which it charges too."""

    gpus: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="NVIDIA GPUs each of the team's namespaces admits (`requests.nvidia.com/gpu` of the "
        "ResourceQuota); 0 allows none.",
    )
    neuron_devices: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="Whole Neuron devices each of the team's namespaces admits "
        "(`requests.aws.amazon.com/neuron`); 0 allows none.",
    )
    shared_gpus: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="Time-sliced GPU slices each of the team's namespaces admits (`requests.nvidia.com/gpu.shared`, "
        "one per replica on a `gpuSharing.timeSlicing` pool); 0 allows none.",
    )
    mig_instances: dict[MigProfileName, Annotated[int, Field(ge=0, le=100_000)]] = Field(
        default_factory=dict,
        max_length=16,
        description="MIG instances each of the team's namespaces admits, per profile (`requests.nvidia.com/mig-"
        "<profile>`, one per replica on a `gpuSharing.mig` pool), e.g. `{3g.40gb: 4}`. A ResourceQuota bounds only "
        "the resources it names, so every MIG profile of the platform's pools must be listed (0 forbids it).",
    )
    cpu: CpuQuantity = Field(
        description="CPU each of the team's namespaces admits (`requests.cpu`): a Kubernetes quantity in cores or "
        "millicores, e.g. `'64'`, no finer than 1m."
    )
    memory: MemoryQuantity = Field(
        description="Memory each of the team's namespaces admits (`requests.memory`): a Kubernetes quantity that "
        "is a whole number of MiB, e.g. `512Gi`."
    )
    pods: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="Most pods the team's namespace may hold (`pods`): serving pods and the "
        "platform's helper pods (acceptance, benchmark, pruner, compile and fill Jobs, endpoint picker) alike.",
    )
    container_defaults: ContainerDefaults = Field(
        default_factory=ContainerDefaults,
        description="Requests for containers that state none, so they still count against the quota.",
    )


class StackSection(Strict):
    """`inference-platform:stack`: what this stack is for, how strict its guardrails are and, for a team's
    workloads stack, the platform it runs on and the team's quota there."""

    role: Role = Field(
        default="all-in-one",
        description="What the stack builds: `all-in-one` (cluster and models), `platform` (cluster, pools, "
        "add-ons, storage and gateway; no models) or `workloads` (one team's models on a platform stack).",
    )
    environment: Environment = Field(
        default="dev",
        description="Guardrail level. `prod` refuses unpinned AMIs, images without digests, model revisions "
        "that are not 40-hex commits and a gateway without named TLS (`dev` and `staging` only warn), refuses "
        "`gateway.auth: none` and `storage.protect: false`, and turns on EKS deletion protection and, unless "
        "`cluster.vpc.natGateways` says otherwise, a NAT gateway per zone.",
    )
    platform_stack: StackRef | None = Field(
        default=None,
        description="The platform stack a workloads stack runs on, as `org/project/stack`; required for "
        "`role: workloads` and refused for any other role.",
    )
    team: DnsLabel | None = Field(
        default=None,
        description="Workloads only (required there): the team, one the platform stack declares in `teams`; its "
        "namespaces, quota, deploy identity and client keys are the platform's declaration of it.",
    )
    intended_replacements: list[ResourceName] = Field(
        default_factory=list,
        max_length=50,
        description="Resources that hold state (the model bucket, the EFS or FSx file system, a KMS key, the EKS "
        "cluster) this update may replace, by the name `python -m stacks diff` prints (e.g. "
        "`platform-storage-fsx-fs`). `stacks diff` refuses replacing any other: it loses their data, or the cluster "
        "and everything on it. Remove the entry once the update is done.",
    )
    quota: Quota | None = Field(
        default=None,
        description="Refused: a team's quota is the platform's to set (`teams[].quota` of the platform stack), "
        "so a team cannot raise its own.",
    )

    @model_validator(mode="after")
    def _role_needs(self) -> Self:
        if self.role == "workloads":
            # At the missing key itself (stack.team), not at the section, so the fix names where it goes.
            if self.platform_stack is None:
                raise KeyedError(
                    [
                        (
                            ("platformStack",),
                            "platformStack is required when role is workloads: name the platform stack "
                            "as org/project/stack, e.g. acme/inference-platform/platform-prod",
                        )
                    ]
                )
            if self.team is None:
                raise KeyedError(
                    [
                        (
                            ("team",),
                            "team is required when role is workloads: name the team the platform stack declares "
                            "in teams",
                        )
                    ]
                )
            if self.quota is not None:
                raise KeyedError(
                    [
                        (
                            ("quota",),
                            "a team's quota is the platform's to set: remove it here and give it as teams[].quota "
                            "in the platform stack, which puts it on every namespace of the team",
                        )
                    ]
                )
        else:
            if self.platform_stack is not None:
                raise ValueError(
                    f"platformStack is only read by a workloads stack; remove it or set role: workloads "
                    f"(role is {self.role})"
                )
            for key, value in (("team", self.team), ("quota", self.quota)):
                if value is not None:
                    raise ValueError(
                        f"{key} is only read by a workloads stack; remove it or set role: workloads "
                        f"(role is {self.role})"
                    )
        return self

    @property
    def prod(self) -> bool:
        return self.environment == "prod"
