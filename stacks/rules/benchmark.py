"""Benchmark rules: a benchmark Job needs a gateway route to measure and, to gate an update, an objective
it can judge (time to first token or inter-token latency); its numbers must be ones guidellm and the
engine honour (a percentile guidellm reports, a request shape within the model's context, enough
requests to reach each concurrency); `revisions: each` needs a canary to measure."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config.benchmark import GUIDELLM_PERCENTILES
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


@rule
def a_benchmark_judges_a_percentile_guidellm_reports(stack: ResolvedStack) -> Iterable[Problem]:
    """The verdict reads the `slo.p` quantile of guidellm's report, which has only GUIDELLM_PERCENTILES:
    any other finds no value, and every run would fail as a miss."""
    for entry in stack.entries:
        model, bench = entry.config, entry.config.benchmark
        slo = model.slo
        if bench is None or slo is None or (slo.ttft_seconds is None and slo.itl_seconds is None):
            continue
        if not any(abs(slo.p - q) < 1e-9 for q in GUIDELLM_PERCENTILES):
            listed = ", ".join(f"{q:g}" for q in GUIDELLM_PERCENTILES)
            yield Problem(
                entry.key("slo", "p"),
                f"the benchmark judges ttftSeconds/itlSeconds at slo.p {slo.p:g}, and guidellm 0.8.1 reports only "
                f"the percentiles {listed}, so every run would fail for want of a value; set slo.p to one of "
                f"them (e.g. 0.95 or 0.99)",
            )


@rule
def a_benchmark_request_fits_the_models_context(stack: ResolvedStack) -> Iterable[Problem]:
    """Each synthetic request is inputTokens of prompt asking for outputTokens more: the engine refuses one
    whose sum exceeds the context it was given (vLLM's "maximum context length", TGI's
    --max-total-tokens), so every request of the sweep would fail."""
    for entry in stack.entries:
        model, bench = entry.config, entry.config.benchmark
        if bench is None or model.max_model_len is None:
            continue
        total = bench.input_tokens + bench.output_tokens
        if total > model.max_model_len:
            yield Problem(
                entry.key("benchmark", "inputTokens"),
                f"inputTokens {bench.input_tokens} + outputTokens {bench.output_tokens} = {total} tokens per request, "
                f"beyond the model's context, maxModelLen {model.max_model_len}: the engine refuses every such "
                f"request; lower inputTokens or outputTokens to fit (with room for the chat template), or raise "
                f"maxModelLen",
            )


@rule
def a_benchmark_sends_enough_requests_for_its_concurrency(stack: ResolvedStack) -> Iterable[Problem]:
    """guidellm's max_requests stops queuing at `requests`: a concurrency above it never has that many
    streams at once, so its result would be labelled with a load it never saw."""
    for entry in stack.entries:
        bench = entry.config.benchmark
        if bench is None:
            continue
        top = max(bench.concurrency)
        if bench.requests < top:
            yield Problem(
                entry.key("benchmark", "requests"),
                f"requests {bench.requests} is below the sweep's concurrency {top}: guidellm stops at {bench.requests} "
                f"requests, so {top} streams never run at once; set requests to at least {top} (several times it "
                f"for stable percentiles), or lower concurrency",
            )


@warning
def each_revision_needs_a_canary(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        bench = entry.config.benchmark
        if bench is not None and bench.revisions == "each" and entry.config.canary is None:
            yield Problem(
                entry.key("benchmark", "revisions"),
                "revisions: each measures a canary beside the stable revision, and this model has no canary: "
                "the benchmark measures its one revision; remove revisions, or add canary",
            )
