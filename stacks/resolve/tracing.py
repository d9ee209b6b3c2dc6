"""Where traces go, resolved once: the collector's in-cluster address every hop exports to and the ratio
each samples at (which engines can export is each EngineSpec's `no_traces`)."""

from __future__ import annotations

from ..config.addons import TracingAddon
from ..resolved import COLLECTOR_HOST, OTLP_GRPC_PORT, TraceExport


def trace_export(addon: TracingAddon) -> TraceExport | None:
    """The collector every hop exports to, or None when the platform runs no tracing."""
    if not addon.enabled:
        return None
    return TraceExport(endpoint=f"http://{COLLECTOR_HOST}:{OTLP_GRPC_PORT}", sampling_ratio=addon.sampling_ratio)
