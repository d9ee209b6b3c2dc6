"""Pinning: prod refuses anything that can change under a running stack; dev and staging warn.

AMIs, model revisions, each model's engine image (`models[].image.digest`) and every other image the
stack renders (`images.<name>.digest`: the preparation steps, neuron-monitor, LiteLLM and the rest the
catalog lists). AIBrix's Envoy pair and init image are the exception: its chart takes them by tag only
(stacks/versions.py TAG_ONLY_IMAGES), so they are pinned by an immutable-tag mirror.
"""

from __future__ import annotations

from collections.abc import Iterable

from stacks.versions import TAG_ONLY_IMAGES

from ..checks import rule, warning
from ..config.base import GIT_REVISION
from ..errors import Problem, key_path
from ..resolved import ResolvedStack


def _unpinned(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.config.node_pools):
        if not pool.ami_pinned:
            yield Problem(
                key_path(["nodePools", i, "amiAlias"]),
                f"{pool.ami_alias} follows the newest AMI; pin a version, e.g. "
                f"{pool.ami_family}@v20261015, so nodes do not drift",
            )
    for entry in stack.entries:
        model = entry.config
        # An engine that pulls models by its own names and tags pins them its own way (its checks).
        if entry.facts.revisions and (model.revision is None or not GIT_REVISION.match(model.revision)):
            yield Problem(
                entry.key("revision"),
                f"{model.revision!r} is not a 40-hex commit; pin the model's exact revision "
                f"(the Hugging Face commit sha)",
            )
        if model.image.digest is None:
            yield Problem(
                entry.key("image", "digest"),
                "no image digest: a tag can be re-pushed; add image.digest: sha256:... for the "
                "engine image this model runs",
            )


@rule
def prod_pins(stack: ResolvedStack) -> Iterable[Problem]:
    if stack.prod:
        yield from _unpinned(stack)


@warning
def dev_pins(stack: ResolvedStack) -> Iterable[Problem]:
    if not stack.prod:
        yield from _unpinned(stack)


# ---- the platform's own images (the `images` section) -------------------------------------------------


def _unpinned_images(stack: ResolvedStack) -> Iterable[Problem]:
    """Every image the stack renders that would run by tag alone, named at the key that pins it: the
    table the builders take their images from (`ResolvedStack.images`)."""
    table = stack.images
    for name in table:
        image = table[name]
        if image.digest is None and name not in TAG_ONLY_IMAGES:
            yield Problem(
                key_path(["images", name, "digest"]),
                f"this stack runs {image.repository}:{image.tag} with no digest: a tag can be re-pushed; add "
                f"images.{name}.digest: sha256:... (that repository and tag's digest, e.g. from `docker buildx "
                f"imagetools inspect {image.repository}:{image.tag}`)",
            )


@rule
def prod_pins_every_image(stack: ResolvedStack) -> Iterable[Problem]:
    if stack.prod:
        yield from _unpinned_images(stack)


@warning
def dev_pins_every_image(stack: ResolvedStack) -> Iterable[Problem]:
    if not stack.prod:
        yield from _unpinned_images(stack)


@rule
def image_pins_the_renderer_can_apply(stack: ResolvedStack) -> Iterable[Problem]:
    """A digest AIBrix's chart cannot take would be dropped without a word; a LiteLLM tag beside
    `addons.litellm.version` would leave two answers to which release runs."""
    config = stack.config
    pins = config.images.pins()
    for name, why in TAG_ONLY_IMAGES.items():
        pin = pins.get(name)
        if pin is not None and pin.digest is not None:
            yield Problem(
                key_path(["images", name, "digest"]),
                f"{why}, so this digest would never reach the pod; remove it and pin the image with a mirror "
                f"repository whose tags are immutable (images.{name}.repository and tag)",
            )
    litellm = pins.get("litellm")
    if litellm is not None and litellm.tag is not None and config.addons.litellm.version is not None:
        yield Problem(
            key_path(["images", "litellm", "tag"]),
            f"addons.litellm.version ({config.addons.litellm.version}) already names the release; set one of the "
            f"two (a digest in images.litellm.digest pins that release)",
        )
