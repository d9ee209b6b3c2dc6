"""Monitoring rules: an SLO can only be alerted on if the model's engine exports the metric for it."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..errors import Problem, key_path
from ..metrics import metric

_SLO_SIGNALS = {
    "ttft_seconds": ("ttft", "ttftSeconds"),
    "itl_seconds": ("itl", "itlSeconds"),
    "e2e_seconds": ("e2e", "e2eSeconds"),
    "max_queue_depth": ("queue", "maxQueueDepth"),
}


@rule
def slo_needs_a_metric(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        if model.slo is None:
            continue
        for attr, (signal, key) in _SLO_SIGNALS.items():
            if getattr(model.slo, attr) is not None and metric(model.engine, signal) is None:
                yield Problem(
                    key_path(["models", i, "slo", key]),
                    f"engine {model.engine} exports no metric for {signal}, so this objective could never "
                    f"be alerted on; remove it"
                    + (" (Ollama has no metrics endpoint)" if model.engine == "ollama" else ""),
                )
        if not config.addons.monitoring.enabled:
            yield Problem(
                key_path(["models", i, "slo"]),
                "an slo is alerted on by Prometheus; set addons.monitoring.enabled: true or remove the slo",
            )
