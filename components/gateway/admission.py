"""What a team's HTTPRoute may claim, as pure builders: a ValidatingAdmissionPolicy and its binding
(admissionregistration.k8s.io/v1, GA since Kubernetes 1.30), both cluster-scoped and the platform
stack's. Dict in, dict out; no Pulumi.

Why: the HTTPS listener admits routes from every labelled namespace (routing.py LABELLED), and a team's
deploy identity may write any HTTPRoute in its own namespaces (components/team_access.py). The routes
the program renders are right, but a hand-made one could claim another team's path (a more specific
match wins in Gateway API: `Exact` before `PathPrefix`, a longer prefix before a shorter one, so a route
of `chat` matching `/search/qwen3-8b/v1/chat/completions` would take search's requests and let them in
under chat's own SecurityPolicy), or send to the KEDA interceptor with another team's wake header (or
the client's own, passed on), waking and reaching a model of another namespace.

The policy admits a route of a team namespace only when (`CHECKS`, each with a message naming the fix):
- every rule lists its matches and every match a path (a rule or match without one is `PathPrefix /`,
  which the API server fills in before admission: every path at the front door);
- every path match is `Exact` or `PathPrefix` (a `RegularExpression` can match anything);
- every path is `/<namespace>` or starts with `/<namespace>/`: a team's model is routed at
  `/<namespace>/<model>/v1/...` (stacks/resolve/models.py route_prefix) and no namespace of another team
  or exposed platform model shares that first segment (stacks/rules/tenancy.py). Headers, query
  parameters, methods and hostnames only narrow a match, so none escapes its path;
- every backendRef names a Service of its own namespace, or the interceptor (`keda`); every
  RequestMirror copies into its own namespace;
- every rule that sends to the interceptor sets WAKE_HEADER (a RequestHeaderModifier `set` on the rule)
  to `<namespace>/...`, and no header modifier anywhere (rule or backendRef) adds or removes WAKE_HEADER
  or sets it to anything else.

Scope: HTTPRoutes created or updated in namespaces whose TEAM_LABEL is a team's (the label exists and
is not PLATFORM_CLIENTS). A team cannot relabel its namespaces (no write on Namespaces). The platform's
own model namespaces are left out: their routes are `/<model>/...` whatever the namespace (several
models share `inference`), only the platform stack writes there, and no team namespace is an exposed
platform model's name (the same tenancy rule).

Failure policy `Fail`: an expression that cannot be evaluated (an object the checks do not expect, a
cost limit) denies the route. The policy runs in the API server's own process, so there is no webhook
to be unreachable; until an API server's informers have synced policies and bindings it refuses every
matched request ("not yet ready to handle request", k8s.io/apiserver admission/plugin/policy/generic
plugin.go), and a binding whose policy does not exist yet is ignored, so the binding is created after
the policy. Bindings and policies reach each API server through its informer: a route written in the
moment between the binding's creation and that is not checked, and objects that existed before are
never re-checked. Hence the platform creates both before any team's RoleBinding (components/platform.py).

The expressions are standard CEL only (`has`, `all`, `exists`, `startsWith`, `matches`, `size`, `in`,
conditionals and concatenation), none of the Kubernetes CEL libraries, so tests evaluate them offline
with cel-python (tests/cel_admission.py). The namespace is `request.namespace`: of an object's metadata
a policy sees only apiVersion, kind, name and generateName.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stacks.config.teams import PLATFORM_CLIENTS
from stacks.naming import MANAGED_BY, PROJECT
from stacks.resolved import KEDA_NAMESPACE, TEAM_LABEL, WAKE_HEADER

from ..autoscaling import wake

API_VERSION = "admissionregistration.k8s.io/v1"
POLICY_NAME = f"{PROJECT}-team-routes"
ROUTE_GROUP = "gateway.networking.k8s.io"
ROUTE_RESOURCE = "httproutes"
# The namespaces the binding selects: a team's (TEAM_LABEL set, and not to the platform's own value).
TEAM_NAMESPACES = {
    "matchExpressions": [
        {"key": TEAM_LABEL, "operator": "Exists"},
        {"key": TEAM_LABEL, "operator": "NotIn", "values": [PLATFORM_CLIENTS]},
    ]
}

# The policy's variables, in order (a variable may read those before it).
VARIABLES = (
    ("rules", "has(object.spec) && has(object.spec.rules) ? object.spec.rules : []"),
    ("home", "'/' + request.namespace"),
    ("wakePrefix", "request.namespace + '/'"),
)
_RULES = "variables.rules"
_HOME = "variables.home"
_WAKE_PREFIX = "variables.wakePrefix"

# Header names are case-insensitive: the wake header under any spelling. The name is a plain token,
# so it needs no escaping inside the pattern.
assert re.fullmatch(r"[a-z0-9-]+", WAKE_HEADER), "WAKE_HEADER is used unescaped in a CEL pattern"


def is_wake(name: str) -> str:
    return f"{name}.matches('(?i)^{WAKE_HEADER}$')"


@dataclass(frozen=True)
class Check:
    """One validation: what must hold (CEL), and what the team reads when it does not. `message` says
    `{ns}` for the route's namespace and `{name}` for its name (rendered both as the static message and
    as the messageExpression that names them)."""

    id: str
    expression: str
    message: str


def _paths_named() -> Check:
    return Check(
        "paths-named",
        f"size({_RULES}) > 0 && {_RULES}.all(r, has(r.matches) && size(r.matches) > 0"
        " && r.matches.all(m, has(m.path) && has(m.path.value)))",
        "HTTPRoute {name}: every rule must list its matches and every match a path under /{ns}/; a rule or"
        " match without a path matches every path (PathPrefix /), those of other teams included",
    )


def _no_regex() -> Check:
    return Check(
        "no-regex",
        f"{_RULES}.all(r, !has(r.matches) || r.matches.all(m, !has(m.path) || !has(m.path.type)"
        " || m.path.type in ['Exact', 'PathPrefix']))",
        "HTTPRoute {name}: match paths with Exact or PathPrefix under /{ns}/, not RegularExpression; a pattern"
        " can match the paths of other namespaces",
    )


def _own_prefix() -> Check:
    return Check(
        "own-prefix",
        f"{_RULES}.all(r, !has(r.matches) || r.matches.all(m, !has(m.path) || !has(m.path.value)"
        f" || m.path.value == {_HOME} || m.path.value.startsWith({_HOME} + '/')))",
        "HTTPRoute {name}: every path must be /{ns} or start with /{ns}/ (a team model is routed at"
        " /<namespace>/<model>/v1); the other paths at the front door belong to other namespaces",
    )


def _own_backends() -> Check:
    interceptor = (
        f"(b.namespace == '{KEDA_NAMESPACE}' && b.name == '{wake.PROXY_SERVICE}'"
        " && (!has(b.kind) || b.kind == 'Service') && (!has(b.group) || b.group == ''))"
    )
    return Check(
        "own-backends",
        f"{_RULES}.all(r, !has(r.backendRefs) || r.backendRefs.all(b, !has(b.namespace)"
        f" || b.namespace == request.namespace || {interceptor}))",
        "HTTPRoute {name}: a backendRef may name a Service of namespace {ns} only (leave out its namespace),"
        f" or the KEDA interceptor, Service {wake.PROXY_SERVICE} in {KEDA_NAMESPACE}",
    )


def _mirrors_stay(filters: str) -> str:
    return (
        f"{filters}.all(f, !has(f.requestMirror) || !has(f.requestMirror.backendRef.namespace)"
        " || f.requestMirror.backendRef.namespace == request.namespace)"
    )


def _own_mirrors() -> Check:
    return Check(
        "own-mirrors",
        f"{_RULES}.all(r, (!has(r.filters) || {_mirrors_stay('r.filters')}) && (!has(r.backendRefs)"
        f" || r.backendRefs.all(b, !has(b.filters) || {_mirrors_stay('b.filters')})))",
        "HTTPRoute {name}: a RequestMirror may copy requests to a Service of namespace {ns} only",
    )


def _wake_set() -> Check:
    sets_own = (
        "r.filters.exists(f, f.type == 'RequestHeaderModifier' && has(f.requestHeaderModifier)"
        " && has(f.requestHeaderModifier.set) && f.requestHeaderModifier.set.exists(h,"
        f" {is_wake('h.name')} && h.value.startsWith({_WAKE_PREFIX})))"
    )
    to_interceptor = f"r.backendRefs.exists(b, has(b.namespace) && b.namespace == '{KEDA_NAMESPACE}')"
    return Check(
        "wake-set",
        f"{_RULES}.all(r, !has(r.backendRefs) || !{to_interceptor} || (has(r.filters) && {sets_own}))",
        "HTTPRoute {name}: a rule that sends to the KEDA interceptor must set the header"
        f" {WAKE_HEADER} to {{ns}}/<model>, the model it wakes (a RequestHeaderModifier set on the rule);"
        " without it the client names the model",
    )


def _modifier_keeps_wake(f: str) -> str:
    """A filter's RequestHeaderModifier (if any) never adds or removes the wake header, and sets it only
    to a value of the route's namespace."""
    mod = f"{f}.requestHeaderModifier"
    return (
        f"(!has({mod}) || ((!has({mod}.add) || !{mod}.add.exists(h, {is_wake('h.name')}))"
        f" && (!has({mod}.remove) || !{mod}.remove.exists(n, {is_wake('n')}))"
        f" && (!has({mod}.set) || {mod}.set.all(h, !{is_wake('h.name')} || h.value.startsWith({_WAKE_PREFIX})))))"
    )


def _wake_own() -> Check:
    return Check(
        "wake-own",
        f"{_RULES}.all(r, (!has(r.filters) || r.filters.all(f, {_modifier_keeps_wake('f')})) && (!has(r.backendRefs)"
        f" || r.backendRefs.all(b, !has(b.filters) || b.filters.all(f, {_modifier_keeps_wake('f')}))))",
        f"HTTPRoute {{name}}: the header {WAKE_HEADER} may only be set (RequestHeaderModifier set), to"
        " {ns}/<model>; never added, removed, or set to a model of another namespace",
    )


CHECKS: tuple[Check, ...] = (
    _paths_named(),
    _no_regex(),
    _own_prefix(),
    _own_backends(),
    _own_mirrors(),
    _wake_set(),
    _wake_own(),
)


def static_message(check: Check) -> str:
    """The message without the object's names (what the API server shows if the messageExpression fails)."""
    return check.message.replace(" {name}", "").replace("{ns}", "<namespace>")


def message_expression(check: Check) -> str:
    """The message as CEL, naming the object and its namespace."""
    names = {"{ns}": "request.namespace", "{name}": "object.metadata.name"}
    parts = re.split(r"(\{ns\}|\{name\})", check.message)
    assert not any("'" in p or "\\" in p for p in parts), "a message part is a single-quoted CEL literal"
    return " + ".join(names.get(p, f"'{p}'") for p in parts if p)


def validation(check: Check) -> dict[str, str]:
    return {
        "expression": check.expression,
        "message": static_message(check),
        "messageExpression": message_expression(check),
        "reason": "Forbidden",
    }


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": {**MANAGED_BY, "app.kubernetes.io/component": "gateway"}}


def resource_rule(group: str, version: str, resource: str) -> dict[str, list[str]]:
    """Creates and updates of one resource, in this version or any equivalent one (matchPolicy)."""
    return {"apiGroups": [group], "apiVersions": [version], "resources": [resource], "operations": ["CREATE", "UPDATE"]}


def policy(name: str, rule: dict[str, list[str]], checks: tuple[Check, ...]) -> dict[str, Any]:
    """A policy failing closed with these checks on the resource of `rule`, read in the rule's version."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": _meta(name),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [rule], "matchPolicy": "Equivalent"},
            "variables": [{"name": n, "expression": e} for n, e in VARIABLES],
            "validations": [validation(c) for c in checks],
        },
    }


def binding(policy_name: str) -> dict[str, Any]:
    """The policy's binding: denying, on the team namespaces (named after the policy)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": _meta(policy_name),
        "spec": {
            "policyName": policy_name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": TEAM_NAMESPACES},
        },
    }


def team_routes_policy() -> dict[str, Any]:
    """Every check on HTTPRoutes (gateway.networking.k8s.io v1)."""
    return policy(POLICY_NAME, resource_rule(ROUTE_GROUP, "v1", ROUTE_RESOURCE), CHECKS)


def team_routes_binding() -> dict[str, Any]:
    return binding(POLICY_NAME)
