"""Inference engines: one module per engine, each a pure builder of the model's Kubernetes objects.

An engine module exposes `manifests(spec: WorkloadSpec) -> list[dict]`. `ENGINE_MODULES` maps each
`models[].engine` value to its module; the Models component applies whatever the module returns.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pulumi

from stacks.config import ModelSection, StackConfig
from stacks.config.pools import NodePoolSection
from stacks.versions import Image

from ..scheduling import Placement
from ..served import ServedModel
from ..storage.cache import CacheMount

ENGINE_MODULES = {
    "vllm": "components.engines.vllm",
    "sglang": "components.engines.sglang",
    "nim": "components.engines.nim",
    "tgi": "components.engines.tgi",
    "ollama": "components.engines.ollama",
    "neuron-vllm": "components.engines.neuron_vllm",
    "dynamo": "components.serving.dynamo",
    "ray-serve": "components.serving.rayservice",
}


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """Everything an engine module needs to build one model's objects."""

    config: StackConfig
    model: ModelSection
    pool: NodePoolSection
    served: ServedModel
    placement: Placement
    cache: CacheMount
    image: Image
    labels: dict[str, str]

    @property
    def pod_service_account(self) -> str | None:
        """The pods' serviceAccountName: read-only bucket access through Pod Identity (`model-reader`)."""
        return self.cache.service_account


def engine_module(engine: str) -> ModuleType:
    return importlib.import_module(ENGINE_MODULES[engine])


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return list(engine_module(spec.model.engine).manifests(spec))


__all__ = ["ENGINE_MODULES", "WorkloadSpec", "engine_module", "manifests", "pulumi"]
