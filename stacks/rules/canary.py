"""Canary rules: a `models[].canary` is a second Deployment and Service of another revision beside
the model's, weighted on its route. The platform builds that pair only for the engines it runs as its
own Deployment: vLLM, SGLang, and NIM without the NIM Operator (a NIMService fetches an `hf://` model
itself, without the revision, and a `nim.modelPath` directory is one revision: a second NIMService or
Deployment would serve the same weights). The split is the front door's route, so the model must be
exposed through it, and AIBrix's own routes (one backend per model name) cannot carry it."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import Lookup, platform_rule, rule
from ..config import StackConfig
from ..config.models import CANARY_ENGINES
from ..errors import Problem, key_path
from ..resolved import CANARY_SUFFIX
from .context import platform_of


@rule
def a_canary_runs_beside_its_model(config: StackConfig) -> Iterable[Problem]:
    names = {m.name for m in config.models}
    for i, model in enumerate(config.models):
        canary = model.canary
        if canary is None:
            continue
        key: list[str | int] = ["models", i, "canary"]
        if model.engine not in CANARY_ENGINES:
            yield Problem(
                key_path(key),
                f"engine {model.engine} cannot run a canary: the platform runs two revisions side by side only "
                f"for {', '.join(CANARY_ENGINES)} (its own Deployments); remove canary and roll the revision",
            )
        elif model.engine == "nim" and model.nim is not None and model.nim.model_path is not None:
            yield Problem(
                key_path(key),
                f"a NIM canary needs the platform to prepare the canary's revision, but nim.modelPath "
                f"({model.nim.model_path}) is one directory for both; serve an hf:// model without nim.modelPath",
            )
        if canary.revision == model.revision:
            yield Problem(
                key_path([*key, "revision"]),
                f"canary.revision equals revision ({model.revision}): a canary serves another revision; give the "
                f"commit to try, or remove canary",
            )
        if not model.expose:
            yield Problem(
                key_path(key),
                "a canary's share is set on the model's gateway route, and expose: false has none; set expose: "
                "true or remove canary",
            )
        if model.name + CANARY_SUFFIX in names:
            yield Problem(
                key_path(key),
                f"the canary's workload and Service are named {model.name}{CANARY_SUFFIX}, which is another "
                f"model's name; rename that model",
            )


@platform_rule
def a_canary_has_its_platforms_support(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    platform = platform_of(config, lookup)
    if platform is None:
        return
    for i, model in enumerate(config.models):
        if model.canary is None:
            continue
        if platform.addons.aibrix.enabled:
            yield Problem(
                key_path(["models", i, "canary"]),
                "with addons.aibrix the model's route is AIBrix's, with one backend per model name, so no "
                "weighted canary; remove canary, or serve through the front door without AIBrix",
            )
        if model.engine == "nim" and platform.addons.nim_operator.enabled:
            yield Problem(
                key_path(["models", i, "canary"]),
                "the NIM Operator's NIMService fetches an hf:// model itself without its revision, so a second "
                "NIMService would not serve the canary's revision; remove canary, or run NIM as the platform's "
                "Deployment (addons.nimOperator.enabled: false)",
            )
