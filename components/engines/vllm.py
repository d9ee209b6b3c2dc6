"""vLLM on NVIDIA GPUs: the OpenAI-compatible server (`vllm serve`) for one model.

The server loads the model from the directory the preparation init containers filled (the pinned
revision, from the model bucket or the Hub: components/storage/prepare.py), never from the Hub
itself: given a repo id, vLLM would download it again into its own cache layout beside the prepared
copy. A model with `loadFormat: runai-streamer` instead streams its bucket prefix (`s3://...`) with
the Run:ai streamer (components/engines/streamer.py). Tensor parallel size =
`acceleratorsPerReplica`, `maxModelLen`, and `--trust-remote-code` only when the model entry opts in
(it runs code from the model repository). A replica across nodes (`nodesPerReplica` > 1) is a
LeaderWorkerSet group (components/engines/group.py) run by vLLM 0.29's own multi-node launcher,
without Ray: every pod runs `vllm serve` with `--nnodes N --node-rank $(LWS_WORKER_INDEX)
--master-addr $(LWS_LEADER_ADDRESS) --master-port 29501 --distributed-executor-backend mp`, and the
workers add `--headless` (no API server, only the executor that joins the leader). Flags read from
the vLLM 0.29.0 wheel (engine/arg_utils.py, config/parallel.py,
entrypoints/launchers/cli_args.py, entrypoints/cli/serve.py): `nnodes > 1` needs the mp executor and
a world size (tensor x pipeline) divisible by nnodes. Health at /health, Prometheus metrics at
/metrics on the serving port (each engine module's FACTS). With AIBrix on, a model with `adapters`
also gets AIBrix's LoRA runtime (`--enable-lora` and runtime adapter loading), so the adapter
controller can load its ModelAdapters into the server.
"""

from __future__ import annotations

from typing import Any

from stacks import flags, offload
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import (
    EFA_UNVERIFIED,
    OPENAI_JSON_SCHEMA,
    OPENAI_PATHS,
    Autoscalers,
    Dialect,
    EngineFacts,
    Groups,
    KvOffload,
    ModelFacts,
)
from stacks.metrics import Metric, Signal
from stacks.sharing import engine_memory_fraction
from stacks.versions import IMAGES, overridden

from ..serving import aibrix
from . import group, streamer
from .spec import EngineSpec, WorkloadSpec, no_problems, repo_id
from .workload import (
    ENGINE_UID,
    HOME,
    EngineContainer,
    otel_sdk_env,
    platform_model,
    security_context,
    server_pods,
    vllm_trace_args,
)
from .workload import manifests as workload_manifests

# The v1 engine's series (vllm/v1/metrics/loggers.py at 0.29; NIM 2.0.12 passes them through at
# /v1/metrics, and the NxD-backed vLLM on Neuron exports the same). Latency histograms in seconds;
# `vllm:kv_cache_usage_perc` is a 0-1 fraction despite its name.
METRICS: dict[Signal, Metric] = {
    "ttft": Metric("vllm:time_to_first_token_seconds", "histogram", "s", "time to first token"),
    "itl": Metric("vllm:inter_token_latency_seconds", "histogram", "s", "inter-token latency"),
    "e2e": Metric("vllm:e2e_request_latency_seconds", "histogram", "s", "end-to-end request latency"),
    "tokens": Metric("vllm:generation_tokens_total", "counter", "tokens", "generated tokens"),
    "prompt_tokens": Metric("vllm:prompt_tokens_total", "counter", "tokens", "prefill (prompt) tokens processed"),
    "queue": Metric("vllm:num_requests_waiting", "gauge", "requests", "requests waiting"),
    "running": Metric("vllm:num_requests_running", "gauge", "requests", "requests running"),
    "kv_cache": Metric("vllm:kv_cache_usage_perc", "gauge", "ratio", "KV-cache blocks in use (0-1)"),
    # The KV connector's prefix hits in prompt tokens (the counter `vllm:external_prefix_cache_hits`,
    # exported with `_total`): with `kvCacheOffload`, the tokens loaded from the CPU tier.
    "offload_hits": Metric(
        "vllm:external_prefix_cache_hits_total", "counter", "tokens", "prompt tokens loaded from the KV connector"
    ),
}

# With LoRA enabled, vLLM 0.29 sets this gauge to the scrape's time under labels naming the adapters of
# its running and waiting requests (comma-separated `running_lora_adapters`, `waiting_lora_adapters`) and
# `max_lora` (vllm/v1/metrics/loggers.py, stats.py LoRARequestStates: by LoRARequest.lora_name, the
# `--lora-modules` name). It is not a signal the platform scales or alerts on: the picker reads it.
LORA_METRIC = "vllm:lora_requests_info"

# The flags `vllm serve` reads for what the platform sets (vllm/engine/arg_utils.py and
# vllm/entrypoints/launchers/cli_args.py at 0.29.0). Its subparser is a FlexibleArgumentParser built
# without allow_abbrev=False, so argparse takes any unambiguous prefix of a long flag (`--po` for
# `--port`); `_` in a flag name reads as `-` (`--api_key`), and `--flag.key value` is a JSON field of
# `--flag`. vLLM 0.16 (vllm-neuron), NIM 2.0's `nim-serve` and Dynamo's vLLM worker parse alike.
FLAGS: dict[str, str] = {
    "--host": flags.ADDRESS,
    "--port": flags.ADDRESS,
    "--uds": flags.ADDRESS,
    "--model": flags.MODEL,
    "--revision": flags.MODEL,
    "--tokenizer": flags.MODEL,
    "--tokenizer-revision": flags.MODEL,
    "--code-revision": flags.MODEL,
    "--served-model-name": flags.NAME,
    "--config": flags.CONFIG,
    "--tensor-parallel-size": flags.PARALLEL,
    "-tp": flags.PARALLEL,
    "--pipeline-parallel-size": flags.PARALLEL,
    "-pp": flags.PARALLEL,
    "--data-parallel-size": flags.PARALLEL,
    "-dp": flags.PARALLEL,
    "--data-parallel-size-local": flags.PARALLEL,
    "-dpl": flags.PARALLEL,
    "--nnodes": flags.PARALLEL,
    "-n": flags.PARALLEL,
    "--node-rank": flags.PARALLEL,
    "-r": flags.PARALLEL,
    "--master-addr": flags.GROUP,
    "--master-port": flags.GROUP,
    "--headless": flags.GROUP,
    "--distributed-executor-backend": flags.GROUP,
    "--trust-remote-code": flags.TRUST,
    "--no-trust-remote-code": flags.TRUST,
    "--max-model-len": flags.MAXLEN,
    "--api-key": flags.API_KEY,
    "--hf-token": flags.HF_TOKEN,
}
# The flags of a KV-cache CPU tier or of a KV connector in its place (vllm/config/cache.py,
# config/kv_transfer.py at 0.29.0): `models[].kvCacheOffload` sets them and sizes the pod for them.
OFFLOAD: dict[str, str] = {
    "--kv-offloading-backend": flags.OFFLOAD,
    "--kv-offloading-size": flags.OFFLOAD,
    "--kv-transfer-config": flags.OFFLOAD,
}
# The same flags on a vLLM the platform wires no offload for (NIM's, vllm-neuron's, Dynamo's workers).
NO_OFFLOAD = dict.fromkeys(OFFLOAD, flags.NO_OFFLOAD)
# The LoRA flags (vllm/engine/arg_utils.py from config/lora.py LoRAConfig, and `--lora-modules`, the API
# server's LoRAParserAction of `name=path` or JSON, at 0.29.0): set from `models[].adapters` and `lora`.
LORA_FLAGS: dict[str, str] = {
    "--enable-lora": flags.LORA,
    "--lora-modules": flags.LORA,
    "--max-lora-rank": flags.LORA,
    "--max-loras": flags.LORA,
    "--max-cpu-loras": flags.LORA,
}
# The trace export (vllm/config/observability.py at 0.29.0, `otlp_traces_endpoint`): set from
# `addons.tracing` / `models[].tracing` (workload.vllm_trace_args), so an own endpoint would split the trace.
TRACE_FLAGS: dict[str, str] = {"--otlp-traces-endpoint": flags.TRACING}
# Exact vLLM flags that are prefixes of an owned one (so they are not abbreviations of it).
EXACT = frozenset({"--model", "--tokenizer", "--data-parallel-size", "-dp"})
# What a streamed model's loader owns: the load format, the streamer's settings, and GGUF quantization
# (the Run:ai streamer reads only safetensors: vLLM 0.29 fails with "Cannot find any safetensors model
# weights" otherwise).
STREAMED: dict[str, str] = {
    "--load-format": flags.LOADER,
    "--model-loader-extra-config": flags.LOADER,
    "--quantization": flags.GGUF,
    "-q": flags.GGUF,
}
DIALECT = Dialect(
    engine="vLLM 0.29",
    owned={**FLAGS, **OFFLOAD, **LORA_FLAGS, **TRACE_FLAGS},
    streamed=STREAMED,
    refused=None,
    exact=EXACT,
    underscores=True,
)

FACTS = EngineFacts(
    title="vLLM 0.29",
    port=8000,
    health_path="/health",
    ready_path="/health",
    metrics_path="/metrics",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller=None,
    platform_workload=True,
    picker_engine="vllm",
    picker_adapter_metric=LORA_METRIC,
    metrics=METRICS,
    # Tensor parallel within a node, one pipeline stage per node (docs/serving/parallelism_scaling.md).
    groups=Groups(builder="lws", refused=None, tensor_spans_nodes=False, head_rule="vLLM 0.29", fixed_sizes=None),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=True,
    lora=True,
    lora_from_prefix=False,
    lora_flags=True,
    canary=True,
    revisions=True,
    efa_stack=EFA_UNVERIFIED,
    # vLLM 0.29 keeps torch.compile's artifacts under $VLLM_CACHE_ROOT/torch_compile_cache/<hash>
    # (vllm/compilation/backends.py; envs.py VLLM_CACHE_ROOT, default ~/.cache/vllm), and Triton its kernels
    # under $TRITON_CACHE_DIR (default ~/.triton/cache) for the kernels it compiles outside that graph.
    compile_cache_env={"VLLM_CACHE_ROOT": "vllm", "TRITON_CACHE_DIR": "triton"},
    serving_role=None,
    kv_offload=KvOffload(
        "vLLM's native OffloadingConnector (--kv-offloading-backend native)", in_shm=True, per_rank_gb=False
    ),
    # A MIG instance is a GPU of its own to vLLM; on a time-sliced GPU the platform sets
    # --gpu-memory-utilization, a per-instance fraction of the whole GPU (vLLM 0.29 config/cache.py).
    gpu_sharing=("timeSlicing", "mig"),
    # vLLM 0.29: OpenAI `response_format` json_schema (its structured-outputs guided decoding).
    json_output=OPENAI_JSON_SCHEMA,
)


# Where vLLM pulls a streamed model's config and tokenizer files (envs.py VLLM_ASSETS_CACHE, default
# ~/.cache/vllm/assets): the engine's writable home, said explicitly.
ASSETS_CACHE = f"{HOME}/.cache/vllm/assets"


def served_args(spec: WorkloadSpec) -> list[str]:
    """The vLLM flags the platform manages (shared with neuron-vllm): the prepared model directory
    (its path pins the revision), or the bucket prefix it streams from, served under the model's name
    (without `--served-model-name` a streamed model's API and metrics name would be the s3 URI)."""
    m = spec.model
    args = [
        spec.cache.stream_uri or spec.cache.model_dir,
        "--host",
        "0.0.0.0",
        "--port",
        str(spec.facts.port),
        "--served-model-name",
        spec.served.served_model_name,
        "--tensor-parallel-size",
        str(spec.served.tensor_parallel),
    ]
    if spec.served.group.pipeline > 1:
        args += ["--pipeline-parallel-size", str(spec.served.group.pipeline)]
    if m.max_model_len:
        args += ["--max-model-len", str(m.max_model_len)]
    if m.trust_remote_code:
        args.append("--trust-remote-code")
    if (fraction := engine_memory_fraction(spec.pool)) is not None:
        # A time-sliced GPU isolates no memory: each replica's engine is held to its share of the GPU
        # (vLLM's --gpu-memory-utilization is a per-instance fraction of the whole GPU, config/cache.py).
        args += ["--gpu-memory-utilization", f"{fraction:g}"]
    return [*args, *(streamer.args() if spec.cache.stream_uri else [])]


def lora(spec: WorkloadSpec) -> tuple[list[str], list[dict[str, str]]]:
    """AIBrix's runtime LoRA flags and env for a model with adapters, when AIBrix loads them, and the
    largest rank its adapters give (`--max-lora-rank`: vLLM's default 16 refuses a larger adapter)."""
    if not (spec.served.aibrix and spec.served.adapter_loader == "aibrix"):
        return [], []
    args, env = aibrix.lora_runtime()
    ranks = [a.rank for a in spec.model.adapters if a.rank is not None]
    return [*args, *(["--max-lora-rank", str(max(ranks))] if ranks else [])], env


def native_lora(spec: WorkloadSpec) -> list[str]:
    """vLLM's own multi-LoRA flags (`models[].lora`): every prepared adapter as `--lora-modules name=path`,
    so a request naming the adapter as its `model` gets it; the largest rank; the GPU batch and the CPU
    cache (vLLM's LoRAConfig requires max_cpu_loras >= max_loras; the rules hold every adapter in it)."""
    lora = spec.model.lora
    if lora is None or spec.served.adapter_loader != "engine":
        return []
    ranks = [a.rank for a in spec.model.adapters if a.rank is not None]
    return [
        "--enable-lora",
        "--lora-modules",
        *(f"{name}={path}" for name, path in spec.served.cache.adapter_dirs),
        *(["--max-lora-rank", str(max(ranks))] if ranks else []),
        "--max-loras",
        str(lora.max_loras),
        "--max-cpu-loras",
        str(lora.held),
    ]


# vLLM 0.29's default --master-port (config/parallel.py), stated so the leader and workers agree.
MASTER_PORT = 29501


def group_args(spec: WorkloadSpec, *, headless: bool) -> list[str]:
    """The multi-node flags of one pod of a group (none on one node)."""
    nodes = spec.served.group.nodes
    if nodes == 1:
        return []
    args = [
        "--nnodes",
        str(nodes),
        "--node-rank",
        group.NODE_RANK,
        "--master-addr",
        group.LEADER_ADDRESS,
        "--master-port",
        str(MASTER_PORT),
        "--distributed-executor-backend",
        "mp",
    ]
    return [*args, "--headless"] if headless else args


def adapter_loader(spec: WorkloadSpec, *, headless: bool) -> tuple[list[dict[str, Any]], ...]:
    """(sidecars, volumes, engine mounts) of a serving pod whose adapters AIBrix loads: its runtime
    sidecar, which downloads each artifact as the pod's service account, and the directory it downloads
    into, which vLLM reads the adapter from. A group's headless workers serve no API: none there."""
    if headless or not lora(spec)[0]:
        return [], [], []
    volume, mount = aibrix.adapter_volume()
    sidecar = aibrix.runtime_sidecar(
        image=spec.images["aibrix-runtime"].ref,
        engine="vllm",
        engine_port=FACTS.port,
        region=spec.cache.region,
        security=security_context(ENGINE_UID),
    )
    return [sidecar], [volume], [mount]


def container(spec: WorkloadSpec, *, headless: bool = False) -> EngineContainer:
    lora_args, lora_env = lora(spec)
    sidecars, volumes, mounts = adapter_loader(spec, headless=headless)
    return EngineContainer(
        init_containers=streamer.image_check(spec, ENGINE_UID),
        command=["vllm", "serve"],
        args=[
            *served_args(spec),
            *group_args(spec, headless=headless),
            *offload.vllm_args(spec.model),
            *lora_args,
            *native_lora(spec),
            *vllm_trace_args(spec.served.tracing),
        ],
        env=[
            # Usage stats phone home by default; a platform does not.
            {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
            {"name": "DO_NOT_TRACK", "value": "1"},
            *([{"name": "VLLM_ASSETS_CACHE", "value": ASSETS_CACHE}] if spec.cache.stream_uri else []),
            *lora_env,
            *(otel_sdk_env(spec.served.tracing, spec.served.name) if spec.served.tracing else []),
        ],
        volumes=volumes,
        volume_mounts=mounts,
        sidecars=sidecars,
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    if spec.served.group.multi_node:
        return group.manifests(spec, container(spec), container(spec, headless=True))
    return workload_manifests(spec, container(spec))


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    del addons
    image = overridden(IMAGES["vllm-openai"], model.image)
    return platform_model(
        model, FACTS, image=image, dialect=DIALECT, hub_repo=repo_id(model), workload=group.workload_ref(model)
    )


SPEC = EngineSpec(
    no_traces=None,
    facts=FACTS,
    model_facts=model_facts,
    pods=server_pods,
    manifests=manifests,
    checks=no_problems,
    warnings=no_problems,
)
