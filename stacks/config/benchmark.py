"""`models[].benchmark`: an SLO benchmark Job (guidellm 0.8.1) run against the model's gateway route,
once after `pulumi up` or on a `schedule` (a CronJob), of the stable revision or of each revision
beside a canary.

The Job's verdict is the model's `slo`: it fails when the `slo.p` quantile of time to first token or
inter-token latency misses its objective at any concurrency of the sweep (components/benchmark.py).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from .base import SecretName, Strict
from .cron import schedule_problem, time_zone_problem

# The quantiles guidellm 0.8.1 reports for every latency distribution (schemas/statistics.py
# `Percentiles`: p001, p01, p05, p10, p25, p50, p75, p90, p95, p99, p999); the verdict reads `slo.p`'s.
GUIDELLM_PERCENTILES = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)


class Benchmark(Strict):
    """A concurrency sweep with synthetic prompts of a fixed shape, sent through the authenticated
    gateway with one client key; results go to the model bucket under the model owner's `_benchmarks/`."""

    concurrency: list[int] = Field(
        default_factory=lambda: [1, 8, 32],
        min_length=1,
        max_length=16,
        description="Concurrent request streams, one benchmark per entry (ascending, distinct, 1-1024); the SLO "
        "must hold at every one.",
    )
    input_tokens: int = Field(
        default=512, ge=1, le=1_000_000, description="Prompt length of each synthetic request, in tokens."
    )
    output_tokens: int = Field(
        default=128, ge=1, le=1_000_000, description="Tokens each synthetic request asks the model to generate."
    )
    requests: int = Field(
        default=200, ge=1, le=1_000_000, description="Requests sent at each concurrency of the sweep."
    )
    gate: bool = Field(
        default=False,
        description="`true`: `pulumi up` waits for the Job and fails when it fails (a missed SLO); `false`: the Job "
        "runs without blocking the update. A gate needs `slo` with `ttftSeconds` or `itlSeconds`.",
    )
    api_key_secret: SecretName = Field(
        description="Existing Secret in the model's namespace whose entry `api-key` is the benchmark's own key "
        "(with `auth: jwt`, a token of one of the model's callers): the model's route admits it and no other route "
        "does; mounted as a file and exported to the benchmark at exec time."
    )

    schedule: str | None = Field(
        default=None,
        description="A cron schedule (five fields, or @hourly, @daily, @weekly ...) as a Kubernetes CronJob takes it, "
        'e.g. "0 3 * * *" for 03:00 nightly: the benchmark then runs as a CronJob, each run\'s results under its own '
        "UTC time. Without `gate` that CronJob is the only benchmark (no run after `pulumi up`); with `gate: true` the "
        "one-off Job that gates `pulumi up` runs too. Unset: the one-off Job only.",
    )
    time_zone: str | None = Field(
        default=None,
        description="The IANA time zone `schedule` is read in (the CronJob's spec.timeZone, e.g. Europe/Berlin); "
        "unset: the cluster controller's zone, UTC on EKS. Needs `schedule`.",
    )
    revisions: Literal["stable", "each"] = Field(
        default="stable",
        description="Which revision a model with a `canary` is measured at: `stable` (default) measures only the "
        "model's `revision`, `each` measures it and then the canary's, each through its own revision-pinned rule on "
        "the model's route (not the weighted split); results and verdict name the revision. Without a canary there "
        "is one revision to measure.",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        problem = None if value is None else schedule_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        problem = None if value is None else time_zone_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _zone_needs_schedule(self) -> Self:
        if self.time_zone is not None and self.schedule is None:
            raise ValueError(
                'timeZone is the zone a schedule is read in, and there is no schedule; add schedule (e.g. "0 3 * * *") '
                "or remove timeZone"
            )
        return self

    @model_validator(mode="after")
    def _ascending(self) -> Self:
        levels = self.concurrency
        if any(c < 1 or c > 1024 for c in levels) or levels != sorted(set(levels)):
            raise ValueError(f"concurrency {levels} must be distinct, ascending values from 1 to 1024")
        return self
