"""Shared helpers for the serving-platform tests: the example stack's config and a WorkloadSpec
for one of its models, built the way the Models component builds it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from components.engines import WorkloadSpec
from components.naming import labels
from components.scheduling import placement
from components.served import served_model
from components.storage.cache import CacheContext, cache_mount
from components.storage.manifests import CACHE_CLAIM as STORAGE_CLAIM
from stacks import conformance
from stacks.config import StackConfig
from stacks.load import ROOT, parse_sections
from stacks.versions import image
from tests.conftest import sections_of

SERVING = ROOT / "stacks" / "examples" / "Pulumi.serving.yaml"
SCHEMAS: Path | None = conformance.schema_dir()


def serving_sections() -> dict[str, Any]:
    return copy.deepcopy(sections_of(SERVING))


def config_of(sections: dict[str, Any]) -> StackConfig:
    return parse_sections(sections, "us-west-2")


def model_entry(sections: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in sections["models"] if m["name"] == name)


def spec_for(config: StackConfig, name: str) -> WorkloadSpec:
    model = next(m for m in config.models if m.name == name)
    pool = config.pool(model.pool)
    assert pool is not None
    return WorkloadSpec(
        config=config,
        model=model,
        pool=pool,
        served=served_model(config, model),
        placement=placement(pool),
        cache=cache_mount(CacheContext(storage=config.storage, claim_name=STORAGE_CLAIM), model, pool),
        image=image("vllm"),
        labels=labels(model.name, model.name),
    )
