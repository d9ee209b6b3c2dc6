"""What a team's InterceptorRoute may claim, as pure builders: the second admission policy and binding
beside the HTTPRoutes' (admission.py), on the same team namespaces.

Why: the KEDA HTTP add-on's one interceptor serves every namespace and picks the InterceptorRoute a
request belongs to by host, path prefix and headers, whichever namespace the InterceptorRoute is in
(its CRD: a rule's hosts, paths and headers all must match; an exact host outranks a wildcard, a longer
prefix a shorter one). Every model's own InterceptorRoute matches `*` and its wake header,
`<namespace>/<model>` (components/autoscaling/wake.py), which its route and LiteLLM set. A team's deploy
identity may write InterceptorRoutes in its namespaces (components/team_access.py): a hand-made one
matching another namespace's wake-header value, or no header at all under a more specific host or path,
would take requests meant for another team's model to a Service of its own, with their prompts.

The policy admits an InterceptorRoute of a team namespace only when it lists rules and every rule
matches the wake header with a value of its own namespace (`<namespace>/...`, a value given: an
omitted one matches any), and names the header with no other value (the header names within a rule are
a list-map keyed by the exact spelling, so a second spelling could carry a second value). Within a rule
all must match, so such a rule matches only requests that carry its own namespace's value, which only
that namespace's routes and LiteLLM (for that namespace's model) set. Its target and cold-start fallback
name Services of its own namespace only (the CRD has no namespace field for either).
"""

from __future__ import annotations

from typing import Any

from stacks.naming import PROJECT
from stacks.resolved import WAKE_HEADER

from .admission import Check, binding, is_wake, policy, resource_rule

POLICY_NAME = f"{PROJECT}-team-interceptor-routes"
GROUP = "http.keda.sh"
VERSION = "v1beta1"
RESOURCE = "interceptorroutes"

_OWN_VALUE = "has(h.value) && h.value.startsWith(variables.wakePrefix)"

CHECKS: tuple[Check, ...] = (
    Check(
        "wakes-own",
        "size(variables.rules) > 0 && variables.rules.all(r, has(r.headers)"
        f" && r.headers.exists(h, {is_wake('h.name')} && {_OWN_VALUE})"
        f" && r.headers.all(h, !{is_wake('h.name')} || ({_OWN_VALUE})))",
        "InterceptorRoute {name}: every rule must match the header"
        f" {WAKE_HEADER} with a value {{ns}}/<model>, and no other value; the interceptor serves every"
        " namespace and tells models apart by that header, so a rule without it takes the requests of"
        " models of other namespaces",
    ),
)


def team_interceptor_routes_policy() -> dict[str, Any]:
    """The check on InterceptorRoutes (http.keda.sh v1beta1)."""
    return policy(POLICY_NAME, resource_rule(GROUP, VERSION, RESOURCE), CHECKS)


def team_interceptor_routes_binding() -> dict[str, Any]:
    return binding(POLICY_NAME)
