"""Inference engines: one self-contained module per `models[].engine` value.

Each engine module declares its server's facts (`FACTS`: port, health and metrics paths, routable
and never-routable paths, accelerators, the operator that runs it), the Service clients reach
(`service(model)`), the workload it becomes (`workload(model, addons)`: what a scaler targets), and
builds that model's Kubernetes objects (`manifests(spec)`). `ENGINES` is the registry: adding an
engine is one module here plus its image pin in stacks/versions.py (IMAGES) and its name in
`models[].engine` (stacks/config/models.py).
"""

from __future__ import annotations

from types import ModuleType
from typing import Protocol

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection

from . import dynamo, neuron_vllm, nim, ollama, ray_serve, sglang, tgi, vllm
from .facts import EngineFacts
from .spec import WorkloadSpec


class EngineModule(Protocol):
    """What the registry requires of an engine module."""

    FACTS: EngineFacts

    def service(self, model: ModelSection) -> tuple[str, int]: ...

    def workload(self, model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]: ...

    def manifests(self, spec: WorkloadSpec) -> list[dict]: ...


ENGINES: dict[str, ModuleType] = {
    "vllm": vllm,
    "sglang": sglang,
    "nim": nim,
    "tgi": tgi,
    "ollama": ollama,
    "neuron-vllm": neuron_vllm,
    "dynamo": dynamo,
    "ray-serve": ray_serve,
}

__all__ = ["ENGINES", "EngineFacts", "EngineModule", "WorkloadSpec"]
