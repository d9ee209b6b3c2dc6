"""Acceptance rules: an acceptance check calls the model through its authenticated gateway route, so it
needs a route (`expose: true`), a front door with a hostname to call, and a key that route admits (its
own `apiKeySecret`, the benchmark's, or with `gateway.auth: apiKey` the one the platform mints).

Every exposed model gets the check by default (stacks/resolve/acceptance.py); what is refused is an
acceptance the stack asks for explicitly that cannot run. A default one that cannot (no key under
`gateway.auth: jwt`) is a warning: the model has no Job, and the warning says how to give it one."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem
from ..resolve.acceptance import asked, unminted
from ..resolved import ModelEntry, ResolvedStack


def _explicit(entry: ModelEntry) -> bool:
    """The stack file asks for the check itself (`acceptance` set and not opted out)."""
    accept = entry.config.acceptance
    return accept is not None and accept.enabled


@rule
def acceptance_needs_a_route_and_a_key(stack: ResolvedStack) -> Iterable[Problem]:
    auth = stack.platform.gateway.auth
    for entry in stack.entries:
        model, accept = entry.config, entry.config.acceptance
        if accept is None or not accept.enabled:
            continue
        if not model.expose:
            yield Problem(
                entry.key("acceptance"),
                "an acceptance check calls the model through its authenticated gateway route, and expose: false "
                "gives it none; set expose: true, or set acceptance: false",
            )
        if accept.key_secret(model.benchmark) is None and auth != "apiKey" and stack.platform.known:
            yield Problem(
                entry.key("acceptance", "apiKeySecret"),
                f"the acceptance check needs a key the model's route admits, and with gateway.auth: {auth} the "
                "platform cannot mint one (it does with apiKey); set acceptance.apiKeySecret to a Secret in the "
                "model's namespace whose entry `api-key` holds the check's own key (with auth: jwt, a token of one "
                "of the model's callers), or set acceptance: false",
            )


@warning
def acceptance_without_a_key_the_platform_can_mint(stack: ResolvedStack) -> Iterable[Problem]:
    """With `gateway.auth: jwt` the platform mints no token (nor a key a team's route on AIBrix's Gateway
    could admit), so an exposed model that gave no key gets no Job: say so, and how to give it one."""
    if not stack.platform.known:
        return
    for entry in stack.entries:
        if asked(entry) is None or entry.acceptance is not None or not entry.config.expose:
            continue
        if (why := unminted(entry, stack.platform, stack.route_parent)) is None:
            continue
        if _explicit(entry) and stack.platform.gateway.auth != "apiKey":
            continue  # refused at its apiKeySecret (acceptance_needs_a_route_and_a_key)
        yield Problem(
            entry.key("acceptance"),
            f"every exposed model gets an acceptance Job, and {why}, so this model has none; set "
            "models[].acceptance.apiKeySecret (or benchmark.apiKeySecret) to a Secret in the model's namespace "
            "whose entry `api-key` holds a key the route admits (with auth: jwt, a token Secret: a token of one of "
            "the model's callers), or set acceptance: false to say no check is wanted",
        )


@rule
def acceptance_reaches_the_front_door(stack: ResolvedStack) -> Iterable[Problem]:
    """The Job calls https://<hostname>/<model> on the front door the model's route hangs on: this
    stack's, or (a workloads stack) its platform's."""
    platform = stack.platform
    if not platform.known:
        return
    parent = platform.gateway_parent
    if parent is not None and parent.hostname is not None:
        return
    fix = (
        "set gateway.enabled: true with gateway.hostname"
        if stack.owns_platform
        else f"ask the platform team ({platform.where}) for a front door with gateway.hostname"
    )
    for entry in stack.entries:
        if not _explicit(entry) or not entry.config.expose:
            continue
        yield Problem(
            entry.key("acceptance"),
            f"an acceptance check calls the model at https://<gateway.hostname>{entry.name and '/' + entry.name}, "
            f"and there is no front door with a hostname to call; {fix}, or set acceptance: false",
        )


@warning
def acceptance_metrics_need_the_platforms_prometheus(stack: ResolvedStack) -> Iterable[Problem]:
    """The metrics check queries the Prometheus this stack runs (kube-prometheus-stack); a team's stack
    (whose Prometheus is the platform's, and admits only the platform stack's acceptance Jobs) or a stack
    without monitoring skips it. Said for the checks the stack file asks for; a default check's skipped
    step is in its verdict (and the operator guide)."""
    if stack.acceptance_prometheus is not None:
        return
    for entry in stack.entries:
        if not _explicit(entry) or entry.acceptance is None:
            continue
        yield Problem(
            entry.key("acceptance"),
            "the acceptance check's metrics step queries the Prometheus of the stack that owns the platform "
            "(addons.monitoring without existingPrometheus), and this stack has none it may query: that step is "
            "reported as skipped; run the check from the platform's stack, or read the model's `up` series in "
            "Grafana",
        )
