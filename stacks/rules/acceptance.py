"""Acceptance rules: an acceptance check calls the model through its authenticated gateway route, so it
needs a route (`expose: true`), a front door with a hostname to call, and a key that route admits (its
own `apiKeySecret` or the benchmark's)."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem
from ..resolved import ResolvedStack


@rule
def acceptance_needs_a_route_and_a_key(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        model, accept = entry.config, entry.config.acceptance
        if accept is None:
            continue
        if not model.expose:
            yield Problem(
                entry.key("acceptance"),
                "an acceptance check calls the model through its authenticated gateway route, and expose: false "
                "gives it none; set expose: true, or remove acceptance",
            )
        if accept.api_key_secret is None and model.benchmark is None:
            yield Problem(
                entry.key("acceptance", "apiKeySecret"),
                "the acceptance check needs a key the model's route admits, and there is neither "
                "acceptance.apiKeySecret nor a benchmark whose apiKeySecret it could use; set "
                "acceptance.apiKeySecret to a Secret in the model's namespace whose entry `api-key` holds the "
                "check's own key (with auth: jwt, a token of one of the model's callers)",
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
        if entry.config.acceptance is None or not entry.config.expose:
            continue
        yield Problem(
            entry.key("acceptance"),
            f"an acceptance check calls the model at https://<gateway.hostname>{entry.name and '/' + entry.name}, "
            f"and there is no front door with a hostname to call; {fix}, or remove acceptance",
        )


@warning
def acceptance_metrics_need_the_platforms_prometheus(stack: ResolvedStack) -> Iterable[Problem]:
    """The metrics check queries the Prometheus this stack runs (kube-prometheus-stack); a team's stack
    (whose Prometheus is the platform's, and admits only the platform stack's acceptance Jobs) or a stack
    without monitoring skips it."""
    if stack.acceptance_prometheus is not None:
        return
    for entry in stack.entries:
        if entry.config.acceptance is None or not entry.config.expose:
            continue
        yield Problem(
            entry.key("acceptance"),
            "the acceptance check's metrics step queries the Prometheus of the stack that owns the platform "
            "(addons.monitoring without existingPrometheus), and this stack has none it may query: that step is "
            "reported as skipped; run the check from the platform's stack, or read the model's `up` series in "
            "Grafana",
        )
