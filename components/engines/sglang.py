"""SGLang on NVIDIA GPUs: `python3 -m sglang.launch_server` for one model.

Model path and pinned revision, tensor parallel size = `acceleratorsPerReplica`, host 0.0.0.0 so the
Service reaches it, Prometheus metrics enabled (/metrics on the serving port) and the grammar
backend from `models[].sglang.grammarBackend` (xgrammar by default).
"""

from __future__ import annotations

from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.sizing import tensor_parallel

from .facts import EngineFacts
from .spec import WorkloadSpec
from .workload import EngineContainer, deployment
from .workload import manifests as workload_manifests

FACTS = EngineFacts(port=30000, health_path="/health", ready_path="/health", metrics_path="/metrics")


def container(spec: WorkloadSpec) -> EngineContainer:
    m = spec.model
    grammar = m.sglang.grammar_backend if m.sglang else "xgrammar"
    args = [
        "--model-path",
        spec.cache.model_dir,  # prepared by the init containers; a repo id would download again
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
    if m.max_model_len:
        args += ["--context-length", str(m.max_model_len)]
    if m.trust_remote_code:
        args.append("--trust-remote-code")
    return EngineContainer(
        command=["python3", "-m", "sglang.launch_server"],
        args=args,
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return workload_manifests(spec, container(spec))


def service(model: ModelSection) -> tuple[str, int]:
    return model.name, FACTS.port


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    del addons
    return deployment(model)
