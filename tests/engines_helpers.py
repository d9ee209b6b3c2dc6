"""Shared helpers for the engine tests: the engines example stack, resolved (milliseconds), and what
each model's engine module builds for it (tests/builders.py does the resolving and the building)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.engines import WorkloadSpec
from components.model_servers import workload_spec
from components.storage.cache import CacheContext
from stacks.load import ROOT
from stacks.resolved import ResolvedStack
from tests.builders import engine_objects, resolved_model, resolved_stack, sourced, streaming_context
from tests.conftest import sections_of

ENGINES = ROOT / "stacks" / "examples" / "Pulumi.engines.yaml"


def example() -> dict[str, Any]:
    return sections_of(Path(ENGINES))


def stack_of(sections: dict[str, Any]) -> ResolvedStack:
    """The stack file's sections validated like `pulumi up` would, then resolved; a Secret a test's change
    makes the stack name (the NIM Operator's NGC key) gets its source from Pulumi secrets (`sourced`)."""
    return resolved_stack(sourced(sections))


def spec(stack: ResolvedStack, name: str, cache: CacheContext | None = None) -> WorkloadSpec:
    """The WorkloadSpec the Models component builds for one model (the platform's storage and
    Neuron scheduler, the shared cache claim when the cache is shared)."""
    model = resolved_model(stack, name)
    cache = cache or streaming_context(stack, model)
    return workload_spec(model, stack.platform.storage, cache, stack.platform.neuron_scheduler, images=stack.images)


def objects(stack: ResolvedStack, name: str, cache: CacheContext | None = None) -> dict[str, dict[str, Any]]:
    """kind -> object for one model."""
    return {o["kind"]: o for o in engine_objects(stack, name, cache)}


def engine_container(workload: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == "engine")


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None
