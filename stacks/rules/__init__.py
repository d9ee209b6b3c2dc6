"""Rule modules; importing this package registers every rule with stacks.checks."""

from . import models, names, pins, pools  # noqa: F401
