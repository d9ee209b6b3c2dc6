"""Where traces go, resolved once: the collector's in-cluster address every hop exports to and the ratio
each samples at (which engines can export is each EngineSpec's `no_traces`)."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..config.addons import TracingAddon
from ..resolved import COLLECTOR_HOST, OTLP_GRPC_PORT, TraceExport


def trace_export(addon: TracingAddon) -> TraceExport | None:
    """The collector every hop exports to, or None when the platform runs no tracing."""
    if not addon.enabled:
        return None
    return TraceExport(endpoint=f"http://{COLLECTOR_HOST}:{OTLP_GRPC_PORT}", sampling_ratio=addon.sampling_ratio)


def backend_address(endpoint: str) -> tuple[str, int]:
    """The backend's host and port from `addons.tracing.endpoint` (the scheme's port when it names
    none: 443 for https, 80 for http), which the collector's egress policy opens."""
    parsed = urlsplit(endpoint)
    assert parsed.hostname is not None, "OtlpEndpoint's pattern requires a host"
    return parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
