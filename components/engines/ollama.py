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
from collections.abc import Iterable
from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import (
    ONE_NODE,
    OPENAI_JSON_SCHEMA,
    OPENAI_PATHS,
    Autoscalers,
    Dialect,
    EngineFacts,
    Groups,
    ModelFacts,
)
from stacks.errors import Problem, duplicates
from stacks.resolved import ModelEntry, ResolvedStack
from stacks.versions import IMAGES, overridden

from .spec import EngineSpec, WorkloadSpec
from .workload import EngineContainer, helper_container, platform_model, server_pods
from .workload import manifests as workload_manifests

# `ollama serve` takes no arguments at all (cmd/cmd.go: cobra.ExactArgs(0)); it is configured by
# environment, which the platform sets.
DIALECT = Dialect(
    engine="Ollama 0.34",
    owned={},
    streamed={},
    refused="`ollama serve` takes no arguments (cobra.ExactArgs(0)) and is configured by environment, which the "
    "platform sets; remove engineArgs",
)

FACTS = EngineFacts(
    title="Ollama 0.34",
    port=11434,
    health_path="/",
    ready_path="/api/version",
    metrics_path=None,  # Ollama exports no Prometheus metrics
    metrics_port=None,
    route_paths=OPENAI_PATHS,
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
    controller=None,
    platform_workload=True,
    picker_engine=None,
    picker_adapter_metric=None,
    metrics={},
    groups=Groups(
        builder=None,
        refused="Ollama runs a model on the accelerators of one machine; it has no multi-node mode",
        tensor_spans_nodes=False,
        head_rule=None,
        fixed_sizes="Ollama spreads a model over the GPUs it is given and takes no parallel sizes",
    ),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    lora_from_prefix=False,
    lora_flags=False,
    canary=False,
    # Ollama pulls its models by name and tag (`ollama.pull`), not a repository at a git revision.
    revisions=False,
    efa_stack=ONE_NODE,
    # llama.cpp compiles nothing it keeps between starts.
    compile_cache_env={},
    serving_role=None,
    kv_offload=None,
    # Not offered on shared GPUs: how it behaves within one slice (its memory sizing, its profiles) is not
    # verified here; it runs on whole GPUs.
    gpu_sharing=(),
    # Ollama 0.34: its OpenAI layer turns `response_format` json_schema into its `format` (openai/openai.go).
    json_output=OPENAI_JSON_SCHEMA,
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


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    """Ollama pulls its own models into the cache volume (its init container), from its library."""
    del addons
    image = overridden(IMAGES["ollama"], model.image)
    return platform_model(model, FACTS, image=image, dialect=DIALECT, hub_repo=None, prepared=False)


# ---- prod pins what it pulls ---------------------------------------------------------------------------

# Tags that name no version: the registry moves them as it is pushed to.
MOVING_TAGS = frozenset({"latest", "main", "master", "nightly", "stable", "edge", "dev"})


def _moving(entry: ModelEntry) -> Iterable[tuple[str, str]]:
    """(key path, name) of each model it pulls by a tag that moves (no tag is `:latest`)."""
    model = entry.config
    pulls = model.ollama.pull if model.ollama is not None else []
    named = [(entry.key("ollama", "pull", j), name) for j, name in enumerate(pulls)] or [
        (entry.key("model"), model.model)
    ]
    for path, name in named:
        tag = name.rpartition(":")[2] if ":" in name.rsplit("/", 1)[-1] else ""
        if not tag or tag.lower() in MOVING_TAGS:
            yield path, name


def checks(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """Each model pulled once; and an Ollama name without a tag is `:latest`, which the registry moves:
    in prod the model served would change under the same stack file."""
    pulls = entry.config.ollama.pull if entry.config.ollama is not None else []
    yield from duplicates(pulls, ["models", entry.index, "ollama", "pull"], "model to pull")
    if not stack.prod:
        return
    for path, name in _moving(entry):
        yield Problem(
            path,
            f"{name!r} pulls whatever `latest` is when a pod starts; in prod name a tag, e.g. {name.split(':')[0]}:8b",
        )


def warnings(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    if stack.prod:
        return
    for path, name in _moving(entry):
        yield Problem(path, f"{name!r} follows `latest`; name a tag so every pod serves the same model")


SPEC = EngineSpec(
    no_traces="Ollama has no OpenTelemetry export",
    facts=FACTS,
    model_facts=model_facts,
    pods=server_pods,
    manifests=manifests,
    checks=checks,
    warnings=warnings,
)
