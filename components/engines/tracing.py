"""The engines' OpenTelemetry export: the flags and variables that send a model's spans to the
platform's collector (stacks/resolve/tracing.py says which engines can), sampled parent-based so a
request the gateway traced is traced at every hop, and one it did not is not."""

from __future__ import annotations

from stacks.resolved import TraceExport

# The OpenTelemetry SDK's standard sampler (opentelemetry-specification sdk-environment-variables):
# follow the caller's `traceparent` decision, else sample the ratio.
SAMPLER = "parentbased_traceidratio"


def sdk_env(tracing: TraceExport, service: str) -> list[dict[str, str]]:
    """The OpenTelemetry SDK variables of a Python engine: its service name in the backend, the sampler,
    and plaintext gRPC to the in-cluster collector (vLLM's exporter defaults to TLS otherwise)."""
    return [
        {"name": "OTEL_SERVICE_NAME", "value": service},
        {"name": "OTEL_TRACES_SAMPLER", "value": SAMPLER},
        {"name": "OTEL_TRACES_SAMPLER_ARG", "value": ratio(tracing.sampling_ratio)},
        {"name": "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "value": "true"},
    ]


def ratio(value: float) -> str:
    """A sampling ratio as the SDKs read it (`0.05`), without float noise."""
    return f"{value:.6g}"


def vllm_args(tracing: TraceExport | None) -> list[str]:
    """vLLM 0.29's `--otlp-traces-endpoint` (vllm/config/observability.py)."""
    return ["--otlp-traces-endpoint", tracing.endpoint] if tracing else []


def tgi_args(tracing: TraceExport | None, service: str) -> list[str]:
    """TGI 3.3.7's launcher flags (launcher/src/main.rs): its router exports OTLP/gRPC itself."""
    return ["--otlp-endpoint", tracing.endpoint, "--otlp-service-name", service] if tracing else []
