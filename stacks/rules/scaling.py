"""Scaling rules: what KEDA (`autoscaling.owner: keda`) can scale, and which models can scale to zero
(`autoscaling.minReplicas: 0`) and come back.

KEDA scales through a scale subresource: a Deployment (NIM's too, without the NIM Operator), a
LeaderWorkerSet, or a Dynamo graph's DynamoGraphDeploymentScalingAdapter. A RayService and a NIMService
have none (KubeRay 1.7.0 and NIM Operator 3.1.2 CRDs declare only `status`), and their own controllers
own the count. A model at zero has
no pod exporting the engine's gauge, so its query is empty and KEDA never activates: the way back is the
KEDA HTTP add-on's interceptor, which holds the first request while KEDA starts a replica. So zero needs
the model's route through the front door (or LiteLLM), and nothing that picks a pod before the
interceptor does (the endpoint picker sends a request straight to a pod it saw; at zero there is none).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import Lookup, platform_rule, rule
from ..config import StackConfig
from ..errors import Problem, key_path
from ..resolve import has_routes
from ..resolved import AIBRIX_GATEWAY
from .context import platform_of

# Engines KEDA cannot scale, with the reason (their owner is the engine's own controller).
KEDA_REFUSED = {
    "ray-serve": "a RayService has no scale subresource; Ray Serve scales its replicas itself (rayServe."
    "minWorkers/maxWorkers/targetOngoingRequests) and the KubeRay autoscaler adds the workers",
}
# With the NIM Operator a NIM model is a NIMService (without it, the platform's own Deployment, which KEDA
# scales like any other).
NIM_SERVICE_REFUSED = (
    "a NIMService has no scale subresource and the NIM Operator reconciles its Deployment; use owner: hpa "
    "(the NIMService's own spec.scale.hpa) or none, or run NIM without addons.nimOperator"
)
# Why a model of these engines cannot come back from zero.
ZERO_REFUSED = {
    "dynamo": "a Dynamo graph whose workers are all at zero drops the model from its frontend's /v1/models, "
    "so requests get 404 and nothing asks for a worker again (Dynamo 1.4 docs/autoscaling.md, "
    "Scale-to-Zero Limitation); keep minReplicas: 1",
}


@rule
def keda_has_a_scale_target(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        if model.autoscaling.owner == "keda" and model.engine in KEDA_REFUSED:
            yield Problem(
                key_path(["models", i, "autoscaling", "owner"]),
                f"KEDA cannot scale {model.name} (engine {model.engine}): {KEDA_REFUSED[model.engine]}",
            )


@rule
def zero_needs_keda_and_a_way_back(config: StackConfig) -> Iterable[Problem]:
    routed = has_routes(config)
    for i, model in enumerate(config.models):
        scaling = model.autoscaling
        if scaling.min_replicas != 0:
            continue
        where = key_path(["models", i, "autoscaling", "minReplicas"])
        if scaling.owner != "keda":
            why = {
                "hpa": "an HPA never scales below one replica",
                "aibrix": "AIBrix 0.7.0 parses its scale-to-zero annotation but never acts on it, and its "
                "autoscaler stops at zero replicas",
            }.get(scaling.owner, "a fixed replica count has no scaler to bring it back")
            yield Problem(where, f"minReplicas: 0 needs owner: keda ({why}); set owner: keda or minReplicas: 1")
            continue
        if model.engine in ZERO_REFUSED:
            yield Problem(where, f"{model.name} cannot come back from zero: {ZERO_REFUSED[model.engine]}")
        if not model.expose or not routed:
            yield Problem(
                where,
                f"{model.name} comes back from zero only through its front-door route (the KEDA HTTP add-on's "
                f"interceptor holds the request while it starts), and "
                f"{'expose: false gives it none' if routed else 'this stack runs no gateway'}; set expose: true "
                f"with a gateway, or minReplicas: 1",
            )
        if model.routing is not None and model.routing.strategy != "round-robin":
            yield Problem(
                key_path(["models", i, "routing", "strategy"]),
                f"routing.strategy {model.routing.strategy} sends each request to a pod the endpoint picker "
                f"chose, past the interceptor that wakes {model.name} from zero (at zero there is no pod to "
                f"pick); use routing.strategy: round-robin (the default for a model that scales to zero) or "
                f"minReplicas: 1",
            )
        if model.canary is not None:
            yield Problem(
                key_path(["models", i, "canary"]),
                f"a canary compares a second revision against {model.name}'s running replicas, and a model that "
                f"scales to zero has none while idle; remove canary or set autoscaling.minReplicas: 1",
            )


@platform_rule
def keda_runs_on_the_platform(config: StackConfig, lookup: Lookup) -> Iterable[Problem]:
    """A KEDA-scaled model needs KEDA and a Prometheus to query; zero also needs the HTTP add-on. A stack
    that owns its platform installs both add-ons for its models (stacks/resolve.py with_keda); a team's
    stack runs on its platform's."""
    platform = platform_of(config, lookup)
    if platform is None:
        return
    for i, model in enumerate(config.models):
        scaling = model.autoscaling
        if scaling.owner != "keda":
            continue
        where = key_path(["models", i, "autoscaling", "owner"])
        if model.engine == "nim" and platform.addons.nim_operator.enabled:
            yield Problem(where, f"KEDA cannot scale {model.name} (engine nim): {NIM_SERVICE_REFUSED}")
        if platform.prometheus is None:
            fix = (
                "set addons.monitoring.enabled: true (or, with existingPrometheus, its prometheusUrl)"
                if platform.own
                else f"ask the platform team ({platform.where}) to enable addons.monitoring"
            )
            yield Problem(
                where, f"KEDA's trigger sums {model.engine}'s queue in Prometheus, and there is none to query: {fix}"
            )
        parent = platform.parent
        if scaling.to_zero and parent is not None and (parent.namespace, parent.name) == AIBRIX_GATEWAY[:2]:
            yield Problem(
                key_path(["models", i, "autoscaling", "minReplicas"]),
                f"{model.name}'s route attaches to AIBrix's Gateway, whose gateway plugin processes every request "
                f"on its listener and cannot scale from zero (AIBrix 0.7.0); the interceptor path behind it is not "
                f"verified, so a model that scales to zero needs the platform's own gateway (addons.aibrix off) "
                f"or minReplicas: 1",
            )
        if platform.own:
            continue
        if not platform.addons.keda.enabled:
            yield Problem(where, f"owner: keda needs KEDA on the cluster: {platform.addon('keda')}")
        if scaling.min_replicas == 0 and not platform.addons.keda_http.enabled:
            yield Problem(
                key_path(["models", i, "autoscaling", "minReplicas"]),
                f"minReplicas: 0 needs the KEDA HTTP add-on, whose interceptor wakes the model: "
                f"{platform.addon('kedaHttp')}",
            )
