"""Monitoring rules: an SLO can only be alerted on if the model's engine exports the metric for it."""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import Lookup, platform_rule
from ..config import StackConfig
from ..errors import Problem, key_path
from .context import platform_of

_SLO_SIGNALS = {
    "ttft_seconds": ("ttft", "ttftSeconds"),
    "itl_seconds": ("itl", "itlSeconds"),
    "e2e_seconds": ("e2e", "e2eSeconds"),
    "max_queue_depth": ("queue", "maxQueueDepth"),
}


@platform_rule
def slo_needs_a_metric(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """A workloads stack's SLOs are alerted on by its platform's Prometheus (its exported add-ons)."""
    platform = platform_of(config, lookup)
    for i, model in enumerate(config.models):
        if model.slo is None:
            continue
        for attr, (signal, key) in _SLO_SIGNALS.items():
            if getattr(model.slo, attr) is not None and ENGINES[model.engine].facts.metric(signal) is None:
                yield Problem(
                    key_path(["models", i, "slo", key]),
                    f"engine {model.engine} exports no metric for {signal}, so this objective could never "
                    f"be alerted on; remove it"
                    + (" (Ollama has no metrics endpoint)" if model.engine == "ollama" else ""),
                )
        if platform is not None and not platform.addons.monitoring.enabled:
            yield Problem(
                key_path(["models", i, "slo"]),
                f"an slo is alerted on by Prometheus, which {platform.where} does not run; "
                f"{platform.addon('monitoring')}, or remove the slo",
            )
