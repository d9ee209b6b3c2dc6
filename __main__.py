"""inference-platform: read, resolve and check the stack config, build the root component, export its outputs."""

import pulumi

from components.platform import InferencePlatform, InferencePlatformArgs
from components.platform_stack import PlatformStack, StackRefused, read_platform_stack, workloads_platform_ref
from stacks.errors import ConfigError, one_line
from stacks.load import parse_sections, pulumi_stack_config
from stacks.pipeline import check_config, stack_warnings

platform_stack: PlatformStack | None = None
try:
    found = pulumi_stack_config()
    # A workloads stack is resolved against its platform's exports, so read them first (a
    # StackReference reads the other stack's state; it creates nothing).
    ref = workloads_platform_ref(found.sections)
    platform_stack = read_platform_stack(ref) if ref else None
    config = parse_sections(found.sections, found.region, source="stack config")
    stack = check_config(config, "stack config", platforms=lambda r: platform_stack.source if platform_stack else None)
    for warning in [*found.warnings, *stack_warnings(stack)]:
        pulumi.log.warn(f"stack config: {warning}")
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

# The Pulumi secrets the `secrets` section names, as secret Outputs: the program never sees them in plain.
config_secrets = pulumi.Config()
secret_values = {key: config_secrets.require_secret(key) for key in stack.config.secret_config}
platform = InferencePlatform(
    "platform", InferencePlatformArgs(stack=stack, platform=platform_stack, secret_values=secret_values)
)
for key, value in platform.outputs.items():
    pulumi.export(key, value)
