"""What the program knows about an inference engine, as data.

Every engine module (components/engines/<engine>.py) declares one `EngineSpec` whose `facts` are an
`EngineFacts` and whose `model_facts(model, addons)` says what the engine makes of one `models[]`
entry (`ModelFacts`). The resolution step copies both onto each resolved model, so the rules, the
builders, `stacks plan` and the policy pack read an engine's facts from the model they check and never
look an engine up by its name.

Every field is required: an engine module that leaves one out fails when it is imported (and in the
type checker), never reads silently as "does not apply". A capability an engine lacks is spelled out,
most with the reason a user is given when a stack file asks for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .metrics import Metric, Signal
from .versions import Image

# Seconds a model server's pod gets between SIGTERM and SIGKILL to finish the requests it holds (its
# `terminationGracePeriodSeconds`): a node pool's drain limit must exceed it (stacks/rules/upgrades.py).
SHUTDOWN_SECONDS = 60

# The OpenAI-compatible paths the gateway routes to a model server.
OPENAI_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/embeddings")


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """How an engine's own parser reads `models[].engineArgs`.

    `owned`: the flags the platform sets (flag -> why it owns it, stacks/flags.py, with `{port}` for the
    serving port); `streamed`: those it also owns for a model streamed from the bucket (`file_tier`: with a
    shared KV-cache file tier); `refused`: the
    engine takes no engineArgs at all, and why. The parser's behaviour: the exact flags that are prefixes
    of owned ones, whether long flags abbreviate (argparse) and `_` reads as `-` (vLLM), clap's short
    options (those taking no value, and those taking one, by the long flag they stand for), and flags
    whose names end like a credential's but are not one."""

    engine: str
    owned: Mapping[str, str]
    streamed: Mapping[str, str]
    refused: str | None
    exact: frozenset[str] = frozenset()
    abbreviates: bool = True
    underscores: bool = False
    short_flags: frozenset[str] = frozenset()
    short_values: Mapping[str, str] = field(default_factory=dict)
    not_secrets: frozenset[str] = frozenset()
    # Those it also owns for a model with a shared KV-cache file tier (`kvCacheOffload.shared`).
    file_tier: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Groups:
    """How one replica of the engine spans nodes (`models[].nodesPerReplica` > 1).

    `builder`: `lws` when the platform builds the group as a LeaderWorkerSet, `operator` when the
    engine's own operator forms it (Dynamo's multinode, Ray's placement group, the NIM Operator's
    multiNode), None when a replica stays on one node, for the reason in `refused`.
    `tensor_spans_nodes`: with `parallelism` unset, one tensor-parallel group over the whole replica
    (SGLang's `--tp 16 --nnodes 2`, Dynamo), else tensor parallel within a node and one pipeline stage
    per node (vLLM's recipe). `head_rule`: the pinned version whose parser refuses a tensor size that
    does not divide the attention heads, None when the engine does not check it. `fixed_sizes`: on a
    replica of one node the engine runs one tensor-parallel group over all of the replica's accelerators
    whatever `parallelism` says, for this reason (TGI's `--num-shard`, Ollama, a NIM profile); None: it
    takes the sizes given."""

    builder: Literal["lws", "operator"] | None
    refused: str | None
    tensor_spans_nodes: bool
    head_rule: str | None
    fixed_sizes: str | None

    def __post_init__(self) -> None:
        if (self.builder is None) == (self.refused is None):
            raise ValueError("an engine either builds groups across nodes or says why it refuses them")


@dataclass(frozen=True, kw_only=True)
class Autoscalers:
    """Who may set the engine's replica count. `built_in`: the controller that owns the count whatever
    `autoscaling.owner` says (a second owner is refused); `keda`: why KEDA cannot scale it (None: it
    can, through a scale subresource); `to_zero`: why it cannot come back from zero (None: it can)."""

    built_in: str | None
    keda: str | None
    to_zero: str | None


@dataclass(frozen=True, kw_only=True)
class EfaStack:
    """What is known of the catalog image's EFA stack (libfabric and aws-ofi-nccl), which a group across
    nodes needs: `missing` when the image is known to lack it (refused in prod), else not verified."""

    missing: bool
    why: str


# What the engines whose groups cross nodes say of their catalog images, and those that never do.
EFA_UNVERIFIED = EfaStack(
    missing=False,
    why="is not verified to carry aws-ofi-nccl: without it NCCL runs over TCP sockets with no error (look for "
    "`NET/OFI` in the log with NCCL_DEBUG=INFO)",
)
ONE_NODE = EfaStack(missing=False, why="serves a replica on one node, so it needs no EFA stack")


@dataclass(frozen=True)
class KvOffload:
    """An engine's KV-cache CPU tier: how messages name it; whether the tier is a shared-memory region
    in /dev/shm (vLLM's), which the pod's memory-backed /dev/shm volume must then hold; and whether its
    size flag is whole GB per tensor-parallel rank (SGLang's --hicache-size) rather than GiB in total."""

    title: str
    in_shm: bool
    per_rank_gb: bool
    # Its file-system tier the platform puts on the shared model cache (`kvCacheOffload.shared`), as
    # messages name it; None: the platform wires none for this engine.
    shared_tier: str | None = None


# The acceptance check's JSON Schema, small enough for every engine's grammar backend: one required string.
ACCEPTANCE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
# OpenAI's structured-output form, which vLLM, SGLang and Ollama's OpenAI layer take.
OPENAI_JSON_SCHEMA: Mapping[str, Any] = {
    "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": ACCEPTANCE_SCHEMA}}
}


@dataclass(frozen=True, kw_only=True)
class EngineFacts:
    """The engine's server and what it supports."""

    # How messages name the server and the version pinned (`vLLM 0.29`).
    title: str
    port: int
    health_path: str  # liveness
    ready_path: str  # readiness and startup
    metrics_path: str | None
    metrics_port: int | None  # None: the serving port
    route_paths: tuple[str, ...]
    # Paths that manage models or the server; never routed through the gateway.
    management_paths: tuple[str, ...]
    accelerators: tuple[str, ...]
    # The add-on whose operator runs the engine's objects (its CRDs' installer, and the controller
    # namespace that must reach the pods); None when the platform runs them as its own workloads.
    controller: str | None
    # Sized by the fit check and scaled by an HPA or AIBrix as the platform's own workload (False: run
    # and scaled by its operator).
    platform_workload: bool
    # The llm-d router's name for this server (its `llm-d.ai/engine-type` pod label), whose metrics the
    # endpoint picker reads (llm-d-router v0.10.0 extractor/metrics/factories.go defaultEngineConfigs:
    # vllm, sglang, trtllm-serve, triton-tensorrt-llm, triton); None: it cannot read them.
    picker_engine: str | None
    # The series by which the picker's `lora-affinity-scorer` knows which adapters each pod is running and
    # queueing, read by its metrics extractor's built-in mapping for `picker_engine` (llm-d-router v0.10.0
    # extractor/metrics/factories.go defaultEngineConfigs `loraSpec`: vLLM's alone is set); None: the
    # picker cannot tell one pod's adapters from another's, so it scores none.
    picker_adapter_metric: str | None
    # The Prometheus series it exports, by signal; empty when it exports none.
    metrics: Mapping[Signal, Metric]
    groups: Groups
    autoscalers: Autoscalers
    # Loads safetensors straight from the model bucket with the Run:ai streamer (`loadFormat`).
    streams: bool
    # AIBrix loads LoRA adapters into it at runtime (`models[].adapters`).
    lora: bool
    # It loads `models[].adapters` itself, each from a subfolder of one bucket prefix, without AIBrix (Ray
    # Serve LLM's `lora_config.dynamic_lora_loading_path`); clients ask for `<model>:<adapter>`.
    lora_from_prefix: bool
    # It loads `models[].adapters` itself at start from prepared directories (`models[].lora`: vLLM's
    # `--lora-modules`, SGLang's `--lora-paths`), without AIBrix.
    lora_flags: bool
    # The platform can run a second revision beside the first (`models[].canary`).
    canary: bool
    # A model is a repository at a git revision (`models[].revision` pins it); False: the engine pulls
    # models by its own names and tags (Ollama).
    revisions: bool
    efa_stack: EfaStack
    # The variables that put the engine's compiled artifacts (torch.compile, Triton, DeepGEMM, Neuron
    # graphs) where `compileCache` keeps them, each with its subdirectory of the model's compile key
    # (stacks/fastpath.py); empty: it keeps none the platform can place.
    compile_cache_env: Mapping[str, str]
    # The role (`app.kubernetes.io/component`) of the pods its Service selects, the only pods callers from
    # outside the model (the gateway's proxies, LiteLLM, the interceptor, Prometheus) reach: a Dynamo
    # graph's Frontend, never its workers. None: every pod of the model serves.
    serving_role: str | None
    # How the engine keeps a CPU tier under its GPU KV cache (`models[].kvCacheOffload`); None: the
    # platform wires no KV-cache offload for it (the key is refused).
    kv_offload: KvOffload | None
    # The GPU-sharing modes (`nodePools[].gpuSharing`: "timeSlicing", "mig") in which the platform can hold
    # the engine to one slice (stacks/rules/sharing.py); empty: whole GPUs only.
    gpu_sharing: tuple[str, ...]
    # The chat request fields that ask the engine for JSON matching ACCEPTANCE_SCHEMA at its pinned version
    # (the acceptance check's structured-output step, components/acceptance.py); None: no form the platform
    # has established, and the step is skipped.
    json_output: Mapping[str, Any] | None

    def metric(self, signal: str) -> Metric | None:
        """The engine's series for a signal, or None when it exports none for it."""
        return next((m for s, m in self.metrics.items() if s == signal), None)

    @property
    def gauges(self) -> list[Metric]:
        """What an autoscaler may read: the engine's gauges (a per-pod value an HPA averages). Counters
        and histograms would need a rate() the HPA cannot ask for."""
        return [m for m in self.metrics.values() if m.kind == "gauge"]

    def scaling_metric(self, chosen: str | None) -> str | None:
        """The metric a model's autoscaler reads: `autoscaling.metric`, else the engine's queue depth."""
        if chosen:
            return chosen
        queue = self.metric("queue")
        return queue.name if queue else None

    def scaling_series(self, chosen: str | None) -> Metric | None:
        """The gauge a KEDA trigger sums (`scaling_metric`'s choice, with the label matchers that are
        part of the signal): `autoscaling.metric` when it is one of the engine's gauges, else the queue."""
        name = self.scaling_metric(chosen)
        return next((m for m in self.gauges if m.name == name), None)


@dataclass(frozen=True, kw_only=True)
class DerivedName:
    """A name an engine's operator derives from a model's (a Service KubeRay or Dynamo creates), with the
    limit it must fit: checked by the naming rules like the platform's own names."""

    name: str
    what: str
    limit: int
    dns_1035: bool = False


@dataclass(frozen=True, kw_only=True)
class ModelFacts:
    """What an engine makes of one `models[]` entry."""

    # The engine's pinned image with `models[].image` applied.
    image: Image
    # The Service clients reach, and its port.
    service: str
    port: int
    # (apiVersion, kind, name) of the object the engine builds: what a scaler targets.
    workload: tuple[str, str, str]
    # What KEDA would scale: the workload, or the operator's scaling adapters.
    keda_targets: tuple[tuple[str, str, str], ...]
    dialect: Dialect
    # The Hugging Face repository the weights come from; None: not the Hub (Ollama, NGC, a prepared path).
    hub_repo: str | None
    # The platform fills the model cache before the engine starts (False: the engine fetches its own).
    prepared: bool
    # Catalog names of the platform images the engine's objects run besides the model's (Dynamo's planner).
    platform_images: tuple[str, ...]
    # Names the engine's operator derives from the model's name.
    names: tuple[DerivedName, ...]
    # Add-on settings this model needs on (`dynamo.grove` for a Dynamo graph across nodes).
    addons: tuple[str, ...]
    # The fewest replicas KEDA must keep of the scaled targets when the model's own count says so (a Dynamo
    # graph's `dynamo.decodeWorkers`, or an aggregated graph's `replicas`): the scaling adapter starts at
    # one whatever the graph asks. None: `autoscaling.minReplicas`.
    keda_floor: int | None
