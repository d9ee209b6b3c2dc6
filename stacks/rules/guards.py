"""Guardrails on the stack config, sharing their checks with the policy pack (stacks/guards.py)."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..config.addons import AddonsSection
from ..errors import Problem, key_path
from ..guards import chart_version_problem, stateful_protection_problem


@rule
def addon_versions_are_exact(config: StackConfig) -> Iterable[Problem]:
    for name, field in AddonsSection.model_fields.items():
        version = getattr(config.addons, name).version
        key = field.alias or name
        if version is not None and (problem := chart_version_problem(key, version)):
            yield Problem(key_path(["addons", key, "version"]), problem)


@rule
def prod_storage_is_protected(config: StackConfig) -> Iterable[Problem]:
    if config.stack.role == "workloads":
        return
    problem = stateful_protection_problem("the model storage", config.storage.protect, config.stack.prod)
    if problem:
        yield Problem(key_path(["storage", "protect"]), problem)
