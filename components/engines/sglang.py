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

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.sizing import tensor_parallel

from . import group, streamer
from .facts import EngineFacts
from .spec import WorkloadSpec
from .workload import ENGINE_UID, HOME, EngineContainer
from .workload import manifests as workload_manifests

FACTS = EngineFacts(
    port=30000, health_path="/health", ready_path="/health", metrics_path="/metrics", picker_engine="sglang"
)
# The torch TCP store the ranks meet at on the leader (LWS docs/examples/sglang/lws.yaml uses 20000).
DIST_INIT_PORT = 20000


# Where SGLang pulls a streamed model's config and tokenizer files (srt/utils/runai_utils.py
# $SGLANG_CACHE_DIR/model_streamer): the engine's writable home.
CACHE_DIR = f"{HOME}/.cache/sglang"


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
        str(tensor_parallel(m, spec.pool)),
        "--enable-metrics",
        "--grammar-backend",
        grammar,
    ]
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
    env = []
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


def service(model: ModelSection) -> tuple[str, int]:
    return model.name, FACTS.port


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    del addons
    return group.workload_ref(model)
