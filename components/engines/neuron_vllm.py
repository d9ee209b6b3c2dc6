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

import re
from collections.abc import Iterable
from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import ONE_NODE, OPENAI_PATHS, Autoscalers, Dialect, EngineFacts, Groups, ModelFacts
from stacks.errors import Problem
from stacks.resolved import ModelEntry, ResolvedStack
from stacks.versions import IMAGES, overridden

from . import vllm
from .spec import EngineSpec, WorkloadSpec, no_problems, repo_id
from .vllm import served_args
from .workload import EngineContainer, platform_model, server_pods
from .workload import manifests as workload_manifests

# vLLM 0.16's parser, of the same design as 0.29's and reading the same flags.
DIALECT = Dialect(
    engine="vLLM 0.16 (vllm-neuron)",
    owned=vllm.FLAGS,
    streamed={},
    refused=None,
    exact=vllm.EXACT,
    underscores=True,
)

FACTS = EngineFacts(
    title="vLLM 0.16 on Neuron (NxD Inference)",
    port=8000,
    health_path="/health",
    ready_path="/health",
    metrics_path="/metrics",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("neuron",),
    controller=None,
    platform_workload=True,
    # No picker_engine: that vLLM 0.16 with the vllm-neuron plugin exports the gauges the llm-d
    # router's vllm config reads (vllm:kv_cache_usage_perc, vllm:num_requests_waiting) is not verified.
    picker_engine=None,
    metrics=vllm.METRICS,
    groups=Groups(
        builder=None,
        refused="the NxD Inference vLLM image (vLLM 0.16 with vllm-neuron) is built and documented for one "
        "Inferentia/Trainium instance per replica here; multi-node Neuron serving is not supported by the platform",
        tensor_spans_nodes=False,
        # vLLM 0.16's ModelConfig.verify_with_parallel_config: the heads divide by the NeuronCores.
        head_rule="vLLM 0.16 (vllm-neuron)",
    ),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    canary=False,
    revisions=True,
    efa_stack=ONE_NODE,
    # The Neuron compiler's cache of compiled graphs (NEURON_COMPILE_CACHE_URL, read by neuronx-cc's
    # libneuronxla) beside the NxD Inference artifacts (NEURON_COMPILED_ARTIFACTS), both under the model's
    # compiled-artifact tree, which `compileCache` keys on the shared cache (container() below).
    compile_cache_env={"NEURON_COMPILE_CACHE_URL": "compile-cache"},
    # Neuron devices are not shared (gpuSharing is an NVIDIA pool's).
    gpu_sharing=(),
)

# Neuron compiles one graph per batch bucket; vLLM's default of 256 sequences compiles for hours
# and may not fit device memory. Override with engineArgs (the last flag wins).
MAX_NUM_SEQS = 8


def compiled_root(spec: WorkloadSpec) -> str:
    """The cache's compiled-artifact directory for this model and revision (a Neuron pool always
    has one; the engine x accelerator rule refuses neuron-vllm elsewhere)."""
    compiled = spec.served.cache.compiled_dir
    assert compiled is not None, "a Neuron pool's model has a compiled-artifact directory"
    return compiled


def artifacts_dir(spec: WorkloadSpec) -> str:
    return f"{compiled_root(spec)}/tp{spec.served.tensor_parallel}"


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


def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
    del addons
    image = overridden(IMAGES["vllm-neuronx"], model.image)
    return platform_model(model, FACTS, image=image, dialect=DIALECT, hub_repo=repo_id(model))


# ---- the refusals only vLLM on Neuron has -------------------------------------------------------------

NEURON_FAMILIES = ("inf2", "trn1", "trn1n", "trn2", "trn3")
# The vLLM Neuron beta (the vllm-neuron plugin, vLLM 0.24+ DLCs) is Trn2/Trn3 only (Neuron SDK 2.32 notes).
BETA_TAG = re.compile(r"^0\.(1[7-9]|[2-9][0-9])\.")


def checks(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """It runs on Inferentia2 or Trainium, through the NxD Inference path on Inferentia2 (the vLLM Neuron
    beta is Trn2/Trn3 only)."""
    served = stack.placed(entry)
    if served is None or served.pool.accelerator not in FACTS.accelerators:
        return  # an unknown pool, or the wrong accelerator: the generic rules say so
    types = [t for t in served.pool.instance_types if t.accelerator_count >= served.group.per_node]
    wrong = sorted({t.family for t in types if t.family not in NEURON_FAMILIES})
    if wrong:
        yield Problem(
            entry.key("pool"),
            f"neuron-vllm runs on inf2 or trn instance types; pool {served.pool.name} allows {', '.join(wrong)}",
        )
    catalog = IMAGES["vllm-neuronx"].tag
    tag = entry.config.image.tag or catalog
    if BETA_TAG.match(tag) and any(t.family == "inf2" for t in types):
        yield Problem(
            entry.key("image", "tag"),
            f"{tag} is a vLLM Neuron beta (vllm-neuron plugin) image, which supports Trn2/Trn3 only; on inf2 use "
            f"the NxD Inference DLC ({catalog}) or move the model to a trn2 pool",
        )


SPEC = EngineSpec(
    facts=FACTS, model_facts=model_facts, pods=server_pods, manifests=manifests, checks=checks, warnings=no_problems
)
