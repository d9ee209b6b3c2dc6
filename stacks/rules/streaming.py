"""Streaming rules (`models[].loadFormat: runai-streamer`): the engines that can stream from the
model bucket, and only safetensors weights, which is all the Run:ai Model Streamer reads (vLLM 0.29.0
lists `*.safetensors` under the prefix and fails with "Cannot find any safetensors model weights";
SGLang 0.5.19 the same: FINDINGS-scaling §6). Refused: another engine, a workloads stack (the bucket
writer the one-time fill runs as is granted only in the platform's own model namespaces), GGUF (a
`-GGUF` repository or `--quantization gguf`), and engineArgs that set the load format or the
streamer's settings, which the platform owns for a streamed model."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..errors import Problem, key_path
from .engine_args import Dialect, dialect, owned_flag

STREAMING_ENGINES = ("vllm", "sglang")

LOADER = (
    "sets how the weights load, which the platform owns for a streamed model (`--load-format runai_streamer` and "
    "the streamer's concurrency and memory limit); remove it, or remove models[].loadFormat"
)
GGUF = (
    "selects GGUF weights, and the Run:ai streamer loads only safetensors; remove it, or remove models[].loadFormat "
    "to load the model from the cache"
)
_OWNED = {"--load-format": LOADER, "--model-loader-extra-config": LOADER}
_QUANT = {"--quantization": GGUF, "-q": GGUF}


def _streamer_dialect(base: Dialect) -> Dialect:
    """The engine's own parser (abbreviations, `_` for `-`) over the flags a streamed model owns."""
    quant = _QUANT if base.engine.startswith("vLLM") else {"--quantization": GGUF}
    return Dialect(base.engine, {**_OWNED, **quant}, abbreviates=base.abbreviates, underscores=base.underscores)


@rule
def streamed_models_are_safetensors_on_vllm_or_sglang(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        if model.load_format is None:
            continue
        at = key_path(["models", i, "loadFormat"])
        if model.engine not in STREAMING_ENGINES:
            yield Problem(
                at,
                f"loadFormat: {model.load_format} streams safetensors with the Run:ai streamer, which the platform "
                f"wires for vllm and sglang only, not {model.engine}; remove loadFormat",
            )
            continue
        if config.stack.role == "workloads":
            yield Problem(
                at,
                "a streamed model's bucket prefix is filled once by a Job running as the platform's bucket writer, "
                "which is granted only in the platform stack's own model namespaces; serve the model from the "
                "platform stack, or remove loadFormat",
            )
        if model.model.lower().endswith("gguf"):
            yield Problem(
                key_path(["models", i, "model"]),
                f"{model.model} is a GGUF repository, and the Run:ai streamer loads only safetensors; choose the "
                f"safetensors repository of the model, or remove loadFormat",
            )
        base = dialect(model)
        if base is None:
            continue
        d = _streamer_dialect(base)
        args = model.engine_args
        for j, token in enumerate(args):
            hit = owned_flag(token, d)
            if hit is None:
                continue
            flag, why, how = hit
            if why is GGUF:
                if "=" in token:
                    value = token.split("=", 1)[1]
                elif how == "attached":
                    value = token[2:]
                else:
                    value = args[j + 1] if j + 1 < len(args) else ""
                if value.lower() != "gguf":
                    continue
            yield Problem(key_path(["models", i, "engineArgs", j]), f"{token} ({flag}) {why}")
