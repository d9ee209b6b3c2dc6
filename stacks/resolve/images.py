"""The platform's own images a stack renders, with the stack's pins applied: one table every builder
takes its images from, and the pin rules read, so nothing renders an image nobody pinned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..config.addons import AddonsSection, LiteLLM
from ..config.images import ImagePin
from ..offload import shared_gib
from ..resolved import ImageTable, ModelEntry
from ..versions import IMAGES, Image, overridden


def litellm_image(addon: LiteLLM, base: Image) -> Image:
    """The catalog's image, or the release `addons.litellm.version` names (1.100.1 -> v1.100.1, the
    tag LiteLLM publishes for a release since 1.84)."""
    if addon.version is None:
        return base
    return Image(base.repository, f"v{addon.version.removeprefix('v')}")


def rendered_images(
    *,
    owns_platform: bool,
    addons: AddonsSection,
    accelerators: frozenset[str],
    entries: Sequence[ModelEntry],
    picked: Sequence[bool],
    proxied: Sequence[bool] = (),
    warm: bool,
) -> tuple[str, ...]:
    """The catalog names of the platform's own images a stack renders, under the conditions the
    builders render them: the preparation steps for every model whose weights the platform prepares,
    the images an engine renders beside the model's own (Dynamo's planner for a profiling request),
    AIBrix's runtime sidecar beside every engine whose adapters AIBrix loads,
    the endpoint picker for every model routed through one (`picked`, entry by entry) and its proxy where
    LiteLLM calls it (`proxied`), the benchmark's
    runner (also the acceptance Job's), and, in a stack that owns the platform, LiteLLM (and its Redis),
    AIBrix's Envoy pair and init image, neuron-monitor on Neuron pools under monitoring, and busybox as the
    placeholder of warm nodes (`nodePools[].warmNodes`) and the KV-cache file tier's pruner. Builders look
    their images up in the table built from this list, so one left out here fails the render instead of
    going unpinned."""
    names: list[str] = []
    if any(e.made.prepared for e in entries):
        names += ["model-prep-s3", "model-prep-hub"]
    names += sorted({image for e in entries for image in e.made.platform_images})
    if any(e.adapter_loader == "aibrix" for e in entries):
        names.append("aibrix-runtime")
    if any(picked):
        names.append("endpoint-picker")
    if any(proxied):
        # The Envoy beside the picker of a picked model LiteLLM calls (RoutePicking.litellm_proxy).
        names.append("picker-proxy")
    # The acceptance Job is the benchmark's: its runner checks, the S3 image uploads the verdict.
    if any(e.config.benchmark is not None or e.acceptance is not None for e in entries):
        names += ["guidellm", *([] if "model-prep-s3" in names else ["model-prep-s3"])]
    if owns_platform:
        if addons.litellm.enabled:
            names += ["litellm", *(["redis"] if addons.litellm.redis else [])]
        if addons.aibrix.enabled:
            names += ["envoy-proxy", "envoy-gateway", "busybox"]
        if addons.monitoring.enabled and "neuron" in accelerators:
            names.append("neuron-monitor")
        if addons.tracing.enabled:
            names.append("otel-collector")
        if warm and "busybox" not in names:
            # The warm nodes' placeholder container (Karpenter's buffer pods are virtual: never pulled).
            names.append("busybox")
    if any(shared_gib(e.config) for e in entries) and "busybox" not in names:
        # The KV-cache file tier's pruning CronJob (components/storage/kvtier.py).
        names.append("busybox")
    return tuple(names)


def catalog_image(name: str, addons: AddonsSection) -> Image:
    """The catalog's image before the stack's pin: LiteLLM's is the release `addons.litellm.version`
    names, when it names one."""
    return litellm_image(addons.litellm, IMAGES[name]) if name == "litellm" else IMAGES[name]


def image_table(names: Sequence[str], addons: AddonsSection, pins: Mapping[str, ImagePin]) -> ImageTable:
    return ImageTable({name: overridden(catalog_image(name, addons), pins.get(name)) for name in names})
