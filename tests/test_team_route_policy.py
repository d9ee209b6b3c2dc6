"""What a team's HTTPRoute may claim: the platform's ValidatingAdmissionPolicy and its binding
(components/gateway/admission.py), evaluated offline with cel-python (tests/cel_admission.py).

- The parts: a policy failing closed on HTTPRoute creates and updates, seven checks each with a message
  naming the route, its namespace and the fix; a binding that denies, on the namespaces labelled with a
  team (not the platform's own, not unlabelled ones). Both pass the Kubernetes schema at the stack's
  version.
- Admitted: every HTTPRoute every team stack renders (team-search and team-chat against the platform
  example, and the all-in-one examples' models as a team's, a scale-to-zero route to the interceptor
  among them), as written and with the CRD's defaults filled in. Every route of a platform stack sits in
  a namespace the binding leaves out, and would be refused there: the exclusion is needed.
- Denied, each by exactly the checks it breaks: another team's path, the whole front door, a prefix that
  only looks like the namespace, a rule or match without a path, a regular expression, a header-only
  match, a backendRef or mirror into another namespace, a route to the interceptor without the wake
  header, with another team's, or adding, removing or re-spelling it.
- Wired: every stack that owns the cluster registers both, the binding after the policy and every team's
  Role and RoleBinding after the binding; a team's stack registers neither (it can create nothing
  cluster-scoped).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from components.autoscaling import wake
from components.gateway import admission, interceptor_admission
from stacks import conformance
from stacks.config.teams import PLATFORM_CLIENTS
from stacks.resolved import KEDA_NAMESPACE, TEAM_LABEL, WAKE_HEADER
from tests.cel_admission import Request, Verdict, admit, defaulted, evaluate_cel, selects
from tests.conftest import ALL_STACKS, rendered_stack, stack_manifests
from tests.test_team_access import LABELS, team_render

POLICY = admission.team_routes_policy()
BINDING = admission.team_routes_binding()
CHECK_IDS = [c.id for c in admission.CHECKS]
SCHEMAS = conformance.schema_dir()
needs_schemas = pytest.mark.schemas


def verdict(route: dict[str, Any], namespace: str, team: str | None, operation: str = "CREATE") -> Verdict:
    labels = {TEAM_LABEL: team} if team is not None else {}
    return admit(POLICY, BINDING, Request(route, namespace, labels, operation))


def failed_checks(v: Verdict) -> set[str]:
    return {CHECK_IDS[i] for i in v.failed}


@cache
def route_schema() -> dict[str, Any]:
    assert SCHEMAS is not None
    ((_, schema),) = conformance.crd_schemas(SCHEMAS, "gateway.networking.k8s.io", "v1", "HTTPRoute")
    return schema


# ---- the parts -----------------------------------------------------------------------------------------


def test_the_policy_fails_closed_on_httproute_creates_and_updates_in_v1_or_an_equivalent_version():
    spec = POLICY["spec"]
    assert POLICY["kind"] == "ValidatingAdmissionPolicy" and POLICY["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert spec["failurePolicy"] == "Fail", "an expression that cannot be evaluated denies"
    assert spec["matchConstraints"] == {
        "resourceRules": [
            {
                "apiGroups": ["gateway.networking.k8s.io"],
                "apiVersions": ["v1"],
                "resources": ["httproutes"],
                "operations": ["CREATE", "UPDATE"],
            }
        ],
        "matchPolicy": "Equivalent",
    }
    assert "paramKind" not in spec, "no parameters: params is null"
    assert [v["name"] for v in spec["variables"]] == ["rules", "home", "wakePrefix"]
    assert [v["expression"] for v in spec["validations"]] == [c.expression for c in admission.CHECKS]
    assert len(set(CHECK_IDS)) == len(CHECK_IDS) == 7


def test_the_binding_denies_with_the_policy_on_team_namespaces_only():
    spec = BINDING["spec"]
    assert spec["policyName"] == POLICY["metadata"]["name"]
    assert spec["validationActions"] == ["Deny"]
    assert "paramRef" not in spec
    selector = spec["matchResources"]["namespaceSelector"]
    assert selects(selector, {TEAM_LABEL: "search"}) and selects(selector, {TEAM_LABEL: "chat", "x": "y"})
    assert not selects(selector, {TEAM_LABEL: PLATFORM_CLIENTS}), "the platform's own namespaces are left out"
    assert not selects(selector, {}), "so are namespaces the platform did not label (no route attaches there)"


def test_a_request_the_policy_does_not_name_is_not_matched():
    route = search_route()
    assert verdict(route, "search", "search", "UPDATE").matched
    assert not verdict(route, "search", "search", "DELETE").matched, "deleting a route claims nothing"
    grpc = {**route, "kind": "GRPCRoute"}
    assert not verdict(grpc, "search", "search").matched


@pytest.mark.parametrize("check", admission.CHECKS, ids=lambda c: c.id)
def test_every_message_names_the_route_its_namespace_and_stays_one_line(check):
    validation = next(v for v in POLICY["spec"]["validations"] if v["expression"] == check.expression)
    assert validation["reason"] == "Forbidden"
    assert validation["message"].startswith("HTTPRoute: ") and "<namespace>" in validation["message"]
    assert "\n" not in validation["message"] and "{" not in validation["message"]
    route = search_route()
    activation = Request(route, "search", {TEAM_LABEL: "search"}).activation()
    text = evaluate_cel(validation["messageExpression"], activation)
    assert text.startswith("HTTPRoute qwen3-8b: ") and "search" in text and "\n" not in text
    assert text == check.message.replace("{name}", "qwen3-8b").replace("{ns}", "search")


@pytest.mark.parametrize("obj", [POLICY, BINDING], ids=lambda o: o["kind"])
def test_the_policy_and_binding_pass_the_kubernetes_schema_at_the_stacks_version(obj):
    assert conformance.is_core(obj)
    assert conformance.validate_core(obj, "1.34") == []
    broken = copy.deepcopy(obj)
    broken["spec"]["unknownField"] = True
    assert conformance.validate_core(broken, "1.34"), "the strict schema refuses what it does not know"


# ---- admitted: every route the program renders ---------------------------------------------------------


def routes_of(manifests: Any) -> list[dict[str, Any]]:
    return [o for o in manifests if o["kind"] == "HTTPRoute"]


@cache
def team_routes() -> list[tuple[str, str, dict[str, Any]]]:
    """(label, team, route) of every team render."""
    found = []
    for label in LABELS:
        render = team_render(label)
        found += [(label, render.team, route) for route in routes_of(render.manifests)]
    return found


def test_the_team_renders_include_routes_to_models_and_to_the_interceptor():
    found = team_routes()
    assert {label for label, _, _ in found} >= {"team-search", "team-chat", "frontdoor"}
    to_interceptor = [
        route
        for _, _, route in found
        if any(b.get("namespace") == KEDA_NAMESPACE for r in route["spec"]["rules"] for b in r["backendRefs"])
    ]
    assert to_interceptor, "the frontdoor example's sleeping model, as a team's, goes through the interceptor"


@pytest.mark.parametrize("label", LABELS)
def test_every_route_of_a_team_stack_is_admitted(label):
    routes = [(team, route) for lbl, team, route in team_routes() if lbl == label]
    for team, route in routes:
        v = verdict(route, route["metadata"]["namespace"], team)
        assert v.matched and v.admitted, (route["metadata"], v)
        assert verdict(route, route["metadata"]["namespace"], team, "UPDATE").admitted


@needs_schemas
def test_every_route_of_a_team_stack_is_admitted_with_the_crds_defaults_filled_in():
    for _, team, route in team_routes():
        stored = defaulted(route, route_schema())
        assert all(b["group"] == "" for r in stored["spec"]["rules"] for b in r["backendRefs"]), "defaults filled"
        v = verdict(stored, route["metadata"]["namespace"], team)
        assert v.admitted, (route["metadata"], v)


def namespace_labels(manifests: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in manifests if o["kind"] == "Namespace"}


PLATFORM_STACKS = [p for p in ALL_STACKS if "team-" not in p.name]


def _under_own_namespace(route: dict[str, Any]) -> bool:
    home = "/" + route["metadata"]["namespace"]
    paths = [m["path"]["value"] for r in route["spec"]["rules"] for m in r.get("matches", [])]
    return bool(paths) and all(p == home or p.startswith(home + "/") for p in paths)


@pytest.mark.parametrize("path", PLATFORM_STACKS, ids=lambda p: p.name)
def test_every_route_of_a_platform_stack_is_outside_the_binding(path):
    """The platform's namespaces carry `platform` or no label (the Gateway's own, AIBrix's): the binding
    leaves them out. Inside it, a platform route would pass only where its paths happen to start with its
    namespace (LiteLLM's `/litellm/...` in `litellm`)."""
    manifests = stack_manifests(path)
    labels = namespace_labels(manifests)
    for route in routes_of(manifests):
        ns = route["metadata"]["namespace"]
        team = labels.get(ns, {}).get(TEAM_LABEL)
        assert team in (PLATFORM_CLIENTS, None), f"{path.name}: {ns} is the platform's"
        assert not verdict(route, ns, team).matched
        assert verdict(route, ns, "some-team").admitted == _under_own_namespace(route)


def test_the_platforms_model_routes_would_be_refused_by_the_team_rule_so_the_binding_leaves_them_out():
    """A platform model is routed at `/<model>/...` from namespace `inference` (or another it names), never
    under `/<namespace>/`: the team rule cannot cover the platform's namespaces."""
    refused = {
        (path.name, route["metadata"]["namespace"], route["metadata"]["name"])
        for path in PLATFORM_STACKS
        for route in routes_of(stack_manifests(path))
        if not _under_own_namespace(route)
    }
    assert ("Pulumi.dev.yaml", "inference", "qwen3-8b") in refused
    assert ("Pulumi.frontdoor.yaml", "chat", "qwen3-8b-idle") in refused, "a platform route to the interceptor too"


# ---- denied: hostile routes ----------------------------------------------------------------------------


def search_route() -> dict[str, Any]:
    """team-search's qwen3-8b route, rendered against the platform example."""
    (route,) = [
        r
        for r in routes_of(
            rendered_stack(Path(__file__).parent.parent / "stacks/examples/Pulumi.team-search.yaml").manifests()
        )
        if r["metadata"]["name"] == "qwen3-8b"
    ]
    return copy.deepcopy(route)


def interceptor_route() -> tuple[str, dict[str, Any]]:
    """A team's route to a sleeping model through the interceptor (the frontdoor example's, as a team's)."""
    for _, team, route in team_routes():
        if any(b.get("namespace") == KEDA_NAMESPACE for r in route["spec"]["rules"] for b in r["backendRefs"]):
            return team, copy.deepcopy(route)
    raise AssertionError("no team route to the interceptor")


def _first_rule(route: dict[str, Any]) -> dict[str, Any]:
    rule: dict[str, Any] = route["spec"]["rules"][0]
    return rule


def _path(value: str, kind: str = "PathPrefix") -> Callable[[dict[str, Any]], None]:
    def change(route: dict[str, Any]) -> None:
        _first_rule(route)["matches"] = [{"path": {"type": kind, "value": value}}]

    return change


def _header_only(route: dict[str, Any]) -> None:
    _first_rule(route)["matches"] = [{"headers": [{"name": "x-team", "value": "search"}]}]


def _no_matches(route: dict[str, Any]) -> None:
    del _first_rule(route)["matches"]


def _header_on_another_path(route: dict[str, Any]) -> None:
    _first_rule(route)["matches"] = [
        {
            "path": {"type": "Exact", "value": "/chat/qwen3-8b/v1/chat/completions"},
            "headers": [{"name": "x", "value": "y"}],
        }
    ]


def _hostname_on_another_path(route: dict[str, Any]) -> None:
    route["spec"]["hostnames"] = ["chat.example.com"]
    _path("/chat/qwen3-8b/v1/chat/completions")(route)


def _backend(namespace: str, name: str) -> Callable[[dict[str, Any]], None]:
    def change(route: dict[str, Any]) -> None:
        _first_rule(route)["backendRefs"] = [{"kind": "Service", "name": name, "namespace": namespace, "port": 8000}]

    return change


def _mirror(namespace: str, name: str, on_backend: bool = False) -> Callable[[dict[str, Any]], None]:
    mirror = {
        "type": "RequestMirror",
        "requestMirror": {"backendRef": {"name": name, "namespace": namespace, "port": 8000}},
    }

    def change(route: dict[str, Any]) -> None:
        rule = _first_rule(route)
        target = rule["backendRefs"][0] if on_backend else rule
        target.setdefault("filters", []).append(mirror)

    return change


ANYWHERE = {"no-regex", "own-prefix"}  # a pattern, not under the namespace
KEDA_ELSE = {"own-backends", "wake-set"}  # not the interceptor, and to keda without the wake header
HOSTILE_PATHS: dict[str, tuple[Callable[[dict[str, Any]], None], set[str], set[str]]] = {
    # name: (what it does to search's route, checks it fails as written, with the CRD's defaults)
    "another team's path": (_path("/chat/qwen3-8b/v1/chat/completions"), {"own-prefix"}, {"own-prefix"}),
    "another team's exact path": (_path("/chat/qwen3-8b/v1/chat/completions", "Exact"), {"own-prefix"}, {"own-prefix"}),
    "the whole front door": (_path("/"), {"own-prefix"}, {"own-prefix"}),
    "a platform model's path": (_path("/qwen3-8b/v1/chat/completions"), {"own-prefix"}, {"own-prefix"}),
    "a prefix that only looks like the namespace": (_path("/searchx/v1"), {"own-prefix"}, {"own-prefix"}),
    "a regular expression": (_path("/search/.*|/chat/.*", "RegularExpression"), {"no-regex"}, {"no-regex"}),
    "a regular expression matching anything": (_path(".*", "RegularExpression"), ANYWHERE, ANYWHERE),
    "a match with headers but no path": (_header_only, {"paths-named"}, {"own-prefix"}),
    "a rule without matches": (_no_matches, {"paths-named"}, {"own-prefix"}),
    "headers on another team's path": (_header_on_another_path, {"own-prefix"}, {"own-prefix"}),
    "another hostname on another team's path": (_hostname_on_another_path, {"own-prefix"}, {"own-prefix"}),
    "a backendRef into another team's namespace": (_backend("chat", "qwen3-8b"), {"own-backends"}, {"own-backends"}),
    "a backendRef to another Service of keda": (_backend(KEDA_NAMESPACE, "keda-operator"), KEDA_ELSE, KEDA_ELSE),
    "a mirror into another team's namespace": (_mirror("chat", "qwen3-8b"), {"own-mirrors"}, {"own-mirrors"}),
    "a mirror to the interceptor": (_mirror(KEDA_NAMESPACE, wake.PROXY_SERVICE), {"own-mirrors"}, {"own-mirrors"}),
    "a backendRef's mirror elsewhere": (_mirror("chat", "qwen3-8b", on_backend=True), {"own-mirrors"}, {"own-mirrors"}),
}  # fmt: skip


@pytest.mark.parametrize("case", HOSTILE_PATHS)
def test_a_route_claiming_what_is_not_its_namespaces_is_denied_by_exactly_the_checks_it_breaks(case):
    change, expected, _ = HOSTILE_PATHS[case]
    route = search_route()
    change(route)
    for operation in ("CREATE", "UPDATE"):
        v = verdict(route, "search", "search", operation)
        assert not v.errors, v.errors
        assert failed_checks(v) == expected, (case, v)
    assert v.denials and all(d.startswith("HTTPRoute qwen3-8b: ") and "search" in d for d in v.denials)


@needs_schemas
@pytest.mark.parametrize("case", HOSTILE_PATHS)
def test_a_hostile_route_is_denied_as_the_api_server_stores_it(case):
    change, _, expected = HOSTILE_PATHS[case]
    route = search_route()
    change(route)
    v = verdict(defaulted(route, route_schema()), "search", "search")
    assert not v.errors and failed_checks(v) == expected, (case, v)


def _wake_filter(route: dict[str, Any]) -> dict[str, Any]:
    (f,) = [f for f in _first_rule(route)["filters"] if f["type"] == "RequestHeaderModifier"]
    modifier: dict[str, Any] = f["requestHeaderModifier"]
    return modifier


def _wake_value(value: str, name: str = WAKE_HEADER) -> Callable[[dict[str, Any]], None]:
    def change(route: dict[str, Any]) -> None:
        _wake_filter(route)["set"] = [{"name": name, "value": value}]

    return change


def _no_wake(route: dict[str, Any]) -> None:
    rule = _first_rule(route)
    rule["filters"] = [f for f in rule["filters"] if f["type"] != "RequestHeaderModifier"]


def _wake_added(route: dict[str, Any]) -> None:
    _wake_filter(route)["add"] = [{"name": WAKE_HEADER, "value": "search/qwen3-8b"}]


def _wake_removed(route: dict[str, Any]) -> None:
    _wake_filter(route)["remove"] = [WAKE_HEADER.upper()]


def _wake_on_backend(route: dict[str, Any]) -> None:
    header = {
        "type": "RequestHeaderModifier",
        "requestHeaderModifier": {"set": [{"name": WAKE_HEADER, "value": "search/qwen3-8b"}]},
    }
    _first_rule(route)["backendRefs"][0]["filters"] = [header]


def _wake_elsewhere_too(route: dict[str, Any]) -> None:
    _wake_filter(route)["set"].append({"name": WAKE_HEADER.title(), "value": "search/qwen3-8b"})


HOSTILE_WAKES: dict[str, tuple[Callable[[dict[str, Any]], None], set[str]]] = {
    "another team's wake header": (_wake_value("search/qwen3-8b"), {"wake-set", "wake-own"}),
    "another team's, in capitals": (_wake_value("search/qwen3-8b", WAKE_HEADER.upper()), {"wake-set", "wake-own"}),
    "no wake header": (_no_wake, {"wake-set"}),
    "the wake header only under another name": (_wake_value("{ns}/x", "x-other"), {"wake-set"}),
    "the wake header added besides": (_wake_added, {"wake-own"}),
    "the wake header removed besides": (_wake_removed, {"wake-own"}),
    "another team's wake header on the backendRef": (_wake_on_backend, {"wake-own"}),
    "a second spelling set to another team's": (_wake_elsewhere_too, {"wake-own"}),
}  # fmt: skip


@pytest.mark.parametrize("case", HOSTILE_WAKES)
def test_a_route_to_the_interceptor_that_does_not_wake_its_own_model_is_denied(case):
    team, route = interceptor_route()
    ns = route["metadata"]["namespace"]
    assert verdict(route, ns, team).admitted, "the route as rendered is admitted"
    assert ns != "search", "the other team's header names search's model"
    change, expected = HOSTILE_WAKES[case]
    change(route)
    for f in route["spec"]["rules"][0]["filters"]:
        for h in (f.get("requestHeaderModifier") or {}).get("set", []):
            h["value"] = h["value"].replace("{ns}", ns)
    v = verdict(route, ns, team)
    assert not v.errors, v.errors
    assert failed_checks(v) == expected, (case, v)
    assert all(d.startswith(f"HTTPRoute {route['metadata']['name']}: ") and ns in d for d in v.denials)


def test_the_wake_header_set_to_the_routes_own_namespace_is_admitted_on_any_rule():
    """Setting the header to a model of one's own namespace wakes nothing of another's: no check refuses it,
    on a route to the interceptor or to the team's own Service."""
    route = search_route()
    for rule in route["spec"]["rules"]:
        rule["filters"].append(
            {
                "type": "RequestHeaderModifier",
                "requestHeaderModifier": {"set": [{"name": WAKE_HEADER, "value": "search/x"}]},
            }
        )
    assert verdict(route, "search", "search").admitted


# ---- wired: who creates them, and when ------------------------------------------------------------------

PAIRS = [
    (POLICY, BINDING),
    (interceptor_admission.team_interceptor_routes_policy(), interceptor_admission.team_interceptor_routes_binding()),
]


def _registered(path: Path, kind: str) -> dict[str, Any]:
    """The stack's records of one admission kind, by object name."""
    return {
        r.inputs["metadata"]["name"]: r
        for r in rendered_stack(path).resources
        if r.type == f"kubernetes:admissionregistration.k8s.io/v1:{kind}"
    }


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_stack_that_owns_the_cluster_registers_each_policy_and_then_its_binding(path):
    policies, bindings = (
        _registered(path, "ValidatingAdmissionPolicy"),
        _registered(path, "ValidatingAdmissionPolicyBinding"),
    )
    if "team-" in path.name:
        assert not policies and not bindings, "a team's stack creates nothing cluster-scoped"
        return
    names = [p["metadata"]["name"] for p, _ in PAIRS]
    assert sorted(policies) == sorted(bindings) == sorted(names)
    for name in names:
        assert policies[name].urn in bindings[name].depends_on, "a binding whose policy does not exist is ignored"
    manifests = [o for o in stack_manifests(path) if o["kind"].startswith("ValidatingAdmissionPolicy")]
    assert sorted(manifests, key=repr) == sorted([o for pair in PAIRS for o in pair], key=repr)


def test_no_team_is_bound_to_its_deploy_identity_before_the_policies_are_in_force():
    path = Path(__file__).parent.parent / "stacks/examples/Pulumi.platform.yaml"
    bindings = _registered(path, "ValidatingAdmissionPolicyBinding").values()
    resources = rendered_stack(path).resources
    bound = [r for r in resources if r.type.endswith(":RoleBinding") and r.name.endswith("-deployers")]
    assert {r.inputs["metadata"]["namespace"] for r in bound} == {"search", "chat", "chat-staging"}
    for r in bound:
        assert {b.urn for b in bindings} <= set(r.depends_on), f"{r.name} binds the team's deploy identity"
