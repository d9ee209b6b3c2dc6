"""Model rules: each model on a pool of its platform with the accelerator its engine runs on, the add-on
its engine's operator needs installed, and a token for a gated Hugging Face repository."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem
from ..resolved import ResolvedStack


@rule
def model_pool_and_accelerator(stack: ResolvedStack) -> Iterable[Problem]:
    if not stack.platform.known:
        return  # a workloads stack's platform is checked at preview (stacks/rules/workloads.py warns)
    pools = stack.platform.pools
    names = ", ".join(p.name for p in pools)
    for entry in stack.entries:
        pool = stack.platform.pool(entry.config.pool)
        if pool is None:
            wanted = entry.config.pool
            yield Problem(
                entry.key("pool"),
                f"no node pool named {wanted!r}; pools: {names or '(none defined)'}"
                if stack.owns_platform
                else f"{stack.platform.where} exports no pool named {wanted!r}; its pools: {names or '(none)'}",
            )
            continue
        allowed = entry.facts.accelerators
        if pool.accelerator not in allowed:
            runs = f"engine {entry.config.engine} runs on {' or '.join(allowed)}"
            yield Problem(
                entry.key("engine"),
                f"{runs} but pool {pool.name} is {pool.accelerator}; choose a pool with {allowed[0]} accelerators "
                f"({entry.facts.title} is built for {' or '.join(allowed)})"
                if stack.owns_platform
                else f"{runs} but the platform's pool {pool.name} is {pool.accelerator}; choose one of the "
                f"platform's {allowed[0]} pools",
            )


@rule
def engine_addons(stack: ResolvedStack) -> Iterable[Problem]:
    """An engine its operator runs needs that operator's add-on (NIM runs as the platform's own
    Deployment without it)."""
    if not stack.platform.known:
        return
    for entry in stack.entries:
        addon = entry.facts.controller
        if addon and not entry.facts.platform_workload and not getattr(stack.platform.addons, addon).enabled:
            yield Problem(
                entry.key("engine"),
                f"engine {entry.config.engine} needs addons.{addon}.enabled: true"
                if stack.owns_platform
                else f"engine {entry.config.engine} needs the {addon} add-on, which {stack.platform.where} does "
                f"not install; {stack.ask_for(addon)}",
            )


# Organizations that gate their Hugging Face repositories (every repo, or their main models): the Hub
# answers 401/403 until the account of the token has accepted the licence. The one list of them.
GATED_ORGS = ("meta-llama", "mistralai", "google", "CohereLabs", "CohereForAI")


def gated_repo(repo: str) -> bool:
    """Whether a Hugging Face repository (`org/name`) is from an organization known to gate it
    (`GATED_ORGS`); False means not known to be gated, not known to be open."""
    return repo.split("/", 1)[0].lower() in {o.lower() for o in GATED_ORGS}


@warning
def gated_models_need_a_token(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        repo = entry.made.hub_repo
        if repo is None or entry.config.secrets.hugging_face_token is not None:
            continue
        org = repo.split("/", 1)[0]
        if gated_repo(repo):
            yield Problem(
                entry.key("secrets", "huggingFaceToken"),
                f"{org} gates its repositories on the Hugging Face Hub: without a token of an account that "
                f"accepted the licence, fetching {repo} fails. Set secrets.huggingFaceToken to an existing Secret "
                f"holding such a token",
            )
