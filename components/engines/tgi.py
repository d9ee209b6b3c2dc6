"""Hugging Face TGI on NVIDIA GPUs, for existing deployments only.

TGI is in maintenance mode upstream: the config refuses it unless `tgi.acceptMaintenanceMode: true`,
and `tgi.quantize: awq|gptq` only for weights already in that format (stacks/config/models.py).
`text-generation-launcher` on the prepared model directory (the pinned revision; TGI takes a local
directory as `--model-id`), one shard per GPU and a long startup deadline (shard start-up and
warm-up run before /health answers). The token is
mounted as a file both at HF_TOKEN_PATH (Python shards) and as `$HF_HOME/token`, where the Rust
router's hub client looks for it. Checked against v3.3.7: the image's entrypoint execs
`text-generation-launcher "$@"`, /health and /metrics are served on the main port (the launcher
also opens a Prometheus listener on 9000), and the image runs as root.
"""

from __future__ import annotations

from typing import Any

from stacks import flags
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import (
    ACCEPTANCE_SCHEMA,
    ONE_NODE,
    OPENAI_PATHS,
    Autoscalers,
    Dialect,
    EngineFacts,
    Groups,
    ModelFacts,
)
from stacks.metrics import Metric, Signal
from stacks.versions import IMAGES, overridden

from .spec import EngineSpec, WorkloadSpec, no_problems, repo_id
from .workload import HF_TOKEN_KEY, HOME, EngineContainer, platform_model, server_pods, tgi_trace_args
from .workload import manifests as workload_manifests

# The TGI 3.x router's series: seconds without a `_seconds` suffix; no time to first token and no
# KV-cache metric.
METRICS: dict[Signal, Metric] = {
    "itl": Metric("tgi_request_mean_time_per_token_duration", "histogram", "s", "mean time per generated token"),
    "e2e": Metric("tgi_request_duration", "histogram", "s", "end-to-end request duration"),
    "tokens": Metric("tgi_request_generated_tokens", "histogram", "tokens", "generated tokens per request"),
    # router/src/validation.rs: the input length of every validated request, in tokens.
    "prompt_tokens": Metric("tgi_request_input_length", "histogram", "tokens", "input tokens per request"),
    "queue": Metric("tgi_queue_size", "gauge", "requests", "requests in the queue"),
    "running": Metric("tgi_batch_current_size", "gauge", "requests", "current batch size"),
}

# The launcher's flags for what the platform sets (launcher/src/main.rs at 3.3.7): clap without
# infer_long_args, so only exact long flags and `--flag=value`, and short flags alone, clustered (`-ep`)
# or with the value attached (`-p9000`; `-p` is the port).
FLAGS: dict[str, str] = {
    "--hostname": flags.ADDRESS,
    "--port": flags.ADDRESS,
    "-p": flags.ADDRESS,
    "--model-id": flags.MODEL,
    "--revision": flags.MODEL,
    "--num-shard": flags.PARALLEL,
    "--sharded": flags.PARALLEL,
    "--trust-remote-code": flags.TRUST,
    "--max-total-tokens": flags.MAXLEN,
    "--max-input-tokens": flags.MAXLEN,
    "--max-input-length": flags.MAXLEN,
    "--quantize": flags.QUANT,
    "--api-key": flags.API_KEY,
    # The router's trace export (launcher/src/main.rs `otlp_endpoint`, `otlp_service_name`): set from
    # addons.tracing / models[].tracing (workload.tgi_trace_args).
    "--otlp-endpoint": flags.TRACING,
    "--otlp-service-name": flags.TRACING,
    "--ngrok": flags.TUNNEL,
    "--ngrok-authtoken": flags.TUNNEL,
    "--ngrok-edge": flags.TUNNEL,
}
DIALECT = Dialect(
    engine="TGI 3.3.7 (clap)",
    owned=FLAGS,
    streamed={},
    refused=None,
    abbreviates=False,
    # Short options taking no value, and those taking one (what follows is the value).
    short_flags=frozenset("ehV"),
    short_values={"p": "-p", "g": "-g"},
)

FACTS = EngineFacts(
    title="TGI 3.3.7",
    port=8080,
    health_path="/health",
    ready_path="/health",
    metrics_path="/metrics",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller=None,
    platform_workload=True,
    picker_engine=None,
    picker_adapter_metric=None,
    metrics=METRICS,
    groups=Groups(
        builder=None,
        refused="TGI's launcher shards a model over the GPUs of one machine only (`--num-shard` starts local "
        "processes); it has no multi-node mode",
        tensor_spans_nodes=False,
        head_rule=None,
        fixed_sizes="its launcher shards over every GPU of the replica (`--num-shard` is acceleratorsPerReplica) "
        "and takes no pipeline size",
    ),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    lora_from_prefix=False,
    lora_flags=False,
    canary=False,
    revisions=True,
    efa_stack=ONE_NODE,
    # TGI captures its CUDA graphs at every start and keeps no compile cache to place.
    compile_cache_env={},
    serving_role=None,
    kv_offload=None,
    # Not offered on shared GPUs: how it behaves within one slice (its memory sizing, its profiles) is not
    # verified here; it runs on whole GPUs.
    gpu_sharing=(),
    # TGI 3.3.7: its grammar, `response_format: {type: json, value: <schema>}` (router/src/lib.rs GrammarType,
    # tag `type`, content `value`).
    json_output={"response_format": {"type": "json", "value": ACCEPTANCE_SCHEMA}},
)

HF_HOME = f"{HOME}/.cache/huggingface"


def container(spec: WorkloadSpec) -> EngineContainer:
    m = spec.model
    args = [
        "--model-id",
        spec.cache.model_dir,  # a local directory, prepared by the init containers
        "--hostname",
        "0.0.0.0",
        "--port",
        str(FACTS.port),
        "--num-shard",
        str(max(1, m.accelerators_per_replica)),
    ]
    if m.max_model_len:
        args += ["--max-total-tokens", str(m.max_model_len), "--max-input-tokens", str(m.max_model_len - 1)]
    if m.tgi and m.tgi.quantize:
        args += ["--quantize", m.tgi.quantize]
    if m.trust_remote_code:
        args.append("--trust-remote-code")
    args += tgi_trace_args(spec.served.tracing, spec.served.name)
    mounts = []
    if m.secrets.hugging_face_token:
        mounts.append(
            {"name": "hf-token", "mountPath": f"{HF_HOME}/{HF_TOKEN_KEY}", "subPath": HF_TOKEN_KEY, "readOnly": True}
        )
    return EngineContainer(
        # The image's /tgi-entrypoint.sh activates the venv and execs the launcher with these args.
        command=None,
        args=args,
        env=[{"name": "HF_HOME", "value": HF_HOME}, {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "0"}],
        volume_mounts=mounts,
        # The image's Python interpreter lives under /root (uv-managed); another uid cannot run it.
        run_as_user=None,
        root_reason="the TGI image's Python interpreter lives under /root (uv-managed); another uid cannot run it",
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return workload_manifests(spec, container(spec))


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    del addons
    image = overridden(IMAGES["text-generation-inference"], model.image)
    return platform_model(model, FACTS, image=image, dialect=DIALECT, hub_repo=repo_id(model))


SPEC = EngineSpec(
    no_traces=None,
    facts=FACTS,
    model_facts=model_facts,
    pods=server_pods,
    manifests=manifests,
    checks=no_problems,
    warnings=no_problems,
)
