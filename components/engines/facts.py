"""What an engine module declares about its server: ports, health and metrics paths, the paths the
gateway may route and those it must never route, the accelerators it runs on and, for engines whose
objects a serving platform's operator reconciles, that platform's add-on. Facts from each engine's
own documentation at the pinned versions (shared/seed/inference-frameworks.md names them)."""

from __future__ import annotations

from dataclasses import dataclass

OPENAI_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/embeddings")


@dataclass(frozen=True, kw_only=True)
class EngineFacts:
    port: int
    health_path: str  # liveness
    ready_path: str  # readiness and startup
    metrics_path: str | None
    metrics_port: int | None = None  # None: same as `port`
    route_paths: tuple[str, ...] = OPENAI_PATHS
    # Paths that manage models or the server; never routed through the gateway.
    management_paths: tuple[str, ...] = ()
    accelerators: tuple[str, ...] = ("nvidia",)
    # The add-on whose operator runs this engine's objects (its CRDs' installer, and the controller
    # namespace that must reach the pods); None for engines the platform runs as its own workloads.
    controller: str | None = None
    # The llm-d router's name for this server (its `llm-d.ai/engine-type` pod label and chart
    # `modelServers.type`), whose metrics its endpoint picker reads (llm-d-router v0.10.0
    # pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go defaultEngineConfigs: vllm,
    # sglang, trtllm-serve, triton-tensorrt-llm, triton); None: it cannot read them.
    picker_engine: str | None = None
    # Seconds the startup probe allows before the kubelet restarts a still-loading server (weights
    # read, warm-up); the cache's budget for the model's size wins when it is larger
    # (workload.startup_allowance).
    startup_seconds: int = 1800
    # Sized by the fit check and scaled by an HPA or AIBrix as the platform's own workload (False:
    # run and scaled by its operator).
    platform_workload: bool = True
