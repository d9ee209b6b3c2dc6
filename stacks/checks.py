"""Cross-section rules: what each section accepts alone but the stack as a whole cannot do.

Each rule is a pure function registered with a decorator; the rule modules live in `stacks/rules/`
and `stacks/rules/__init__.py` runs them (`check_stack`, `stack_warnings`), so a user fixes a stack
file in one pass. Most rules read only the config (`@rule`, `@warning`); the rules that check a
workloads stack against its platform also get `lookup`, which finds a platform stack's exports by
its `org/project/stack` reference (`@platform_rule`, `@platform_warning`; stacks/load.py supplies
it). Warnings (dev and staging leniency) are separate from refusals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .config import StackConfig
from .errors import Problem
from .exports import PlatformSource

Lookup = Callable[[str], PlatformSource | None]
Rule = Callable[[StackConfig], Iterable[Problem]]
PlatformRule = Callable[[StackConfig, Lookup], Iterable[Problem]]
RULES: list[Rule] = []
WARNINGS: list[Rule] = []
PLATFORM_RULES: list[PlatformRule] = []
PLATFORM_WARNINGS: list[PlatformRule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def warning(fn: Rule) -> Rule:
    WARNINGS.append(fn)
    return fn


def platform_rule(fn: PlatformRule) -> PlatformRule:
    PLATFORM_RULES.append(fn)
    return fn


def platform_warning(fn: PlatformRule) -> PlatformRule:
    PLATFORM_WARNINGS.append(fn)
    return fn


def run(config: StackConfig, lookup: Lookup, rules: list[Rule], platform_rules: list[PlatformRule]) -> list[Problem]:
    """Every problem the rules find, each once, in rule order."""
    problems: list[Problem] = []
    found = [p for fn in rules for p in fn(config)] + [p for fn in platform_rules for p in fn(config, lookup)]
    for problem in found:
        if problem not in problems:
            problems.append(problem)
    return problems
