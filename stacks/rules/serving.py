"""Serving-platform rules: one scaler owner per workload, the add-ons a model's features need, and
LiteLLM's allowed providers. An engine's own serving refusals (Dynamo's graph, Ray Serve's bounds,
NIM's operator) are in its module."""

from __future__ import annotations

from collections.abc import Iterable

from .. import bedrock
from ..checks import rule
from ..config.addons import ExternalProvider
from ..errors import Problem, key_path
from ..regions import region
from ..resolved import ResolvedStack

SCALER_NAMES = {
    "hpa": "a HorizontalPodAutoscaler (autoscaling.owner: hpa)",
    "keda": "a KEDA ScaledObject (autoscaling.owner: keda)",
    "aibrix": "an AIBrix PodAutoscaler (autoscaling.owner: aibrix)",
    "dynamo-planner": "the Dynamo planner (autoscaling.owner: dynamo-planner)",
}
PLANNED_KIND = "DynamoGraphDeployment"


@rule
def one_scaler_owner(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        owner = entry.config.autoscaling.owner
        where = entry.key("autoscaling", "owner")
        if owner == "dynamo-planner" and entry.made.workload[1] != PLANNED_KIND:
            yield Problem(
                where, f"the Dynamo planner only scales engine: dynamo models (engine is {entry.config.engine})"
            )
            continue
        built_in = entry.facts.autoscalers.built_in
        # KEDA scales an operator's graph through its scaling adapters (stacks/rules/scaling.py refuses what
        # it cannot scale); the planner is its engine's own refusal.
        if owner in ("none", "keda", "dynamo-planner") or built_in is None:
            continue
        yield Problem(
            where,
            f"{entry.name} would have two scaler owners: {SCALER_NAMES.get(owner, f'autoscaling.owner: {owner}')} "
            f"and {built_in}; set autoscaling.owner: none and let {built_in.split(' (')[0]} scale it",
        )


@rule
def an_hpa_has_metrics_to_read(stack: ResolvedStack) -> Iterable[Problem]:
    """An HPA asks custom.metrics.k8s.io for the engine's gauge; prometheus-adapter answers it from
    Prometheus. Without them the HPA never scales (FailedGetPodsMetric). A workloads stack relies on
    its platform's (stacks/rules/workloads.py checks the platform's export)."""
    if not stack.owns_platform or stack.platform.custom_metrics:
        return
    mon = stack.platform.addons.monitoring
    fix = (
        "set addons.monitoring.prometheusUrl to that Prometheus's in-cluster URL so prometheus-adapter is "
        "installed for it"
        if mon.enabled
        else "set addons.monitoring.enabled: true"
    )
    for entry in stack.entries:
        if entry.config.autoscaling.owner == "hpa":
            yield Problem(
                entry.key("autoscaling", "owner"),
                f"an HPA reads {entry.config.engine}'s metrics from Prometheus through prometheus-adapter, which "
                f"this stack does not run; {fix}, or use autoscaling.owner: none (or aibrix, which scrapes pods "
                f"itself)",
            )


@rule
def serving_addons_enabled(stack: ResolvedStack) -> Iterable[Problem]:
    """LoRA adapters on vLLM and the AIBrix autoscaler need AIBrix (Ray Serve loads its adapters itself);
    a workloads stack runs on its platform's (its
    exports), unknown until the preview when the platform cannot be read here."""
    aibrix = not stack.platform.known or stack.platform.addons.aibrix.enabled
    for entry in stack.entries:
        model = entry.config
        if entry.adapter_loader == "aibrix" and not aibrix:
            yield Problem(
                entry.key("adapters"),
                f"LoRA adapters are AIBrix ModelAdapters, and AIBrix is not installed: {stack.ask_for('aibrix')}, "
                f"or remove adapters",
            )
        if model.adapters and entry.adapter_loader is None:
            yield Problem(
                entry.key("lora" if model.lora is not None else "adapters"),
                f"engine {model.engine} cannot take LoRA adapters here: vLLM and SGLang load them themselves "
                f"(models[].lora), AIBrix loads them into vLLM at runtime, Ray Serve LLM from one bucket prefix; use "
                f"engine: vllm or sglang with lora, or remove adapters",
            )
        if model.autoscaling.owner == "aibrix" and not aibrix:
            yield Problem(
                entry.key("autoscaling", "owner"),
                f"autoscaling.owner: aibrix needs AIBrix (the PodAutoscaler CRD and controller): "
                f"{stack.ask_for('aibrix')}, or use owner: none",
            )


@rule
def litellm_providers(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
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


def _provider_problems(provider: ExternalProvider, base: list[str | int]) -> Iterable[Problem]:
    """A provider's credentials and, for Bedrock, its Region and model ids (stacks/bedrock.py)."""
    if provider.name != bedrock.PROVIDER:
        if provider.api_key_secret is None:
            yield Problem(
                key_path([*base, "apiKeySecret"]),
                f"provider {provider.name} needs its API key: name the Secret (key api-key) in namespace litellm",
            )
        if provider.region is not None:
            yield Problem(
                key_path([*base, "region"]),
                "region is Bedrock's (aws_region_name); other providers take no region: remove it",
            )
        return
    if provider.region is None:
        yield Problem(
            key_path([*base, "region"]),
            "a Bedrock provider needs the Region the proxy calls it in (LiteLLM's aws_region_name), e.g. us-west-2",
        )
    elif region(provider.region) is None:
        yield Problem(
            key_path([*base, "region"]),
            f"{provider.region!r} is not an AWS Region (stacks/data/regions.json); e.g. us-west-2, us-east-1",
        )
    for k, model in enumerate(provider.models):
        why = bedrock.model_id_problem(model)
        if why is None and provider.region is not None and region(provider.region) is not None:
            why = bedrock.region_problem(model, provider.region)
        if why is not None:
            yield Problem(key_path([*base, "models", k]), why)


@rule
def litellm_provider_credentials(stack: ResolvedStack) -> Iterable[Problem]:
    """Each external provider can be called as written: a key for the key-based providers; for Bedrock
    a Region it has and model ids of Bedrock's shape (its API key is optional: without one the proxy
    calls Bedrock as its own Pod Identity role, granted exactly those models)."""
    addon = stack.config.addons.litellm
    if not addon.enabled:
        return
    for p, provider in enumerate(addon.external_providers):
        yield from _provider_problems(provider, ["addons", "litellm", "externalProviders", p])


@rule
def litellm_route_is_its_own(stack: ResolvedStack) -> Iterable[Problem]:
    """LiteLLM is routed under /litellm; a model of that name would claim the same path."""
    if not stack.config.addons.litellm.enabled:
        return
    for entry in stack.entries:
        if entry.name == "litellm" and entry.config.expose:
            yield Problem(
                entry.key("name"),
                "the gateway routes /litellm to the LiteLLM proxy (addons.litellm); rename this model",
            )
