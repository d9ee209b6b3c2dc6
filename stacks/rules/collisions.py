"""Two keys that derive one identifier are refused, so no object replaces another and no credential
is read in place of another. Each derivation is the program's own:

- a LiteLLM provider's key variable, `stacks/naming.py provider_env` (`my-prov` and
  `my_prov` both give MY_PROV_API_KEY, so one provider would be sent the other's key);
- the Service each model's engine reaches it by, its engine's `ModelFacts.service` (a vLLM model named
  `x-frontend` and a Dynamo graph `x`, whose Frontend Service is `x-frontend`; a Ray Serve model `x`
  also gets KubeRay's `x-head-svc`, GenerateHeadServiceName), per namespace;
- the names clients ask for: a LoRA adapter is asked for by its name like a model, so an adapter
  may not be named like a model or another model's adapter;
- the objects at the gateway: on a listener that admits only its own namespace's routes (AIBrix's), each
  exposed model gets an HTTPRoute `<name>` and, with auth, a SecurityPolicy `<name>-auth` in the
  Gateway's namespace, beside the platform's own redirect route `https-redirect` and the listener's
  SecurityPolicy `<gateway name>-auth` (components/gateway/routing.py). On the front door's own
  Gateway they live in the model's namespace, where no platform object is.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..errors import Problem, key_path
from ..naming import provider_env
from ..resolved import ModelEntry, ResolvedStack

REDIRECT_ROUTE = "https-redirect"


@rule
def provider_key_variables_are_distinct(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
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


def services(entry: ModelEntry) -> list[str]:
    """The Services that exist for the model: the one clients reach it by and those its engine's
    operator creates beside it (KubeRay's head Service, Dynamo's per-component Services)."""
    made = entry.made
    return [made.service, *(n.name for n in made.names if n.what.startswith("Service") and n.name != made.service)]


@rule
def model_services_are_distinct(stack: ResolvedStack) -> Iterable[Problem]:
    owner: dict[tuple[str, str], ModelEntry] = {}
    for entry in stack.entries:
        for name in services(entry):
            slot = (entry.namespace, name)
            other = owner.setdefault(slot, entry)
            if other.name != entry.name:
                yield Problem(
                    entry.key("name"),
                    f"{entry.name} ({entry.config.engine}) needs a Service {name} in namespace {slot[0]}, which "
                    f"models[{other.index}] ({other.name}, {other.config.engine}) also makes; rename one of them",
                )


@rule
def adapters_are_named_apart_from_models(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
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


@rule
def routes_leave_the_gateway_its_names(stack: ResolvedStack) -> Iterable[Problem]:
    parent = stack.platform.gateway_parent
    if parent is None or parent.shared:
        return
    auth = stack.platform.gateway.auth != "none"
    taken: dict[tuple[str, str], str] = {}
    if parent.own:
        taken[("HTTPRoute", REDIRECT_ROUTE)] = "the HTTP listener's redirect to https"
    if auth:
        taken[("SecurityPolicy", f"{parent.name}-auth")] = "the listener's own SecurityPolicy"
    for entry in stack.entries:
        if not entry.config.expose:
            continue
        mine = [("HTTPRoute", entry.name)] + ([("SecurityPolicy", f"{entry.name}-auth")] if auth else [])
        for kind, name in mine:
            if (kind, name) in taken:
                yield Problem(
                    entry.key("name"),
                    f"exposing {entry.name} makes a {kind} {name} in namespace {parent.namespace}, the name of "
                    f"{taken[(kind, name)]}; rename the model",
                )
