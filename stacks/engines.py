"""Engine facts: ports, health and metrics paths, and the paths that must never be routed.

Facts from each engine's own documentation at the pinned versions (shared/seed/inference-frameworks.md
names them). The engine modules, the gateway, the scrapers and LiteLLM all read this one table, so a
path is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPENAI_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/embeddings")


@dataclass(frozen=True)
class EngineFacts:
    port: int
    health_path: str  # liveness
    ready_path: str  # readiness and startup
    metrics_path: str | None
    metrics_port: int | None = None  # None: same as `port`
    route_paths: tuple[str, ...] = OPENAI_PATHS
    # Paths that manage models or the server; never routed through the gateway.
    management_paths: tuple[str, ...] = field(default_factory=tuple)
    accelerators: tuple[str, ...] = ("nvidia",)


ENGINES: dict[str, EngineFacts] = {
    "vllm": EngineFacts(port=8000, health_path="/health", ready_path="/health", metrics_path="/metrics"),
    "neuron-vllm": EngineFacts(
        port=8000, health_path="/health", ready_path="/health", metrics_path="/metrics", accelerators=("neuron",)
    ),
    "sglang": EngineFacts(port=30000, health_path="/health", ready_path="/health", metrics_path="/metrics"),
    "nim": EngineFacts(
        port=8000, health_path="/v1/health/live", ready_path="/v1/health/ready", metrics_path="/v1/metrics"
    ),
    "tgi": EngineFacts(port=8080, health_path="/health", ready_path="/health", metrics_path="/metrics"),
    "ollama": EngineFacts(
        port=11434,
        health_path="/",
        ready_path="/api/version",
        metrics_path=None,  # Ollama exports no Prometheus metrics
        route_paths=("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/embeddings"),
        # Model management and ollama.com account paths (server/routes.go at 0.34).
        management_paths=(
            "/api/pull",
            "/api/delete",
            "/api/create",
            "/api/push",
            "/api/copy",
            "/api/blobs",
            "/api/me",
            "/api/signout",
            "/api/user/keys",
            "/api/experimental",
        ),
        accelerators=("nvidia", "none"),
    ),
    "dynamo": EngineFacts(port=8000, health_path="/health", ready_path="/health", metrics_path="/metrics"),
    "ray-serve": EngineFacts(
        port=8000, health_path="/-/healthz", ready_path="/-/healthz", metrics_path="/metrics", metrics_port=8080
    ),
}

# Engines the platform runs as its own workloads (a Deployment/StatefulSet, or a NIMService): sized
# by the fit check and scaled by an HPA or AIBrix. Dynamo and Ray Serve are run and scaled by their
# operators.
WORKLOAD_ENGINES = ("vllm", "sglang", "nim", "tgi", "ollama", "neuron-vllm")


def facts(engine: str) -> EngineFacts:
    return ENGINES[engine]
