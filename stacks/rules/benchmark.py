"""Benchmark rules: a benchmark Job needs a gateway route to measure and, to gate an update, an objective
it can judge (time to first token or inter-token latency)."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..errors import Problem
from ..resolved import ResolvedStack


@rule
def benchmark_needs_a_route_and_an_objective(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        model, bench = entry.config, entry.config.benchmark
        if bench is None:
            continue
        if not model.expose:
            yield Problem(
                entry.key("benchmark"),
                "a benchmark measures the model through its authenticated gateway route, and expose: false "
                "gives it none; set expose: true, or remove benchmark",
            )
        slo = model.slo
        if bench.gate and (slo is None or (slo.ttft_seconds is None and slo.itl_seconds is None)):
            yield Problem(
                entry.key("benchmark", "gate"),
                "gate: true fails `pulumi up` on a missed SLO, but the model's slo states no ttftSeconds or "
                "itlSeconds for the benchmark to judge; add one to slo, or set gate: false",
            )


@rule
def benchmark_reaches_the_front_door(stack: ResolvedStack) -> Iterable[Problem]:
    """The Job calls https://<hostname>/<model> on the front door the model's route hangs on: this
    stack's, or (a workloads stack) its platform's, whose gateway section is the one that counts."""
    platform = stack.platform
    if not platform.known:
        return
    gateway, parent = platform.gateway, platform.gateway_parent
    for entry in stack.entries:
        if entry.config.benchmark is None or not entry.config.expose:
            continue
        key = entry.key("benchmark")
        if parent is None or parent.hostname is None:
            fix = (
                "set gateway.enabled: true with gateway.hostname"
                if stack.owns_platform
                else f"ask the platform team ({platform.where}) for a front door with gateway.hostname"
            )
            yield Problem(
                key,
                f"a benchmark measures the model at https://<gateway.hostname>/{entry.name}, and there is no front "
                f"door with a hostname to call; {fix}, or remove benchmark",
            )
        elif gateway.auth == "apiKey" and gateway.api_key_header != "Authorization":
            yield Problem(
                key,
                f"guidellm sends its key only as `Authorization: Bearer <key>`, and the gateway reads keys from "
                f"{gateway.api_key_header}; set gateway.apiKeyHeader: Authorization ({platform.where}), or remove "
                f"benchmark",
            )
