"""Tracing rules: a model whose engine cannot export spans is refused while the platform traces, naming
the engine's reason and the way out (`models[].tracing: false`), instead of a silent gap in every trace."""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import rule
from ..errors import Problem
from ..resolved import ResolvedStack


@rule
def traced_engines_export(stack: ResolvedStack) -> Iterable[Problem]:
    """Every traced model's engine exports OTLP from its pinned image."""
    if stack.tracing is None:  # the platform's tracing, its own or read from its exports
        return
    for entry in stack.entries:
        engine = entry.config.engine
        why = ENGINES[engine].no_traces
        if not entry.config.tracing or why is None:
            continue
        yield Problem(
            entry.key("tracing"),
            f"the platform traces (addons.tracing) but engine {engine}: {why}, so this model's spans would be "
            "missing from every trace; set tracing: false on this model (the gateway and its picker still trace its "
            "requests), or serve it with vllm or tgi",
        )
