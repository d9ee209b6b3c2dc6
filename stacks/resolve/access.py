"""Who may call what, resolved: each model's callers and the key Secrets its route admits, and for a
stack that owns the platform's listener, everything the front door admits beyond one model's route
(`Access`): the listener's backstop, the LiteLLM proxy's route, the ReferenceGrants that let a route's
SecurityPolicy name a key Secret in another namespace, the namespaces whose routes may reach the KEDA
HTTP add-on's interceptor, and the LiteLLM virtual keys the platform keeps.

Where a route lives: beside its model on the front door's own Gateway (its listener admits every
namespace labelled `TEAM_LABEL`), in the Gateway's namespace on AIBrix's (`GatewayParent.route_namespace`).
The platform sees no team stack, so it grants for every namespace of its teams; which keys a route admits
is decided by that route's own SecurityPolicy, from its model's owner and consumers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..config.addons import AddonsSection
from ..config.teams import PLATFORM_CLIENTS
from ..resolved import (
    ACCEPTANCE_CALLER,
    BENCHMARK_CALLER,
    GATEWAY_NAMESPACE,
    LITELLM_KEY_SECRET,
    LITELLM_NAMESPACE,
    Access,
    GatewayParent,
    KeyGrant,
    KeySecret,
    ModelEntry,
    PlatformView,
    ResolvedModel,
    Team,
    VirtualKey,
)


def platform_keys(view: PlatformView) -> KeySecret:
    """The platform's own clients' keys: `gateway.apiKeysSecret` beside the listener they call (the
    front door's Gateway in inference-gateway, or AIBrix's in aibrix-system)."""
    namespace = view.gateway_parent.namespace if view.gateway_parent is not None else GATEWAY_NAMESPACE
    return KeySecret(PLATFORM_CLIENTS, namespace, view.gateway.api_keys_secret)


def team_keys(team: Team) -> KeySecret:
    return KeySecret(team.name, team.home, team.api_keys_secret)


def callers(entry: ModelEntry) -> tuple[str, ...]:
    """Whose clients the model's route admits: its owner, then the consumers it names, each once."""
    return tuple(dict.fromkeys([entry.owner, *entry.config.consumers]))


def caller_keys(names: Iterable[str], view: PlatformView) -> list[KeySecret]:
    """The key Secrets of these callers: the platform's clients' and each declared team's (a name the
    platform does not declare admits nothing, and is refused by the rules)."""
    found = []
    for caller in names:
        if caller == PLATFORM_CLIENTS:
            found.append(platform_keys(view))
        elif (team := view.team(caller)) is not None:
            found.append(team_keys(team))
    return found


def key_secrets(entry: ModelEntry, view: PlatformView) -> tuple[KeySecret, ...]:
    """The Secrets of gateway API keys the model's route admits: each caller's, then the benchmark's own
    key (a Secret in the model's namespace), which calls this model and no other."""
    found = caller_keys(callers(entry), view)
    bench = entry.config.benchmark
    if bench is not None:
        found.append(KeySecret(BENCHMARK_CALLER, entry.namespace, bench.api_key_secret))
    accept = entry.acceptance
    if accept is not None and (bench is None or accept.key_secret != bench.api_key_secret):
        # The acceptance Job's own key (given, or minted by the platform), likewise this model's only.
        found.append(KeySecret(ACCEPTANCE_CALLER, accept.admitted_namespace, accept.key_secret))
    return tuple(found)


def litellm_models(addons: AddonsSection, models: Sequence[ResolvedModel]) -> tuple[str, ...]:
    """The model names the LiteLLM proxy serves: the stack's exposed models (its own, the platform's)
    and every listed external provider's, in its router config's order."""
    own = [m.name for m in models if m.expose and m.owner == PLATFORM_CLIENTS]
    external = [name for p in addons.litellm.external_providers for name in p.models]
    return with_adapters(tuple(dict.fromkeys([*own, *external])), models)


def with_adapters(names: Sequence[str], models: Sequence[ResolvedModel]) -> tuple[str, ...]:
    """LiteLLM model names with, after each of the stack's exposed models, the adapters the proxy lists at
    it (components/serving/litellm.py adapter_entries): a virtual key scoped to a model may call its
    adapters, as the model's consumers may on its route."""
    adapters = {m.name: m.proxied_adapter_names for m in models if m.expose}
    return tuple(dict.fromkeys(n for name in names for n in (name, *adapters.get(name, ()))))


def litellm_callers(view: PlatformView) -> tuple[str, ...]:
    """Whose clients the proxy's route admits: the platform's own and every team with `litellm` access."""
    return (PLATFORM_CLIENTS, *(t.name for t in view.teams if t.litellm_models))


def _platform_route_namespaces(parent: GatewayParent, models: Sequence[ResolvedModel], litellm: bool) -> set[str]:
    """Where the routes of this (platform-owning) stack live: beside each exposed model, and the proxy's."""
    found = {parent.route_namespace(m.namespace) for m in models if m.expose}
    if litellm:
        found.add(parent.route_namespace(LITELLM_NAMESPACE))
    return found


def key_grants(
    view: PlatformView, parent: GatewayParent, models: Sequence[ResolvedModel], litellm: bool
) -> tuple[KeyGrant, ...]:
    """One grant per key Secret some route outside its namespace may name: the platform's clients'
    Secret, named by the platform's routes and by any team's (a team model may name `platform` as a
    consumer); each team's, named by any other team's routes (consumers are the owning team's to
    declare, in a stack the platform does not see), by the platform's models that name the team, and by
    the proxy's route when the team has LiteLLM access."""
    teams = {n for t in view.teams for n in t.namespaces} if parent.shared else set()
    mine = _platform_route_namespaces(parent, models, litellm)
    grants = [(platform_keys(view), teams | mine)]
    for team in view.teams:
        named_by = {parent.route_namespace(m.namespace) for m in models if m.expose and team.name in m.callers}
        if litellm and team.litellm_models:
            named_by.add(parent.route_namespace(LITELLM_NAMESPACE))
        grants.append((team_keys(team), teams | named_by))
    return tuple(
        KeyGrant(keys, tuple(sorted(sources - {keys.namespace})))
        for keys, sources in grants
        if sources - {keys.namespace}
    )


def interceptor_routes_from(
    parent: GatewayParent, view: PlatformView, models: Sequence[ResolvedModel]
) -> tuple[str, ...]:
    """The namespaces whose HTTPRoutes may send to the KEDA HTTP add-on's interceptor: every team's (a
    team model may scale to zero) and those of the platform's own models that do."""
    teams = {n for t in view.teams for n in t.namespaces} if parent.shared else set()
    mine = {parent.route_namespace(m.namespace) for m in models if m.expose and m.wake is not None}
    return tuple(sorted(teams | mine))


def virtual_keys(view: PlatformView, models: Sequence[ResolvedModel]) -> tuple[VirtualKey, ...]:
    """The LiteLLM virtual keys the platform keeps (only with the proxy's database, which virtual keys
    live in): one per team with `litellm` access, scoped to its models and budget, in its home
    namespace; and one for the platform's own clients, scoped to every model the proxy serves, beside
    their gateway keys. No client holds the master key."""
    addons = view.addons
    if not (addons.litellm.enabled and addons.litellm.database_url_secret):
        return ()
    keys = [
        VirtualKey(
            caller=t.name,
            namespace=t.home,
            secret=LITELLM_KEY_SECRET,
            models=with_adapters(t.litellm_models, models),
            max_budget=t.litellm_max_budget,
            budget_duration=t.litellm_budget_duration,
            tpm_limit=t.litellm_tpm_limit,
            rpm_limit=t.litellm_rpm_limit,
        )
        for t in view.teams
        if t.litellm_models
    ]
    if view.gateway_parent is not None:
        served = litellm_models(addons, models)
        keys.insert(0, VirtualKey(PLATFORM_CLIENTS, platform_keys(view).namespace, LITELLM_KEY_SECRET, served))
    return tuple(keys)


def front_door_access(view: PlatformView, parent: GatewayParent, models: Sequence[ResolvedModel]) -> Access:
    """What a stack that owns the platform's listener admits beyond its models' own routes."""
    litellm = view.addons.litellm.enabled and view.gateway_parent is not None
    litellm_route = litellm_callers(view) if litellm else ()
    return Access(
        platform_keys=platform_keys(view),
        litellm_callers=litellm_route,
        litellm_key_secrets=tuple(caller_keys(litellm_route, view)),
        # Only API keys are Secrets a policy names; JWTs are checked against the issuer's keys.
        key_grants=key_grants(view, parent, models, litellm) if view.gateway.auth == "apiKey" else (),
        interceptor_routes_from=interceptor_routes_from(parent, view, models) if view.addons.keda_http.enabled else (),
        virtual_keys=virtual_keys(view, models),
    )
