"""Shared helpers for the engine tests: the engines example stack and its workload specs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.engines import WorkloadSpec
from components.models import ModelsArgs, model_manifests, workload_spec
from stacks.config import StackConfig
from stacks.load import ROOT, parse_sections
from tests.conftest import sections_of

ENGINES = ROOT / "stacks" / "examples" / "Pulumi.engines.yaml"


def example() -> dict[str, Any]:
    return sections_of(Path(ENGINES))


def config_of(sections: dict[str, Any]) -> StackConfig:
    return parse_sections(sections, "us-west-2")


def spec(config: StackConfig, name: str, neuron_scheduler: str | None = None) -> WorkloadSpec:
    model = next(m for m in config.models if m.name == name)
    args = ModelsArgs(config=config, provider=None, neuron_scheduler=neuron_scheduler)  # type: ignore[arg-type]
    built = workload_spec(args, model)
    assert built is not None
    return built


def objects(config: StackConfig, name: str, neuron_scheduler: str | None = None) -> dict[str, dict[str, Any]]:
    """kind -> object for one model."""
    objs = model_manifests(spec(config, name, neuron_scheduler))
    assert objs is not None
    return {o["kind"]: o for o in objs}


def engine_container(workload: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == "engine")


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None
