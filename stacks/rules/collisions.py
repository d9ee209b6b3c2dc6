"""Two keys that derive one identifier are refused, so no object replaces another and no credential
is read in place of another. Each derivation is the program's own:

- a LiteLLM provider's key variable, `components/serving/litellm.py provider_env` (`my-prov` and
  `my_prov` both give MY_PROV_API_KEY, so one provider would be sent the other's key);
- the Service each model's engine reaches it by, its engine module's `service()` (a vLLM model named
  `x-frontend` and a Dynamo graph `x`, whose Frontend Service is `x-frontend`; a Ray Serve model `x`
  also gets KubeRay's `x-head-svc`, GenerateHeadServiceName), per namespace;
- the names clients ask for: a LoRA adapter is asked for by its name like a model, so an adapter
  may not be named like a model or another model's adapter;
- the objects at the gateway: each exposed model gets an HTTPRoute `<name>` and, with auth, a
  SecurityPolicy `<name>-auth` in the Gateway's namespace, beside the platform's own redirect route
  `https-redirect` and the listener's SecurityPolicy `<gateway name>-auth`
  (components/gateway/routing.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES
from components.serving.litellm import provider_env

from ..checks import Lookup, platform_rule, rule
from ..config import ModelSection, StackConfig
from ..config.addons import AddonsSection
from ..errors import Problem, key_path
from ..resolved import DEFAULT_NAMESPACE
from .context import platform_of

REDIRECT_ROUTE = "https-redirect"


@rule
def provider_key_variables_are_distinct(config: StackConfig) -> Iterable[Problem]:
    providers = config.addons.litellm.external_providers
    seen: dict[str, int] = {}
    for j, provider in enumerate(providers):
        env = provider_env(provider.name)
        if env in seen:
            first = providers[seen[env]].name
            yield Problem(
                key_path(["addons", "litellm", "externalProviders", j, "name"]),
                f"{provider.name!r} and externalProviders[{seen[env]}] ({first!r}) both read their key from "
                f"{env} (the proxy upper-cases a provider's name and turns - into _), so one provider would be "
                f"sent the other's key; give providers names that differ in more than case, - and _",
            )
        seen.setdefault(env, j)


def namespace(config: StackConfig, model: ModelSection) -> str:
    return model.namespace or config.stack.team or DEFAULT_NAMESPACE


def services(model: ModelSection) -> list[str]:
    """The Services that exist for the model: the one clients reach it by and those its engine's
    operator creates beside it (KubeRay's head Service, Dynamo's per-component Services)."""
    made = ENGINES[model.engine].model_facts(model, AddonsSection())
    return [made.service, *(n.name for n in made.names if n.what.startswith("Service") and n.name != made.service)]


@rule
def model_services_are_distinct(config: StackConfig) -> Iterable[Problem]:
    owner: dict[tuple[str, str], int] = {}
    for i, model in enumerate(config.models):
        for name in services(model):
            slot = (namespace(config, model), name)
            if slot in owner and config.models[owner[slot]].name != model.name:
                other = config.models[owner[slot]]
                yield Problem(
                    key_path(["models", i, "name"]),
                    f"{model.name} ({model.engine}) needs a Service {name} in namespace {slot[0]}, which "
                    f"models[{owner[slot]}] ({other.name}, {other.engine}) also makes; rename one of them",
                )
            owner.setdefault(slot, i)


@rule
def adapters_are_named_apart_from_models(config: StackConfig) -> Iterable[Problem]:
    models = {m.name: i for i, m in enumerate(config.models)}
    adapters: dict[str, tuple[int, int]] = {}
    for i, model in enumerate(config.models):
        for k, adapter in enumerate(model.adapters):
            where = key_path(["models", i, "adapters", k, "name"])
            if adapter.name in models:
                yield Problem(
                    where,
                    f"adapter {adapter.name!r} has the name of models[{models[adapter.name]}]; clients ask for "
                    f"adapters and models by name, so one would shadow the other: rename the adapter",
                )
            elif adapter.name in adapters and adapters[adapter.name][0] != i:
                mi, mk = adapters[adapter.name]
                yield Problem(
                    where,
                    f"adapter {adapter.name!r} is also models[{mi}].adapters[{mk}]; clients ask for an adapter "
                    f"by name, so the two would shadow each other: rename one",
                )
            adapters.setdefault(adapter.name, (i, k))


@platform_rule
def routes_leave_the_gateway_its_names(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    platform = platform_of(config, lookup)
    if platform is None or platform.parent is None:
        return
    parent = platform.parent
    taken: dict[tuple[str, str], str] = {}
    if parent.own:
        taken[("HTTPRoute", REDIRECT_ROUTE)] = "the HTTP listener's redirect to https"
    if platform.gateway.auth != "none":
        taken[("SecurityPolicy", f"{parent.name}-auth")] = "the listener's own SecurityPolicy"
    for i, model in enumerate(config.models):
        if not model.expose:
            continue
        mine = [("HTTPRoute", model.name)]
        if platform.gateway.auth != "none":
            mine.append(("SecurityPolicy", f"{model.name}-auth"))
        for kind, name in mine:
            if (kind, name) in taken:
                yield Problem(
                    key_path(["models", i, "name"]),
                    f"exposing {model.name} makes a {kind} {name} in namespace {parent.namespace}, the name of "
                    f"{taken[(kind, name)]}; rename the model",
                )
