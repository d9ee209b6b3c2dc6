"""The `models` section: one entry per served model, naming its engine and its node pool."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, StringConstraints, ValidationInfo, field_validator, model_validator

from .acceptance import AcceptanceField
from .base import (
    IMAGE_TAG,
    DnsLabel,
    ImageRepository,
    PositiveCpu,
    PositiveMemory,
    Revision,
    SecretName,
    Strict,
    absolute_path_problem,
    bucket_name_problem,
    hub_id_problem,
    key_prefix_problem,
    s3_url_problem,
    shown,
)
from .benchmark import Benchmark
from .slo import Slo

Engine = Literal["vllm", "sglang", "nim", "tgi", "ollama", "neuron-vllm", "dynamo", "ray-serve"]
Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4"]

_PARAMS = re.compile(r"^([0-9]+(\.[0-9]+)?)([KMBT])?$")
_SCALE = {None: 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def parse_parameters(value: str | int) -> int:
    """'8B' -> 8_000_000_000, '500M' -> 500_000_000, 7000 -> 7000."""
    if isinstance(value, int):
        return value
    match = _PARAMS.match(value) if len(value) <= 32 else None
    if not match:
        raise ValueError(f"parameters {shown(value)} is not a count: write 8B, 500M, 1.5B or an integer")
    return int(float(match.group(1)) * _SCALE[match.group(3)])


# A model's name becomes its Service's name (a DNS-1035 label: it starts with a letter, as Kubernetes
# requires of Service names), the workload's, label values and the route `/<name>/v1`.
ModelName = Annotated[str, StringConstraints(pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$", max_length=40)]

# Ollama model names: `[host/][namespace/]name[:tag]` (ollama types/model/name.go: parts of letters,
# digits, '_', '-' and '.'; a host may carry a port), e.g. qwen3:8b or hf.co/Qwen/Qwen3-8B-GGUF:Q4_K_M.
_OLLAMA = re.compile(
    r"^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?/)?([A-Za-z0-9][A-Za-z0-9_.-]{0,79}/)?"
    r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,79})?$",
    re.ASCII,
)


def ollama_name_problem(value: str) -> str | None:
    if not _OLLAMA.match(value) or ".." in value:
        return (
            f"{shown(value)} is not an Ollama model name: write name or name:tag (e.g. qwen3:8b, "
            f"library/llama3.1:8b), one path segment per part of letters, digits, '_', '-' and '.', no '..'"
        )
    return None


def _ollama_name(value: str) -> str:
    if (why := ollama_name_problem(value)) is not None:
        raise ValueError(why)
    return value


OllamaName = Annotated[str, StringConstraints(max_length=200), AfterValidator(_ollama_name)]

# An NGC model or NIM profile: one to four path segments of safe characters, an optional :version.
_NGC_MODEL = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*){0,3}(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?$", re.ASCII
)

# A pip requirement for Ray Serve's runtime_env: a PEP 508 name with optional extras and version
# specifiers. No pip options (`--index-url`, `-e`), no URLs (`pkg @ https://...`, `git+...`), no paths,
# no markers: only packages from the index the image already trusts.
_PIP = re.compile(
    r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\])?"
    r"((===|==|~=|!=|<=|>=|<|>)[A-Za-z0-9.*+!_-]+(,(===|==|~=|!=|<=|>=|<|>)[A-Za-z0-9.*+!_-]+)*)?$",
    re.ASCII,
)


def _pip(value: str) -> str:
    if not _PIP.match(value):
        raise ValueError(
            f"{shown(value)} is not a package requirement: write name, name[extra] or name==1.2.3 (no pip options, "
            f"URLs, paths or markers)"
        )
    return value


PipRequirement = Annotated[str, StringConstraints(max_length=200), AfterValidator(_pip)]


class ModelImage(Strict):
    """Override of the catalog image for one model: repository, tag and (for prod) digest."""

    repository: ImageRepository | None = Field(
        default=None,
        description="Image name replacing the engine's catalog image, e.g. `vllm/vllm-openai` or "
        "`registry.example.com:5000/team/vllm` (the OCI reference grammar: a registry's `:port` is not a tag; the "
        "tag and digest go in `tag` and `digest`).",
    )
    tag: Annotated[str, StringConstraints(pattern=IMAGE_TAG)] | None = Field(
        default=None,
        description="Image tag replacing the catalog's; for `engine: dynamo` it must be the version `X.Y.Z` "
        "(Dynamo's webhook reads it).",
    )
    digest: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")] | None = Field(
        default=None,
        description="`sha256:` digest the image is pinned to; required in `environment: prod` (dev warns). The "
        "catalog's own digest is kept only while neither repository nor tag is overridden.",
    )


class Nim(Strict):
    """`engine: nim` only (and required there): NVIDIA NIM's profile, pull secret and model source."""

    profile: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")] = Field(
        description="NIM profile id (`NIM_MODEL_PROFILE`), one from the container's own `list-model-profiles`; "
        "there is no safe default."
    )
    image_pull_secret: SecretName = Field(
        default="ngc-registry",
        description="Existing dockerconfigjson Secret for nvcr.io; must not be the `secrets.ngcApiKey` Secret.",
    )
    model_path: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        default=None,
        description="A model prepared elsewhere for NIM to serve (e.g. by NIM's download-to-cache): a normalized "
        "absolute path inside the pod's model cache (`/models/...`, or `/model-store/...` with the NIM Operator); "
        "required for an NGC model without the NIM Operator. Unset: an `hf://` model is prepared by the platform.",
    )

    @field_validator("model_path")
    @classmethod
    def _normalized(cls, value: str | None) -> str | None:
        if value is not None and (why := absolute_path_problem(value)) is not None:
            raise ValueError(why)
        return value


class Tgi(Strict):
    """`engine: tgi` only (and required there): Hugging Face Text Generation Inference."""

    accept_maintenance_mode: bool = Field(
        default=False,
        description="Must be `true`: TGI is in maintenance mode upstream, and the stack says so deliberately.",
    )
    quantize: Literal["awq", "gptq", "bitsandbytes", "eetq", "fp8"] | None = Field(
        default=None,
        description="TGI's `--quantize`; `awq` and `gptq` need `weightsFormat` of the same name (it does not "
        "convert ordinary weights).",
    )
    weights_format: Literal["awq", "gptq", "safetensors"] = Field(
        default="safetensors", description="The format the model's checkpoint is already in."
    )


class Sglang(Strict):
    """`engine: sglang` only: SGLang options."""

    grammar_backend: Literal["xgrammar", "outlines", "llguidance"] = Field(
        default="xgrammar", description="SGLang's structured-output backend (`--grammar-backend`)."
    )


class Ollama(Strict):
    """`engine: ollama` only: which Ollama models to pull into the cache before the server starts."""

    pull: list[OllamaName] = Field(
        default_factory=list,
        description="Ollama model names (`name` or `name:tag`, each listed once) to pull, with bounded retries; "
        "empty: pull `model`.",
    )


class NeuronOptions(Strict):
    """`engine: neuron-vllm` only: when the model's Neuron graphs are compiled."""

    compile: Literal["ahead", "on-start"] | None = Field(
        default=None,
        description="`ahead`: a Job (`<name>-neuron-compile`) starts vLLM with exactly the serving flags, image and "
        "Neuron devices, lets it compile into the shared cache's compiled-artifact directory (keyed by revision, "
        "image, tensor-parallel degree and a digest of the flags), and exits; the serving pods wait for it and "
        "load instead of compiling. A Job finding that key compiled exits at once. Needs `storage.modelCache` "
        "`efs` or `fsx` and a pinned 40-hex `revision`. `on-start`: the first serving pod compiles. Unset: "
        "`ahead` on `environment: prod` with a shared cache, else `on-start`.",
    )


class DynamoGraph(Strict):
    """`engine: dynamo` only: the shape of the DynamoGraphDeployment."""

    mode: Literal["aggregated", "disaggregated"] = Field(
        default="aggregated",
        description="`aggregated`: a Frontend and `replicas` workers that prefill and decode; `disaggregated`: "
        "a Frontend, `prefillWorkers` prefill and `decodeWorkers` decode workers (needs a pinned `revision`).",
    )
    backend: Literal["vllm", "sglang", "trtllm"] = Field(
        default="vllm",
        description="Worker backend, which picks the pinned `<backend>-runtime` image; `trtllm` is refused for "
        "a disaggregated graph and with a `revision`.",
    )
    prefill_workers: int = Field(default=1, ge=1, le=64, description="Prefill workers; disaggregated only.")
    decode_workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Decode workers; disaggregated only. With `autoscaling.owner: keda` (which scales the decode "
        "role) the fewest KEDA keeps, so it replaces `autoscaling.minReplicas` and is at most `maxReplicas`.",
    )
    prefill_revision: Revision | None = Field(
        default=None,
        description="Disaggregated only: must equal `revision` if given (KV blocks move between roles, so both "
        "load the same weights).",
    )
    frontend_replicas: int = Field(
        default=1, ge=1, le=16, description="Replicas of the CPU-only Frontend that clients reach."
    )
    request_profiling: bool = Field(
        default=False,
        description="Also render a DynamoGraphDeploymentRequest (with `autoApply: false`), whose profiling jobs "
        "occupy GPUs; needs `profileConcurrency`.",
    )
    # A DGDR needs a workload (or requestRate) when no planner runs, and the platform deploys none.
    profile_concurrency: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="The concurrent requests the profiler sizes the graph for; required with `requestProfiling` "
        "and only with it.",
    )

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
    """`engine: ray-serve` only: Ray Serve's replica autoscaling and the RayService's GPU worker group
    that follows it."""

    min_workers: int = Field(
        default=1,
        ge=0,
        le=256,
        description="Fewest Serve replicas (`autoscaling_config.min_replicas`; 0 scales to zero with a cold start), "
        "each `nodesPerReplica` GPU worker pods; at most `maxWorkers`.",
    )
    max_workers: int = Field(
        default=2,
        ge=1,
        le=256,
        description="Most Serve replicas (`autoscaling_config.max_replicas`), each `acceleratorsPerReplica` GPUs on "
        "`nodesPerReplica` worker pods.",
    )
    # Ray Serve LLM's own default is 1e9 (RAY_SERVE_LLM_DEFAULT_MAX_TARGET_ONGOING_REQUESTS), which never
    # scales up; Ray Serve's generic 2 would add a GPU replica at a third concurrent request although vLLM
    # batches dozens. 64 is KubeRay v1.7.0's Ray Serve LLM sample (ray-service.llm-serve.yaml).
    target_ongoing_requests: float = Field(
        default=64,
        gt=0,
        le=100000,
        description="Ongoing requests per Serve replica that Ray Serve's autoscaler aims for "
        "(`autoscaling_config.target_ongoing_requests`): above it, it adds replicas up to `maxWorkers`, and the "
        "KubeRay autoscaler adds their worker pods. Default 64 (KubeRay's Ray Serve LLM sample); Ray Serve "
        "LLM's own default (1e9) never scales up. Lower it for latency, raise it for throughput, after a load "
        "test.",
    )
    pip: list[PipRequirement] = Field(
        default_factory=list,
        description="Extra pip packages for the LLM config's `runtime_env`, which reaches the replicas and engine "
        "workers: requirements such as `name`, `name[extra]` or `name==1.2.3`, each package once (no pip options, "
        "URLs or paths).",
    )


class Rollout(Strict):
    """How a rollout replaces a model's replicas (a LeaderWorkerSet's groups, or a Deployment's pods)."""

    max_surge: int = Field(
        default=0,
        ge=0,
        le=100,
        description="Replicas (whole groups for `nodesPerReplica` > 1) a rollout may start above the current "
        "count before it stops old ones. 0 (default): one replica at a time is stopped, then replaced, so a "
        "rollout never needs a second set of accelerators. Above 0 no replica is stopped early "
        "(maxUnavailable 0), and the pool's limits must hold the most replicas plus the surge at once.",
    )


class Canary(Strict):
    """A second revision of the model served beside the first under the same name, taking a weighted
    share of the model's route (`engine` vllm, sglang, or nim as the platform's Deployment)."""

    revision: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")] = Field(
        description="The model repository's commit (40 hex) the canary serves; it must differ from `revision`. "
        "Promote by making it `revision` and removing `canary`."
    )
    weight: int = Field(
        ge=1,
        le=99,
        description="The canary's share of the model's requests out of 100 (the stable revision takes the rest); "
        "roll back by lowering it, or by removing `canary`.",
    )


class Parallelism(Strict):
    """How a replica's accelerators split the model: tensor parallelism within a node, pipeline
    stages across nodes. Their product is `acceleratorsPerReplica`."""

    tensor: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Tensor-parallel size; it must divide the model's attention heads (and its KV heads, or be "
        "a multiple of them). Unset: the accelerators on one node (vLLM), or the replica's total (SGLang, whose "
        "`--tp` spans the group).",
    )
    pipeline: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Pipeline-parallel size (stages, usually one per node). Unset: `acceleratorsPerReplica` / "
        "`tensor`.",
    )


class Architecture(Strict):
    """The model's shape where the platform's catalog (stacks/architectures.py) does not know it: what
    the tensor-parallel checks divide by. Copy the numbers from the model's own config.json."""

    attention_heads: int = Field(ge=1, le=4096, description="config.json `num_attention_heads`.")
    kv_heads: int = Field(ge=1, le=4096, description="config.json `num_key_value_heads`.")
    layers: int = Field(ge=1, le=4096, description="config.json `num_hidden_layers`.")
    head_dim: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="config.json `head_dim` (hidden_size / num_attention_heads where the config leaves it out): "
        "with kvHeads and layers, the KV cache's bytes per token, which sizes the endpoint picker's record of a "
        "`kvCacheOffload` tier. Unset: the picker does not score that tier.",
    )
    mla: bool = Field(
        default=False,
        description="The model uses multi-head latent attention (DeepSeek-V2/V3/R1 style: its config.json has "
        "`kv_lora_rank`). SGLang's KV-cache file tier then has one writer per pipeline stage, which gets the "
        "pod's whole share of `kvCacheOffload.shared.sizeGiB`; unset on such a model, the tier keeps within "
        "1/tensor of it.",
    )

    @model_validator(mode="after")
    def _grouped(self) -> Self:
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attentionHeads ({self.attention_heads}) must be a multiple of kvHeads ({self.kv_heads}), as in "
                f"every grouped-query model; copy both from the model's config.json"
            )
        return self


# The InterceptorRoute's metric targets are int32 with a minimum of 1 (http.keda.sh/v1beta1 at 0.15.0:
# ConcurrencyTargetSpec / RequestRateTargetSpec `targetValue`).
INT32_MAX = 2**31 - 1


class RequestScaling(Strict):
    """What the KEDA HTTP add-on counts of a model's requests (its InterceptorRoute's `scalingMetric`)."""

    metric: Literal["concurrency", "requestRate"] = Field(
        default="concurrency",
        description="`concurrency`: requests in flight at the interceptor; `requestRate`: requests per second over "
        "the add-on's sliding window (1 minute, 1 s buckets).",
    )
    target_value: int = Field(
        default=16,
        ge=1,
        le=INT32_MAX,
        description="Per replica, the count KEDA aims at (`desired = ceil(total / targetValue)`); an int32 of at "
        "least 1, as the InterceptorRoute CRD accepts.",
    )


class Autoscaling(Strict):
    """Who scales the model's replicas; one owner per workload."""

    owner: Literal["hpa", "keda", "aibrix", "dynamo-planner", "none"] = Field(
        default="none",
        description="`none` (fixed `replicas`), `hpa` (an HPA on the engine's gauge through prometheus-adapter), "
        "`keda` (a KEDA ScaledObject on a cluster-total Prometheus query of the engine's queue; the only owner "
        "that scales to zero, and the one for Dynamo graphs, through their scaling adapters) or `aibrix` (a "
        "PodAutoscaler). `dynamo-planner` is refused (the platform does not deploy it); Ray Serve scales itself "
        "(`rayServe`) and takes `none`.",
    )
    min_replicas: int = Field(
        default=1,
        ge=0,
        le=1000,
        description="Fewest replicas; at most `maxReplicas`. 0 (scale to zero) only with `owner: keda`, through "
        "the KEDA HTTP add-on, which holds the first request while the model starts; an HPA and AIBrix 0.7.0 "
        "never come back from zero.",
    )
    max_replicas: int = Field(default=4, ge=1, le=1000, description="Most replicas the autoscaler may run.")
    strategy: Literal["HPA", "KPA", "APA"] = Field(
        default="KPA", description="The AIBrix PodAutoscaler's scaling strategy; read with `owner: aibrix` only."
    )
    # stacks/metrics.py scaling_metric picks the default.
    metric: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_:][A-Za-z0-9_:]*$", max_length=200)] | None = Field(
        default=None,
        description="The engine gauge to scale on, e.g. `vllm:num_requests_waiting`; must be one the engine "
        "exports. Unset: the engine's queue depth.",
    )
    target_value: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?$")] = Field(
        default="10",
        description="Target of `metric` per replica, as a decimal string: the HPA's per-pod average, KEDA's "
        "`threshold` (the cluster total divided by the replicas).",
    )
    signal: Literal["gauge", "requests"] | None = Field(
        default=None,
        description="With `owner: keda`, what the replicas follow: `gauge` (the engine's Prometheus gauge, "
        "`metric`/`targetValue`, plus the HTTP add-on's wake trigger at `minReplicas: 0`) or `requests` (the KEDA HTTP "
        "add-on's own count of the model's requests, `requests`, 0..N on its external-push trigger alone: no "
        "Prometheus needed, the route goes through the add-on's interceptor). Unset: `gauge` where the engine "
        "exports one, else `requests` (Ollama). `stacks plan` shows the choice and why.",
    )
    requests: RequestScaling = Field(
        default_factory=RequestScaling,
        description="The HTTP add-on's request metric and per-replica target: the scaling signal of "
        "`signal: requests`, and beside the gauge the count its wake trigger reports for a model at zero.",
    )
    idle_seconds: int = Field(
        default=900,
        ge=60,
        le=86400,
        description="With `minReplicas: 0`: how long the model must see no request and no queue before KEDA "
        "scales it to zero (its `cooldownPeriod`; also how long a new model waits before its first scale-down).",
    )

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) must not exceed maxReplicas ({self.max_replicas})")
        return self

    @property
    def to_zero(self) -> bool:
        """The model scales to zero (KEDA, through the HTTP add-on's interceptor)."""
        return self.owner == "keda" and self.min_replicas == 0


class FlowControl(Strict):
    """The endpoint picker's flow control (llm-d router v0.10.0 `featureGates: [flowControl]`): requests
    wait in the picker in one queue per authenticated client, served round robin between clients, and are
    shed when the queue is full or a request waits too long, instead of piling onto busy engines."""

    queue_timeout_seconds: int = Field(
        default=60,
        ge=1,
        le=1800,
        description="How long a request may wait in the picker's queue before it is shed with 429 (503 when the "
        "model has no pod at all): the picker's `flowControl.defaultRequestTTL` (upstream default 60s); at most "
        "the route's 30-minute request timeout.",
    )
    max_requests: int = Field(
        default=1000,
        ge=1,
        le=5000,
        description="Requests the picker holds queued at once, over all clients (`flowControl.maxRequests` and the "
        "band's `maxRequests`; upstream: unlimited globally, 5000 per band); one more is refused with 429.",
    )
    max_queued_mib: int = Field(
        default=1024,
        ge=16,
        le=3072,
        description="Bytes of request bodies the picker holds queued, in MiB (`flowControl.maxBytes` and the band's "
        "`maxBytes`; upstream: unlimited globally, 1G per band). Bounded under the picker's 4 GiB memory limit, "
        "which its in-flight requests also use.",
    )


class Routing(Strict):
    """How the front door picks a pod of the model for each request (on its own authenticated route)."""

    strategy: Literal["prefix-cache", "load", "round-robin"] = Field(
        default="prefix-cache",
        description="Unset routing: prefix-cache, except round-robin for a model that scales to zero, because the "
        "KEDA HTTP add-on's interceptor that wakes it forwards to its Service, past any picker (and at zero there "
        "is no pod to pick). `prefix-cache`: the llm-d router's endpoint picker scores pods by queue length, "
        "KV-cache use and the prompt prefix they likely cache (its chart's default profile); `load`: the picker's "
        "queue and KV-cache scorers only; both for engines whose metrics the picker reads (vLLM, SGLang). On a vLLM "
        "model that loads its `adapters` itself (`lora`), either also scores adapter affinity (the picker's "
        "lora-affinity-scorer on vllm:lora_requests_info). "
        "`round-robin`: no picker, Envoy's round robin over the pods (any engine).",
    )
    flow_control: FlowControl | None = Field(
        default=None,
        description="Fair queues in the endpoint picker (prefix-cache or load routing; not round-robin, and not a "
        "model that scales to zero through the KEDA interceptor): one queue per authenticated client (the API "
        "key's name or the JWT `sub`, which the gateway writes over anything the client sent), served round robin, "
        "bounded in size and wait. Unset: no flow control, requests go straight to a pod.",
    )


# vLLM's admissible max_lora_rank values (vllm/config/lora.py MaxLoRARanks at 0.29).
LoraRank = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]


class KvCacheSharedTier(Strict):
    """A file-system tier under the CPU tier, on the platform's shared model cache (EFS or FSx): SGLang's
    HiCache `file` storage backend, in a directory of the model's own revision that every replica and
    restart reads, bounded by the engine's own LRU eviction and a pruning CronJob."""

    size_gib: int = Field(
        alias="sizeGiB",
        ge=1,
        le=65536,
        description="GiB the model's KV-cache directory on the shared cache may hold (`/models/_kvcache/<owner "
        "prefix>/<name>/<revision>`), over all its replicas and tensor-parallel ranks: each pod's SGLang evicts "
        "its least-recently-used files past its share (SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE, this over the "
        "ranks), and a CronJob every 10 minutes deletes the oldest files past this total (files of pods gone "
        "or restarted). Billed as file-system storage (EFS per GiB-month stored).",
    )


class KvCacheOffload(Strict):
    """A host-memory (CPU) tier under the model's GPU KV cache: blocks evicted from the GPU are kept in the
    pod's RAM and loaded back on a prefix hit instead of being recomputed (vLLM's native
    OffloadingConnector, SGLang's hierarchical cache); optionally a shared file-system tier under it
    (`shared`, SGLang)."""

    cpu_gib: int = Field(
        alias="cpuGiB",
        ge=1,
        le=16384,
        description="GiB of the pod's host memory the engine keeps KV-cache blocks in, over all its GPUs "
        "(vLLM `--kv-offloading-size`, the total over its tensor-parallel ranks; SGLang `--hicache-size`, the "
        "per-rank GB this makes). The pod's memory request and limit grow by it (and its /dev/shm on vLLM, "
        "whose tier is a shared-memory region); the fit rule and team quotas count it. vLLM and SGLang on "
        "one node only.",
    )
    shared: KvCacheSharedTier | None = Field(
        default=None,
        description="A third tier on the platform's shared model cache (`storage.modelCache: efs` or `fsx`), "
        "`sizeGiB` bounded: SGLang's HiCache `file` storage backend, so a prefix one replica computed is read by "
        "the others and survives restarts. SGLang only (vLLM 0.29's file tier never deletes what it writes); "
        "not with a Dynamo graph. Unset: the CPU tier only.",
    )


class Adapter(Strict):
    """A LoRA adapter of the model: an AIBrix ModelAdapter on vLLM, or one of Ray Serve LLM's adapters
    (`lora_config`) on Ray Serve."""

    name: ModelName = Field(
        description="Name of the ModelAdapter, which clients ask for, and of the Service AIBrix creates for it (a "
        "DNS-1035 label): unique in the stack and not a model's name."
    )
    artifact_url: Annotated[str, StringConstraints(min_length=2, max_length=1100)] = Field(
        alias="artifactURL",
        description="Where the adapter is: `s3://<bucket>/<prefix>`, `gcs://<bucket>/<path>`, `tos://<bucket>/<path>`, "
        "`huggingface://<org>/<name>`, `hf://<org>/<name>` or a normalized absolute path (`https://` is refused, as "
        "the AIBrix webhook does).",
    )
    replicas: int | None = Field(
        default=None,
        description="AIBrix only: omit to load the adapter on every pod of the model, or `1` to load it on one.",
    )
    rank: LoraRank | None = Field(
        default=None,
        description="The adapter's LoRA rank (`r` in its adapter_config.json): the engine is started with "
        "`max_lora_rank` the largest of its adapters' (vLLM's default, 16, refuses a larger adapter at load). "
        "Required on `engine: ray-serve` and with `models[].lora`; on vLLM with AIBrix, sets `--max-lora-rank` "
        "when given. One of vLLM's ranks: 1, 8, 16, 32, 64, 128, 256, 320, 512.",
    )
    revision: Revision | None = Field(
        default=None,
        description="With `models[].lora` (the engine loads the adapter at start): the adapter's pinned revision. "
        "For `hf://org/name` the Hub commit (40 hex) fetched; for an `s3://` prefix the name of the copy it holds "
        "(keep the revision in the prefix, `.../<name>/<revision>/`). It names the cache directory "
        "`<model>/adapters/<name>/<revision>`; prod requires 40 hex. Unset: `main` (Hub), fetched once.",
    )

    @field_validator("artifact_url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if value.startswith("s3://"):
            why = s3_url_problem(value)
        elif value.startswith(("gcs://", "tos://")):
            bucket, _, path = value.split("://", 1)[1].partition("/")
            # GCS and TOS bucket names follow the same lower-case DNS-style shape as S3's.
            why = bucket_name_problem(bucket) or key_prefix_problem(path)
        elif value.startswith(("huggingface://", "hf://")):
            why = hub_id_problem(value.split("://", 1)[1])
        elif value.startswith("/"):
            why = absolute_path_problem(value)
        else:
            why = (
                f"{shown(value)}: the AIBrix webhook accepts s3://, gcs://, tos://, huggingface://, "
                f"hf:// or an absolute path, not https://"
            )
        if why is not None:
            raise ValueError(why)
        return value

    def folder(self) -> tuple[str, str]:
        """(parent, name) of the artifact's folder: `s3://b/p/x/` -> (`s3://b/p/`, `x`)."""
        parent, _, name = self.artifact_url.rstrip("/").rpartition("/")
        return f"{parent}/", name

    @field_validator("replicas")
    @classmethod
    def _one_or_all(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError(
                f"replicas {value} is refused by AIBrix: omit it to load the adapter on every "
                f"matching pod, or set 1 to load it on one"
            )
        return value


class Lora(Strict):
    """Native multi-LoRA: the engine itself (vLLM, SGLang) loads every `models[].adapters` entry at start,
    prepared into the model cache like the weights; no AIBrix. Each adapter is served under its own name
    on the model's route."""

    max_loras: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Adapters in one batch on the GPU: vLLM `--max-loras`, SGLang `--max-loras-per-batch`.",
    )
    max_cpu_loras: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Adapters held in CPU memory, the GPU's included (vLLM `--max-cpu-loras`, SGLang "
        "`--max-loaded-loras`): at least `maxLoras` and at least the number of adapters, so none is reloaded "
        "from disk. Unset: `maxLoras`.",
    )

    @model_validator(mode="after")
    def _cpu_holds_gpu(self) -> Self:
        if self.max_cpu_loras is not None and self.max_cpu_loras < self.max_loras:
            raise ValueError(
                f"maxCpuLoras ({self.max_cpu_loras}) must be at least maxLoras ({self.max_loras}): the engines "
                f"refuse to start otherwise (vLLM LoRAConfig, SGLang max_loaded_loras)"
            )
        return self

    @property
    def held(self) -> int:
        """Adapters the engine keeps loaded at once (its CPU cache, which holds the GPU's)."""
        return self.max_cpu_loras or self.max_loras


class ModelSecrets(Strict):
    """Names of existing Kubernetes Secrets, mounted into the pods as files."""

    hugging_face_token: SecretName | None = Field(
        default=None,
        description="Secret whose key `token` is a Hugging Face token, mounted read-only at "
        "`/var/run/secrets/huggingface/token`; for gated models.",
    )
    ngc_api_key: SecretName | None = Field(
        default=None,
        description="Secret holding `NGC_API_KEY`: only, and then required, as the NIM Operator's `authSecret` "
        "(`addons.nimOperator`); refused otherwise.",
    )


class Resources(Strict):
    """Explicit cpu/memory per replica; unset, `stacks/sizing.py` sizes the replica from its pool (the
    same figures the fit and quota checks use)."""

    cpu: PositiveCpu | None = Field(
        default=None,
        description="CPU request per replica: a Kubernetes quantity in cores or millicores (`4`, `500m`, `1.5`), no "
        "finer than 1m; unset: the replica's share of the smallest type that holds its accelerators (Dynamo and Ray "
        "workers: 2 per GPU).",
    )
    memory: PositiveMemory | None = Field(
        default=None,
        description="Memory request and limit per replica: a Kubernetes quantity that is a whole number of MiB "
        "(`16Gi`, `512Mi`, `1.5Gi`); unset: sized like `cpu` (Dynamo and Ray workers: 8Gi per GPU).",
    )


class ModelSection(Strict):
    """One entry of `inference-platform:models`: one served model, its engine, the pool its replicas
    run on and how clients reach it."""

    name: ModelName = Field(
        description="The model's name, unique in the stack: clients ask for it, and it names the Service (so a "
        "DNS-1035 label: lower case, starting with a letter), the workload and the route `/<name>/v1`."
    )
    engine: Engine = Field(
        description="Inference engine; it must run on the pool's accelerator (`neuron-vllm` on Neuron, `ollama` "
        "on CPU or NVIDIA, the others NVIDIA). `dynamo` and `ray-serve` need their add-on."
    )
    model: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(
        description="What to serve: a Hugging Face repo id `org/name` (`Qwen/Qwen3-8B`); for NIM an `hf://org/name` "
        "model or an NGC one (`meta/llama-3.1-8b-instruct`), for Ollama the model to pull (`qwen3:8b`)."
    )
    revision: Revision | None = Field(
        default=None,
        description="The model repository's commit (40 hex), or a branch or tag name of one path segment (no `/`, "
        "`..` or whitespace; it names a cache directory); prod requires a 40-hex commit (except Ollama). Unset: "
        "`main` is fetched once and never refreshed.",
    )
    pool: DnsLabel = Field(
        description="The node pool the replicas run on: a `nodePools[].name`, or for a workloads stack a pool the "
        "platform exports. A replica must fit one of its instance types."
    )
    accelerators_per_replica: int = Field(
        default=1,
        ge=0,
        le=64,
        description="GPUs, or whole Neuron devices on a Neuron pool, per replica: the total over its `nodesPerReplica` "
        "nodes (tensor parallelism follows); must "
        "be 0 on a CPU pool, and at least 1 for every engine but Ollama and Ray Serve.",
    )
    nodes_per_replica: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Nodes one replica spans. Above 1 a replica is one group of that many pods, one per node, "
        "each with `acceleratorsPerReplica` / `nodesPerReplica` accelerators: a LeaderWorkerSet (vLLM, SGLang), a "
        "NIMService `multiNode` (NIM, with the NIM Operator), Dynamo `multinode.nodeCount` or Ray worker nodes; "
        "TGI, Ollama and vLLM on Neuron refuse it. The group needs an `efa: true` pool, or `allowTcp`.",
    )
    parallelism: Parallelism = Field(
        default_factory=Parallelism,
        description="Tensor and pipeline parallel sizes; tensor x pipeline must equal `acceleratorsPerReplica`.",
    )
    rollout: Rollout = Field(
        default_factory=Rollout,
        description="How an update replaces the replicas: by default one at a time with no surge.",
    )
    accept_downtime: bool = Field(
        default=False,
        description="Accept that every rollout (and every node replacement: `nodePools[].expireAfter`, drift, "
        "consolidation) stops the model: with one replica and `rollout.maxSurge: 0` the only pod is stopped before "
        "its replacement starts. `environment: prod` refuses that unless this is true (dev and staging warn); "
        "otherwise run 2 replicas (`autoscaling.minReplicas: 2`) or set `rollout.maxSurge: 1`.",
    )
    allow_tcp: bool = Field(
        default=False,
        description="Let a multi-node group run on a pool without EFA, over TCP sockets. Slow: Dynamo measured "
        "about 98 s time to first token over TCP against about 1 s over EFA; for tests, not serving.",
    )
    architecture: Architecture | None = Field(
        default=None,
        description="The model's attention heads, KV heads and layers, for a model the platform's catalog does not "
        "know (stacks/architectures.py); unset: the catalog's, or the head checks are skipped.",
    )
    replicas: int = Field(
        default=1,
        ge=0,
        le=1000,
        description="Replicas with `autoscaling.owner: none` (with an autoscaler the workload leaves the count to "
        "it); for an aggregated Dynamo graph, its workers (under KEDA, the fewest it keeps, in place of "
        "`autoscaling.minReplicas`).",
    )
    max_model_len: int | None = Field(
        default=None,
        ge=128,
        le=10_000_000,
        description="Context length in tokens, passed as the engine's own flag (vLLM `--max-model-len`, SGLang "
        "`--context-length`, ...); unset: the engine's default.",
    )
    parameters: str | int | None = Field(
        default=None,
        description="Parameter count (`8B`, `500M`, `1.5B` or an integer). With `dtype`, weights are checked "
        "against accelerator memory and caches and startup are sized; required (with `dtype`) by "
        "`modelCache: local`.",
    )
    dtype: Dtype | None = Field(
        default=None,
        description="Bytes per parameter for sizing (bf16, fp16: 2; fp8, int8: 1; int4: 0.5); not passed to the "
        "engine. Required with `parameters`.",
    )
    image: ModelImage = Field(default_factory=ModelImage, description="Override of the engine's catalog image.")
    load_format: Literal["runai-streamer"] | None = Field(
        default=None,
        description="`runai-streamer`: the engine streams safetensors straight from the model bucket "
        "(`s3://<bucket>/platform/<name>/<revision>/`) with the Run:ai Model Streamer instead of loading a prepared "
        "cache copy; a one-time Job fills an empty prefix from Hugging Face. vLLM and SGLang only. Unset: the cache.",
    )
    kv_cache_offload: KvCacheOffload | None = Field(
        default=None,
        description="A CPU tier for the KV cache (`cpuGiB`): vLLM's native offloading, SGLang's hierarchical "
        "cache. The pod's memory grows by it; its offload flags are refused in engineArgs. Unset: none.",
    )
    engine_args: list[str] = Field(
        default_factory=list,
        description="Extra engine flags, passed through after the managed ones (Ray Serve takes none).",
    )
    compile_cache: bool | None = Field(
        default=None,
        description="Keep the engine's compiled artifacts (vLLM's torch.compile cache under `VLLM_CACHE_ROOT` and "
        "Triton kernels, SGLang's Inductor, Triton and DeepGEMM caches, Neuron's compiled model) on the shared "
        "model cache under `_compile/<owner>/<name>/<revision>/<image tag>/tp<T>-pp<P>`, so every replica and "
        "restart of the same model, revision, image and shape reuses the first one's compile. Unset: on when "
        "`storage.modelCache` is `efs` or `fsx` and the engine keeps such artifacts; `true` is refused on storage "
        "that cannot be shared (`local`, `none`).",
    )
    trust_remote_code: bool = Field(
        default=False,
        description="Let the engine run code from the model repository (`--trust-remote-code`); only for models "
        "that need it.",
    )
    tracing: bool = Field(
        default=True,
        description="With `addons.tracing` on (the platform's), the engine exports OpenTelemetry spans to the "
        "collector (vLLM, TGI); an engine that cannot export is refused until this is `false`, and the gateway "
        "and picker still trace its requests.",
    )
    resources: Resources = Field(
        default_factory=Resources, description="Explicit CPU and memory per replica, beside the accelerators."
    )
    nim: Nim | None = Field(default=None, description="NIM options; required with, and only for, `engine: nim`.")
    tgi: Tgi | None = Field(default=None, description="TGI options; required with, and only for, `engine: tgi`.")
    sglang: Sglang | None = Field(default=None, description="SGLang options; only for `engine: sglang`.")
    ollama: Ollama | None = Field(default=None, description="Ollama options; only for `engine: ollama`.")
    neuron: NeuronOptions | None = Field(
        default=None, description="Neuron compile options; only for `engine: neuron-vllm`."
    )
    dynamo: DynamoGraph | None = Field(default=None, description="Dynamo graph options; only for `engine: dynamo`.")
    ray_serve: RayServe | None = Field(default=None, description="Ray Serve options; only for `engine: ray-serve`.")
    autoscaling: Autoscaling = Field(default_factory=Autoscaling, description="Who scales the replicas, and on what.")
    adapters: list[Adapter] = Field(
        default_factory=list,
        description="LoRA adapters of the model, each served under its own name on the model's route: with "
        "`lora` loaded by vLLM or SGLang itself; otherwise on `engine: vllm` AIBrix ModelAdapters (with "
        "`addons.aibrix`); "
        "on `engine: ray-serve` Ray Serve LLM's `lora_config`, each adapter an `s3://` folder named like the "
        "adapter under one shared prefix of the model bucket, asked for as `<model>:<adapter>`.",
    )
    lora: Lora | None = Field(
        default=None,
        description="Native multi-LoRA on `engine: vllm` or `sglang`: the engine loads `adapters` itself at start "
        "(`hf://` at a pinned revision, or an `s3://` prefix under the owner's prefix of the model bucket), "
        "prepared into the cache; no AIBrix. Unset on vLLM: adapters are AIBrix ModelAdapters.",
    )
    secrets: ModelSecrets = Field(
        default_factory=ModelSecrets, description="Existing Secrets the pods mount as files, never as env."
    )
    expose: bool = Field(
        default=True,
        description="Route the model through the authenticated gateway at `/<name>/v1` (a team's model at "
        "`/<namespace>/<name>/v1`); needs a gateway (`gateway.enabled` or AIBrix's). `false` keeps it "
        "cluster-internal.",
    )
    consumers: list[DnsLabel] = Field(
        default_factory=list,
        max_length=64,
        description="Teams (of the platform's `teams`) whose clients may call the model besides its own: a team's "
        "model admits its team's keys and these; a platform model the platform's clients and these. `platform` "
        "names the platform team's own clients.",
    )
    namespace: DnsLabel | None = Field(
        default=None,
        description="Kubernetes namespace of the model; unset: `inference`, or the team's home namespace in a "
        "workloads stack (where it must be one of the team's namespaces).",
    )
    slo: Slo | None = Field(
        default=None, description="Serving objectives, alerted on by Prometheus; needs `addons.monitoring`."
    )
    benchmark: Benchmark | None = Field(
        default=None,
        description="An SLO benchmark Job (guidellm 0.8.1) against the model's gateway route; its verdict is `slo` "
        "and its results go to the model bucket under its owner's prefix, `<platform/ or teams/<team>/>_benchmarks/"
        "<name>/<revision>/`. Needs `expose: true`.",
    )
    acceptance: AcceptanceField = Field(
        default=None,
        description="A post-deploy acceptance Job through the model's gateway route: a request without a key and "
        "one with a key the route does not admit are refused, a chat completion has the chat shape (an assistant "
        "message, finish_reason, usage), streaming ends with `data: [DONE]`, structured output is valid JSON where "
        "the engine supports it, and Prometheus scrapes the model; its verdict goes to the model bucket under "
        "`<owner prefix>/_benchmarks/<name>/<revision>/acceptance/`. On by default for every exposed model: unset "
        "means `{}`, `false` (or `enabled: false`) opts out. Needs `expose: true` when set.",
    )
    routing: Routing | None = Field(
        default=None,
        description="How the front door picks the model's pod for each request, on its gateway route. Unset: "
        "`prefix-cache` (the llm-d router's endpoint picker) for vLLM and SGLang, except round-robin for a model "
        "that scales to zero (or on the HTTP add-on's request count), because its requests go through the KEDA "
        "HTTP add-on's interceptor, which forwards to the model's Service, so no picker can choose its pod; Envoy "
        "Gateway's default least-request balancing for the other engines; `strategy: round-robin` turns the "
        "picker off. `stacks plan` shows the strategy and why. Given, it needs `expose: true`.",
    )
    canary: Canary | None = Field(
        default=None,
        description="A weighted canary: one more pod of another revision, with its own Deployment and Service "
        "(`<name>-canary`), beside the stable workload; `engine` vllm, sglang or nim (not on the NIM Operator).",
    )

    @field_validator("model")
    @classmethod
    def _model_id(cls, value: str, info: ValidationInfo) -> str:
        engine = info.data.get("engine")
        if engine == "ollama":
            why = ollama_name_problem(value)
        elif engine == "nim":
            if value.startswith("hf://"):
                why = hub_id_problem(value[len("hf://") :])
            elif not _NGC_MODEL.match(value) or ".." in value:
                why = (
                    f"{shown(value)} is neither hf://org/name nor an NGC model (path segments of letters, digits, "
                    f"'.', '_' and '-', an optional :version)"
                )
            else:
                why = None
        elif engine is None:
            why = None  # the engine itself is refused
        else:
            why = hub_id_problem(value)
        if why is not None:
            raise ValueError(why)
        return value

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
            "neuron": "neuron-vllm",
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
    def most_replicas(self) -> int:
        """The most replicas of the model's own workload that can run at once: the fixed `replicas`, or
        its autoscaler's `maxReplicas` (with an autoscaler the workload has no count of its own)."""
        return self.replicas if self.autoscaling.owner == "none" else self.autoscaling.max_replicas

    @property
    def canary_replicas(self) -> int:
        """Replicas of the canary's own workload (always one, never autoscaled): what the quota and pool
        limits hold beside the model's own."""
        return 0 if self.canary is None else 1

    @property
    def parameter_count(self) -> int | None:
        return None if self.parameters is None else parse_parameters(self.parameters)
