"""Canary rules: a `models[].canary` is a second Deployment and Service of another revision beside
the model's, weighted on its route. The platform builds that pair only for the engines it runs as its
own Deployment: vLLM, SGLang, and NIM without the NIM Operator (a NIMService fetches an `hf://` model
itself, without the revision, and a `nim.modelPath` directory is one revision: a second NIMService or
Deployment would serve the same weights). The split is the front door's route, so the model must be
exposed through it, and AIBrix's own routes (one backend per model name) cannot carry it."""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import rule
from ..errors import Problem
from ..resolved import CANARY_SUFFIX, ResolvedStack


@rule
def a_canary_runs_beside_its_model(stack: ResolvedStack) -> Iterable[Problem]:
    names = {e.name for e in stack.entries}
    for entry in stack.entries:
        model, canary = entry.config, entry.config.canary
        if canary is None:
            continue
        key = entry.key("canary")
        if not entry.facts.canary:
            able = ", ".join(name for name, e in ENGINES.items() if e.facts.canary)
            yield Problem(
                key,
                f"engine {model.engine} cannot run a canary: the platform runs two revisions side by side only "
                f"for {able} (its own Deployments); remove canary and roll the revision",
            )
        if canary.revision == model.revision:
            yield Problem(
                entry.key("canary", "revision"),
                f"canary.revision equals revision ({model.revision}): a canary serves another revision; give the "
                f"commit to try, or remove canary",
            )
        if not model.expose:
            yield Problem(
                key,
                "a canary's share is set on the model's gateway route, and expose: false has none; set expose: "
                "true or remove canary",
            )
        if model.name + CANARY_SUFFIX in names:
            yield Problem(
                key,
                f"the canary's workload and Service are named {model.name}{CANARY_SUFFIX}, which is another "
                f"model's name; rename that model",
            )


@rule
def a_canary_has_its_platforms_support(stack: ResolvedStack) -> Iterable[Problem]:
    """The weighted split is the front door's route: AIBrix's own routes (one backend per model name)
    cannot carry it."""
    if not stack.platform.addons.aibrix.enabled:
        return
    for entry in stack.entries:
        if entry.config.canary is not None:
            yield Problem(
                entry.key("canary"),
                "with addons.aibrix the model's route is AIBrix's, with one backend per model name, so no "
                "weighted canary; remove canary, or serve through the front door without AIBrix",
            )
