"""Engine images against the hardware their pool runs: an image with no build for the pool's CPU
architecture (Arm Grace hosts such as p6e-gb200 are arm64) never starts, and a CUDA build without
Blackwell kernels (sm_100/sm_103, CUDA 12.8+) fails on B200 and B300 with "no kernel image is available".
Facts per image are in stacks/versions.py IMAGE_PLATFORMS with their sources; what they rule out is
refused, what they do not state is a warning that names the check."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem
from ..resolved import ResolvedModel, ResolvedStack
from ..versions import image_platforms

# The catalog's GPUs that need Blackwell kernels (Karpenter's instance-gpu-name values).
BLACKWELL = frozenset({"b200", "b300"})


def _image_key(model: ResolvedModel) -> tuple[str, ...]:
    """Where the image comes from: `models[i].image` when the stack overrides it, else the pool the
    model runs on (the engine's catalog image is fixed; the pool is what to change)."""
    image = model.config.image
    if image.repository or image.tag:
        return ("image",)
    return ("pool",)


def _blackwell(model: ResolvedModel) -> list[str]:
    return sorted({t.name for t in model.pool.instance_types if t.gpu_name in BLACKWELL})


@rule
def images_have_a_build_for_the_pool_architecture(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        arch = model.pool.config.architecture
        if facts is None or facts.architectures is None or arch in facts.architectures:
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"{model.image.repository}:{model.image.tag} is published for {', '.join(sorted(facts.architectures))} "
            f"only, but pool {model.pool.name} runs {arch} nodes: the pull finds no {arch} image and the pod "
            f"never starts ({facts.source}). Serve the model on an {' or '.join(sorted(facts.architectures))} "
            f"pool, or set models[].image to a build for {arch}",
        )


@warning
def images_not_known_for_the_pool_architecture(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        arch = model.pool.config.architecture
        if arch == "amd64" or (facts is not None and facts.architectures is not None):
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"pool {model.pool.name} runs {arch} nodes and the catalog does not know whether "
            f"{model.image.ref} has an {arch} build; check with `docker buildx imagetools inspect "
            f"{model.image.repository}:{model.image.tag}` before the first rollout",
        )


@rule
def blackwell_needs_an_image_with_its_kernels(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        if not (types := _blackwell(model)) or facts is None or facts.blackwell is not False:
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"{model.image.repository}:{model.image.tag} has no Blackwell kernels (sm_100/sm_103, CUDA 12.8+) "
            f"but pool {model.pool.name} allows {', '.join(types)}: the engine fails at start-up with 'no "
            f"kernel image is available' ({facts.source}). Set models[].image to a CUDA 12.8+ build, or serve "
            f"on a pool without B200/B300",
        )


@warning
def blackwell_kernels_not_known(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        if not (types := _blackwell(model)) or (facts is not None and facts.blackwell is not None):
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"pool {model.pool.name} allows {', '.join(types)} (Blackwell: sm_100/sm_103) and the catalog does "
            f"not know whether {model.image.ref} carries their kernels (CUDA 12.8 or later); check the image's "
            f"CUDA version before the first rollout",
        )
