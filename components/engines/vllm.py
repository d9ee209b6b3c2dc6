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
the vLLM 0.29.0 wheel (FINDINGS-multinode: engine/arg_utils.py, config/parallel.py,
entrypoints/launchers/cli_args.py, entrypoints/cli/serve.py): `nnodes > 1` needs the mp executor and
a world size (tensor x pipeline) divisible by nnodes. Health at /health, Prometheus metrics at
/metrics on the serving port (each engine module's FACTS). With AIBrix on, a model with `adapters`
also gets AIBrix's LoRA runtime (`--enable-lora` and runtime adapter loading), so the adapter
controller can load its ModelAdapters into the server.
"""

from __future__ import annotations

from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.sizing import tensor_parallel

from ..serving import aibrix
from . import group, streamer
from .facts import EngineFacts
from .spec import WorkloadSpec
from .workload import ENGINE_UID, HOME, EngineContainer
from .workload import manifests as workload_manifests

FACTS = EngineFacts(
    port=8000, health_path="/health", ready_path="/health", metrics_path="/metrics", picker_engine="vllm"
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
        str(tensor_parallel(m, spec.pool)),
    ]
    if spec.served.group.pipeline > 1:
        args += ["--pipeline-parallel-size", str(spec.served.group.pipeline)]
    if m.max_model_len:
        args += ["--max-model-len", str(m.max_model_len)]
    if m.trust_remote_code:
        args.append("--trust-remote-code")
    return [*args, *(streamer.args() if spec.cache.stream_uri else [])]


def lora(spec: WorkloadSpec) -> tuple[list[str], list[dict[str, str]]]:
    """AIBrix's runtime LoRA flags and env for a model with adapters, when AIBrix loads them."""
    if spec.served.aibrix and spec.model.adapters:
        return aibrix.lora_runtime()
    return [], []


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


def container(spec: WorkloadSpec, *, headless: bool = False) -> EngineContainer:
    lora_args, lora_env = lora(spec)
    return EngineContainer(
        init_containers=streamer.image_check(spec, ENGINE_UID),
        command=["vllm", "serve"],
        args=[*served_args(spec), *group_args(spec, headless=headless), *lora_args],
        env=[
            # Usage stats phone home by default; a platform does not.
            {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
            {"name": "DO_NOT_TRACK", "value": "1"},
            *([{"name": "VLLM_ASSETS_CACHE", "value": ASSETS_CACHE}] if spec.cache.stream_uri else []),
            *lora_env,
        ],
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    if spec.served.group.multi_node:
        return group.manifests(spec, container(spec), container(spec, headless=True))
    return workload_manifests(spec, container(spec))


def service(model: ModelSection) -> tuple[str, int]:
    return model.name, FACTS.port


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    del addons
    return group.workload_ref(model)
