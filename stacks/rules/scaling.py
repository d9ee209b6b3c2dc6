"""Scaling rules: what KEDA (`autoscaling.owner: keda`) can scale, and which models can scale to zero
(`autoscaling.minReplicas: 0`) and come back.

KEDA scales through a scale subresource: a Deployment, a LeaderWorkerSet, or a Dynamo graph's
DynamoGraphDeploymentScalingAdapter; an engine whose object has none says why (`Autoscalers.keda`; NIM's
NIMService is its module's refusal, as it depends on the NIM Operator). A model at zero has no pod
exporting the engine's gauge, so its query is empty and KEDA never activates: the way back is the KEDA
HTTP add-on's interceptor, which holds the first request while KEDA starts a replica. So zero needs the
model's route through the front door (or LiteLLM), and nothing that picks a pod before the
interceptor does (the endpoint picker sends a request straight to a pod it saw; at zero there is none).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..coldstart_facts import SAFETY_FACTOR, WAKE_BUDGET_CAP_SECONDS
from ..errors import Problem
from ..resolve import routed
from ..resolved import AIBRIX_GATEWAY, ResolvedStack


@rule
def keda_has_a_scale_target(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        refused = entry.facts.autoscalers.keda
        if entry.config.autoscaling.owner == "keda" and refused is not None:
            yield Problem(
                entry.key("autoscaling", "owner"),
                f"KEDA cannot scale {entry.name} (engine {entry.config.engine}): {refused}",
            )


@rule
def zero_needs_keda_and_a_way_back(stack: ResolvedStack) -> Iterable[Problem]:
    has_routes = routed(stack.config)
    for entry in stack.entries:
        model, scaling = entry.config, entry.config.autoscaling
        if scaling.min_replicas != 0:
            continue
        where = entry.key("autoscaling", "minReplicas")
        if scaling.owner != "keda":
            why = {
                "hpa": "an HPA never scales below one replica",
                "aibrix": "AIBrix 0.7.0 parses its scale-to-zero annotation but never acts on it, and its "
                "autoscaler stops at zero replicas",
            }.get(scaling.owner, "a fixed replica count has no scaler to bring it back")
            yield Problem(where, f"minReplicas: 0 needs owner: keda ({why}); set owner: keda or minReplicas: 1")
            continue
        if entry.facts.autoscalers.to_zero is not None:
            yield Problem(where, f"{model.name} cannot come back from zero: {entry.facts.autoscalers.to_zero}")
        if not model.expose or not has_routes:
            yield Problem(
                where,
                f"{model.name} comes back from zero only through its front-door route (the KEDA HTTP add-on's "
                f"interceptor holds the request while it starts), and "
                f"{'expose: false gives it none' if has_routes else 'this stack runs no gateway'}; set expose: true "
                f"with a gateway, or minReplicas: 1",
            )
        if model.routing is not None and model.routing.strategy != "round-robin":
            yield Problem(
                entry.key("routing", "strategy"),
                f"routing.strategy {model.routing.strategy} sends each request to a pod the endpoint picker "
                f"chose, past the interceptor that wakes {model.name} from zero (at zero there is no pod to "
                f"pick); use routing.strategy: round-robin (the default for a model that scales to zero) or "
                f"minReplicas: 1",
            )
        if model.canary is not None:
            yield Problem(
                entry.key("canary"),
                f"a canary compares a second revision against {model.name}'s running replicas, and a model that "
                f"scales to zero has none while idle; remove canary or set autoscaling.minReplicas: 1",
            )


@rule
def keda_runs_on_the_platform(stack: ResolvedStack) -> Iterable[Problem]:
    """A KEDA-scaled model needs KEDA and a Prometheus to query; zero also needs the HTTP add-on. A stack
    that owns its platform installs both add-ons for its models (the resolved add-ons); a team's stack
    runs on its platform's."""
    platform = stack.platform
    if not platform.known:
        return
    for entry in stack.entries:
        scaling = entry.config.autoscaling
        if scaling.owner != "keda":
            continue
        where = entry.key("autoscaling", "owner")
        if platform.prometheus is None:
            fix = (
                "set addons.monitoring.enabled: true (or, with existingPrometheus, its prometheusUrl)"
                if stack.owns_platform
                else f"ask the platform team ({platform.where}) to enable addons.monitoring"
            )
            yield Problem(
                where,
                f"KEDA's trigger sums {entry.config.engine}'s queue in Prometheus, and there is none to query: {fix}",
            )
        parent = platform.gateway_parent
        if scaling.to_zero and parent is not None and (parent.namespace, parent.name) == AIBRIX_GATEWAY[:2]:
            yield Problem(
                entry.key("autoscaling", "minReplicas"),
                f"{entry.name}'s route attaches to AIBrix's Gateway, whose gateway plugin processes every request "
                f"on its listener and cannot scale from zero (AIBrix 0.7.0); the interceptor path behind it is not "
                f"verified, so a model that scales to zero needs the platform's own gateway (addons.aibrix off) "
                f"or minReplicas: 1",
            )
        if stack.owns_platform:
            continue
        if not platform.addons.keda.enabled:
            yield Problem(where, f"owner: keda needs KEDA on the cluster: {stack.ask_for('keda')}")
        if scaling.min_replicas == 0 and not platform.addons.keda_http.enabled:
            yield Problem(
                entry.key("autoscaling", "minReplicas"),
                f"minReplicas: 0 needs the KEDA HTTP add-on, whose interceptor wakes the model: "
                f"{stack.ask_for('kedaHttp')}",
            )


@rule
def a_wake_fits_its_budget(stack: ResolvedStack) -> Iterable[Problem]:
    """A model woken from zero keeps its first client waiting through its whole cold start: its wake budget
    (the estimate times the safety factor, stacks/coldstart.py) must stay within WAKE_BUDGET_CAP_SECONDS, or
    the model is refused for scale to zero rather than promised a wait the front door would cut short."""
    for model in stack.models:
        if model.wake is None:
            continue
        wait = model.wake.cold_start.seconds
        if wait <= WAKE_BUDGET_CAP_SECONDS:
            continue
        est = model.cold_start_estimate
        terms = ", ".join(f"{name} {term.seconds}s" for name, term in est.terms().items())
        yield Problem(
            model.key("autoscaling", "minReplicas"),
            f"{model.name} is estimated to start from zero in {est.seconds}s ({terms}), a wake budget of {wait}s "
            f"with the safety factor {SAFETY_FACTOR}, above the {WAKE_BUDGET_CAP_SECONDS // 60} minutes a client "
            f"is asked to wait; cut its largest term (loadFormat: runai-streamer or a shared cache for the "
            f"weights, SOCI pull or warm nodes on its pool) or set minReplicas: 1",
        )
