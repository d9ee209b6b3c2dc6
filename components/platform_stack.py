"""The platform stack as a workloads stack sees it: one StackReference and its plain exports.

A team's stack must be checked against the platform's pools before it registers anything of its
own, so the exports are read as plain values here, at program start: `StackReference` outputs are
known at preview as well as at update (it reads the other stack's last checkpoint), and the SDK's
synchronous wait turns them into a dict. The kubeconfig stays an Output and a secret.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime.sync_await import _sync_await  # the SDK's own sync wait (pulumi pinned)

from stacks.config.stack import StackRef
from stacks.errors import ConfigError, Problem, key_path, short
from stacks.exports import SECRET_KEYS, supply


class StackRefused(pulumi.RunError):
    """The program refusing its stack config: a RunError (Pulumi prints the message, no traceback),
    still carrying each problem for the offline render."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error
        super().__init__(str(error))


@dataclass(frozen=True)
class PlatformStack:
    name: str  # org/project/stack
    ref: pulumi.StackReference
    exports: dict[str, Any]  # every non-secret output, as plain values

    def output(self, key: str) -> pulumi.Output[Any]:
        return self.ref.require_output(key)


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
    """Reference the platform stack and hand its exports to the workloads rules (stacks.exports).
    A platform stack that cannot be read (it does not exist, this identity may not read it, it has no
    outputs, or they are not a platform's exports) is a ConfigError naming stack.platformStack."""
    from stacks.resolve import read_platform

    where = key_path(["stack", "platformStack"])
    ref = pulumi.StackReference("platform-stack", stack_name=stack_ref)
    try:
        outputs = _sync_await(ref.outputs.future()) or {}
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
        read_platform(exports)
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
    supply(stack_ref, exports, f"stack {stack_ref}")
    return PlatformStack(name=stack_ref, ref=ref, exports=exports)
