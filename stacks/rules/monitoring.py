"""Monitoring rules: an SLO can only be alerted on if the model's engine exports the metric for it, and
by a Prometheus the platform runs."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..errors import Problem
from ..resolved import ResolvedStack

_SLO_SIGNALS = {
    "ttft_seconds": ("ttft", "ttftSeconds"),
    "itl_seconds": ("itl", "itlSeconds"),
    "e2e_seconds": ("e2e", "e2eSeconds"),
    "max_queue_depth": ("queue", "maxQueueDepth"),
}


@rule
def slo_needs_a_metric(stack: ResolvedStack) -> Iterable[Problem]:
    """A workloads stack's SLOs are alerted on by its platform's Prometheus (its exported add-ons)."""
    for entry in stack.entries:
        slo, facts = entry.config.slo, entry.facts
        if slo is None:
            continue
        for attr, (signal, key) in _SLO_SIGNALS.items():
            if getattr(slo, attr) is not None and facts.metric(signal) is None:
                yield Problem(
                    entry.key("slo", key),
                    f"engine {entry.config.engine} exports no metric for {signal}, so this objective could never "
                    f"be alerted on; remove it"
                    + (f" ({facts.title} has no metrics endpoint)" if facts.metrics_path is None else ""),
                )
        if stack.platform.known and not stack.platform.addons.monitoring.enabled:
            where = "this stack" if stack.owns_platform else stack.platform.where
            yield Problem(
                entry.key("slo"),
                f"an slo is alerted on by Prometheus, which {where} does not run; {stack.ask_for('monitoring')}, or "
                f"remove the slo",
            )
