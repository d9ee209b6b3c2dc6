"""Guardrails on the stack config, sharing their checks with the policy pack (stacks/guards.py)."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config.addons import AddonsSection
from ..errors import Problem, key_path
from ..guards import chart_version_problem, stateful_protection_problem
from ..resolved import ResolvedStack


@rule
def addon_versions_are_exact(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    for name, field in AddonsSection.model_fields.items():
        # An add-on without a chart (the EKS node monitoring agent: cluster.addonVersions) has no version.
        version = getattr(getattr(config.addons, name), "version", None)
        key = field.alias or name
        if version is not None and (problem := chart_version_problem(key, version)):
            yield Problem(key_path(["addons", key, "version"]), problem)


@rule
def every_chart_version_is_exact(stack: ResolvedStack) -> Iterable[Problem]:
    """Besides each add-on's `version`, any other `...Version` key of an add-on (monitoring's
    `adapterVersion`, `dcgmExporterVersion`) picks a chart too, and is held to the same rule."""
    config = stack.config
    for name, field in AddonsSection.model_fields.items():
        addon = getattr(config.addons, name)
        for attr, inner in type(addon).model_fields.items():
            if attr == "version" or not attr.endswith("_version"):
                continue
            version = getattr(addon, attr)
            inner_key = inner.alias or attr
            if version is not None and (problem := chart_version_problem(inner_key, version)):
                yield Problem(key_path(["addons", field.alias or name, inner_key]), problem)


@rule
def prod_storage_is_protected(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if config.stack.role == "workloads":
        return
    problem = stateful_protection_problem("the model storage", config.storage.protect, config.stack.prod)
    if problem:
        yield Problem(key_path(["storage", "protect"]), problem)
