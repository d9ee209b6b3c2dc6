"""inference-platform: load the stack config, build the root component, export its outputs."""

import pulumi

from components.platform import Platform, PlatformArgs
from stacks.errors import ConfigError
from stacks.load import load_from_pulumi

try:
    config = load_from_pulumi()
except ConfigError as exc:
    # RunError ends the program with the message and no traceback; nothing has been registered.
    raise pulumi.RunError(str(exc)) from None

platform = Platform("platform", PlatformArgs(config=config))
for key, value in platform.outputs.items():
    pulumi.export(key, value)
