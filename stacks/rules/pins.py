"""Pinning: prod refuses anything that can change under a running stack; dev and staging warn."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config import StackConfig
from ..config.base import GIT_REVISION
from ..errors import Problem, key_path


def _unpinned(config: StackConfig) -> Iterable[Problem]:
    for i, pool in enumerate(config.node_pools):
        if not pool.ami_pinned:
            yield Problem(
                key_path(["nodePools", i, "amiAlias"]),
                f"{pool.ami_alias} follows the newest AMI; pin a version, e.g. "
                f"{pool.ami_family}@v20261015, so nodes do not drift",
            )
    for i, model in enumerate(config.models):
        if model.engine != "ollama" and (model.revision is None or not GIT_REVISION.match(model.revision)):
            yield Problem(
                key_path(["models", i, "revision"]),
                f"{model.revision!r} is not a 40-hex commit; pin the model's exact revision "
                f"(the Hugging Face commit sha)",
            )
        if model.image.digest is None:
            yield Problem(
                key_path(["models", i, "image", "digest"]),
                "no image digest: a tag can be re-pushed; add image.digest: sha256:... for the "
                "engine image this model runs",
            )


@rule
def prod_pins(config: StackConfig) -> Iterable[Problem]:
    if config.stack.prod:
        yield from _unpinned(config)


@warning
def dev_pins(config: StackConfig) -> Iterable[Problem]:
    if not config.stack.prod:
        yield from _unpinned(config)
