"""Tenancy rules: the teams a platform declares, and a team's stack within its declaration.

A platform's `teams` are disjoint: each name once, each namespace of one team only, none the platform's
or Kubernetes' own, and none the namespace of a platform model. A team's workloads stack names a team
its platform declares and writes only into that team's namespaces (the platform creates them, with
everything cluster-scoped: components/tenancy.py). A model's `consumers` are teams the
platform declares (or `platform`, its own clients), and a team's LiteLLM access names models the proxy
serves. A platform model may not take a team namespace's name: team models' paths begin with it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config.teams import PLATFORM_CLIENTS
from ..errors import Problem, duplicates, key_path
from ..names import reserved_namespace
from ..resolve.access import litellm_models
from ..resolved import ResolvedStack


def _declared(stack: ResolvedStack) -> str:
    names = [t.name for t in stack.platform.teams]
    return ", ".join(names) if names else "none"


@rule
def teams_are_disjoint(stack: ResolvedStack) -> Iterable[Problem]:
    """Each team once, each namespace of one team, no namespace the platform or Kubernetes owns."""
    teams = stack.config.teams
    yield from duplicates(teams, ["teams"], "team", lambda t: t.name, "name")
    owner: dict[str, int] = {}
    for i, team in enumerate(teams):
        for j, namespace in enumerate(team.all_namespaces):
            where = key_path(["teams", i, "namespaces", j] if team.namespaces else ["teams", i, "name"])
            why = reserved_namespace(namespace, team=True)
            if why is not None:
                yield Problem(where, f"{why}; give the team a namespace of its own")
            elif namespace in owner and owner[namespace] != i:
                other = teams[owner[namespace]].name
                yield Problem(
                    where,
                    f"{namespace} is already team {other}'s namespace: a namespace belongs to one team, whose "
                    f"quota, keys and deploy rights are its own; give each team its own",
                )
            owner.setdefault(namespace, i)


@rule
def platform_models_stay_out_of_team_namespaces(stack: ResolvedStack) -> Iterable[Problem]:
    """A platform (all-in-one) stack's model is the platform's: not in a team's namespace, and not named
    like one (a team's model is routed at `/<namespace>/<name>`)."""
    if stack.team is not None:
        return
    by_namespace = {n: t.name for t in stack.platform.teams for n in t.namespaces}
    for entry in stack.entries:
        team = by_namespace.get(entry.namespace)
        if team is not None:
            yield Problem(
                entry.key("namespace"),
                f"{entry.namespace} is team {team}'s namespace; a platform model runs in a platform namespace "
                f"(default: inference), and team {team} deploys its own models from its workloads stack",
            )
        team = by_namespace.get(entry.name)
        if team is not None and entry.config.expose:
            yield Problem(
                entry.key("name"),
                f"{entry.name} is team {team}'s namespace, the first segment of its models' paths "
                f"(/{entry.name}/<model>/v1); give the platform model another name",
            )


@rule
def the_team_is_declared_by_its_platform(stack: ResolvedStack) -> Iterable[Problem]:
    if stack.team is None or not stack.platform.known:
        return
    if stack.platform.team(stack.team.name) is None:
        yield Problem(
            key_path(["stack", "team"]),
            f"{stack.team.name} is not a team {stack.platform.where} declares (declared: {_declared(stack)}); "
            f"ask the platform team to add it to teams (its namespaces, deployers and quota), or name a declared "
            f"team",
        )


@rule
def a_team_stack_writes_only_into_its_teams_namespaces(stack: ResolvedStack) -> Iterable[Problem]:
    """Every object of a team's stack goes into one of the team's namespaces, the only ones its deploy
    identity may write (components/team_access.py): each namespace the stack writes to
    (ResolvedStack.written_namespaces, which the tests hold every team render to) is named by the key
    that puts an object there."""
    team = stack.team
    if team is None:
        return
    for namespace, key in stack.written_namespaces():
        if namespace not in team.namespaces:
            yield Problem(
                key,
                f"{namespace} is not a namespace of team {team.name} ({', '.join(team.namespaces)}): its deploy "
                f"identity may write only those; remove namespace (it defaults to {team.home}) or name one of them",
            )


@rule
def consumers_are_declared_teams(stack: ResolvedStack) -> Iterable[Problem]:
    if not stack.platform.known:
        return
    for entry in stack.entries:
        yield from duplicates(entry.config.consumers, ["models", entry.index, "consumers"], "consumer")
        for j, consumer in enumerate(entry.config.consumers):
            if consumer != PLATFORM_CLIENTS and stack.platform.team(consumer) is None:
                yield Problem(
                    entry.key("consumers", j),
                    f"{consumer} is no team {stack.platform.where} declares (declared: {_declared(stack)}); name a "
                    f"declared team, or {PLATFORM_CLIENTS} for the platform team's own clients",
                )


@rule
def team_litellm_access_names_what_the_proxy_serves(stack: ResolvedStack) -> Iterable[Problem]:
    litellm = stack.config.addons.litellm
    served = set(litellm_models(stack.config.addons, stack.models))
    for i, team in enumerate(stack.config.teams):
        if team.litellm is None:
            continue
        if not litellm.enabled:
            yield Problem(
                key_path(["teams", i, "litellm"]),
                "the LiteLLM proxy is off (addons.litellm.enabled); enable it or remove the team's litellm access",
            )
            continue
        for j, model in enumerate(team.litellm.models):
            if model not in served:
                yield Problem(
                    key_path(["teams", i, "litellm", "models", j]),
                    f"{model} is no model the proxy serves (external providers' models and this stack's exposed "
                    f"models: {', '.join(sorted(served)) or 'none'})",
                )


@rule
def team_litellm_keys_need_the_proxys_database(stack: ResolvedStack) -> Iterable[Problem]:
    """A team's LiteLLM access is a virtual key of its own, which LiteLLM keeps in its database only."""
    litellm = stack.config.addons.litellm
    teams = [t.name for t in stack.config.teams if t.litellm is not None]
    if teams and litellm.enabled and litellm.database_url_secret is None:
        yield Problem(
            key_path(["addons", "litellm", "databaseUrlSecret"]),
            f"teams {', '.join(teams)} call the proxy with virtual keys of their own (scoped to their models and "
            f"budget), which LiteLLM keeps only in its database: name the Secret of its PostgreSQL URL (key "
            f"database-url), or remove the teams' litellm access",
        )


@warning
def litellm_without_a_database_hands_out_its_master_key(stack: ResolvedStack) -> Iterable[Problem]:
    """Without the proxy's database there are no virtual keys: its clients need the master key."""
    litellm = stack.config.addons.litellm
    if stack.owns_platform and litellm.enabled and litellm.database_url_secret is None:
        yield Problem(
            key_path(["addons", "litellm", "databaseUrlSecret"]),
            "without a database the proxy keeps no virtual keys, so its clients call it with the master key, "
            "which also manages it; name the Secret of a PostgreSQL URL (key database-url) and the platform "
            "keeps a virtual key for its clients (Secret litellm-key beside the gateway's keys) instead",
        )


@rule
def team_routes_attach_from_the_teams_namespaces(stack: ResolvedStack) -> Iterable[Problem]:
    """A team's route lives in the team's namespace: the platform's listener must admit it from there."""
    parent = stack.platform.gateway_parent
    if stack.team is None or not stack.platform.known or parent is None or parent.shared:
        return
    for entry in stack.entries:
        if entry.config.expose:
            yield Problem(
                entry.key("expose"),
                f"the listener {stack.platform.where} exports ({parent.namespace}/{parent.name}) admits routes only "
                f"from its own namespace (AIBrix's Gateway, or a platform older than the team-namespace routes), and "
                f"a team's objects stay in its own namespaces; set expose: false, or ask the platform team for the "
                f"front door's own Gateway (gateway.enabled, addons.aibrix off)",
            )
