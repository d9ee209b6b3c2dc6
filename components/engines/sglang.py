"""SGLang on NVIDIA GPUs: `python3 -m sglang.launch_server` for one model.

Model path (the prepared directory, or with `loadFormat: runai-streamer` the bucket prefix streamed
by the Run:ai streamer: components/engines/streamer.py) and pinned revision, tensor parallel size =
`acceleratorsPerReplica`, host 0.0.0.0 so the Service reaches it, Prometheus metrics enabled
(/metrics on the serving port) and the grammar backend from `models[].sglang.grammarBackend`
(xgrammar by default).

A replica across nodes (`nodesPerReplica` > 1) is a LeaderWorkerSet group
(components/engines/group.py): every pod runs the same launcher with `--nnodes N --node-rank
$(LWS_WORKER_INDEX) --dist-init-addr $(LWS_LEADER_ADDRESS):20000` and `--tp-size` the total over the
group (SGLang 0.5.19 srt/server_args.py; the LWS project's SGLang sample uses exactly these flags
and port). Ranks >= 1 run only schedulers (and a dummy health server), so only the leader serves and
is probed.
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
from stacks.versions import IMAGES, overridden

from . import group, streamer
from .spec import EngineSpec, WorkloadSpec, no_problems, repo_id
from .workload import ENGINE_UID, HOME, EngineContainer, platform_model, server_pods
from .workload import manifests as workload_manifests

# python/sglang/srt/observability/metrics_collector.py at 0.5.19, exported only with --enable-metrics
# (always set here); `sglang:token_usage` is a 0-1 fraction of the KV pool.
METRICS: dict[Signal, Metric] = {
    "ttft": Metric("sglang:time_to_first_token_seconds", "histogram", "s", "time to first token"),
    "itl": Metric("sglang:inter_token_latency_seconds", "histogram", "s", "inter-token latency"),
    "e2e": Metric("sglang:e2e_request_latency_seconds", "histogram", "s", "end-to-end request latency"),
    "tokens": Metric("sglang:generation_tokens_total", "counter", "tokens", "generated tokens"),
    "prompt_tokens": Metric("sglang:prompt_tokens_total", "counter", "tokens", "prefill (prompt) tokens processed"),
    "queue": Metric("sglang:num_queue_reqs", "gauge", "requests", "requests in the waiting queue"),
    "running": Metric("sglang:num_running_reqs", "gauge", "requests", "requests running"),
    "kv_cache": Metric("sglang:token_usage", "gauge", "ratio", "KV pool token usage (0-1)"),
    # Prefill tokens by where they came from (SchedulerMetricsCollector, created with the collector and
    # pre-seeded for every mode): `host_hit` read back from the CPU tier, `storage_hit` from the file tier
    # (`kvCacheOffload.shared`); `device_hit` and `input` are the GPU's and the computed ones.
    "offload_hits": Metric(
        "sglang:prefill_effective_tokens_total",
        "counter",
        "tokens",
        "prefill tokens loaded from the CPU (host_hit) and file (storage_hit) tiers",
        matchers='mode=~"host_hit|storage_hit"',
        split="mode",
    ),
}

# The flags SGLang 0.5.19 reads for what the platform sets (sglang/srt/server_args.py
# prepare_server_args: a plain argparse.ArgumentParser, so prefixes are accepted too; `--config`
# merges a YAML file).
FLAGS: dict[str, str] = {
    "--host": flags.ADDRESS,
    "--port": flags.ADDRESS,
    "--model-path": flags.MODEL,
    "--model": flags.MODEL,
    "--tokenizer-path": flags.MODEL,
    "--revision": flags.MODEL,
    "--served-model-name": flags.NAME,
    "--config": flags.CONFIG,
    "--tp-size": flags.PARALLEL,
    "--tensor-parallel-size": flags.PARALLEL,
    "--pp-size": flags.PARALLEL,
    "--pipeline-parallel-size": flags.PARALLEL,
    "--dp-size": flags.PARALLEL,
    "--data-parallel-size": flags.PARALLEL,
    "--nnodes": flags.PARALLEL,
    "--node-rank": flags.PARALLEL,
    "--dist-init-addr": flags.GROUP,
    "--nccl-init-addr": flags.GROUP,
    "--trust-remote-code": flags.TRUST,
    "--context-length": flags.MAXLEN,
    "--grammar-backend": flags.GRAMMAR,
    "--api-key": flags.API_KEY,
    "--admin-api-key": flags.API_KEY,
    "--ssl-keyfile-password": flags.CREDENTIAL,
}
# SGLang 0.5.19's hierarchical-cache flags (srt/server_args.py, every `hicache_*` field of its
# "Hierarchical cache" section): `models[].kvCacheOffload` sets them (`shared`: the storage backend) and
# sizes the pod for them.
OFFLOAD: dict[str, str] = dict.fromkeys(
    (
        "--enable-hierarchical-cache",
        "--hicache-ratio",
        "--hicache-size",
        "--hicache-write-policy",
        "--hicache-io-backend",
        "--hicache-mem-layout",
        "--hicache-storage-backend",
        "--hicache-storage-prefetch-policy",
        "--hicache-storage-backend-extra-config",
        "--hicache-host-memory-mode",
        "--hicache-storage-prefetch-retry-poll-interval",
        "--hicache-storage-prefetch-retry-max-attempts",
    ),
    flags.OFFLOAD,
)
# The same flags on an SGLang the platform wires no offload for (Dynamo's workers).
NO_OFFLOAD = dict.fromkeys(OFFLOAD, flags.NO_OFFLOAD)
# SGLang 0.5.19's LoRA flags (srt/server_args.py; docs advanced_features/lora.md): set from
# `models[].adapters` and `lora`. `--lora-target-modules` is left to SGLang, which infers the union of the
# listed adapters' target modules (it is needed only for adapters loaded later through the API).
LORA_FLAGS: dict[str, str] = {
    "--enable-lora": flags.LORA,
    "--lora-paths": flags.LORA,
    "--max-loras-per-batch": flags.LORA,
    "--max-loaded-loras": flags.LORA,
    "--max-lora-rank": flags.LORA,
}
# The page size, which the shared file tier sets (stacks/offload.py SGLANG_FILE_PAGE_TOKENS: a file per page).
FILE_TIER: dict[str, str] = {"--page-size": flags.PAGE_SIZE}
EXACT = frozenset({"--model", "--ssl-keyfile"})
# SGLang flags whose names end like a credential's but are not one.
NOT_SECRETS = frozenset({"--bucket-time-to-first-token", "--kt-max-deferred-experts-per-token"})
# A streamed model's loader (SGLang 0.5.19 srt/model_loader/loader.py reads only safetensors through
# the Run:ai streamer): its load format, settings and quantization.
STREAMED: dict[str, str] = {
    "--load-format": flags.LOADER,
    "--model-loader-extra-config": flags.LOADER,
    "--quantization": flags.GGUF,
}
DIALECT = Dialect(
    engine="SGLang 0.5.19",
    owned={**FLAGS, **OFFLOAD, **LORA_FLAGS},
    streamed=STREAMED,
    refused=None,
    exact=EXACT,
    not_secrets=NOT_SECRETS,
    file_tier=FILE_TIER,
)

FACTS = EngineFacts(
    title="SGLang 0.5.19",
    port=30000,
    health_path="/health",
    ready_path="/health",
    metrics_path="/metrics",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller=None,
    platform_workload=True,
    picker_engine="sglang",
    # SGLang 0.5.19 counts adapter slots only (sglang:lora_pool_slots_used/_total/_utilization,
    # srt/observability/metrics_collector.py), never which adapters, and the picker's sglang mapping has
    # no loraSpec: adapter-aware picking is vLLM's alone.
    picker_adapter_metric=None,
    metrics=METRICS,
    # One tensor-parallel group over the whole replica (`--tp 16 --nnodes 2`, SGLang docs multi_node.md).
    groups=Groups(builder="lws", refused=None, tensor_spans_nodes=True, head_rule="SGLang 0.5.19", fixed_sizes=None),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=True,
    lora=False,
    lora_from_prefix=False,
    lora_flags=True,
    canary=True,
    revisions=True,
    efa_stack=EFA_UNVERIFIED,
    # SGLang 0.5.19 compiles through PyTorch Inductor and Triton, which read their own cache variables
    # (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR; SGLang's docs/references/torch_compile_cache.md), and
    # JIT-builds DeepGEMM kernels under SGLANG_DG_CACHE_DIR (srt/environ.py, default ~/.cache/deep_gemm).
    compile_cache_env={
        "TORCHINDUCTOR_CACHE_DIR": "inductor",
        "TRITON_CACHE_DIR": "triton",
        "SGLANG_DG_CACHE_DIR": "deep_gemm",
    },
    serving_role=None,
    # Its host pool is pinned process memory, not /dev/shm; its file tier is HiCacheFile
    # (--hicache-storage-backend file, stacks/offload.py).
    kv_offload=KvOffload(
        "SGLang's hierarchical cache (--enable-hierarchical-cache --hicache-size)",
        in_shm=False,
        per_rank_gb=True,
        shared_tier="SGLang's HiCache file storage backend (--hicache-storage-backend file)",
    ),
    # A MIG instance is a GPU of its own to SGLang; not time-sliced: it sizes its KV pool from the memory
    # free when it starts (--mem-fraction-static is of that), so a second server on the GPU starves.
    gpu_sharing=("mig",),
    # SGLang 0.5.19: OpenAI `response_format` json_schema (its structured-outputs docs, xgrammar backend).
    json_output=OPENAI_JSON_SCHEMA,
)
# The torch TCP store the ranks meet at on the leader (LWS docs/examples/sglang/lws.yaml uses 20000).
DIST_INIT_PORT = 20000


# Where SGLang pulls a streamed model's config and tokenizer files (srt/utils/runai_utils.py
# $SGLANG_CACHE_DIR/model_streamer): the engine's writable home.
CACHE_DIR = f"{HOME}/.cache/sglang"


def native_lora(spec: WorkloadSpec) -> list[str]:
    """SGLang's own multi-LoRA flags (`models[].lora`): every prepared adapter as `--lora-paths name=path`
    (served under `name`), the batch's adapters, those kept loaded (SGLang requires max_loaded_loras >=
    max_loras_per_batch) and the largest rank."""
    lora = spec.model.lora
    if lora is None or spec.served.adapter_loader != "engine":
        return []
    ranks = [a.rank for a in spec.model.adapters if a.rank is not None]
    return [
        "--enable-lora",
        "--lora-paths",
        *(f"{name}={path}" for name, path in spec.served.cache.adapter_dirs),
        "--max-loras-per-batch",
        str(lora.max_loras),
        "--max-loaded-loras",
        str(lora.held),
        *(["--max-lora-rank", str(max(ranks))] if ranks else []),
    ]


def container(spec: WorkloadSpec) -> EngineContainer:
    m = spec.model
    grammar = m.sglang.grammar_backend if m.sglang else "xgrammar"
    args = [
        "--model-path",
        # Prepared by the init containers (a repo id would download again), or the bucket prefix streamed.
        spec.cache.stream_uri or spec.cache.model_dir,
        "--host",
        "0.0.0.0",
        "--port",
        str(FACTS.port),
        "--served-model-name",
        spec.served.served_model_name,
        "--tp-size",
        str(spec.served.tensor_parallel),
        "--enable-metrics",
        "--grammar-backend",
        grammar,
    ]
    args += offload.sglang_args(m, spec.served.tensor_parallel)
    g = spec.served.group
    if g.pipeline > 1:
        args += ["--pp-size", str(g.pipeline)]
    if g.multi_node:
        args += [
            "--nnodes",
            str(g.nodes),
            "--node-rank",
            group.NODE_RANK,
            "--dist-init-addr",
            f"{group.LEADER_ADDRESS}:{DIST_INIT_PORT}",
        ]
    if m.max_model_len:
        args += ["--context-length", str(m.max_model_len)]
    if m.trust_remote_code:
        args.append("--trust-remote-code")
    args += native_lora(spec)
    env = offload.sglang_shared_env(spec.cache.kv_dir, spec.served.cache.kv_rank_bytes)
    if spec.cache.stream_uri:
        args += streamer.args()
        env.append({"name": "SGLANG_CACHE_DIR", "value": CACHE_DIR})
    return EngineContainer(
        command=["python3", "-m", "sglang.launch_server"],
        args=args,
        env=env,
        init_containers=streamer.image_check(spec, ENGINE_UID),
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    if spec.served.group.multi_node:
        # Every rank runs the same command; LWS_WORKER_INDEX makes the leader rank 0.
        return group.manifests(spec, container(spec), container(spec))
    return workload_manifests(spec, container(spec))


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    del addons
    image = overridden(IMAGES["sglang"], model.image)
    return platform_model(
        model, FACTS, image=image, dialect=DIALECT, hub_repo=repo_id(model), workload=group.workload_ref(model)
    )


SPEC = EngineSpec(
    no_traces=(
        "SGLang's `--enable-trace` needs its `tracing` extra (opentelemetry-sdk, -exporter-otlp), which the "
        "lmsysorg/sglang image does not install (docs.sglang.io production_request_trace: "
        '`pip install -e "python[tracing]"`)'
    ),
    facts=FACTS,
    model_facts=model_facts,
    pods=server_pods,
    manifests=manifests,
    checks=no_problems,
    warnings=no_problems,
)
