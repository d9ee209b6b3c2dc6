"""Ollama on NVIDIA GPUs or CPU nodes.

The server listens on 0.0.0.0 (OLLAMA_HOST) so its Service reaches it; bound to the pod's localhost
it would not be. Pulling is a separate preparation step, an init container that starts a private
server, waits for it to answer (bounded), pulls each model with bounded retries and backoff, and
fails the pod if a pull never succeeds: no postStart sleep that pretends to wait. Models are stored
on the model volume (OLLAMA_MODELS). Ollama has no user authentication and no Prometheus endpoint;
its model-management API (/api/pull, /api/delete, ...) is listed in its FACTS so the gateway
never routes it.
"""

from __future__ import annotations

import shlex
from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection

from .facts import EngineFacts
from .spec import WorkloadSpec
from .workload import EngineContainer, deployment, helper_container
from .workload import manifests as workload_manifests

FACTS = EngineFacts(
    port=11434,
    health_path="/",
    ready_path="/api/version",
    metrics_path=None,  # Ollama exports no Prometheus metrics
    # Model management and ollama.com account paths (server/routes.go at 0.34): never routed.
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
    # Models are on disk before the server starts; loading into memory is quick.
    startup_seconds=600,
)
PULL_ATTEMPTS = 5
SERVER_WAIT_SECONDS = 60
RUN_AS = 1000


def models_to_pull(spec: WorkloadSpec) -> list[str]:
    pulls = spec.model.ollama.pull if spec.model.ollama and spec.model.ollama.pull else []
    return list(pulls) or [spec.model.model]


def pull_script(models: list[str]) -> str:
    """Start a private server, wait for it, pull with bounded retries, stop it; exit 1 on failure."""
    names = " ".join(shlex.quote(m) for m in models)
    return f"""set -eu
ollama serve &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
i=0
until ollama list >/dev/null 2>&1; do
  i=$((i+1))
  if [ "$i" -ge {SERVER_WAIT_SECONDS} ]; then echo "ollama server did not start" >&2; exit 1; fi
  sleep 1
done
for model in {names}; do
  n=0
  until ollama pull "$model"; do
    n=$((n+1))
    if [ "$n" -ge {PULL_ATTEMPTS} ]; then echo "pull of $model failed {PULL_ATTEMPTS} times" >&2; exit 1; fi
    sleep $((n*10))
  done
  ollama show "$model" >/dev/null
done
"""


def container(spec: WorkloadSpec) -> EngineContainer:
    port = FACTS.port
    store = [{"name": "OLLAMA_MODELS", "value": spec.cache.model_dir}]
    pull = helper_container(
        spec,
        RUN_AS,
        name="pull-models",
        command=["/bin/sh", "-c", pull_script(models_to_pull(spec))],
        env=[*store, {"name": "OLLAMA_HOST", "value": "127.0.0.1:11434"}],
    )
    return EngineContainer(
        command=["/bin/ollama"],
        args=["serve"],
        env=[*store, {"name": "OLLAMA_HOST", "value": f"0.0.0.0:{port}"}],
        init_containers=[pull],
        run_as_user=RUN_AS,
        uses_hf_token=False,
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return workload_manifests(spec, container(spec))


def service(model: ModelSection) -> tuple[str, int]:
    return model.name, FACTS.port


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    del addons
    return deployment(model)
