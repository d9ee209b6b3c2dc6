"""Engine rules: a model replica can run where the stack puts it.

- the replica's requests (stacks/sizing.py, the same figures the engine modules deploy) fit at least
  one instance type of its pool after Karpenter's overheads and the platform's DaemonSets;
- the pool's limits allow at least one replica;
- with `parameters` and `dtype`, the weights fit the replica's accelerator memory with headroom for
  the KV cache, on every instance type of the pool that could host it (Karpenter picks the cheapest);
- neuron-vllm runs on Inferentia2 or Trainium, through the NxD Inference path on Inferentia2 (the
  vLLM Neuron beta is Trn2/Trn3 only);
- NIM gets its model without a credential in the environment: a prepared model path or a
  file-mounted NGC key, and an image-pull secret distinct from that key.
Engine x accelerator lives in stacks/rules/models.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import Lookup, platform_rule, platform_warning, rule
from ..config import ModelSection, StackConfig
from ..config.pools import NodePoolSection
from ..errors import Problem, key_path
from ..sizing import WEIGHTS_FRACTION, accelerator_types, replica_requests, tensor_parallel, weights
from ..versions import IMAGES
from .context import placed as placed_on
from .context import platform_of
from .models import ENGINE_ACCELERATORS

NEURON_FAMILIES = ("inf2", "trn1", "trn1n", "trn2", "trn3")
# vLLM Neuron beta (the vllm-neuron plugin, vLLM 0.24+ DLCs): Trn2/Trn3 only (Neuron SDK 2.32 notes).
_BETA_TAG = re.compile(r"^0\.(1[7-9]|[2-9][0-9])\.")


def _placed(config: StackConfig, lookup: Lookup) -> Iterable[tuple[int, ModelSection, NodePoolSection]]:
    """Each model the platform runs as its own workload, on its pool: this stack's, or for a workloads
    stack the platform's (stacks/rules/context.py)."""
    for i, model, pool in placed_on(config, platform_of(config, lookup)):
        if not ENGINES[model.engine].facts.platform_workload:
            continue
        if pool.accelerator not in ENGINE_ACCELERATORS[model.engine]:
            continue  # stacks/rules/models.py reports the engine on the wrong accelerator
        yield i, model, pool


@platform_rule
def no_accelerators_on_cpu_pools(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in _placed(config, lookup):
        if pool.accelerator == "none" and model.accelerators_per_replica > 0:
            yield Problem(
                key_path(["models", i, "acceleratorsPerReplica"]),
                f"pool {pool.name} has no accelerators; set acceleratorsPerReplica: 0 to run on its "
                f"CPUs, or choose a GPU pool",
            )


@platform_rule
def pool_limits_allow_one_replica(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    platform = platform_of(config, lookup)
    for i, model, pool in _placed(config, lookup):
        # The accelerator limit is checked with the fit (stacks/rules/provisioning.py).
        assert platform is not None
        requests = replica_requests(model, pool, platform.storage)
        if pool.limits.cpu is not None and requests.cpu_m > _cpu_m(pool.limits.cpu):
            yield Problem(
                key_path(["models", i, "resources", "cpu"]),
                f"one replica requests {requests.cpu_m}m cpu but pool {pool.name} is limited to "
                f"{pool.limits.cpu}; raise nodePools[].limits.cpu or lower resources.cpu",
            )


def _cpu_m(quantity: str) -> int:
    if quantity.endswith("m"):
        return int(float(quantity[:-1]))
    return int(float(re.sub(r"[A-Za-z]+$", "", quantity)) * 1000)


@platform_rule
def weights_fit_accelerator_memory(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in _placed(config, lookup):
        w = weights(model)
        types = accelerator_types(model, pool)
        if w is None or not types or model.accelerators_per_replica == 0:
            continue
        apr = model.accelerators_per_replica
        small = min(types, key=lambda t: t.memory_per_accelerator_gib)
        total = apr * small.memory_per_accelerator_gib
        usable = total * WEIGHTS_FRACTION
        if w.gib > usable:
            unit = small.gpu_name or small.neuron_accelerator or "accelerator"
            need = -(-w.gib // (small.memory_per_accelerator_gib * WEIGHTS_FRACTION))
            yield Problem(
                key_path(["models", i, "acceleratorsPerReplica"]),
                f"weights do not fit: {model.parameters} parameters x {w.bytes / w.parameters:g} bytes "
                f"({w.dtype}) = {w.gib:.1f} GiB, but {apr} x {small.memory_per_accelerator_gib:g} GiB "
                f"({unit} on {small.name}) = {total:.1f} GiB, of which {WEIGHTS_FRACTION:.0%} "
                f"({usable:.1f} GiB) may hold weights, leaving the rest for the KV cache. Use at least "
                f"{int(need)} accelerators per replica on a type that has them, larger accelerators, "
                f"or a smaller dtype",
            )


@platform_rule
def neuron_vllm_on_inferentia_or_trainium(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in _placed(config, lookup):
        if model.engine != "neuron-vllm":
            continue
        types = accelerator_types(model, pool) or []
        wrong = sorted({t.family for t in types if t.family not in NEURON_FAMILIES})
        if wrong:
            yield Problem(
                key_path(["models", i, "pool"]),
                f"neuron-vllm runs on inf2 or trn instance types; pool {pool.name} allows {', '.join(wrong)}",
            )
        tag = model.image.tag or IMAGES["vllm-neuronx"].tag
        if _BETA_TAG.match(tag) and any(t.family == "inf2" for t in types):
            yield Problem(
                key_path(["models", i, "image", "tag"]),
                f"{tag} is a vLLM Neuron beta (vllm-neuron plugin) image, which supports Trn2/Trn3 "
                f"only; on inf2 use the NxD Inference DLC ({IMAGES['vllm-neuronx'].tag}) or move the "
                f"model to a trn2 pool",
            )


@platform_rule
def nim_credentials_stay_files(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """NIM 2.0.12 takes an NGC key only as the NGC_API_KEY environment variable (and needs one only
    for Production Branch models and NIMs before 2.0.10). As a Deployment it runs with no credential:
    `hf://` models are prepared by the platform, others must be prepared (nim.modelPath). The NIM
    Operator is the one path that takes the key, as its required authSecret."""
    platform = platform_of(config, lookup)
    if platform is None:
        return
    operator = platform.addons.nim_operator.enabled
    for i, model in enumerate(config.models):
        if model.engine != "nim" or model.nim is None:
            continue
        from_hub = model.model.startswith("hf://")
        if not operator and model.nim.model_path is None and not from_hub:
            yield Problem(
                key_path(["models", i, "model"]),
                f"{model.model} comes from NGC, and NIM takes an NGC key only as an environment variable, "
                f"which the file-only credential policy does not allow; prepare the model (e.g. NIM's "
                f"download-to-cache into the model cache) and set nim.modelPath, or serve an hf:// model, "
                f"which the platform downloads itself",
            )
        if not operator and model.secrets.ngc_api_key is not None:
            yield Problem(
                key_path(["models", i, "secrets", "ngcApiKey"]),
                "a NIM Deployment runs with no NGC key (hf:// models are prepared by the platform, "
                "others come from nim.modelPath); the key is only the NIM Operator's authSecret: remove "
                "it, or set addons.nimOperator.enabled",
            )
        if operator and model.secrets.ngc_api_key is None:
            yield Problem(
                key_path(["models", i, "secrets", "ngcApiKey"]),
                "a NIMService (addons.nimOperator.enabled) requires authSecret: set secrets.ngcApiKey "
                "to an existing Secret holding NGC_API_KEY, or turn the operator off to run NIM on a "
                "prepared model without a credential",
            )
        if model.secrets.ngc_api_key is not None and model.secrets.ngc_api_key == model.nim.image_pull_secret:
            yield Problem(
                key_path(["models", i, "nim", "imagePullSecret"]),
                "the image-pull secret (a dockerconfigjson for nvcr.io) and the runtime model "
                "credential are different Secrets with different roles; name two Secrets",
            )


@platform_warning
def neuron_devices_in_powers_of_two(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    for i, model, pool in _placed(config, lookup):
        apr = model.accelerators_per_replica
        if pool.accelerator == "neuron" and apr & (apr - 1):
            cores = tensor_parallel(model, pool, ENGINES[model.engine].facts.groups)
            yield Problem(
                key_path(["models", i, "acceleratorsPerReplica"]),
                f"{apr} Neuron devices: Karpenter asks for power-of-two aws.amazon.com/neuron requests, "
                f"and the tensor parallel degree ({cores} NeuronCores) must divide "
                f"the model's attention heads; 1, 2, 4 or 8 devices are the usual choices",
            )


@rule
def autoscalers_read_a_gauge_the_engine_exports(config: StackConfig) -> Iterable[Problem]:
    """An HPA (through prometheus-adapter) or an AIBrix PodAutoscaler averages one per-pod value: it
    must be a gauge the model's engine really exports (stacks/metrics.py), or nothing ever scales."""
    for i, model in enumerate(config.models):
        scaling = model.autoscaling
        if scaling.owner not in ("hpa", "aibrix", "keda"):
            continue
        # A Dynamo graph scales through KEDA on its frontend's gauges; other operator-run engines refuse
        # every autoscaler before this matters.
        if not ENGINES[model.engine].facts.platform_workload and not (
            scaling.owner == "keda" and model.engine == "dynamo"
        ):
            continue
        gauges = [m.name for m in ENGINES[model.engine].facts.gauges]
        if not gauges:
            yield Problem(
                key_path(["models", i, "autoscaling", "owner"]),
                f"engine {model.engine} exports no Prometheus metrics to scale on; use owner: none "
                f"and a fixed replicas count",
            )
        elif scaling.metric is not None and scaling.metric not in gauges:
            yield Problem(
                key_path(["models", i, "autoscaling", "metric"]),
                f"{scaling.metric} is not a gauge engine {model.engine} exports (an autoscaler averages a "
                f"per-pod value); use one of {', '.join(gauges)}, or leave metric unset for its queue "
                f"depth, {ENGINES[model.engine].facts.scaling_metric(None)}",
            )
