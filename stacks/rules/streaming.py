"""Streaming rules (`models[].loadFormat: runai-streamer`): the engines that can stream from the
model bucket, and only safetensors weights, which is all the Run:ai Model Streamer reads (vLLM 0.29.0
lists `*.safetensors` under the prefix and fails with "Cannot find any safetensors model weights";
SGLang 0.5.19 srt/model_loader/loader.py the same). Refused: an engine that does not stream
(`EngineFacts.streams`), a workloads stack (the bucket writer the one-time fill runs as is granted only
in the platform's own model namespaces), GGUF (a `-GGUF` repository or `--quantization gguf`), and
engineArgs that set the load format or the streamer's settings (its dialect's `streamed` flags), which
the platform owns for a streamed model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from components.engines import ENGINES

from .. import flags
from ..checks import rule
from ..engine_facts import Dialect
from ..errors import Problem
from ..resolved import ResolvedStack
from .engine_args import owned_flag


def _streamer_dialect(base: Dialect) -> Dialect:
    """The engine's own parser (abbreviations, `_` for `-`) over the flags a streamed model owns."""
    return replace(base, owned=base.streamed, exact=frozenset(), short_flags=frozenset(), short_values={})


@rule
def streamed_models_are_safetensors_on_an_engine_that_streams(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        model = entry.config
        if model.load_format is None:
            continue
        at = entry.key("loadFormat")
        if not entry.facts.streams:
            streaming = " and ".join(n for n, e in ENGINES.items() if e.facts.streams)
            yield Problem(
                at,
                f"loadFormat: {model.load_format} streams safetensors with the Run:ai streamer, which the platform "
                f"wires for {streaming} only, not {model.engine}; remove loadFormat",
            )
            continue
        if not stack.owns_platform:
            yield Problem(
                at,
                "a streamed model's bucket prefix is filled once by a Job running as the platform's bucket writer, "
                "which is granted only in the platform stack's own model namespaces; serve the model from the "
                "platform stack, or remove loadFormat",
            )
        if model.model.lower().endswith("gguf"):
            yield Problem(
                entry.key("model"),
                f"{model.model} is a GGUF repository, and the Run:ai streamer loads only safetensors; choose the "
                f"safetensors repository of the model, or remove loadFormat",
            )
        d = _streamer_dialect(entry.made.dialect)
        args = model.engine_args
        for j, token in enumerate(args):
            hit = owned_flag(token, d)
            if hit is None:
                continue
            flag, why, how = hit
            if why is flags.GGUF:
                if "=" in token:
                    value = token.split("=", 1)[1]
                elif how == "attached":
                    value = token[2:]
                else:
                    value = args[j + 1] if j + 1 < len(args) else ""
                if value.lower() != "gguf":
                    continue
            yield Problem(entry.key("engineArgs", j), f"{token} ({flag}) {why}")
