"""The `stack` section: what this stack is for (role), how strict its guardrails are, and, for a
team's workloads stack, which platform it runs on and the team's quota there."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from .base import DnsLabel, Strict

Role = Literal["all-in-one", "platform", "workloads"]
Environment = Literal["dev", "staging", "prod"]

StackRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
CpuQuantity = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?m?$")]
MemoryQuantity = Annotated[str, StringConstraints(pattern=r"^[0-9]+(Mi|Gi|Ti)$")]


class ContainerDefaults(Strict):
    """LimitRange defaults for a container that states no requests or limits of its own."""

    cpu: CpuQuantity = "250m"
    memory: MemoryQuantity = "512Mi"


class Quota(Strict):
    """The team's share of the platform: a ResourceQuota on its namespace, and a LimitRange so a
    container without requests still counts against it."""

    gpus: int = Field(default=0, ge=0, le=100_000)  # requests.nvidia.com/gpu
    neuron_devices: int = Field(default=0, ge=0, le=100_000)  # requests.aws.amazon.com/neuron
    cpu: CpuQuantity  # requests.cpu
    memory: MemoryQuantity  # requests.memory
    pods: int = Field(default=100, ge=1, le=100_000)
    container_defaults: ContainerDefaults = Field(default_factory=ContainerDefaults)


class StackSection(Strict):
    """`inference-platform:stack`."""

    role: Role = "all-in-one"
    environment: Environment = "dev"
    platform_stack: StackRef | None = None
    team: DnsLabel | None = None
    quota: Quota | None = None

    @model_validator(mode="after")
    def _role_needs(self) -> Self:
        if self.role == "workloads":
            if self.platform_stack is None:
                raise ValueError(
                    "platformStack is required when role is workloads: name the platform stack "
                    "as org/project/stack, e.g. acme/inference-platform/platform-prod"
                )
            if self.team is None:
                raise ValueError("team is required when role is workloads: it names the namespace and quota owner")
            if self.quota is None:
                raise ValueError(
                    "quota is required when role is workloads: give the team's share of the platform, "
                    "e.g. quota: {gpus: 4, neuronDevices: 0, cpu: '64', memory: 512Gi}"
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
