"""`models[].slo`: the serving objectives a model is held to, alerted on by PrometheusRules.

No universal thresholds: a model gets alerts only for the objectives its stack file states.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, StringConstraints, model_validator

from .base import Strict


class Slo(Strict):
    """Percentile latency objectives in seconds; `p` is the percentile (0.95 = p95)."""

    ttft_seconds: float | None = Field(default=None, gt=0, le=3600)
    itl_seconds: float | None = Field(default=None, gt=0, le=60)
    e2e_seconds: float | None = Field(default=None, gt=0, le=86400, alias="e2eSeconds")
    max_queue_depth: int | None = Field(default=None, ge=1, le=1_000_000)
    p: float = Field(default=0.95, gt=0, lt=1)
    # How long the objective must be missed before the alert fires.
    for_: Annotated[str, StringConstraints(pattern=r"^[0-9]+(s|m|h)$")] = Field(default="10m", alias="for")

    @model_validator(mode="after")
    def _something(self) -> Self:
        if all(v is None for v in (self.ttft_seconds, self.itl_seconds, self.e2e_seconds, self.max_queue_depth)):
            raise ValueError("an slo block needs at least one of ttftSeconds, itlSeconds, e2eSeconds, maxQueueDepth")
        return self
