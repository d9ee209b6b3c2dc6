"""`models[].benchmark`: an SLO benchmark Job (guidellm 0.8.1) run against the model's gateway route.

The Job's verdict is the model's `slo`: it fails when the `slo.p` quantile of time to first token or
inter-token latency misses its objective at any concurrency of the sweep (components/benchmark.py).
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from .base import SecretName, Strict


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

    @model_validator(mode="after")
    def _ascending(self) -> Self:
        levels = self.concurrency
        if any(c < 1 or c > 1024 for c in levels) or levels != sorted(set(levels)):
            raise ValueError(f"concurrency {levels} must be distinct, ascending values from 1 to 1024")
        return self
