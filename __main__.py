"""inference-platform: load and resolve the stack config, build the root component, export its outputs."""

import pulumi

from components.platform import Platform, PlatformArgs
from components.platform_stack import StackRefused, read_platform_stack, workloads_platform_ref
from stacks.errors import ConfigError, one_line
from stacks.load import load_pulumi_stack, pulumi_config_to_sections
from stacks.resolve import resolve

try:
    # A workloads stack is checked against its platform's exported pools, so read them first (a
    # StackReference reads the other stack's state; it creates nothing).
    ref = workloads_platform_ref(pulumi_config_to_sections()[0])
    platform_stack = read_platform_stack(ref) if ref else None
    config, warnings = load_pulumi_stack()
    for warning in warnings:
        pulumi.log.warn(f"stack config: {warning}")
    stack = resolve(config, platform_stack.exports if platform_stack else None)
except ConfigError as exc:
    # RunError ends the program with the message and no traceback; nothing has been created.
    raise StackRefused(exc) from None
except pulumi.RunError:
    raise
except Exception as exc:  # (a safety net: one line, not a traceback; the fix belongs at the cause)
    raise pulumi.RunError(
        f"stack config: could not be read ({type(exc).__name__}: {one_line(str(exc))}); this is a bug in the "
        f"program's checks: please report it with the stack file"
    ) from None

platform = Platform("platform", PlatformArgs(stack=stack, platform=platform_stack))
for key, value in platform.outputs.items():
    pulumi.export(key, value)
