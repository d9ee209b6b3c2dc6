"""vLLM on AWS Inferentia2 (and Trainium) through the NxD Inference plugin path.

Neuron SDK 2.32 documents two paths: the NxD Inference plugin with vLLM 0.16 for Inf2/Trn1/Trn2
(this module, on the Neuron DLC `pytorch-inference-vllm-neuronx`), and the vLLM Neuron beta for
Trn2/Trn3 only, which stacks/rules/engines.py refuses on inf2. The pod asks for whole
`aws.amazon.com/neuron` devices (`acceleratorsPerReplica`); the tensor parallel degree is the
NeuronCores those devices hold (2 per Inferentia2 device). It uses the Neuron scheduler extension
when installed. Compiled artifacts (NEFFs) live in the cache's compiled-artifact tree
(`CacheMount.compiled_dir`, apart from the weights' directory), keyed by model, revision and TP
degree, so a recompile never mixes with the downloaded model; on a shared cache (efs, fsx) a model
is compiled once, not once per pod, and a node-local cache is sized with room for them. The DLC runs
as root (Neuron runtime and device access); privilege escalation and capabilities stay off.
"""

from __future__ import annotations

from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.sizing import tensor_parallel

from ..storage.cache import compiled_dir
from .facts import EngineFacts
from .spec import WorkloadSpec
from .vllm import served_args
from .workload import EngineContainer, deployment
from .workload import manifests as workload_manifests

# No picker_engine: that vLLM 0.16 with the vllm-neuron plugin exports the gauges the llm-d router's
# vllm config reads (vllm:kv_cache_usage_perc, vllm:num_requests_waiting) is not verified.
# First start compiles the model for the Neuron devices before serving.
FACTS = EngineFacts(
    port=8000,
    health_path="/health",
    ready_path="/health",
    metrics_path="/metrics",
    accelerators=("neuron",),
    startup_seconds=3600,
)

# Neuron compiles one graph per batch bucket; vLLM's default of 256 sequences compiles for hours
# and may not fit device memory. Override with engineArgs (the last flag wins).
MAX_NUM_SEQS = 8


def compiled_root(spec: WorkloadSpec) -> str:
    """The cache's compiled-artifact directory for this model and revision (a Neuron pool always
    has one; the engine x accelerator rule refuses neuron-vllm elsewhere)."""
    return spec.cache.compiled_dir or compiled_dir(spec.model)


def artifacts_dir(spec: WorkloadSpec) -> str:
    return f"{compiled_root(spec)}/tp{tensor_parallel(spec.model, spec.pool)}"


def container(spec: WorkloadSpec) -> EngineContainer:
    return EngineContainer(
        command=["vllm", "serve"],
        # A local directory: for a repo id the vllm-neuron loader ignores the revision and saves a
        # second full copy under ./local-models (SDK 2.31 guide: serve a local path).
        args=[*served_args(spec), "--max-num-seqs", str(MAX_NUM_SEQS)],
        env=[
            {"name": "NEURON_COMPILED_ARTIFACTS", "value": artifacts_dir(spec)},
            {"name": "NEURON_COMPILE_CACHE_URL", "value": f"{compiled_root(spec)}/compile-cache"},
            {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        ],
        run_as_user=None,
        root_reason="the Neuron DLC runs as root to open the Neuron devices",
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return workload_manifests(spec, container(spec))


def service(model: ModelSection) -> tuple[str, int]:
    return model.name, FACTS.port


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    del addons
    return deployment(model)
