"""Team routes live in the team's namespaces (issue #25 item 2):

- the front door's HTTPS listener admits routes from the namespaces labelled `TEAM_LABEL`, which the
  platform puts on its model namespaces and LiteLLM's (`platform`) and a team's stack on the team's;
- a team's route, SecurityPolicy, BackendTrafficPolicy and picker policy sit in the model's namespace,
  and no object of a team's stack sits in a namespace of the platform's;
- the grants a route needs in another namespace are the platform's: beside each key Secret, and in
  `keda` for every namespace whose routes may reach the interceptor;
- a team's exposed model on a listener that admits only its own namespace (AIBrix's, or an older
  platform's) is refused at its key.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stacks.pipeline import exports_from_file
from stacks.resolved import TEAM_LABEL
from tests.builders import resolved_stack
from tests.conftest import EXAMPLES_DIR, rendered_stack, sections_of, stack_manifests
from tests.guard_support import has

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
SEARCH = EXAMPLES_DIR / "Pulumi.team-search.yaml"
CHAT = EXAMPLES_DIR / "Pulumi.team-chat.yaml"
TEAM_NAMESPACES = {"search": {"search"}, "chat": {"chat", "chat-staging"}}


def _team_problems(sections: dict[str, Any], exports: dict[str, Any]) -> list[str]:
    from stacks.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        resolved_stack(sections, exports=exports)
    return [str(p) for p in info.value.problems]


def test_the_https_listener_admits_the_routes_of_labelled_namespaces_and_http_only_its_own():
    (gateway,) = [o for o in stack_manifests(PLATFORM) if o["kind"] == "Gateway"]
    listeners = {li["name"]: li for li in gateway["spec"]["listeners"]}
    assert listeners["https"]["allowedRoutes"] == {
        "namespaces": {
            "from": "Selector",
            "selector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]},
        }
    }
    assert listeners["http"]["allowedRoutes"] == {"namespaces": {"from": "Same"}}, "only the redirect"


@pytest.mark.parametrize("path", [SEARCH, CHAT], ids=lambda p: p.name)
def test_a_teams_objects_all_sit_in_the_teams_namespaces(path):
    team = sections_of(path)["stack"]["team"]
    objs = stack_manifests(path)
    placed = {(o["kind"], o["metadata"].get("namespace")) for o in objs if o["metadata"].get("namespace")}
    assert {ns for _, ns in placed} <= TEAM_NAMESPACES[team], f"objects outside {team}'s namespaces: {placed}"
    routed = {o["kind"] for o in objs if o["metadata"].get("namespace")}
    assert {"HTTPRoute", "SecurityPolicy"} <= routed
    for ns in (o for o in objs if o["kind"] == "Namespace"):
        assert ns["metadata"]["labels"][TEAM_LABEL] == team, "its routes attach to the listener from here"


def test_a_teams_route_and_its_policies_live_beside_its_model():
    objs = stack_manifests(SEARCH)
    for kind in ("HTTPRoute", "SecurityPolicy", "BackendTrafficPolicy", "EnvoyExtensionPolicy"):
        found = [o for o in objs if o["kind"] == kind]
        assert found, f"search renders a {kind}"
        assert {o["metadata"]["namespace"] for o in found} == {"search"}, kind
    route = next(o for o in objs if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "qwen3-8b")
    assert route["spec"]["parentRefs"] == [
        {"name": "inference", "namespace": "inference-gateway", "sectionName": "https"}
    ]
    assert {ref["namespace"] for rule in route["spec"]["rules"] for ref in rule["backendRefs"]} == {"search"}


def test_the_platform_labels_its_namespaces_and_grants_each_teams_keys_to_the_other_namespaces():
    objs = stack_manifests(PLATFORM)
    grants = {
        (g["metadata"]["namespace"], g["metadata"]["name"]): g
        for g in objs
        if g["kind"] == "ReferenceGrant" and g["metadata"]["name"].startswith("api-keys-for-routes")
    }
    sources = {ns: {f["namespace"] for f in g["spec"]["from"]} for (ns, _), g in grants.items()}
    assert sources == {
        "search": {"chat", "chat-staging"},
        "chat": {"search", "chat-staging", "litellm"},
        "inference-gateway": {"search", "chat", "chat-staging", "litellm"},
    }, "each key Secret, to every other team namespace and to LiteLLM's route where it admits those keys"
    for grant in grants.values():
        assert {(f["group"], f["kind"]) for f in grant["spec"]["from"]} == {("gateway.envoyproxy.io", "SecurityPolicy")}
        (target,) = grant["spec"]["to"]
        assert (target["kind"], target["name"]) == ("Secret", "inference-api-keys"), "that one Secret, nothing else"


def test_the_interceptor_admits_routes_from_every_team_namespace_the_platform_knows():
    objs = stack_manifests(PLATFORM)
    (grant,) = [o for o in objs if o["kind"] == "ReferenceGrant" and o["metadata"]["namespace"] == "keda"]
    assert {f["namespace"] for f in grant["spec"]["from"]} == {"search", "chat", "chat-staging"}
    assert {(f["group"], f["kind"]) for f in grant["spec"]["from"]} == {("gateway.networking.k8s.io", "HTTPRoute")}


def test_platform_model_namespaces_and_litellms_carry_the_platforms_label():
    dev = rendered_stack(EXAMPLES_DIR.parent.parent / "Pulumi.dev.yaml").manifests()
    (ns,) = [o for o in dev if o["kind"] == "Namespace" and o["metadata"]["name"] == "inference"]
    assert ns["metadata"]["labels"][TEAM_LABEL] == "platform"
    serving = stack_manifests(EXAMPLES_DIR / "Pulumi.serving.yaml")
    (litellm_ns,) = [o for o in serving if o["kind"] == "Namespace" and o["metadata"]["name"] == "litellm"]
    assert litellm_ns["metadata"]["labels"][TEAM_LABEL] == "platform"


def test_a_team_model_on_a_listener_that_admits_only_its_own_namespace_is_refused():
    live = exports_from_file(PLATFORM)
    for parent in (
        {**live["gatewayParent"], "shared": False},
        {k: v for k, v in live["gatewayParent"].items() if k != "shared"},
    ):
        found = _team_problems(sections_of(SEARCH), {**copy.deepcopy(live), "gatewayParent": parent})
        assert has(found, "models[0].expose", "admits routes only from its own namespace"), found
        assert has(found, "models[1].expose", "admits routes only from its own namespace"), found


def test_the_platform_exports_that_its_listener_admits_team_namespaces():
    assert rendered_stack(PLATFORM).outputs["gatewayParent"]["shared"] is True


def test_each_namespace_is_labelled_with_its_owner_whichever_stack_creates_it():
    platform = resolved_stack(sections_of(PLATFORM))
    assert [platform.owner_of(ns) for ns in ("search", "chat", "chat-staging", "inference")] == [
        "search",
        "chat",
        "chat",
        "platform",
    ], "a team namespace is its team's even when the platform creates it"
    chat = resolved_stack(sections_of(CHAT))
    assert chat.team is not None
    assert {ns: chat.owner_of(ns) for ns in chat.team.namespaces} == {"chat": "chat", "chat-staging": "chat"}
