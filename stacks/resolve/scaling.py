"""What a model's autoscaler follows (`ScalingSignal`), and whether its requests pass the KEDA HTTP add-on's
interceptor: the one reading of `autoscaling.signal`, which the add-ons step (platform.py), the placed
model (models.py), the rules and `stacks plan` share.

An engine's Prometheus gauge is what an HPA, AIBrix or KEDA's prometheus trigger reads. KEDA alone has a
second signal: the HTTP add-on's interceptor counts each route's requests (in flight, or per second) and
its scaler hands that count to KEDA's `external-push` trigger as a per-replica metric (kedacore/http-add-on
v0.15.0 scaler/handlers.go GetMetricSpec: `TargetSizeFloat` = the InterceptorRoute's `targetValue`;
GetMetrics: the route's concurrency or request rate), so the one trigger both wakes the model (active when
the count is above zero) and scales it 1..N. An engine without a gauge (Ollama) scales on that, and so
may any engine whose stack has no Prometheus, provided its requests go through the interceptor.
"""

from __future__ import annotations

from ..config.models import ModelSection
from ..engine_facts import EngineFacts
from ..resolved import ScalingSignal

GAUGE_OWNERS = ("hpa", "keda", "aibrix")


def scaling_signal(model: ModelSection, facts: EngineFacts) -> ScalingSignal | None:
    """The model's signal: `autoscaling.signal` as written; unset, the engine's gauge where it exports one,
    else (KEDA only) the add-on's request count. None for a model without an autoscaler."""
    scaling = model.autoscaling
    if scaling.owner not in GAUGE_OWNERS:
        return None
    gauge = facts.scaling_metric(scaling.metric) if facts.gauges else None
    chosen = scaling.signal
    if scaling.owner == "keda" and (chosen == "requests" or (chosen is None and gauge is None)):
        reason = (
            "autoscaling.signal: requests"
            if chosen
            else f"{facts.title} exports no Prometheus gauge, so KEDA follows the HTTP add-on's count of its requests"
        )
        wanted = scaling.requests
        return ScalingSignal(source="requests", metric=wanted.metric, target=str(wanted.target_value), reason=reason)
    if chosen == "gauge":
        reason = "autoscaling.signal: gauge"
    elif scaling.metric:
        reason = "autoscaling.metric"
    else:
        reason = f"{facts.title}'s queue depth, the default gauge"
    return ScalingSignal(source="gauge", metric=gauge, target=scaling.target_value, reason=reason)


def through_interceptor(model: ModelSection, facts: EngineFacts) -> bool:
    """The model's requests go through the KEDA HTTP add-on's interceptor: it scales to zero (the interceptor
    holds the first request while it wakes) or scales on the add-on's count of its requests."""
    signal = scaling_signal(model, facts)
    return model.autoscaling.to_zero or (signal is not None and signal.requests)
