"""The `images` section: the stack's pins for the platform's own images, one key per catalog name.

The versions catalog (stacks/versions.py) names every image the platform renders besides the models'
engines: the preparation steps' images, neuron-monitor, LiteLLM and its Redis, AIBrix's Envoy pair
and init image, Dynamo's planner. The catalog carries only digests read from a registry (today
none), so a stack pins them here; `models[].image` pins a model's own engine image, per model. Prod refuses every
image the stack renders without a digest (stacks/rules/pins.py), at `images.<name>.digest`.

A key per image (not a free map) so an unknown name is refused with the names there are, and editors
and the reference list them with what each image is for.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args

from pydantic import Field, StringConstraints, ValidationError, ValidatorFunctionWrapHandler, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..versions import MODEL_IMAGES
from .base import IMAGE_TAG, ImageRepository, Strict, _rebuilt
from .models import Engine

# What a user may write here meaning a model's image: an engine's name or its image's catalog name.
MODEL_IMAGE_KEYS = frozenset(get_args(Engine)) | frozenset(MODEL_IMAGES)

SHA256_DIGEST = r"^sha256:[0-9a-f]{64}$"


class ImagePin(Strict):
    """One catalog image as this stack runs it: a mirror, another tag, and (for prod) its digest."""

    repository: ImageRepository | None = Field(
        default=None,
        description="Image name replacing the catalog's, e.g. a pull-through mirror in the stack's own ECR (the "
        "name only: tag and digest go in `tag` and `digest`).",
    )
    tag: Annotated[str, StringConstraints(pattern=IMAGE_TAG)] | None = Field(
        default=None, description="Image tag replacing the catalog's (stacks/versions.py `IMAGES`)."
    )
    digest: Annotated[str, StringConstraints(pattern=SHA256_DIGEST)] | None = Field(
        default=None,
        description="`sha256:<64 hex>` digest of the image at that repository and tag (e.g. `docker buildx "
        "imagetools inspect <repository>:<tag>`); required in `environment: prod` for every image the stack "
        "renders (dev and staging warn). The catalog's own digest is kept only while neither repository nor "
        "tag is overridden.",
    )


def _pin(alias: str, description: str) -> Any:
    return Field(default=None, alias=alias, description=description)


class ImagesSection(Strict):
    """Pins for the platform's own images, by their catalog names."""

    model_prep_s3: ImagePin | None = _pin(
        "model-prep-s3",
        "The aws-cli image of the preparation step that copies a model from the model bucket (every model whose "
        "weights the platform prepares).",
    )
    model_prep_hub: ImagePin | None = _pin(
        "model-prep-hub",
        "The image of the preparation step that downloads a model from Hugging Face at its pinned revision (the "
        "vLLM image by default: it carries huggingface_hub).",
    )
    neuron_monitor: ImagePin | None = _pin(
        "neuron-monitor", "neuron-monitor, the exporter on every Neuron node (Neuron pools with monitoring on)."
    )
    litellm: ImagePin | None = _pin(
        "litellm",
        "The LiteLLM proxy (`addons.litellm`); its catalog tag follows `addons.litellm.version`, so a digest "
        "alone pins that release.",
    )
    redis: ImagePin | None = _pin("redis", "The LiteLLM proxy's Redis (`addons.litellm.redis`).")
    otel_collector: ImagePin | None = _pin(
        "otel-collector", "The OpenTelemetry Collector every traced hop exports to (`addons.tracing`)."
    )
    envoy_proxy: ImagePin | None = _pin(
        "envoy-proxy",
        "The Envoy data plane of AIBrix's gateway. AIBrix 0.7.0's values schema admits `repository:tag` only, "
        "so no digest: pin it with a mirror whose tags are immutable.",
    )
    envoy_gateway: ImagePin | None = _pin(
        "envoy-gateway",
        "The shutdown manager of AIBrix's gateway (Envoy Gateway's image). `repository:tag` only, as `envoy-proxy`.",
    )
    aibrix_runtime: ImagePin | None = _pin(
        "aibrix-runtime",
        "AIBrix's runtime sidecar beside the engine of every model with `adapters` loaded by AIBrix: it downloads "
        "each adapter's artifact as the pod's service account and loads it into vLLM.",
    )
    busybox: ImagePin | None = _pin(
        "busybox",
        "AIBrix's init containers. Its values schema admits a repository and a tag only, as `envoy-proxy`.",
    )
    endpoint_picker: ImagePin | None = _pin(
        "endpoint-picker",
        "The llm-d router's endpoint picker, one per model with `routing.strategy` prefix-cache or load (its "
        "chart composes `repository:tag`; a digest is appended to the tag).",
    )
    picker_proxy: ImagePin | None = _pin(
        "picker-proxy",
        "The Envoy beside the endpoint picker of a picked model that LiteLLM serves: LiteLLM's requests go "
        "through it so the picker chooses their pod too (its chart takes the image as one string).",
    )
    guidellm: ImagePin | None = _pin(
        "guidellm", "guidellm 0.8.1, the SLO benchmark Job of every model with `benchmark` (its runner and verdict)."
    )
    dynamo_planner: ImagePin | None = _pin(
        "dynamo-planner", "The profiling job of a Dynamo model with `dynamo.requestProfiling`."
    )

    @model_validator(mode="wrap")
    @classmethod
    def _engine_images_are_pinned_per_model(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """An engine's name says where it is pinned instead, beside every other problem of the section."""
        engines = [k for k in data if k in MODEL_IMAGE_KEYS] if isinstance(data, dict) else []
        if not engines:
            return handler(data)
        names = ", ".join(cls.names())
        refused = [
            InitErrorDetails(
                type=PydanticCustomError("value_error", "Value error, {why}", {"why": why}), loc=(k,), input=data[k]
            )
            for k in engines
            for why in (
                f"{k!r} is a model's engine image: pin it per model with models[].image (repository, tag, digest); "
                f"this section pins the platform's own images: {names}",
            )
        ]
        try:
            handler({k: v for k, v in data.items() if k not in engines})
        except ValidationError as exc:
            refused += _rebuilt(exc, [])
        raise ValidationError.from_exception_data(cls.__name__, refused)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.alias or n for n, f in cls.model_fields.items())

    def pins(self) -> dict[str, ImagePin]:
        """Catalog name -> the stack's pin, for the images the stack pins."""
        return {f.alias or n: pin for n, f in type(self).model_fields.items() if (pin := getattr(self, n)) is not None}
