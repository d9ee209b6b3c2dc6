"""Benchmark rules: a benchmark Job needs a gateway route to measure and, to gate an update, an objective
it can judge (time to first token or inter-token latency)."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import Lookup, platform_rule, rule
from ..config import StackConfig
from ..errors import Problem, key_path
from .context import platform_of


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
        slo = model.slo
        if bench.gate and (slo is None or (slo.ttft_seconds is None and slo.itl_seconds is None)):
            yield Problem(
                key_path(["models", i, "benchmark", "gate"]),
                "gate: true fails `pulumi up` on a missed SLO, but the model's slo states no ttftSeconds or "
                "itlSeconds for the benchmark to judge; add one to slo, or set gate: false",
            )


@platform_rule
def benchmark_reaches_the_front_door(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """The Job calls https://<hostname>/<model> on the front door the model's route hangs on: this
    stack's, or (a workloads stack) its platform's, whose gateway section is the one that counts."""
    platform = platform_of(config, lookup)
    if platform is None:
        return
    gateway = platform.gateway
    for i, model in enumerate(config.models):
        if model.benchmark is None or not model.expose:
            continue
        key = key_path(["models", i, "benchmark"])
        if platform.parent is None or platform.parent.hostname is None:
            fix = (
                "set gateway.enabled: true with gateway.hostname"
                if platform.own
                else (f"ask the platform team ({platform.where}) for a front door with gateway.hostname")
            )
            yield Problem(
                key,
                f"a benchmark measures the model at https://<gateway.hostname>/{model.name}, and there is no front "
                f"door with a hostname to call; {fix}, or remove benchmark",
            )
        elif gateway.auth == "apiKey" and gateway.api_key_header != "Authorization":
            yield Problem(
                key,
                f"guidellm sends its key only as `Authorization: Bearer <key>`, and the gateway reads keys from "
                f"{gateway.api_key_header}; set gateway.apiKeyHeader: Authorization ({platform.where}), or remove "
                f"benchmark",
            )
