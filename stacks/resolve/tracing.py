"""Where traces go, resolved once: the collector's in-cluster address every hop exports to, the ratio
each samples at, and which engines can export at all (the rest are refused in stacks/rules/tracing.py).
"""

from __future__ import annotations

from ..config.addons import TracingAddon
from ..resolved import COLLECTOR_HOST, OTLP_GRPC_PORT, TraceExport

# The engines whose pinned image exports OTLP spans, with the source that says so:
# - vllm: `--otlp-traces-endpoint` (vllm/config/observability.py, engine/arg_utils.py), and from 0.28
#   the opentelemetry-api/sdk/exporter-otlp packages are runtime requirements of the wheel the
#   vllm/vllm-openai image installs (requirements/common.txt; openSUSE's python-vllm 0.28.0 spec lists
#   them as Requires).
# - tgi: the launcher's `--otlp-endpoint` and `--otlp-service-name` (launcher/src/main.rs, clap
#   `long, env`), exported by the Rust router itself; nothing to install.
EXPORTING_ENGINES = frozenset({"vllm", "tgi"})

# Why each other engine cannot export from its pinned image (the refusal quotes it).
NO_EXPORT: dict[str, str] = {
    "sglang": "SGLang's `--enable-trace` needs its `tracing` extra (opentelemetry-sdk, -exporter-otlp), which "
    "the lmsysorg/sglang image does not install (docs.sglang.io production_request_trace: `pip install "
    '-e "python[tracing]"`)',
    "neuron-vllm": "the vLLM 0.16 Neuron image predates the opentelemetry packages as vLLM requirements",
    "nim": "NIM's model-free image documents no OTLP trace export",
    "ollama": "Ollama has no OpenTelemetry export",
    "dynamo": "Dynamo's runtime traces through its own operator's settings, which the platform does not manage yet",
    "ray-serve": "Ray Serve's tracing hook needs a tracer module baked into the image",
}


def trace_export(addon: TracingAddon) -> TraceExport | None:
    """The collector every hop exports to, or None when the platform runs no tracing."""
    if not addon.enabled:
        return None
    return TraceExport(endpoint=f"http://{COLLECTOR_HOST}:{OTLP_GRPC_PORT}", sampling_ratio=addon.sampling_ratio)
