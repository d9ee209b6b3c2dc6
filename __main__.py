"""inference-platform: load and resolve the stack config, build the root component, export its outputs."""

import pulumi

from components.platform import Platform, PlatformArgs
from components.platform_stack import read_platform_stack, workloads_platform_ref
from stacks.errors import ConfigError
from stacks.load import load_from_pulumi, pulumi_config_to_sections
from stacks.resolve import resolve

try:
    # A workloads stack is checked against its platform's exported pools, so read them first (a
    # StackReference reads the other stack's state; it creates nothing).
    ref = workloads_platform_ref(pulumi_config_to_sections()[0])
    platform_stack = read_platform_stack(ref) if ref else None
    config = load_from_pulumi()
except ConfigError as exc:
    # RunError ends the program with the message and no traceback; nothing has been created.
    raise pulumi.RunError(str(exc)) from None

stack = resolve(config, platform_stack.exports if platform_stack else None)
platform = Platform("platform", PlatformArgs(stack=stack, platform=platform_stack))
for key, value in platform.outputs.items():
    pulumi.export(key, value)
