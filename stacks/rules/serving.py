"""Serving-platform rules: one scaler owner per workload, add-ons the model's features need,
Dynamo's disaggregation requirements, Ray Serve bounds and LiteLLM's allowed providers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..checks import Lookup, platform_rule, rule
from ..config import StackConfig
from ..errors import Problem, key_path
from .context import platform_of

# Who owns a model's replicas when the platform runs it, by engine (besides autoscaling.owner).
BUILT_IN_SCALER = {
    "dynamo": "the Dynamo operator (it sets each DynamoGraphDeployment component's replicas)",
    "ray-serve": "Ray Serve's replica autoscaling with the KubeRay autoscaler (rayServe.minWorkers/maxWorkers/"
    "targetOngoingRequests; a RayService has no scale subresource for another scaler)",
    "nim": "the NIM Operator (it reconciles the NIMService's Deployment)",
}
SCALER_NAMES = {
    "hpa": "a HorizontalPodAutoscaler (autoscaling.owner: hpa)",
    "keda": "a KEDA ScaledObject (autoscaling.owner: keda)",
    "aibrix": "an AIBrix PodAutoscaler (autoscaling.owner: aibrix)",
    "dynamo-planner": "the Dynamo planner (autoscaling.owner: dynamo-planner)",
}
# AIBrix loads LoRA adapters into vLLM at runtime; other engines do not take its adapter API.
ADAPTER_ENGINES = ("vllm",)


@rule
def one_scaler_owner(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        owner = model.autoscaling.owner
        where = key_path(["models", i, "autoscaling", "owner"])
        if owner == "none":
            continue
        if owner == "dynamo-planner":
            if model.engine != "dynamo":
                yield Problem(where, f"the Dynamo planner only scales engine: dynamo models (engine is {model.engine})")
            else:
                mode = model.dynamo.mode if model.dynamo else "aggregated"
                yield Problem(
                    where,
                    "the platform does not deploy the Dynamo planner: the SLA planner scales only "
                    f"disaggregated graphs (this one is {mode}), needs Prometheus and the profiling data "
                    "of a run you review (dynamo.requestProfiling: true renders a "
                    "DynamoGraphDeploymentRequest with autoApply: false); use autoscaling.owner: none "
                    "with fixed dynamo.prefillWorkers/decodeWorkers (or replicas) meanwhile",
                )
            continue
        built_in = BUILT_IN_SCALER.get(model.engine)
        if owner == "keda":
            # KEDA scales a Dynamo graph through its scaling adapters, which take the count from the
            # operator; the engines it cannot scale are refused in stacks/rules/scaling.py.
            continue
        if built_in and not (model.engine == "nim" and owner == "hpa"):
            yield Problem(
                where,
                f"{model.name} would have two scaler owners: "
                f"{SCALER_NAMES.get(owner, f'autoscaling.owner: {owner}')} and {built_in}; "
                f"set autoscaling.owner: none and let {built_in.split(' (')[0]} scale it",
            )


@rule
def an_hpa_has_metrics_to_read(config: StackConfig) -> Iterable[Problem]:
    """An HPA asks custom.metrics.k8s.io for the engine's gauge; prometheus-adapter answers it from
    Prometheus. Without them the HPA never scales (FailedGetPodsMetric). A workloads stack relies on
    its platform's (stacks/rules/workloads.py checks the platform's export)."""
    if config.stack.role == "workloads":
        return
    mon = config.addons.monitoring
    if mon.serves_custom_metrics:
        return
    fix = (
        "set addons.monitoring.prometheusUrl to that Prometheus's in-cluster URL so prometheus-adapter is "
        "installed for it"
        if mon.enabled
        else "set addons.monitoring.enabled: true"
    )
    for i, model in enumerate(config.models):
        if model.autoscaling.owner == "hpa":
            yield Problem(
                key_path(["models", i, "autoscaling", "owner"]),
                f"an HPA reads {model.engine}'s metrics from Prometheus through prometheus-adapter, which "
                f"this stack does not run; {fix}, or use autoscaling.owner: none (or aibrix, which scrapes "
                f"pods itself)",
            )


@platform_rule
def serving_addons_enabled(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """A workloads stack runs on its platform's add-ons (its exports); unknown until the preview
    when the platform cannot be read here."""
    platform = platform_of(config, lookup)
    aibrix = platform is None or platform.addons.aibrix.enabled
    ask = platform.addon("aibrix") if platform is not None else ""
    for i, model in enumerate(config.models):
        if model.adapters and not aibrix:
            yield Problem(
                key_path(["models", i, "adapters"]),
                f"LoRA adapters are AIBrix ModelAdapters, and AIBrix is not installed: {ask}, or remove adapters",
            )
        if model.adapters and model.engine not in ADAPTER_ENGINES:
            yield Problem(
                key_path(["models", i, "adapters"]),
                f"AIBrix loads adapters into vLLM at runtime; engine {model.engine} cannot take them "
                f"(use engine: vllm, or remove adapters)",
            )
        if model.autoscaling.owner == "aibrix" and not aibrix:
            yield Problem(
                key_path(["models", i, "autoscaling", "owner"]),
                f"autoscaling.owner: aibrix needs AIBrix (the PodAutoscaler CRD and controller): {ask}, or use "
                f"owner: none",
            )


@rule
def dynamo_disaggregation(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        block = model.dynamo
        if block is None:
            continue
        base: list[str | int] = ["models", i, "dynamo"]
        set_fields = block.model_fields_set
        if block.backend == "trtllm" and model.revision:
            yield Problem(
                key_path(["models", i, "revision"]),
                "the TensorRT-LLM worker (dynamo.trtllm) takes no revision argument, so the pinned "
                "revision would be ignored; use backend vllm or sglang, or point model at a prepared "
                "local copy of that revision and drop revision",
            )
        if block.mode == "aggregated":
            for attr, key in (
                ("prefill_workers", "prefillWorkers"),
                ("decode_workers", "decodeWorkers"),
                ("prefill_revision", "prefillRevision"),
            ):
                if attr in set_fields:
                    yield Problem(
                        key_path([*base, key]),
                        f"{key} only applies to dynamo.mode: disaggregated; an aggregated graph runs "
                        f"`replicas` workers that do prefill and decode",
                    )
            continue
        if block.backend == "trtllm":
            yield Problem(
                key_path([*base, "backend"]),
                "disaggregated TensorRT-LLM needs a cache-transceiver engine configuration per role, "
                "which the platform does not generate; use backend vllm or sglang for a disaggregated "
                "graph, or mode: aggregated",
            )
        if not model.revision:
            yield Problem(
                key_path(["models", i, "revision"]),
                "disaggregated serving moves KV blocks from prefill to decode workers, which must load "
                "the same weights: pin the model revision (the Hugging Face commit)",
            )
        if block.prefill_revision is not None and block.prefill_revision != model.revision:
            yield Problem(
                key_path([*base, "prefillRevision"]),
                f"prefill workers would load revision {block.prefill_revision} and decode workers "
                f"{model.revision}; KV cache transfer needs the same model revision on both roles: "
                f"remove prefillRevision or make it equal to revision",
            )


# Dynamo 1.4's admission webhook reads the runtime version from the image tag (X.Y.Z, optionally v);
# another tag is refused unless the component sets runtimeVersionOverride, which the platform does not.
_DYNAMO_RUNTIME_TAG = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+$")


@rule
def dynamo_runtime_tags_name_the_version(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        tag = model.image.tag
        if model.engine == "dynamo" and tag is not None and not _DYNAMO_RUNTIME_TAG.match(tag):
            yield Problem(
                key_path(["models", i, "image", "tag"]),
                f"{tag!r}: Dynamo's admission webhook takes the runtime version from the image tag and refuses "
                f"a tag that is not X.Y.Z; tag the runtime image with its Dynamo version (e.g. 1.4.2) and pin "
                f"the build with image.digest",
            )


@rule
def ray_serve_bounds(config: StackConfig) -> Iterable[Problem]:
    """Ray Serve's replica bounds are `rayServe.minWorkers/maxWorkers` (its `autoscaling_config`);
    `autoscaling.minReplicas/maxReplicas` belong to an HPA or PodAutoscaler, which a RayService never
    has, so bounds written there would be silently ignored."""
    for i, model in enumerate(config.models):
        block = model.ray_serve
        if block is not None and block.min_workers > block.max_workers:
            yield Problem(
                key_path(["models", i, "rayServe", "minWorkers"]),
                f"minWorkers ({block.min_workers}) exceeds maxWorkers ({block.max_workers}); "
                f"the GPU worker group cannot satisfy both",
            )
        if model.engine != "ray-serve":
            continue
        for field, key, own in (
            ("min_replicas", "minReplicas", "minWorkers"),
            ("max_replicas", "maxReplicas", "maxWorkers"),
        ):
            if field in model.autoscaling.model_fields_set:
                yield Problem(
                    key_path(["models", i, "autoscaling", key]),
                    f"model {model.name}: Ray Serve scales a RayService itself, so autoscaling.{key} would be "
                    f"ignored; set its replica bound as rayServe.{own} and remove autoscaling.{key}",
                )


@rule
def litellm_providers(config: StackConfig) -> Iterable[Problem]:
    addon = config.addons.litellm
    base: list[str | int] = ["addons", "litellm"]
    if not addon.enabled:
        if addon.external_providers or addon.fallbacks:
            yield Problem(
                key_path(base),
                "externalProviders and fallbacks configure the LiteLLM proxy: set enabled: true or remove them",
            )
        return
    internal = {m.name for m in config.models if m.expose}
    external: dict[str, str] = {}
    for p, provider in enumerate(addon.external_providers):
        for m, name in enumerate(provider.models):
            if name in internal or name in external:
                yield Problem(
                    key_path([*base, "externalProviders", p, "models", m]),
                    f"model name {name!r} is already served "
                    f"{'in the cluster' if name in internal else 'by provider ' + external[name]}; "
                    f"LiteLLM model names must be unique",
                )
            external.setdefault(name, provider.name)
    known = internal | set(external)
    allowed = ", ".join(sorted(known)) or "(none)"
    for source, targets in addon.fallbacks.items():
        if source not in known:
            yield Problem(
                key_path([*base, "fallbacks", source]),
                f"{source!r} is not a model LiteLLM serves; known: {allowed}",
            )
        for target in targets:
            if target not in known:
                yield Problem(
                    key_path([*base, "fallbacks", source]),
                    f"fallback {target!r} is neither an exposed model of this stack nor a model of a "
                    f"provider listed in addons.litellm.externalProviders; data may only leave the "
                    f"cluster to listed providers (known: {allowed})",
                )
            elif target == source:
                yield Problem(key_path([*base, "fallbacks", source]), f"{source!r} cannot fall back to itself")


@rule
def litellm_route_is_its_own(config: StackConfig) -> Iterable[Problem]:
    """LiteLLM is routed under /litellm; a model of that name would claim the same path."""
    if not config.addons.litellm.enabled:
        return
    for i, model in enumerate(config.models):
        if model.name == "litellm" and model.expose:
            yield Problem(
                key_path(["models", i, "name"]),
                "the gateway routes /litellm to the LiteLLM proxy (addons.litellm); rename this model",
            )
