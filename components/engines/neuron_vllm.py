"""vLLM on AWS Inferentia2 (and Trainium) through the NxD Inference plugin path.

Neuron SDK 2.32 documents two paths: the NxD Inference plugin with vLLM 0.16 for Inf2/Trn1/Trn2
(this module, on the Neuron DLC `pytorch-inference-vllm-neuronx`), and the vLLM Neuron beta for
Trn2/Trn3 only, which stacks/rules/engines.py refuses on inf2. The pod asks for whole
`aws.amazon.com/neuron` devices (`acceleratorsPerReplica`); the tensor parallel degree is the
NeuronCores those devices hold (2 per Inferentia2 device). It uses the Neuron scheduler extension
when installed. Compiled artifacts (NEFFs) live in the cache's compiled-artifact tree
(`CacheMount.compiled_dir`, apart from the weights' directory), keyed by model, revision and TP
degree and a digest of the serving flags (vllm-neuron loads what it finds there and ignores differing
flags), so a recompile never mixes with the downloaded model; on a shared cache (efs, fsx) a model
is compiled once, not once per pod, and a node-local cache is sized with room for them. With
`neuron.compile: ahead` a Job (`compile_job`) runs the serving args once, before the serving pods, so they
load instead of compiling. The DLC runs as root (Neuron runtime and device access); privilege escalation
and capabilities stay off.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from stacks.awaits import await_job, estimated
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import ONE_NODE, OPENAI_PATHS, Autoscalers, Dialect, EngineFacts, Groups, ModelFacts
from stacks.errors import Problem
from stacks.naming import labels, physical
from stacks.resolved import ModelEntry, ResolvedStack
from stacks.versions import IMAGES, overridden

from . import vllm
from .spec import EngineSpec, WorkloadSpec, no_problems, repo_id
from .vllm import served_args
from .workload import EngineContainer, platform_model, pod_template, scanner_annotations, server_pods
from .workload import manifests as workload_manifests

# vLLM 0.16's parser, of the same design as 0.29's and reading the same flags.
DIALECT = Dialect(
    engine="vLLM 0.16 (vllm-neuron)",
    owned={**vllm.FLAGS, **vllm.NO_OFFLOAD},
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
    picker_adapter_metric=None,
    metrics=vllm.METRICS,
    groups=Groups(
        builder=None,
        refused="the NxD Inference vLLM image (vLLM 0.16 with vllm-neuron) is built and documented for one "
        "Inferentia/Trainium instance per replica here; multi-node Neuron serving is not supported by the platform",
        tensor_spans_nodes=False,
        # vLLM 0.16's ModelConfig.verify_with_parallel_config: the heads divide by the NeuronCores.
        head_rule="vLLM 0.16 (vllm-neuron)",
        fixed_sizes="its --tensor-parallel-size is the NeuronCores of the replica's devices (acceleratorsPerReplica "
        "x the cores of one device) and it takes no pipeline size",
    ),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    lora_from_prefix=False,
    lora_flags=False,
    canary=False,
    revisions=True,
    efa_stack=ONE_NODE,
    # The Neuron compiler's cache of compiled graphs (NEURON_COMPILE_CACHE_URL, read by neuronx-cc's
    # libneuronxla) beside the NxD Inference artifacts (NEURON_COMPILED_ARTIFACTS), both under the model's
    # compiled-artifact tree, which `compileCache` keys on the shared cache (container() below).
    compile_cache_env={"NEURON_COMPILE_CACHE_URL": "compile-cache"},
    serving_role=None,
    # vLLM's OffloadingConnector copies blocks with CUDA; NxD Inference on Neuron has no such tier wired.
    kv_offload=None,
    # Neuron devices are not shared (gpuSharing is an NVIDIA pool's).
    gpu_sharing=(),
    json_output=None,  # no structured-output form established at its pinned version
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


def serving_args(spec: WorkloadSpec) -> list[str]:
    """The flags the engine is started with, the managed ones and then `engineArgs` (the last flag wins), as
    the serving container and the compile Job both run them: one list, so the two cannot drift."""
    # A local directory: for a repo id the vllm-neuron loader ignores the revision and saves a
    # second full copy under ./local-models (SDK 2.31 guide: serve a local path).
    return [*served_args(spec), "--max-num-seqs", str(MAX_NUM_SEQS), *spec.model.engine_args]


def flags_key(spec: WorkloadSpec) -> str:
    """The first 10 hex digits of the serving flags' SHA-256. vllm-neuron loads whatever it finds at
    NEURON_COMPILED_ARTIFACTS and ignores a differing configuration (neuronx_distributed_model_loader.py
    `_load_compiled_model`: "Using pre-compiled artifacts, override_neuron_config will be ignored"), so a
    new --max-model-len, --max-num-seqs or override must get a directory of its own, never the old graphs."""
    return hashlib.sha256(json.dumps(serving_args(spec)).encode()).hexdigest()[:10]


def artifacts_dir(spec: WorkloadSpec) -> str:
    return f"{compiled_root(spec)}/tp{spec.served.tensor_parallel}-{flags_key(spec)}"


def container(spec: WorkloadSpec) -> EngineContainer:
    return EngineContainer(
        command=["vllm", "serve"],
        args=serving_args(spec),
        append_engine_args=False,
        env=[
            {"name": "NEURON_COMPILED_ARTIFACTS", "value": artifacts_dir(spec)},
            {"name": "NEURON_COMPILE_CACHE_URL", "value": f"{compiled_root(spec)}/compile-cache"},
            {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        ],
        run_as_user=None,
        root_reason="the Neuron DLC runs as root to open the Neuron devices",
    )


# ---- the ahead-of-time compile Job (`models[].neuron.compile: ahead`) ------------------------------------

COMPILE_JOB_SUFFIX = "-neuron-compile"
# What the compile Job writes once vLLM has compiled and loaded the graphs and answers /health; a Job that
# finds it (the same key compiled before) exits at once. NxD Inference's own test (`is_compiled`: a
# `model.pt` in the directory) would also pass for a compile that was killed while it saved.
COMPILED_MARKER = ".compiled"
# `sh -c SCRIPT compile <the serving args>`: vLLM is started with exactly the serving container's args
# ("$@"); vllm-neuron compiles into NEURON_COMPILED_ARTIFACTS when nothing loads from there, saves, loads,
# and serves; then the marker is written and the server stopped.
COMPILE_SCRIPT = """set -u
done_marker="$NEURON_COMPILED_ARTIFACTS/{marker}"
if [ -f "$done_marker" ]; then
  echo "already compiled: $NEURON_COMPILED_ARTIFACTS"; exit 0
fi
vllm serve "$@" &
server=$!
health="http://127.0.0.1:{port}{health}"
until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$health" 2>/dev/null; do
  if ! kill -0 "$server" 2>/dev/null; then
    wait "$server"; echo "vllm serve exited (status $?) before it served: nothing compiled"; exit 1
  fi
  sleep 10
done
touch "$done_marker"
echo "compiled: $NEURON_COMPILED_ARTIFACTS"
kill -TERM "$server"; wait "$server" || true
"""


def compile_job_name(spec: WorkloadSpec) -> str:
    return physical(f"{spec.served.workload[2]}{COMPILE_JOB_SUFFIX}")


def compile_command() -> list[str]:
    script = COMPILE_SCRIPT.format(marker=COMPILED_MARKER, port=FACTS.port, health=FACTS.health_path)
    return ["/bin/sh", "-c", script, "compile"]


def compile_job(spec: WorkloadSpec) -> dict[str, Any]:
    """The Job that compiles the model before its serving pods start: the serving pod's own template (the
    image, the cache and its fill, the Neuron devices and placement, the env that names the artifacts'
    directory and the args) with the server wrapped by COMPILE_SCRIPT, without probes, labels a Service
    selects, or a topology spread. vllm-neuron compiles on the devices it then loads onto, so the Job asks
    for the replica's Neuron devices on the model's pool."""
    ahead = spec.served.ahead_compile
    assert ahead is not None, "a compile Job only for a model that compiles ahead"
    engine = container(spec)
    template = pod_template(spec, engine)
    pod = template["spec"]
    pod.pop("topologySpreadConstraints", None)
    pod["restartPolicy"] = "Never"
    server = pod["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        server.pop(probe, None)
    server["name"] = "compile"
    server["command"] = compile_command()
    name = compile_job_name(spec)
    job_labels = labels("neuron-compile", spec.model.name)
    annotations = {
        **scanner_annotations(spec, engine),
        **await_job(ahead.deadline_seconds),
        **estimated(ahead.estimate.seconds),
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": spec.served.namespace,
            "labels": job_labels,
            "annotations": annotations,
        },
        "spec": {
            # One retry: a lost node (a reclaimed instance) fails a pod; a compile error fails both alike.
            "backoffLimit": 1,
            "activeDeadlineSeconds": ahead.deadline_seconds,
            "template": {"metadata": {"labels": job_labels}, "spec": pod},
        },
    }


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    """The compile Job first when the model compiles ahead (components/model_servers.py makes the serving
    workload wait for a Job the engine returns), then the workload, Service and the rest."""
    served = workload_manifests(spec, container(spec))
    return served if spec.served.ahead_compile is None else [compile_job(spec), *served]


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
    no_traces="the vLLM 0.16 Neuron image is not verified to carry the opentelemetry packages vLLM's exporter needs",
    facts=FACTS,
    model_facts=model_facts,
    pods=server_pods,
    manifests=manifests,
    checks=checks,
    warnings=no_problems,
)
