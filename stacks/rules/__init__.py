"""The rule modules, each imported here so its rules register (stacks/checks.py), and the two calls
that run them."""

from __future__ import annotations

from ..checks import PLATFORM_RULES, PLATFORM_WARNINGS, RULES, WARNINGS, Lookup, run
from ..config import StackConfig
from ..errors import Problem
from . import (  # noqa: F401  (each registers its rules)
    benchmark,
    canary,
    collisions,
    engine_args,
    engines,
    gateway,
    groups,
    guards,
    models,
    monitoring,
    names,
    pins,
    pools,
    prod,
    provisioning,
    scaling,
    serving,
    storage,
    streaming,
    workloads,
)


def check_stack(config: StackConfig, lookup: Lookup) -> list[Problem]:
    """Every refusal for this stack, all at once."""
    return run(config, lookup, RULES, PLATFORM_RULES)


def stack_warnings(config: StackConfig, lookup: Lookup) -> list[Problem]:
    """Every warning for this stack (dev and staging leniency, things only a preview can check)."""
    return run(config, lookup, WARNINGS, PLATFORM_WARNINGS)
