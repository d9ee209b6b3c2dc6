"""The rule modules, each imported here so its rules register (stacks/checks.py), and the two calls
that run them over a resolved stack."""

from __future__ import annotations

from ..checks import RULES, WARNINGS, run
from ..errors import Problem
from ..resolved import ResolvedStack
from . import (  # noqa: F401  (each registers its rules)
    acceptance,
    adapters,
    benchmark,
    canary,
    capacity,
    collisions,
    crds,
    engine_args,
    engines,
    fastpath,
    gateway,
    groups,
    guards,
    hardware,
    health,
    lora,
    models,
    monitoring,
    names,
    offload,
    pins,
    pools,
    prod,
    provisioning,
    quota,
    scaling,
    secrets,
    serving,
    sharing,
    storage,
    streaming,
    tenancy,
    tracing,
    upgrades,
    workloads,
)


def check_stack(stack: ResolvedStack) -> list[Problem]:
    """Every refusal for this stack, all at once."""
    return run(stack, RULES)


def stack_warnings(stack: ResolvedStack) -> list[Problem]:
    """Every warning for this stack (dev and staging leniency, things only a preview can check)."""
    return run(stack, WARNINGS)
