"""Inference engines: one module per `models[].engine` value, each declaring one `EngineSpec` (`SPEC`).

`ENGINES` is the registry the resolution step reads (stacks/resolve): adding an engine is its
module here, one line below, its image pin in stacks/versions.py (IMAGES) and its name in
`models[].engine` (stacks/config/models.py). A module that fails to import stops the program; it never
silently drops a model.
"""

from __future__ import annotations

from . import dynamo, neuron_vllm, nim, ollama, ray_serve, sglang, tgi, vllm
from .spec import EngineSpec, WorkloadSpec

ENGINES: dict[str, EngineSpec] = {
    "vllm": vllm.SPEC,
    "sglang": sglang.SPEC,
    "nim": nim.SPEC,
    "tgi": tgi.SPEC,
    "ollama": ollama.SPEC,
    "neuron-vllm": neuron_vllm.SPEC,
    "dynamo": dynamo.SPEC,
    "ray-serve": ray_serve.SPEC,
}

__all__ = ["ENGINES", "EngineSpec", "WorkloadSpec"]
