"""What a team's InterceptorRoute may claim: the platform's second admission policy and its binding
(components/gateway/interceptor_admission.py), evaluated offline with cel-python (tests/cel_admission.py).

The KEDA HTTP add-on's one interceptor serves every namespace and picks an InterceptorRoute by host,
path and headers whatever its namespace, so a team's hand-made InterceptorRoute that does not require
its own namespace's wake header would take other teams' requests (and prompts) to a Service of its own.

- The parts: a policy failing closed on InterceptorRoute (http.keda.sh v1beta1) creates and updates,
  one check whose message names the object, its namespace and the fix; the same team-namespace binding
  as the HTTPRoutes' policy. Both pass the Kubernetes schema.
- Admitted: every InterceptorRoute a team stack renders (the frontdoor example's sleeping model as a
  team's), as written.
- Denied: no rules, a rule with no headers, a catch-all host or longer path without the header, the
  header with another namespace's value or with no value, a second spelling with another value.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from components.gateway import interceptor_admission as ia
from stacks import conformance
from stacks.resolved import TEAM_LABEL, WAKE_HEADER
from tests.cel_admission import Request, admit, evaluate_cel
from tests.test_team_access import LABELS, team_render

POLICY = ia.team_interceptor_routes_policy()
BINDING = ia.team_interceptor_routes_binding()


@cache
def team_interceptor_routes() -> list[tuple[str, dict[str, Any]]]:
    """(team, InterceptorRoute) of every team render."""
    found = []
    for label in LABELS:
        render = team_render(label)
        found += [(render.team, o) for o in render.manifests if o["kind"] == "InterceptorRoute"]
    return found


def one_route() -> tuple[str, dict[str, Any]]:
    routes = team_interceptor_routes()
    assert routes, "a team render has a scale-to-zero model behind the interceptor"
    return routes[0]


def denied(route: dict[str, Any], namespace: str, team: str) -> bool:
    v = admit(POLICY, BINDING, Request(route, namespace, {TEAM_LABEL: team}))
    assert v.matched, "the policy sees InterceptorRoute creates in a team namespace"
    return not v.admitted


def test_the_policy_fails_closed_on_interceptorroute_creates_and_updates():
    spec = POLICY["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": ["http.keda.sh"],
            "apiVersions": ["v1beta1"],
            "resources": ["interceptorroutes"],
            "operations": ["CREATE", "UPDATE"],
        }
    ]
    assert BINDING["spec"]["policyName"] == POLICY["metadata"]["name"] != "inference-platform-team-routes"
    assert BINDING["spec"]["validationActions"] == ["Deny"]


@pytest.mark.parametrize("obj", [POLICY, BINDING], ids=lambda o: o["kind"])
def test_the_policy_and_binding_pass_the_kubernetes_schema(obj):
    assert conformance.validate_core(obj, "1.34") == []


def test_the_message_names_the_object_its_namespace_and_the_header():
    (validation,) = POLICY["spec"]["validations"]
    assert validation["message"].startswith("InterceptorRoute: ") and "{" not in validation["message"]
    team, route = one_route()
    ns = route["metadata"]["namespace"]
    text = evaluate_cel(validation["messageExpression"], Request(route, ns, {TEAM_LABEL: team}).activation())
    assert text.startswith(f"InterceptorRoute {route['metadata']['name']}: ") and f"{ns}/<model>" in text
    assert WAKE_HEADER in text


def test_every_interceptor_route_a_team_renders_is_admitted():
    for team, route in team_interceptor_routes():
        ns = route["metadata"]["namespace"]
        assert not denied(route, ns, team), f"{ns}/{route['metadata']['name']}"


def _rules(route: dict[str, Any], rules: Any) -> dict[str, Any]:
    changed = copy.deepcopy(route)
    if rules is None:
        changed["spec"].pop("rules", None)
    else:
        changed["spec"]["rules"] = rules
    return changed


CASES = {
    "no rules": None,
    "an empty rule list": [],
    "a rule with no headers": [{"hosts": ["*"]}],
    "a longer path without the header": [{"hosts": ["*"], "paths": [{"value": "/other/v1"}]}],
    "another namespace's value": [{"hosts": ["*"], "headers": [{"name": WAKE_HEADER, "value": "other/m"}]}],
    "the header with no value": [{"hosts": ["*"], "headers": [{"name": WAKE_HEADER}]}],
    "a value that only starts like the namespace": [
        {"hosts": ["*"], "headers": [{"name": WAKE_HEADER, "value": "{ns}x/m"}]}
    ],
    "a second spelling with another value": [
        {
            "hosts": ["*"],
            "headers": [
                {"name": WAKE_HEADER, "value": "{ns}/m"},
                {"name": WAKE_HEADER.upper(), "value": "other/m"},
            ],
        }
    ],
    "a second rule without the header": [
        {"hosts": ["*"], "headers": [{"name": WAKE_HEADER, "value": "{ns}/m"}]},
        {"hosts": ["exact.example.com"]},
    ],
}


@pytest.mark.parametrize("case", CASES)
def test_an_interceptor_route_that_could_take_other_namespaces_requests_is_denied(case):
    team, route = one_route()
    ns = route["metadata"]["namespace"]
    rules = CASES[case]
    if rules is not None:
        rules = [
            {
                **r,
                "headers": [
                    {**h, "value": h["value"].replace("{ns}", ns)} if "value" in h else h for h in r["headers"]
                ],
            }
            if "headers" in r
            else r
            for r in rules
        ]
    assert denied(_rules(route, rules), ns, team), case


def test_its_own_header_under_a_second_rule_is_admitted():
    team, route = one_route()
    ns = route["metadata"]["namespace"]
    rules = [
        {"hosts": ["*"], "headers": [{"name": WAKE_HEADER, "value": f"{ns}/a"}]},
        {"paths": [{"value": "/v1"}], "headers": [{"name": WAKE_HEADER.upper(), "value": f"{ns}/b"}]},
    ]
    assert not denied(_rules(route, rules), ns, team)


def test_the_same_route_in_another_teams_namespace_is_denied():
    _team, route = one_route()
    moved = copy.deepcopy(route)
    moved["metadata"]["namespace"] = "intruder"
    assert denied(moved, "intruder", "intruder"), "its value names a namespace that is not its own"
