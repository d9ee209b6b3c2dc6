"""Cross-section rules: what each section accepts alone but the stack as a whole cannot do.

Each rule is a pure function `(StackConfig) -> Iterable[Problem]` registered with `@rule`; the
rule modules live in `stacks/rules/`. `check_stack` runs every rule and returns all problems at
once, so a user fixes a stack file in one pass. Warnings (dev and staging leniency) are separate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .config import StackConfig
from .errors import Problem

Rule = Callable[[StackConfig], Iterable[Problem]]
RULES: list[Rule] = []
WARNINGS: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def warning(fn: Rule) -> Rule:
    WARNINGS.append(fn)
    return fn


def check_stack(config: StackConfig) -> list[Problem]:
    from . import rules  # noqa: F401  (registers every rule module)

    problems: list[Problem] = []
    for fn in RULES:
        for problem in fn(config):
            if problem not in problems:
                problems.append(problem)
    return problems


def stack_warnings(config: StackConfig) -> list[Problem]:
    from . import rules  # noqa: F401

    return [w for fn in WARNINGS for w in fn(config)]
