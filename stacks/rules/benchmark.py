"""Benchmark rules: a benchmark Job needs a gateway route to measure and, to gate an update, an objective
it can judge (time to first token or inter-token latency)."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..errors import Problem, key_path


@rule
def benchmark_needs_a_route_and_an_objective(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        bench = model.benchmark
        if bench is None:
            continue
        if not model.expose:
            yield Problem(
                key_path(["models", i, "benchmark"]),
                "a benchmark measures the model through its authenticated gateway route, and expose: false "
                "gives it none; set expose: true, or remove benchmark",
            )
        if config.stack.role != "workloads" and not config.gateway.enabled:
            yield Problem(
                key_path(["models", i, "benchmark"]),
                "a benchmark measures the model at https://<gateway.hostname>/<name>, and this stack runs no "
                "front door; set gateway.enabled: true with its hostname, or remove benchmark",
            )
        if config.gateway.auth == "apiKey" and config.gateway.api_key_header != "Authorization":
            yield Problem(
                key_path(["models", i, "benchmark"]),
                f"guidellm sends its key only as `Authorization: Bearer <key>`, and the gateway reads keys from "
                f"{config.gateway.api_key_header}; set gateway.apiKeyHeader: Authorization, or remove benchmark",
            )
        slo = model.slo
        if bench.gate and (slo is None or (slo.ttft_seconds is None and slo.itl_seconds is None)):
            yield Problem(
                key_path(["models", i, "benchmark", "gate"]),
                "gate: true fails `pulumi up` on a missed SLO, but the model's slo states no ttftSeconds or "
                "itlSeconds for the benchmark to judge; add one to slo, or set gate: false",
            )
