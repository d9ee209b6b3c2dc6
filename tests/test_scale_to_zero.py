"""Scale to zero that wakes up (issue 17, item 2): a model with `autoscaling.minReplicas: 0` goes through
the KEDA HTTP add-on. Its InterceptorRoute, the ScaledObject's push trigger before the engine's queue
trigger, the authenticated HTTPRoute to the interceptor with the platform header, the ReferenceGrant,
the NetworkPolicies on both sides, LiteLLM's way in, the cold-start budget the timeouts cover, the
add-on's release after KEDA's, and (issue #25 item 3) a header value that names the model cluster-wide,
so two teams' sleeping models of one name each wake only themselves."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from components import peers
from components.autoscaling import wake
from components.autoscaling.keda import scaled_objects
from components.gateway import isolation
from components.gateway.routing import http_route, interceptor_grants, model_routing, route_duration
from components.serving import litellm
from stacks import conformance
from stacks.coldstart import budget, estimate, probe_allowance, safe
from stacks.config.addons import LiteLLM
from stacks.errors import ConfigError
from stacks.pipeline import check_sections
from stacks.resolved import KEDA_NAMESPACE, WAKE_HEADER, ResolvedStack
from stacks.versions import chart
from tests.builders import by_kind, engine_objects, resolved_model, resolved_stack
from tests.conftest import EXAMPLES_DIR, rendered_stack, sections_of
from tests.serving_support import SCHEMAS, SERVING
from tests.test_gateway_picker import FRONTDOOR

IDLE = "qwen3-8b-idle"
SEARCH = EXAMPLES_DIR / "Pulumi.team-search.yaml"
CHAT = EXAMPLES_DIR / "Pulumi.team-chat.yaml"
INTERCEPTOR = ("keda-add-ons-http-interceptor-proxy", KEDA_NAMESPACE, 8080)


@pytest.fixture(scope="module")
def stack():
    return resolved_stack(sections_of(FRONTDOOR))


@pytest.fixture(scope="module")
def idle(stack):
    return resolved_model(stack, IDLE)


def valid(obj: dict[str, Any]) -> None:
    assert SCHEMAS is not None
    assert not conformance.unvalidated(obj, SCHEMAS), f"{obj['kind']}'s CRD is pinned and on file"
    assert conformance.validate_custom(obj, SCHEMAS) == [], obj


@pytest.mark.schemas
def test_the_interceptor_route_sends_the_models_header_to_its_service_and_is_valid(idle):
    route = wake.interceptor_route(idle)
    valid(route)
    assert route["metadata"] == {**route["metadata"], "name": IDLE, "namespace": "chat"}
    assert route["spec"]["target"] == {"service": idle.service, "port": idle.port}
    (rule,) = route["spec"]["rules"]
    assert rule["headers"] == [{"name": WAKE_HEADER, "value": f"chat/{IDLE}"}], (
        "the header tells the models apart: namespace and name, unique in the cluster"
    )
    assert rule["hosts"] == ["*"], "the front door and LiteLLM arrive under different hosts"
    assert "paths" not in rule, "every model reaches the interceptor at /v1/...: the path tells nothing"
    assert route["spec"]["scalingMetric"] == {"concurrency": {"targetValue": wake.CONCURRENCY_TARGET}}


@pytest.mark.schemas
def test_the_scaled_object_wakes_on_the_push_trigger_first_and_sleeps_after_idle_seconds(stack, idle):
    (obj,) = scaled_objects(idle, stack.platform.prometheus or "")
    valid(obj)
    spec = obj["spec"]
    assert spec["minReplicaCount"] == 0 and spec["maxReplicaCount"] == 2
    assert spec["cooldownPeriod"] == 900 == idle.config.autoscaling.idle_seconds
    push, queue = spec["triggers"]
    assert push == {
        "type": "external-push",
        "name": "wake",
        "metadata": {"scalerAddress": "keda-add-ons-http-external-scaler.keda:9090", "interceptorRoute": IDLE},
    }, "the interceptor's pending requests bring it from 0 to 1"
    assert queue["type"] == "prometheus", "the engine's queue takes it from 1 to N"


def test_the_route_goes_to_the_interceptor_with_the_header_set_and_stays_authenticated(stack, idle):
    gw, parent = stack.platform.gateway, stack.route_parent
    objs = model_routing(gw, idle, parent)
    route = by_kind(objs, "HTTPRoute")[0]
    for rule in route["spec"]["rules"]:
        (backend,) = rule["backendRefs"]
        assert (backend["name"], backend["namespace"], backend["port"]) == INTERCEPTOR
        modifiers = [f for f in rule["filters"] if f["type"] == "RequestHeaderModifier"]
        assert modifiers == [
            {
                "type": "RequestHeaderModifier",
                "requestHeaderModifier": {"set": [{"name": WAKE_HEADER, "value": f"chat/{IDLE}"}]},
            }
        ], "set, not add: a client's own header is overwritten"
    (policy,) = by_kind(objs, "SecurityPolicy")
    assert policy["spec"]["targetRefs"][0]["name"] == route["metadata"]["name"] == IDLE
    assert "jwt" in policy["spec"], "the interceptor path is behind the same authentication"
    assert not by_kind(objs, "ReferenceGrant"), "the route no longer names the model's Service"


def test_the_grant_lets_the_routes_of_the_known_namespaces_reach_only_the_interceptor(stack):
    assert stack.access.interceptor_routes_from == ("chat",), "the frontdoor stack's to-zero model is in chat"
    (grant,) = interceptor_grants(stack.access.interceptor_routes_from)
    assert grant["metadata"]["namespace"] == KEDA_NAMESPACE
    assert grant["spec"]["from"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "chat"}]
    assert grant["spec"]["to"] == [{"group": "", "kind": "Service", "name": INTERCEPTOR[0]}]


def test_more_namespaces_than_one_grant_holds_get_more_grants():
    namespaces = [f"team-{i:02}" for i in range(20)]
    grants = interceptor_grants(namespaces)
    assert [g["metadata"]["name"] for g in grants] == ["interceptor-for-routes", "interceptor-for-routes-2"]
    assert [len(g["spec"]["from"]) for g in grants] == [16, 4], "the CRD's from holds 16"
    assert [f["namespace"] for g in grants for f in g["spec"]["from"]] == namespaces


def test_the_model_admits_the_interceptor_and_the_interceptor_admits_only_envoy_litellm_and_its_scaler(stack, idle):
    front_door = peers.proxies(stack.route_parent)
    ingress = isolation.model_ingress(idle, isolation.Callers(proxies=front_door))
    interceptor = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": KEDA_NAMESPACE}},
        "podSelector": {"matchLabels": wake.INTERCEPTOR_POD_LABELS},
    }
    (rule,) = [r for r in ingress["spec"]["ingress"] if interceptor in r["from"]]
    assert rule["ports"] == [{"protocol": "TCP", "port": idle.port}], "on the serving port only"
    policy = isolation.interceptor_ingress(proxies=front_door, litellm_proxy=True)
    assert policy["metadata"]["namespace"] == KEDA_NAMESPACE
    assert policy["spec"]["podSelector"] == {"matchLabels": wake.INTERCEPTOR_POD_LABELS}
    proxy, admin = policy["spec"]["ingress"]
    sources = [(p["namespaceSelector"]["matchLabels"], p["podSelector"]["matchLabels"]) for p in proxy["from"]]
    assert sources == [
        ({"kubernetes.io/metadata.name": "inference-gateway"}, dict(front_door.labels)),
        ({"kubernetes.io/metadata.name": "litellm"}, {"app.kubernetes.io/name": "litellm"}),
    ], "nothing else may reach a proxy that forwards by a header: it would bypass authentication"
    assert front_door.labels[peers.OWNING_GATEWAY_NAME] == stack.route_parent.name, "this Gateway's proxies only"
    assert proxy["ports"] == [{"protocol": "TCP", "port": 8080}]
    assert admin == {
        "from": [{"podSelector": {"matchLabels": wake.SCALER_POD_LABELS}}],
        "ports": [{"protocol": "TCP", "port": 9090}],
    }, "the scaler reads the pending-request counts on the admin port"
    alone = isolation.interceptor_ingress(proxies=front_door, litellm_proxy=False)
    assert len(alone["spec"]["ingress"][0]["from"]) == 1, "no LiteLLM, no LiteLLM rule"


def test_litellm_calls_a_sleeping_model_through_the_interceptor_with_its_header(idle):
    (entry,) = litellm.router_config(LiteLLM(enabled=True), [idle], monitoring=False)["model_list"]
    params = entry["litellm_params"]
    assert params["api_base"] == "http://keda-add-ons-http-interceptor-proxy.keda.svc.cluster.local:8080/v1"
    assert params["extra_headers"] == {WAKE_HEADER: f"chat/{IDLE}"}
    assert params["timeout"] >= idle.wake.cold_start.seconds, "LiteLLM must wait out the cold start"
    egress = litellm.network_policy(LiteLLM(enabled=True), [idle], proxies=None, scraper=None)["spec"]["egress"]
    assert any(
        rule["ports"] == [{"protocol": "TCP", "port": 8080}]
        and rule["to"][0]["podSelector"]["matchLabels"] == wake.INTERCEPTOR_POD_LABELS
        for rule in egress
    ), "LiteLLM may reach the interceptor"


def test_the_wake_budget_is_the_estimate_times_the_safety_factor_and_every_timeout_covers_it(stack, idle):
    probe = by_kind(engine_objects(stack, IDLE), "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    allowed = probe["startupProbe"]["failureThreshold"] * probe["startupProbe"]["periodSeconds"]
    assert allowed == idle.startup_seconds == probe_allowance(idle.first_start_estimate), "the probe: a first start"
    est, waits = idle.cold_start_estimate, idle.wake.cold_start
    assert waits == budget(est), "a woken model's budget is its warm estimate, term by term, times the factor"
    assert (waits.node_launch, waits.image_pull) == (safe(est.node.seconds), safe(est.image.seconds))
    assert waits.seconds <= 2 * est.seconds, "never more than twice the estimate"
    # Big weights: the estimate grows, and the timeouts follow it.
    big = idle.config.model_copy(update={"parameters": "400B", "dtype": "fp8"})
    grown = estimate(
        big, idle.pool, stack.platform.storage, idle.cache, idle.image, prepared=idle.prepared, compile_cache=False
    )
    heavy = budget(grown)
    assert grown.weights.seconds > est.weights.seconds and heavy.seconds > waits.seconds, "400 GB take longer"
    served = replace(idle, config=big, wake=replace(idle.wake, cold_start=heavy))
    route = http_route(stack.platform.gateway, served, stack.route_parent)
    for rule in route["spec"]["rules"]:
        timeout = int(rule["timeouts"]["request"].removesuffix("s"))
        assert timeout >= heavy.seconds + wake.REQUEST_SECONDS, "the cold start and then the request itself"
    timeouts = wake.interceptor_route(served)["spec"]["timeouts"]
    assert timeouts["readiness"] == f"{heavy.seconds}s"
    assert timeouts["request"] == f"{heavy.seconds + wake.REQUEST_SECONDS}s"


@pytest.mark.schemas
def test_the_http_add_on_values_are_the_charts_keys_at_its_version():
    pinned = chart("keda-http")
    values = wake.http_addon_values(pinned.version)
    assert SCHEMAS is not None
    assert conformance.validate_values("keda-add-ons-http", values, SCHEMAS) == []
    assert values["images"]["tag"] == pinned.version == "0.15.0"
    assert values["interceptor"]["replicas"]["min"] >= 2, "one interceptor would take every sleeping model down"


@pytest.mark.schemas
def test_the_frontdoor_example_installs_the_add_on_after_keda_and_wires_the_interceptor_path():
    rendered = rendered_stack(FRONTDOOR)
    mocks = rendered.mocks
    keda = mocks.named("kubernetes:helm.sh/v3:Release", "platform-serving-keda")
    http = mocks.named("kubernetes:helm.sh/v3:Release", "platform-serving-keda-http")
    assert http.inputs["name"] == "keda-add-ons-http" and http.inputs["namespace"] == KEDA_NAMESPACE
    assert keda.urn in http.depends_on, "the chart's own ScaledObject needs KEDA's CRDs"
    route = mocks.named("kubernetes:http.keda.sh/v1beta1:InterceptorRoute", f"interceptorroute-chat-{IDLE}")
    scaled = mocks.named("kubernetes:keda.sh/v1alpha1:ScaledObject", f"scaledobject-chat-{IDLE}")
    assert http.urn in route.depends_on, "the InterceptorRoute's CRD comes with the add-on"
    assert route.urn in scaled.depends_on, "created after its InterceptorRoute, or KEDA falls back to CPU"
    manifests = rendered.manifests()
    kinds = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in manifests}
    assert ("ReferenceGrant", KEDA_NAMESPACE, "interceptor-for-routes") in kinds
    assert ("NetworkPolicy", KEDA_NAMESPACE, "interceptor-ingress") in kinds
    (httproute,) = [m for m in manifests if m["kind"] == "HTTPRoute" and m["metadata"]["name"] == IDLE]
    assert httproute["spec"]["rules"][0]["backendRefs"][0]["name"] == INTERCEPTOR[0]
    for obj in manifests:
        if obj["apiVersion"].startswith(("http.keda.sh/", "keda.sh/")):
            valid(obj)


def test_a_model_that_keeps_a_replica_keeps_its_direct_route(stack):
    model = resolved_model(stack, "mistral-tgi")
    assert model.wake is None
    route = http_route(stack.platform.gateway, model, stack.route_parent)
    assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == model.service
    sections = copy.deepcopy(sections_of(FRONTDOOR))
    sections["models"][-1]["autoscaling"]["minReplicas"] = 1
    assert resolved_model(resolved_stack(sections), IDLE).wake is None, "minReplicas 1: no interceptor"


def refusals(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        check_sections(sections, "us-west-2")
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def idle_index(sections: dict[str, Any]) -> int:
    return next(i for i, m in enumerate(sections["models"]) if m["name"] == IDLE)


def test_zero_with_a_canary_is_refused_at_the_canary_key():
    sections = sections_of(FRONTDOOR)
    i = idle_index(sections)
    sections["models"][i]["canary"] = {"revision": "9c925d64d72725edaf899c6cb9c377fd0709d9c5", "weight": 10}
    found = [p for p in refusals(sections) if p.startswith(f"inference-platform:models[{i}].canary:")]
    assert found and "scales to zero" in found[0], found


def test_zero_in_a_stack_without_a_gateway_is_refused_at_min_replicas():
    sections = sections_of(FRONTDOOR)
    i = idle_index(sections)
    sections["gateway"] = {"enabled": False}
    for model in sections["models"]:
        model.pop("routing", None)
    found = [p for p in refusals(sections) if p.startswith(f"inference-platform:models[{i}].autoscaling.minReplicas:")]
    assert found and "runs no gateway" in found[0], found


def test_a_route_timeout_stays_a_valid_gateway_duration_however_long_the_budget():
    assert route_duration(4800) == "4800s"
    assert route_duration(100_000) == "1667m", "five digits per unit at most: whole minutes, rounded up"


def test_zero_behind_aibrixs_gateway_is_refused():
    """AIBrix's gateway plugin handles every request on its listener and cannot scale from zero: the
    interceptor path behind it is not verified, so it is refused rather than rendered."""
    sections = sections_of(SERVING)
    i = next(i for i, m in enumerate(sections["models"]) if m["name"] == "qwen3-8b-lora")
    sections["models"][i]["autoscaling"] = {"owner": "keda", "minReplicas": 0, "maxReplicas": 2}
    with pytest.raises(ConfigError) as err:
        check_sections(sections, "us-west-2")
    found = [f"{p.path}: {p.message}" for p in err.value.problems]
    assert any(
        p.startswith(f"inference-platform:models[{i}].autoscaling.minReplicas:") and "AIBrix's Gateway" in p
        for p in found
    ), found


# ---- two teams' same-named scale-to-zero models (issue #25 item 3) ------------------------------------


def _to_zero(path: Any) -> ResolvedStack:
    """The team's stack with its qwen3-8b scaling to zero, against the platform example."""
    sections = sections_of(path)
    model = next(m for m in sections["models"] if m["name"] == "qwen3-8b")
    model.pop("replicas", None)
    model["autoscaling"] = {"owner": "keda", "minReplicas": 0, "maxReplicas": 2}
    model["routing"] = {"strategy": "round-robin"}
    # A model that scales to zero runs no canary (stacks/rules/scaling.py); team-chat's has one.
    model.pop("canary", None)
    return resolved_stack(sections)


def test_two_teams_same_named_sleeping_models_wake_only_themselves():
    stacks = {"search": _to_zero(SEARCH), "chat": _to_zero(CHAT)}
    models = {team: resolved_model(s, "qwen3-8b") for team, s in stacks.items()}
    interceptor = {}  # the interceptor's routing table: header value -> (namespace, Service) it holds for
    for model in models.values():
        route = wake.interceptor_route(model)
        (rule,) = route["spec"]["rules"]
        (header,) = rule["headers"]
        assert header["name"] == WAKE_HEADER
        assert header["value"] not in interceptor, "one header value, one model, cluster-wide"
        interceptor[header["value"]] = (route["metadata"]["namespace"], route["spec"]["target"]["service"])
    assert set(interceptor) == {"search/qwen3-8b", "chat/qwen3-8b"}
    for team, model in models.items():
        stack = stacks[team]
        (route,) = [
            o for o in model_routing(stack.platform.gateway, model, stack.route_parent) if o["kind"] == "HTTPRoute"
        ]
        for rule in route["spec"]["rules"]:
            (sets,) = [
                f["requestHeaderModifier"]["set"] for f in rule["filters"] if f["type"] == "RequestHeaderModifier"
            ]
            (value,) = [h["value"] for h in sets if h["name"] == WAKE_HEADER]
            assert interceptor[value] == (team, "qwen3-8b"), f"{team}'s route wakes {team}'s model and no other"
    litellm_headers = {litellm.model_params(m)["extra_headers"][WAKE_HEADER] for m in models.values()}
    assert litellm_headers == set(interceptor), "LiteLLM wakes each through the same header value"
