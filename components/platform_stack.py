"""The platform stack as a workloads stack sees it: one StackReference and its plain exports.

A team's stack must be checked against the platform's pools before it registers anything of its
own, so the exports are read as plain values here, at program start, through the engine's
`pulumi:pulumi:readStackOutputs` invoke (what a StackReference reads: the other stack's last
checkpoint, known at preview as well as at update), which the SDK's public `pulumi.runtime.invoke`
answers synchronously. A team's stack never reads the platform's secret `kubeconfig` output: it builds
its own from the exported endpoint, CA and its deploy role (components/platform.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from stacks.config.stack import StackRef
from stacks.errors import ConfigError, Problem, key_path, short
from stacks.exports import SECRET_KEYS, PlatformExports, read_platform


class StackRefused(pulumi.RunError):
    """The program refusing its stack config: a RunError (Pulumi prints the message, no traceback),
    still carrying each problem for the offline render."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error
        super().__init__(str(error))


# The engine's built-in invoke a StackReference is read through (pkg/resource/deploy/builtins.go
# readStackOutputs): {name} -> {name, outputs, secretOutputNames}.
READ_STACK_OUTPUTS = "pulumi:pulumi:readStackOutputs"


@dataclass(frozen=True)
class PlatformStack:
    name: str  # org/project/stack
    ref: pulumi.StackReference
    exports: dict[str, Any]  # every non-secret output, as plain values

    def output(self, key: str) -> pulumi.Output[Any]:
        return self.ref.require_output(key)

    @property
    def source(self) -> PlatformExports:
        """The exports as the pipeline resolves a workloads stack against them."""
        return PlatformExports(self.exports, f"stack {self.name}")


def workloads_platform_ref(sections: dict[str, Any]) -> str | None:
    """The platformStack of a workloads stack, read from the raw sections (None otherwise; the load
    step reports anything malformed)."""
    from pydantic import TypeAdapter, ValidationError

    stack = sections.get("stack")
    if not isinstance(stack, dict) or stack.get("role") != "workloads":
        return None
    try:
        return TypeAdapter(StackRef).validate_python(stack.get("platformStack"))
    except ValidationError:
        return None


def read_platform_stack(stack_ref: str) -> PlatformStack:
    """Reference the platform stack and read its exports as plain values. A platform stack that
    cannot be read (it does not exist, this identity may not read it, it has no outputs, or they are
    not a platform's exports) is a ConfigError naming stack.platformStack."""
    where = key_path(["stack", "platformStack"])
    ref = pulumi.StackReference("platform-stack", stack_name=stack_ref)
    try:
        outputs = pulumi.runtime.invoke(READ_STACK_OUTPUTS, {"name": stack_ref}).value.get("outputs") or {}
    except ConfigError:
        raise  # the offline render's answer: the platform's stack file is not usable
    except Exception as exc:  # (the engine's error reading the other stack's state)
        raise ConfigError(
            [Problem(where, f"the platform stack {stack_ref} cannot be read: {short(str(exc), 200)}")]
        ) from None
    if not isinstance(outputs, dict) or not outputs:
        raise ConfigError(
            [
                Problem(
                    where,
                    f"the platform stack {stack_ref} has no outputs: deploy it (pulumi up) first, and check "
                    f"that this identity can read its state",
                )
            ]
        )
    exports = {k: v for k, v in outputs.items() if k not in SECRET_KEYS}
    try:
        read_platform(exports, f"stack {stack_ref}")
    except Exception as exc:  # (outputs of some other program, or of another version)
        raise ConfigError(
            [
                Problem(
                    where,
                    f"the outputs of {stack_ref} are not an inference-platform platform's exports "
                    f"({type(exc).__name__}: {short(str(exc), 120)}); name a platform or all-in-one stack",
                )
            ]
        ) from None
    return PlatformStack(name=stack_ref, ref=ref, exports=exports)
