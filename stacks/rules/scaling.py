"""Scaling rules: what KEDA (`autoscaling.owner: keda`) can scale, and which models can scale to zero
(`autoscaling.minReplicas: 0`) and come back.

KEDA scales through a scale subresource: a Deployment, a LeaderWorkerSet, or a Dynamo graph's
DynamoGraphDeploymentScalingAdapter; an engine whose object has none says why (`Autoscalers.keda`; NIM's
NIMService is its module's refusal, as it depends on the NIM Operator). A model at zero has no pod
exporting the engine's gauge, so its query is empty and KEDA never activates: the way back is the KEDA
HTTP add-on's interceptor, which holds the first request while KEDA starts a replica. So zero needs the
model's route through the front door (or LiteLLM), and nothing that picks a pod before the
interceptor does (the endpoint picker sends a request straight to a pod it saw; at zero there is none).
A model on the add-on's request count (`autoscaling.signal: requests`, the default for an engine without
a gauge) needs the same path at any minReplicas, since only requests through the interceptor are counted.
The numbers are checked against what reads them: the gauge's target against the HPA (positive) and KEDA
(thousandths); settings nothing reads (`signal` without KEDA, the gauge's keys on the request count) are
refused, and `idleSeconds` / `requests` where nothing reads them warned.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..coldstart_facts import SAFETY_FACTOR, WAKE_BUDGET_CAP_SECONDS
from ..errors import Problem
from ..resolve import routed
from ..resolve.scaling import GAUGE_OWNERS, scaling_signal, through_interceptor
from ..resolved import AIBRIX_GATEWAY, ModelEntry, ResolvedStack

# KEDA builds its HPA's target from a trigger's threshold in thousandths (pkg/scalers GetMetricTargetMili):
# a threshold below 0.001 becomes a target of 0, which the HPA API refuses (a target must be positive).
KEDA_TARGET_FLOOR = 0.001


@rule
def keda_has_a_scale_target(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        refused = entry.facts.autoscalers.keda
        if entry.config.autoscaling.owner == "keda" and refused is not None:
            yield Problem(
                entry.key("autoscaling", "owner"),
                f"KEDA cannot scale {entry.name} (engine {entry.config.engine}): {refused}",
            )


def interceptor_key(entry: ModelEntry) -> tuple[str, str]:
    """Why the model's requests go through the interceptor, and the key that puts them there."""
    scaling = entry.config.autoscaling
    if scaling.to_zero:
        return "comes back from zero", entry.key("autoscaling", "minReplicas")
    return "scales on the HTTP add-on's count of its requests", entry.key(
        "autoscaling", "signal" if scaling.signal else "owner"
    )


@rule
def zero_needs_keda_and_a_way_back(stack: ResolvedStack) -> Iterable[Problem]:
    has_routes = routed(stack.config)
    for entry in stack.entries:
        model, scaling = entry.config, entry.config.autoscaling
        if scaling.min_replicas == 0 and scaling.owner != "keda":
            why = {
                "hpa": "an HPA never scales below one replica",
                "aibrix": "AIBrix 0.7.0 parses its scale-to-zero annotation but never acts on it, and its "
                "autoscaler stops at zero replicas",
            }.get(scaling.owner, "a fixed replica count has no scaler to bring it back")
            yield Problem(
                entry.key("autoscaling", "minReplicas"),
                f"minReplicas: 0 needs owner: keda ({why}); set owner: keda or minReplicas: 1",
            )
            continue
        if not through_interceptor(model, entry.facts):
            continue
        does, where = interceptor_key(entry)
        if scaling.to_zero and entry.facts.autoscalers.to_zero is not None:
            yield Problem(where, f"{model.name} cannot come back from zero: {entry.facts.autoscalers.to_zero}")
        if not model.expose or not has_routes:
            yield Problem(
                where,
                f"{model.name} {does} only through its front-door route (the KEDA HTTP add-on's interceptor holds "
                f"and counts its requests), and "
                f"{'expose: false gives it none' if has_routes else 'this stack runs no gateway'}; set expose: true "
                f"with a gateway, or {'minReplicas: 1' if scaling.to_zero else 'owner: none and a fixed replicas'}",
            )
        if model.routing is not None and model.routing.strategy != "round-robin":
            yield Problem(
                entry.key("routing", "strategy"),
                f"routing.strategy {model.routing.strategy} sends each request to a pod the endpoint picker "
                f"chose, past the interceptor that {model.name}'s requests go through (it {does}; the interceptor "
                f"forwards to the model's Service, so no picker chooses the pod); use routing.strategy: round-robin "
                f"(the default for a model reached through the interceptor) or minReplicas: 1 with signal: gauge",
            )
        if model.canary is not None:
            what = (
                "a model that scales to zero has none while idle"
                if scaling.to_zero
                else "the interceptor's route names one Service, so the canary's share would bypass the count"
            )
            yield Problem(
                entry.key("canary"),
                f"a canary compares a second revision against {model.name}'s running replicas, and {what}; remove "
                f"canary or set autoscaling.minReplicas: 1 (with signal: gauge)",
            )


@rule
def the_signal_has_a_reader(stack: ResolvedStack) -> Iterable[Problem]:
    """`autoscaling.signal` is read by an autoscaler: the request count by KEDA only (the HTTP add-on's scaler
    answers KEDA's external-push trigger, nothing an HPA or AIBrix reads), and the gauge's `metric` and
    `targetValue` not at all on the request count: each set where nothing reads it is refused, not dropped."""
    for entry in stack.entries:
        scaling = entry.config.autoscaling
        if scaling.signal is not None and scaling.owner not in GAUGE_OWNERS:
            yield Problem(
                entry.key("autoscaling", "signal"),
                f"signal is read by an autoscaler and owner: {scaling.owner} runs none; remove signal or set "
                f"owner: keda",
            )
        elif scaling.signal == "requests" and scaling.owner != "keda":
            yield Problem(
                entry.key("autoscaling", "signal"),
                f"signal: requests is the KEDA HTTP add-on's count, which only KEDA's external-push trigger reads "
                f"(owner: {scaling.owner} reads the engine's gauge); set owner: keda or signal: gauge",
            )
        signal = scaling_signal(entry.config, entry.facts)
        if signal is None or not signal.requests:
            continue
        for key, name in (("metric", "metric"), ("target_value", "targetValue")):
            if key in scaling.model_fields_set:
                yield Problem(
                    entry.key("autoscaling", name),
                    f"{name} sets the engine gauge's scaling, and {entry.name} scales on the HTTP add-on's count "
                    f"of its requests ({signal.reason}); remove {name}, and set autoscaling.requests.metric / "
                    f"requests.targetValue (now {signal.metric}, {signal.target} per replica)",
                )


@rule
def the_gauge_target_is_one_the_scaler_accepts(stack: ResolvedStack) -> Iterable[Problem]:
    """`targetValue` is the HPA's per-pod `averageValue` (and KEDA's prometheus `threshold`, which KEDA turns
    into that averageValue in thousandths, GetMetricTargetMili): the HPA API refuses a target that is not
    positive, so 0 (and, through KEDA, anything below 0.001) leaves the model with no HPA at all."""
    for entry in stack.entries:
        scaling = entry.config.autoscaling
        signal = scaling_signal(entry.config, entry.facts)
        if signal is None or signal.requests:
            continue
        keda, value = scaling.owner == "keda", float(scaling.target_value)
        if value >= KEDA_TARGET_FLOOR if keda else value > 0:
            continue
        least = f"{KEDA_TARGET_FLOOR} (KEDA keeps thousandths: below that its HPA target is 0)" if keda else "above 0"
        yield Problem(
            entry.key("autoscaling", "targetValue"),
            f"targetValue {scaling.target_value} is the per-replica target of {signal.metric or 'the gauge'}, and "
            f"the HPA refuses a target that is not positive; set it to at least {least}, e.g. the default 10",
        )


@warning
def settings_nothing_reads(stack: ResolvedStack) -> Iterable[Problem]:
    """`idleSeconds` is KEDA's cooldownPeriod, which applies only to the step to zero; `requests` is read only
    where the interceptor counts the model's requests: set elsewhere, each is said, not silently unused."""
    for entry in stack.entries:
        model, scaling = entry.config, entry.config.autoscaling
        if "idle_seconds" in scaling.model_fields_set and not scaling.to_zero:
            yield Problem(
                entry.key("autoscaling", "idleSeconds"),
                "idleSeconds is how long KEDA waits before scaling to zero, and this model keeps "
                f"minReplicas: {scaling.min_replicas} (owner: {scaling.owner}); it has no effect here",
            )
        if "requests" in scaling.model_fields_set and not through_interceptor(model, entry.facts):
            yield Problem(
                entry.key("autoscaling", "requests"),
                "requests is the KEDA HTTP add-on's count of a model's requests at its interceptor, and this "
                "model's requests do not go through it (owner: keda with minReplicas: 0 or signal: requests); "
                "it has no effect here",
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
        signal = scaling_signal(entry.config, entry.facts)
        requests = signal is not None and signal.requests
        if platform.prometheus is None and not requests:
            fix = (
                "set addons.monitoring.enabled: true (or, with existingPrometheus, its prometheusUrl)"
                if stack.owns_platform
                else f"ask the platform team ({platform.where}) to enable addons.monitoring"
            )
            yield Problem(
                where,
                f"KEDA's trigger sums {entry.config.engine}'s queue in Prometheus, and there is none to query: {fix}; "
                f"or scale on the KEDA HTTP add-on's count of its requests (autoscaling.signal: requests)",
            )
        parent = platform.gateway_parent
        interceptor = through_interceptor(entry.config, entry.facts)
        if interceptor and parent is not None and (parent.namespace, parent.name) == AIBRIX_GATEWAY[:2]:
            does, key = interceptor_key(entry)
            yield Problem(
                key,
                f"{entry.name}'s route attaches to AIBrix's Gateway, whose gateway plugin processes every request "
                f"on its listener and cannot scale from zero (AIBrix 0.7.0); the interceptor path behind it is not "
                f"verified, so {entry.name}, which {does}, needs the platform's own gateway (addons.aibrix off), "
                f"or minReplicas: 1 with signal: gauge",
            )
        if stack.owns_platform:
            continue
        if not platform.addons.keda.enabled:
            yield Problem(where, f"owner: keda needs KEDA on the cluster: {stack.ask_for('keda')}")
        if interceptor and not platform.addons.keda_http.enabled:
            does, key = interceptor_key(entry)
            yield Problem(
                key,
                f"{entry.name} {does} through the KEDA HTTP add-on's interceptor: {stack.ask_for('kedaHttp')}",
            )


@rule
def a_wake_fits_its_budget(stack: ResolvedStack) -> Iterable[Problem]:
    """A model woken from zero keeps its first client waiting through its whole cold start: its wake budget
    (the estimate times the safety factor, stacks/coldstart.py) must stay within WAKE_BUDGET_CAP_SECONDS, or
    the model is refused for scale to zero rather than promised a wait the front door would cut short."""
    for model in stack.models:
        if model.wake is None or not model.config.autoscaling.to_zero:
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


@warning
def the_picker_default_gives_way_to_the_interceptor(stack: ResolvedStack) -> Iterable[Problem]:
    """A vLLM or SGLang model without `routing` is routed by its endpoint picker (`prefix-cache`), except
    one reached through the interceptor, which resolves to round-robin (stacks/resolve/models.py): said
    here, so the stack file's silence never reads as the documented default."""
    for model in stack.models:
        routing = model.routing
        if model.config.routing is not None or routing is None or routing.strategy != "round-robin":
            continue
        yield Problem(
            model.key("routing"),
            f"unset, so {model.name} is routed {routing.reason}; not prefix-cache (the default for "
            f"{model.facts.title} otherwise). Write routing: {{strategy: round-robin}} to say so",
        )
