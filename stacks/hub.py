"""Which Hugging Face repository a model is fetched from: read by the stack rules (gated repos need a
token) and by the builders that fetch from the Hub (the benchmark's tokenizer). Pure: no Pulumi."""

from __future__ import annotations

from .config.models import ModelSection

# Engines whose pods fetch the weights from the Hub (the preparation step, or Dynamo's workers).
HUB_ENGINES = ("vllm", "sglang", "tgi", "neuron-vllm", "dynamo", "ray-serve", "nim")


def hub_repo(model: ModelSection) -> str | None:
    """The Hugging Face repo id a model is fetched from, or None (Ollama, NGC, prepared paths)."""
    if model.engine not in HUB_ENGINES:
        return None
    if model.engine == "nim":
        if not model.model.startswith("hf://") or (model.nim and model.nim.model_path):
            return None
        return model.model.removeprefix("hf://")
    return None if "://" in model.model or model.model.startswith("/") else model.model
