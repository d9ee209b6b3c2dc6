"""Model rules: each model on an existing pool with the accelerator its engine runs on."""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import rule, warning
from ..config import StackConfig
from ..errors import Problem, key_path

# Which accelerators each engine runs on: each engine module's FACTS (components/engines) holds them.
ENGINE_ACCELERATORS: dict[str, tuple[str, ...]] = {engine: e.facts.accelerators for engine, e in ENGINES.items()}

# Engines that need a platform add-on installed first: those whose operator runs them (not NIM,
# which runs as the platform's own Deployment without its operator).
ENGINE_ADDONS = {
    engine: e.facts.controller for engine, e in ENGINES.items() if e.facts.controller and not e.facts.platform_workload
}


@rule
def model_pool_and_accelerator(config: StackConfig) -> Iterable[Problem]:
    if config.stack.role == "workloads":
        return  # checked against the platform's exported pools (stacks/rules/workloads.py)
    names = [p.name for p in config.node_pools]
    for i, model in enumerate(config.models):
        pool = config.pool(model.pool)
        if pool is None:
            yield Problem(
                key_path(["models", i, "pool"]),
                f"no node pool named {model.pool!r}; pools: {', '.join(names) or '(none defined)'}",
            )
            continue
        allowed = ENGINE_ACCELERATORS[model.engine]
        if pool.accelerator not in allowed:
            yield Problem(
                key_path(["models", i, "engine"]),
                f"engine {model.engine} runs on {' or '.join(allowed)} but pool {pool.name} is "
                f"{pool.accelerator}; choose a pool with {allowed[0]} accelerators"
                + ("" if model.engine != "nim" else " (NIM containers are built for NVIDIA GPUs)"),
            )


@rule
def engine_addons(config: StackConfig) -> Iterable[Problem]:
    if config.stack.role == "workloads":
        return  # the platform's add-ons are checked in stacks/rules/workloads.py
    for i, model in enumerate(config.models):
        addon = ENGINE_ADDONS.get(model.engine)
        if addon and not getattr(config.addons, addon).enabled:
            key = "kuberay" if addon == "kuberay" else addon
            yield Problem(
                key_path(["models", i, "engine"]),
                f"engine {model.engine} needs addons.{key}.enabled: true",
            )


# Organizations that gate their Hugging Face repositories (every repo, or their main models): the Hub
# answers 401/403 until the account of the token has accepted the licence. The one list of them.
GATED_ORGS = ("meta-llama", "mistralai", "google", "CohereLabs", "CohereForAI")


@warning
def gated_models_need_a_token(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        repo = ENGINES[model.engine].model_facts(model, config.addons).hub_repo
        if repo is None or model.secrets.hugging_face_token is not None:
            continue
        org = repo.split("/", 1)[0]
        if org.lower() in {o.lower() for o in GATED_ORGS}:
            yield Problem(
                key_path(["models", i, "secrets", "huggingFaceToken"]),
                f"{org} gates its repositories on the Hugging Face Hub: without a token of an account that "
                f"accepted the licence, fetching {repo} fails. Set secrets.huggingFaceToken to an existing Secret "
                f"holding such a token",
            )
