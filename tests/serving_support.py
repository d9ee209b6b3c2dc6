"""Shared helpers for the serving-platform tests: the serving example stack's sections, validated or
resolved (milliseconds, no render), and the WorkloadSpec / objects of one of its models, built the
way the Models component builds them (tests/builders.py)."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from components.engines import WorkloadSpec
from components.model_servers import workload_spec
from stacks import conformance
from stacks.config import StackConfig
from stacks.load import ROOT
from stacks.pipeline import check_sections
from stacks.resolved import ResolvedStack
from tests.builders import engine_objects, resolved_model, resolved_stack, sourced
from tests.conftest import sections_of

SERVING = ROOT / "stacks" / "examples" / "Pulumi.serving.yaml"
SCHEMAS: Path | None = conformance.schema_dir()


def serving_sections() -> dict[str, Any]:
    return copy.deepcopy(sections_of(SERVING))


def config_of(sections: dict[str, Any]) -> StackConfig:
    """Validate like `pulumi up` would (ConfigError on a refusal)."""
    return check_sections(sections, "us-west-2").config


def model_entry(sections: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in sections["models"] if m["name"] == name)


@cache
def _example_stack() -> ResolvedStack:
    return resolved_stack(serving_sections())


def serving_stack(sections: dict[str, Any] | None = None) -> ResolvedStack:
    """The serving example resolved (or these modified sections of it, a Secret a change names given its
    source from Pulumi secrets: `sourced`); frozen, so the unmodified example is resolved once per process."""
    return _example_stack() if sections is None else resolved_stack(sourced(sections))


def spec_for(stack: ResolvedStack, name: str) -> WorkloadSpec:
    """The WorkloadSpec the Models component builds for one model of a resolved stack."""
    model = resolved_model(stack, name)
    return workload_spec(model, stack.platform.storage, None, stack.platform.neuron_scheduler, images=stack.images)


def serving_objects(name: str, sections: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The objects the model's engine module builds (the serving example, or these sections)."""
    return engine_objects(serving_stack(sections), name)
