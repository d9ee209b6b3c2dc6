"""`models[].slo`: the serving objectives a model is held to, alerted on by PrometheusRules.

No universal thresholds: a model gets alerts only for the objectives its stack file states.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, StringConstraints, model_validator

from .base import Strict


class Slo(Strict):
    """Percentile latency objectives in seconds; `p` is the percentile (0.95 = p95). Each stated
    objective becomes a PrometheusRule alert on the engine's own metric (needs `addons.monitoring`);
    at least one is required, and one the engine cannot measure is refused."""

    ttft_seconds: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="Time-to-first-token objective in seconds at percentile `p`; refused on engines that export "
        "no TTFT metric (TGI, Ray Serve, Ollama).",
    )
    itl_seconds: float | None = Field(
        default=None,
        gt=0,
        le=60,
        description="Inter-token latency objective in seconds at percentile `p`; refused on Ray Serve and Ollama.",
    )
    e2e_seconds: float | None = Field(
        default=None,
        gt=0,
        le=86400,
        alias="e2eSeconds",
        description="End-to-end request latency objective in seconds at percentile `p` (Ray Serve's metric is in "
        "milliseconds and converted).",
    )
    max_queue_depth: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Most requests that may wait in the engine's queue (its queue-depth gauge) before the alert.",
    )
    p: float = Field(
        default=0.95, gt=0, lt=1, description="The percentile latency objectives apply to, as a fraction (0.95 = p95)."
    )
    for_: Annotated[str, StringConstraints(pattern=r"^[0-9]+(s|m|h)$")] = Field(
        default="10m",
        alias="for",
        description="How long an objective must be missed before its alert fires (`s`, `m` or `h`, e.g. `10m`).",
    )

    @model_validator(mode="after")
    def _something(self) -> Self:
        if all(v is None for v in (self.ttft_seconds, self.itl_seconds, self.e2e_seconds, self.max_queue_depth)):
            raise ValueError("an slo block needs at least one of ttftSeconds, itlSeconds, e2eSeconds, maxQueueDepth")
        return self
