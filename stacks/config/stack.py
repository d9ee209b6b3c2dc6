"""The `stack` section: what this stack is for (role) and how strict its guardrails are."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import StringConstraints, model_validator

from .base import DnsLabel, Strict

Role = Literal["all-in-one", "platform", "workloads"]
Environment = Literal["dev", "staging", "prod"]

StackRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]


class StackSection(Strict):
    """`inference-platform:stack`."""

    role: Role = "all-in-one"
    environment: Environment = "dev"
    platform_stack: StackRef | None = None
    team: DnsLabel | None = None

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
        elif self.platform_stack is not None:
            raise ValueError(
                f"platformStack is only read by a workloads stack; remove it or set role: workloads "
                f"(role is {self.role})"
            )
        return self

    @property
    def prod(self) -> bool:
        return self.environment == "prod"
