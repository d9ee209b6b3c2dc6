"""The `models` section: one entry per served model, naming its engine and its node pool."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from .base import DnsLabel, SecretName, Strict
from .slo import Slo

Engine = Literal["vllm", "sglang", "nim", "tgi", "ollama", "neuron-vllm", "dynamo", "ray-serve"]
Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4"]

_PARAMS = re.compile(r"^([0-9]+(\.[0-9]+)?)([KMBT])?$")
_SCALE = {None: 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def parse_parameters(value: str | int) -> int:
    """'8B' -> 8_000_000_000, '500M' -> 500_000_000, 7000 -> 7000."""
    if isinstance(value, int):
        return value
    match = _PARAMS.match(value.strip())
    if not match:
        raise ValueError(f"parameters {value!r} is not a count: write 8B, 500M, 1.5B or an integer")
    return int(float(match.group(1)) * _SCALE[match.group(3)])


class Image(Strict):
    """Override of the catalog image for one model: repository, tag and (for prod) digest."""

    repository: (
        Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+([._/-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9._-]+)*$")] | None
    ) = None
    tag: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")] | None = None
    digest: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None


class Nim(Strict):
    profile: Annotated[str, StringConstraints(min_length=1)]
    image_pull_secret: SecretName = "ngc-registry"
    model_path: str | None = None


class Tgi(Strict):
    accept_maintenance_mode: bool = False
    quantize: Literal["awq", "gptq", "bitsandbytes", "eetq", "fp8"] | None = None
    weights_format: Literal["awq", "gptq", "safetensors"] = "safetensors"


class Sglang(Strict):
    grammar_backend: Literal["xgrammar", "outlines", "llguidance"] = "xgrammar"


class Ollama(Strict):
    pull: list[Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?$")]] = Field(
        default_factory=list
    )


class Dynamo(Strict):
    mode: Literal["aggregated", "disaggregated"] = "aggregated"
    backend: Literal["vllm", "sglang", "trtllm"] = "vllm"
    prefill_workers: int = Field(default=1, ge=1, le=64)
    decode_workers: int = Field(default=1, ge=1, le=64)
    prefill_revision: str | None = None
    frontend_replicas: int = Field(default=1, ge=1, le=16)
    request_profiling: bool = False
    # The concurrency the profiler sizes the graph for: a DGDR needs it (or requestRate) when no
    # planner runs, and the platform deploys none.
    profile_concurrency: int | None = Field(default=None, ge=1, le=100_000)

    @model_validator(mode="after")
    def _profiling_workload(self) -> Self:
        if self.request_profiling and self.profile_concurrency is None:
            raise ValueError(
                "requestProfiling needs profileConcurrency: the concurrent requests the profiler sizes the "
                "graph for (the DynamoGraphDeploymentRequest requires a workload when no planner runs)"
            )
        if self.profile_concurrency is not None and not self.request_profiling:
            raise ValueError("profileConcurrency only applies with requestProfiling: true; set both or neither")
        return self


class RayServe(Strict):
    min_workers: int = Field(default=1, ge=0, le=256)
    max_workers: int = Field(default=2, ge=1, le=256)
    pip: list[str] = Field(default_factory=list)


class Autoscaling(Strict):
    owner: Literal["hpa", "aibrix", "dynamo-planner", "none"] = "none"
    min_replicas: int = Field(default=1, ge=0, le=1000)
    max_replicas: int = Field(default=4, ge=1, le=1000)
    strategy: Literal["HPA", "KPA", "APA"] = "KPA"
    # The engine gauge to scale on; unset: the engine's queue depth (stacks/metrics.py scaling_metric).
    metric: str | None = None
    target_value: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?$")] = "10"

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) must not exceed maxReplicas ({self.max_replicas})")
        return self


class Adapter(Strict):
    """An AIBrix ModelAdapter (LoRA) loaded onto the model's pods."""

    name: DnsLabel
    artifact_url: Annotated[str, StringConstraints(min_length=2)] = Field(alias="artifactURL")
    replicas: int | None = None

    @field_validator("artifact_url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if not value.startswith(("s3://", "gcs://", "tos://", "huggingface://", "hf://", "/")):
            raise ValueError(
                f"{value!r}: the AIBrix webhook accepts s3://, gcs://, tos://, huggingface://, "
                f"hf:// or an absolute path, not https://"
            )
        return value

    @field_validator("replicas")
    @classmethod
    def _one_or_all(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError(
                f"replicas {value} is refused by AIBrix: omit it to load the adapter on every "
                f"matching pod, or set 1 to load it on one"
            )
        return value


class ModelSecrets(Strict):
    """Names of existing Kubernetes Secrets, mounted into the pods as files."""

    hugging_face_token: SecretName | None = None
    ngc_api_key: SecretName | None = None


class Resources(Strict):
    """Explicit cpu/memory per replica; default sizing comes from the engine module."""

    cpu: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?m?$")] | None = None
    memory: Annotated[str, StringConstraints(pattern=r"^[0-9]+(Mi|Gi|Ti)$")] | None = None


class ModelSection(Strict):
    """One entry of `inference-platform:models`."""

    name: DnsLabel
    engine: Engine
    model: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    revision: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None
    pool: DnsLabel
    accelerators_per_replica: int = Field(default=1, ge=0, le=64)
    replicas: int = Field(default=1, ge=0, le=1000)
    max_model_len: int | None = Field(default=None, ge=128, le=10_000_000)
    parameters: str | int | None = None
    dtype: Dtype | None = None
    image: Image = Field(default_factory=Image)
    engine_args: list[str] = Field(default_factory=list)
    trust_remote_code: bool = False
    resources: Resources = Field(default_factory=Resources)
    nim: Nim | None = None
    tgi: Tgi | None = None
    sglang: Sglang | None = None
    ollama: Ollama | None = None
    dynamo: Dynamo | None = None
    ray_serve: RayServe | None = None
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    adapters: list[Adapter] = Field(default_factory=list)
    secrets: ModelSecrets = Field(default_factory=ModelSecrets)
    expose: bool = True
    namespace: DnsLabel | None = None
    slo: Slo | None = None  # serving objectives alerted on (monitoring)

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: str | int | None) -> str | int | None:
        if value is not None:
            parse_parameters(value)
        return value

    @model_validator(mode="after")
    def _engine_blocks(self) -> Self:
        blocks = {
            "nim": "nim",
            "tgi": "tgi",
            "sglang": "sglang",
            "ollama": "ollama",
            "dynamo": "dynamo",
            "ray_serve": "ray-serve",
        }
        for attr, engine in blocks.items():
            if getattr(self, attr) is not None and self.engine != engine:
                key = "rayServe" if attr == "ray_serve" else attr
                raise ValueError(f"the {key} block only applies to engine: {engine} (engine is {self.engine})")
        if self.engine == "nim" and self.nim is None:
            raise ValueError(
                "engine: nim needs nim.profile: a profile id from the container's own profile list "
                "(list-model-profiles); there is no safe default"
            )
        if self.engine == "tgi" and (self.tgi is None or not self.tgi.accept_maintenance_mode):
            raise ValueError(
                "TGI is in maintenance mode upstream (no new features); set "
                "tgi.acceptMaintenanceMode: true to deploy it anyway, or choose vllm or sglang"
            )
        if self.tgi and self.tgi.quantize in ("awq", "gptq") and self.tgi.weights_format != self.tgi.quantize:
            raise ValueError(
                f"tgi.quantize: {self.tgi.quantize} needs weights already in that format; "
                f"--quantize does not convert ordinary weights. Set tgi.weightsFormat: "
                f"{self.tgi.quantize} for a {self.tgi.quantize.upper()} checkpoint, or drop quantize"
            )
        if (self.parameters is None) != (self.dtype is None) and self.parameters is not None:
            raise ValueError("parameters needs dtype to check the weights against accelerator memory")
        if (
            self.engine in ("vllm", "sglang", "nim", "tgi", "neuron-vllm", "dynamo")
            and self.accelerators_per_replica < 1
        ):
            raise ValueError(f"engine {self.engine} needs acceleratorsPerReplica of at least 1")
        if self.engine != "ollama" and self.ollama is not None:
            raise ValueError("the ollama block only applies to engine: ollama")
        return self

    @property
    def parameter_count(self) -> int | None:
        return None if self.parameters is None else parse_parameters(self.parameters)
