"""Cross-section rules: what each section accepts alone but the stack as a whole cannot do.

Every rule reads the resolved stack (stacks/resolved.py): the validated config for key paths and the
shapes of its sections, and every derived fact (the platform's pools, add-ons and storage, each
model's engine facts, requests, group and cache) as the builders will use them, so a rule checks
exactly what would be deployed and never derives a fact of its own. Each rule is a pure function
registered with a decorator; the rule modules live in `stacks/rules/` and `stacks/rules/__init__.py`
runs them, so a user fixes a stack file in one pass. Warnings (dev and staging leniency, what only a
preview can check) are apart from refusals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .errors import Problem
from .resolved import ResolvedStack

Rule = Callable[[ResolvedStack], Iterable[Problem]]
RULES: list[Rule] = []
WARNINGS: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def warning(fn: Rule) -> Rule:
    WARNINGS.append(fn)
    return fn


def run(stack: ResolvedStack, rules: list[Rule]) -> list[Problem]:
    """Every problem the rules find, each once, in rule order."""
    problems: list[Problem] = []
    for problem in (p for fn in rules for p in fn(stack)):
        if problem not in problems:
            problems.append(problem)
    return problems
