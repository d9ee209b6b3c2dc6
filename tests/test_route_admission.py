"""Who each route admits, enumerated over every rendered route of every shipped stack (the two team
stacks against the platform example): each route's SecurityPolicy admits exactly its model's callers'
credentials, so a team's key reaches exactly the team's own models and those naming it as a consumer, a
benchmark's key only its model, LiteLLM's route only the platform's clients and the teams with LiteLLM
access, and the listener's backstop only the platform's clients. Every key Secret a policy names in
another namespace is covered by a ReferenceGrant the platform renders.

The expectations are read from the stack files themselves (owner, namespaces, consumers, benchmark,
the platform's teams), not from the resolver the builders use, so a resolver that admitted the wrong
keys would fail here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from stacks.resolved import GATEWAY_NAMESPACE, MODEL_LABEL
from tests.conftest import ALL_STACKS, EXAMPLES_DIR, rendered_stack, sections_of, stack_manifests

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
DEFAULT_KEYS = "inference-api-keys"
Secret = tuple[str, str]  # (namespace, name)


@dataclass
class Expected:
    """What the stack file says each route admits: by route (namespace of the model, name), the callers
    and the key Secrets; the team key Secrets by team; who may call the LiteLLM proxy."""

    auth: str
    team_claim: str
    platform_keys: Secret
    team_keys: dict[str, Secret]
    callers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    keys: dict[str, set[Secret]] = field(default_factory=dict)
    benchmarks: dict[str, Secret] = field(default_factory=dict)
    litellm: tuple[str, ...] = ()


def _platform_of(path: Path) -> tuple[dict[str, Any], str | None]:
    sections = sections_of(path)
    if sections["stack"]["role"] == "workloads":
        return sections_of(PLATFORM), sections["stack"]["team"]
    return sections, None


def _home(team: dict[str, Any]) -> str:
    return str((team.get("namespaces") or [team["name"]])[0])


def expected(path: Path) -> Expected:
    sections = sections_of(path)
    platform, team = _platform_of(path)
    gateway = platform.get("gateway", {})
    aibrix = platform.get("addons", {}).get("aibrix", {}).get("enabled", False)
    teams = {t["name"]: t for t in platform.get("teams", [])}
    out = Expected(
        auth=gateway.get("auth", "apiKey"),
        team_claim=(gateway.get("jwt") or {}).get("teamClaim", "team"),
        platform_keys=("aibrix-system" if aibrix else GATEWAY_NAMESPACE, gateway.get("apiKeysSecret", DEFAULT_KEYS)),
        team_keys={n: (_home(t), t.get("apiKeysSecret", DEFAULT_KEYS)) for n, t in teams.items()},
    )
    key_of = {"platform": out.platform_keys, **out.team_keys}
    for model in sections.get("models", []):
        if not model.get("expose", True):
            continue
        owner = team or "platform"
        namespace = model.get("namespace") or (_home(teams[team]) if team else "inference")
        callers = tuple(dict.fromkeys([owner, *model.get("consumers", [])]))
        route = f"{namespace}/{model['name']}"
        out.callers[route] = callers
        out.keys[route] = {key_of[c] for c in callers}
        if "benchmark" in model:
            bench = (namespace, model["benchmark"]["apiKeySecret"])
            out.benchmarks[route] = bench
            out.keys[route].add(bench)
        accept = model.get("acceptance", {})
        if accept is not False and (accept is True or accept.get("enabled", True)):
            # Every exposed model's acceptance check (unset: on): its own key, else the benchmark's (already
            # admitted), else with API keys the one the platform mints for it, `<model>-acceptance-key`.
            given = {} if accept is True else accept
            own = given.get("apiKeySecret") or model.get("benchmark", {}).get("apiKeySecret")
            if own is not None:
                out.keys[route].add((namespace, own))
            elif out.auth == "apiKey":
                # Kept where the route is (AIBrix's Gateway namespace on AIBrix), so no grant is needed.
                out.keys[route].add(("aibrix-system" if aibrix else namespace, f"{model['name']}-acceptance-key"))
    if platform.get("addons", {}).get("litellm", {}).get("enabled") and team is None:
        out.litellm = ("platform", *(n for n, t in teams.items() if t.get("litellm")))
    return out


@dataclass(frozen=True)
class Admitted:
    """What one rendered route's SecurityPolicy admits: key Secrets (namespace, name) or JWT team claim values."""

    route: str  # <model namespace>/<name>, or litellm
    policy: dict[str, Any]
    secrets: frozenset[Secret]
    claims: frozenset[str]


def _model_of(route: dict[str, Any]) -> str:
    """The route's model as `<namespace>/<name>`: the namespace of the Service (or interceptor-held
    model) it serves, read from its first rule's path prefix when the route sits in the Gateway's."""
    name = route["metadata"]["name"]
    prefix = route["spec"]["rules"][0]["matches"][0]["path"]["value"]
    parts = prefix.strip("/").split("/")
    if len(parts) > 3 and parts[1] == name:  # /<namespace>/<name>/v1/...: a team's model
        return f"{parts[0]}/{name}"
    backend = route["spec"]["rules"][0]["backendRefs"][0]
    if backend["name"] == name or backend["name"].startswith(name):
        return f"{backend['namespace']}/{name}"
    return f"{route['metadata']['namespace']}/{name}"  # through the interceptor: the route is beside its model


def admitted(objs: list[dict[str, Any]]) -> dict[str, Admitted]:
    policies = {
        (p["metadata"]["namespace"], t["name"]): p
        for p in objs
        if p["kind"] == "SecurityPolicy"
        for t in p["spec"]["targetRefs"]
        if t["kind"] == "HTTPRoute"
    }
    out = {}
    for route in (o for o in objs if o["kind"] == "HTTPRoute" and MODEL_LABEL in o["metadata"]["labels"]):
        ns, name = route["metadata"]["namespace"], route["metadata"]["name"]
        policy = policies[(ns, name)]
        key = "litellm" if name == "litellm" else _model_of(route)
        out[key] = Admitted(key, policy, secrets_of(policy), claims_of(policy))
    return out


def secrets_of(policy: dict[str, Any]) -> frozenset[Secret]:
    ns = policy["metadata"]["namespace"]
    refs = (policy["spec"].get("apiKeyAuth") or {}).get("credentialRefs", [])
    return frozenset((r.get("namespace", ns), r["name"]) for r in refs)


def claims_of(policy: dict[str, Any]) -> frozenset[str]:
    authz = policy["spec"].get("authorization")
    if authz is None:
        return frozenset()
    assert authz["defaultAction"] == "Deny", "a token of no listed team is refused"
    return frozenset(
        v
        for rule in authz["rules"]
        if rule["action"] == "Allow"
        for claim in rule["principal"]["jwt"]["claims"]
        for v in claim["values"]
    )


AUTHENTICATED = [p for p in ALL_STACKS if expected(p).auth != "none"]


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_every_route_admits_exactly_its_models_callers(path):
    want = expected(path)
    got = admitted(stack_manifests(path))
    models = {k: v for k, v in got.items() if k != "litellm"}
    assert set(models) == set(want.callers), "one route per exposed model, each found"
    for route, found in models.items():
        if want.auth == "apiKey":
            assert found.secrets == want.keys[route], f"{route} admits exactly its callers' (and benchmark's) keys"
            assert not found.claims
        else:
            assert found.claims == set(want.callers[route]), f"{route}: tokens of its callers' teams only"
            (rule,) = found.policy["spec"]["authorization"]["rules"]
            assert [c["name"] for c in rule["principal"]["jwt"]["claims"]] == [want.team_claim]
            assert "apiKeyAuth" not in found.policy["spec"]


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_each_teams_key_reaches_exactly_its_own_models_and_those_naming_it(path):
    want = expected(path)
    got = admitted(stack_manifests(path))
    for team, secret in want.team_keys.items():
        reached = {r for r, a in got.items() if r != "litellm" and (secret in a.secrets or team in a.claims)}
        named = {r for r, callers in want.callers.items() if team in callers}
        assert reached == named, f"team {team}'s clients reach {sorted(reached)}, not {sorted(named)}"
    platform = {
        r for r, a in got.items() if r != "litellm" and (want.platform_keys in a.secrets or "platform" in a.claims)
    }
    assert platform == {r for r, callers in want.callers.items() if "platform" in callers}


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_a_benchmark_key_calls_only_its_own_model(path):
    want = expected(path)
    got = admitted(stack_manifests(path))
    for route, bench in want.benchmarks.items():
        assert {r for r, a in got.items() if bench in a.secrets} == {route}, f"{bench} reaches {route} alone"


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_the_litellm_route_admits_the_platform_and_the_teams_with_litellm_access(path):
    want = expected(path)
    got = admitted(stack_manifests(path))
    if not want.litellm:
        assert "litellm" not in got
        return
    found = got["litellm"]
    if want.auth == "apiKey":
        keys = {"platform": want.platform_keys, **want.team_keys}
        assert found.secrets == {keys[c] for c in want.litellm}, "the platform's clients and LiteLLM's teams"
    else:
        assert found.claims == set(want.litellm)


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_the_listener_backstop_admits_only_the_platforms_own_clients(path):
    want = expected(path)
    objs = stack_manifests(path)
    listener = [
        p
        for p in objs
        if p["kind"] == "SecurityPolicy" and any(t["kind"] == "Gateway" for t in p["spec"]["targetRefs"])
    ]
    if sections_of(path)["stack"]["role"] == "workloads":
        assert not listener, "a team's stack owns nothing of the listener"
        return
    if sections_of(path).get("gateway", {}).get("enabled") is False and not sections_of(path).get("addons", {}).get(
        "aibrix", {}
    ).get("enabled"):
        assert not listener, "a stack without a gateway has no listener to guard"
        return
    (policy,) = listener
    if want.auth == "apiKey":
        assert secrets_of(policy) == {want.platform_keys}
    else:
        assert claims_of(policy) == {"platform"}


def _grants(objs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(Secret namespace, Secret name, SecurityPolicy namespace) every ReferenceGrant allows."""
    return {
        (g["metadata"]["namespace"], t["name"], f["namespace"])
        for g in objs
        if g["kind"] == "ReferenceGrant"
        for f in g["spec"]["from"]
        if (f["group"], f["kind"]) == ("gateway.envoyproxy.io", "SecurityPolicy")
        for t in g["spec"]["to"]
        if t["kind"] == "Secret"
    }


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_every_key_secret_named_across_namespaces_is_granted_by_the_platform(path):
    objs = stack_manifests(path)
    team_stack = sections_of(path)["stack"]["role"] == "workloads"
    granted = _grants(rendered_stack(PLATFORM).manifests() if team_stack else objs)
    if team_stack:
        assert not _grants(objs), "a team's stack writes no grant: the platform does, in the Secret's namespace"
    for found in admitted(objs).values():
        ns = found.policy["metadata"]["namespace"]
        for secret_ns, name in found.secrets:
            if secret_ns != ns:
                assert (secret_ns, name, ns) in granted, f"{ns}'s policy names {secret_ns}/{name} without a grant"


@pytest.mark.parametrize("path", AUTHENTICATED, ids=lambda p: p.name)
def test_rate_limits_count_per_authenticated_client_on_each_route(path):
    """The bucket is the header the route's own policy writes from the authenticated identity (the key's
    client name, or the token's `sub`), overwriting what a client sent; one bucket per distinct value."""
    objs = stack_manifests(path)
    got = admitted(objs)
    limits = [o for o in objs if o["kind"] == "BackendTrafficPolicy" and "rateLimit" in o["spec"]]
    for btp in limits:
        (target,) = btp["spec"]["targetRefs"]
        policy = next(
            a.policy
            for a in got.values()
            if a.policy["metadata"]["namespace"] == btp["metadata"]["namespace"]
            and a.policy["spec"]["targetRefs"][0]["name"] == target["name"]
        )
        (rule,) = btp["spec"]["rateLimit"]["local"]["rules"]
        ((selector,),) = [s["headers"] for s in rule["clientSelectors"]]
        assert selector["type"] == "Distinct"
        spec = policy["spec"]
        if "apiKeyAuth" in spec:
            assert spec["apiKeyAuth"]["forwardClientIDHeader"] == selector["name"]
        else:
            assert {"claim": "sub", "header": selector["name"]} in spec["jwt"]["providers"][0]["claimToHeaders"]
