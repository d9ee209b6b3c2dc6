"""Endpoint picking on a model's own route (`models[].routing`): the llm-d router's picker, the
policy that calls it, the pick honoured in the route's one BackendTrafficPolicy, and the refusals."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import yaml

from components import peers
from components.engines import ENGINES
from components.gateway import isolation, picker
from components.gateway.routing import PICKER_HEADER, PROXY_POD_LABELS, REQUEST_TIMEOUT, model_routing
from components.monitoring.collection import picker_pod_monitor
from components.monitoring.dashboards import dashboards
from stacks import conformance
from stacks.errors import ConfigError
from stacks.load import ROOT
from stacks.metrics import PICKER_METRICS
from stacks.pipeline import check_sections
from stacks.resolved import PICKER_ENGINE_LABEL, PROMETHEUS_SERVICE, ResolvedStack
from tests.builders import by_kind, engine_objects, resolved_model, resolved_stack
from tests.conftest import DEV, rendered_stack, sections_of

FRONTDOOR = ROOT / "stacks" / "examples" / "Pulumi.frontdoor.yaml"
SCHEMAS = conformance.schema_dir()


def _stack(path=DEV, **routing: Any) -> ResolvedStack:
    sections = sections_of(path)
    for model in sections["models"]:
        if model["name"] in routing:
            model["routing"] = routing[model["name"]]
    return resolved_stack(sections)


def _problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def test_the_picker_watches_exactly_the_models_pods_on_their_serving_port_without_a_pool_or_proxy():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    router = picker.values(model, stack.images["endpoint-picker"])["router"]
    assert router["modelServers"]["matchLabels"] == model.metrics_selector, "the model's pods, nothing else"
    assert router["modelServers"]["targetPorts"] == [{"number": model.port}], "the port the route's cluster holds"
    assert router["modelServers"]["type"] == "vllm"
    assert router["inferencePool"] == {"create": False}, "Envoy Gateway 1.9.0 rejects an InferencePool backendRef"
    assert router["proxy"] == {"enabled": False}, "the front door's Envoy is the proxy"
    assert router["epp"]["flags"] == {"secure-serving": False}, "Envoy Gateway dials ext_proc in plaintext h2c"
    assert "pluginsConfigFile" not in router["epp"], "prefix-cache is the chart's own default profile"
    image = router["epp"]["image"]
    assert f"{image['registry']}/{image['repository']}:{image['tag']}" == stack.images["endpoint-picker"].ref
    assert router["epp"]["resources"]["requests"]["cpu"] == "1", "not the chart's 8-core default"


@pytest.mark.schemas
def test_the_pickers_values_are_keys_the_chart_reads():
    stack = _stack(**{"qwen3-8b": {"strategy": "load"}})
    values = picker.values(resolved_model(stack, "qwen3-8b"), stack.images["endpoint-picker"])
    assert SCHEMAS is not None
    assert conformance.validate_values("llm-d-router-standalone", values, SCHEMAS) == []


def test_load_routing_scores_queue_and_kv_cache_only_and_reads_sglang_pods_as_sglang():
    stack = _stack(FRONTDOOR, **{"qwen3-8b-sglang": {"strategy": "load"}})
    model = resolved_model(stack, "qwen3-8b-sglang")
    epp = picker.values(model, stack.images["endpoint-picker"])["router"]["epp"]
    config = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    scorers = [p["pluginRef"] for p in config["schedulingProfiles"][0]["plugins"]]
    assert scorers == ["queue-scorer", "kv-cache-utilization-scorer"], "no prefix scorer under load"
    extractor = next(p for p in config["plugins"] if p["type"] == "core-metrics-extractor")
    assert extractor["parameters"] == {"defaultEngine": "sglang"}, "unlabelled pods would be read as vLLM"


@pytest.mark.schemas
def test_the_route_calls_its_picker_with_streamed_bodies_and_a_timeout_fit_for_long_generations():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    (policy,) = picker.picker_objects(model, stack.route_parent)
    assert policy["metadata"]["namespace"] == model.namespace, "beside its route and the picker: no grant"
    spec = policy["spec"]
    assert spec["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "qwen3-8b"}]
    (ext,) = spec["extProc"]
    assert ext["processingMode"]["request"]["body"] == "FullDuplexStreamed"
    assert ext["failOpen"] is False, "the CRD allows FullDuplexStreamed only fail-closed"
    assert ext["messageTimeout"] == REQUEST_TIMEOUT, "the 200ms default would fail streamed generations"
    assert ext["backendRefs"] == [
        {"name": picker.service_name(model), "namespace": model.namespace, "port": picker.EXT_PROC_PORT}
    ]
    assert SCHEMAS is not None
    assert conformance.validate_custom(policy, SCHEMAS) == [], "valid against Envoy Gateway v1.9.0's CRD"


def test_on_aibrixs_gateway_the_policy_lives_with_the_route_and_a_grant_reaches_the_one_picker_service():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    aibrix = replace(stack.route_parent, namespace="aibrix-system", shared=False)
    policy, grant = picker.picker_objects(model, aibrix)
    assert policy["metadata"]["namespace"] == "aibrix-system"
    assert grant["metadata"]["namespace"] == model.namespace
    assert grant["spec"]["from"] == [
        {"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": "aibrix-system"}
    ]
    assert grant["spec"]["to"] == [{"group": "", "kind": "Service", "name": picker.service_name(model)}], "one Service"


def test_the_pick_is_merged_into_the_routes_one_backend_traffic_policy():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    objs = model_routing(stack.platform.gateway, model, stack.route_parent)
    (policy,) = by_kind(objs, "BackendTrafficPolicy")
    assert policy["metadata"]["name"] == "qwen3-8b-ratelimit", "the live policy keeps its name"
    assert "rateLimit" in policy["spec"], "the rate limit stays"
    assert policy["spec"]["loadBalancer"]["endpointOverride"] == {"extractFrom": [{"header": PICKER_HEADER}]}
    assert by_kind(objs, "SecurityPolicy"), "authentication is untouched"


def test_without_rate_limits_routing_still_gets_its_own_policy_and_without_routing_none_is_made():
    sections = sections_of(DEV)
    del sections["gateway"]["rateLimit"]
    stack = resolved_stack(sections)
    routed, plain = resolved_model(stack, "qwen3-8b"), resolved_model(stack, "llama-3-8b-neuron")
    (policy,) = by_kind(model_routing(stack.platform.gateway, routed, stack.route_parent), "BackendTrafficPolicy")
    assert policy["metadata"]["name"] == "qwen3-8b-traffic" and "rateLimit" not in policy["spec"]
    assert not by_kind(model_routing(stack.platform.gateway, plain, stack.route_parent), "BackendTrafficPolicy")


def test_round_robin_needs_no_picker_and_works_on_any_engine():
    stack = _stack(FRONTDOOR)
    tgi = resolved_model(stack, "mistral-tgi")
    assert tgi.routing is not None and not tgi.routing.picker
    (policy,) = by_kind(model_routing(stack.platform.gateway, tgi, stack.route_parent), "BackendTrafficPolicy")
    assert policy["spec"]["loadBalancer"] == {"type": "RoundRobin"}, "no header to read"
    assert "endpoint-picker" in stack.images, "the SGLang model of this stack still runs one"
    pods = [o for o in engine_objects(stack, "mistral-tgi") if o["kind"] == "Deployment"]
    assert all(PICKER_ENGINE_LABEL not in d["spec"]["template"]["metadata"]["labels"] for d in pods)


def test_picked_sglang_pods_carry_the_pickers_engine_label_and_export_metrics():
    stack = _stack(FRONTDOOR)
    (deployment,) = by_kind(engine_objects(stack, "qwen3-8b-sglang"), "Deployment")
    assert deployment["spec"]["template"]["metadata"]["labels"][PICKER_ENGINE_LABEL] == "sglang"
    (server,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if "--enable-metrics" in c["args"]]
    assert server, "SGLang exports no metrics without --enable-metrics (off by default)"


def test_network_policies_admit_only_proxy_to_picker_and_picker_to_pod_metrics():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    front_door = peers.proxies(stack.route_parent)
    objs = isolation.namespace_policies([model], isolation.Callers(proxies=front_door))
    (into_picker,) = [o for o in objs if o["metadata"]["name"] == "qwen3-8b-picker-ingress"]
    assert into_picker["spec"]["podSelector"] == {"matchLabels": picker.pod_labels(model)}
    (rule,) = into_picker["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": picker.EXT_PROC_PORT}], "ext_proc only"
    assert rule["from"] == [front_door.peer()], "the route's Envoy proxies only"
    assert {**PROXY_POD_LABELS, peers.OWNING_GATEWAY_NAME: stack.route_parent.name}.items() <= (
        rule["from"][0]["podSelector"]["matchLabels"].items()
    ), "Envoy Gateway's proxy pods of this Gateway"
    (into_model,) = [o for o in objs if o["metadata"]["name"] == "qwen3-8b-ingress"]
    from_picker = [r for r in into_model["spec"]["ingress"] if {
        "podSelector": {"matchLabels": picker.pod_labels(model)}
    } in r["from"]]  # fmt: skip
    assert [r["ports"] for r in from_picker] == [[{"protocol": "TCP", "port": model.metrics_port}]]


def test_the_dev_stack_installs_the_pinned_picker_chart_with_the_builders_values():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    (release,) = [r for r in rendered_stack(DEV).releases() if r["name"] == picker.release_name(model)]
    assert release["chart"] == "oci://ghcr.io/llm-d/charts/llm-d-router-standalone"
    assert release["version"] == "v0.10.0" and release["namespace"] == model.namespace
    assert release["values"] == picker.values(model, stack.images["endpoint-picker"])


@pytest.mark.parametrize("engine", ["nim", "tgi"])
def test_a_picker_strategy_on_an_engine_the_picker_cannot_read_is_refused_at_its_key(engine):
    sections = sections_of(ROOT / "stacks" / "examples" / "Pulumi.engines.yaml")
    i = next(i for i, m in enumerate(sections["models"]) if m["engine"] == engine)
    sections["models"][i]["routing"] = {"strategy": "prefix-cache"}
    found = _problems(sections)
    assert any(
        p.startswith(f"inference-platform:models[{i}].routing.strategy: ") and "round-robin" in p for p in found
    ), found


def test_routing_on_a_model_without_a_route_is_refused():
    sections = sections_of(DEV)
    sections["models"][0]["expose"] = False
    found = _problems(sections)
    assert any(p.startswith("inference-platform:models[0].routing: ") for p in found), found


@pytest.mark.schemas
def test_the_pickers_own_metrics_are_scraped_per_model_and_only_the_scraper_reaches_them():
    stack = _stack()
    model = resolved_model(stack, "qwen3-8b")
    monitor = picker_pod_monitor(model)
    assert monitor is not None and monitor["metadata"]["namespace"] == model.namespace
    assert monitor["spec"]["selector"] == {"matchLabels": picker.pod_labels(model)}, "the picker's pods"
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    assert endpoint["relabelings"][0]["replacement"] == "qwen3-8b", "its series name the model it picks for"
    assert SCHEMAS is not None and conformance.validate_custom(monitor, SCHEMAS) == []
    values = picker.values(model, stack.images["endpoint-picker"])
    assert values["router"]["monitoring"] == {"prometheus": {"auth": {"enabled": False}}}, "scraped without a token"
    callers = isolation.Callers(proxies=peers.proxies(stack.route_parent), prometheus=peers.PROMETHEUS)
    policy = isolation.picker_ingress(model, callers)
    scraper = [r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == picker.METRICS_PORT]
    assert [r["from"] for r in scraper] == [[peers.PROMETHEUS.peer()]], "Prometheus's pods, not all of monitoring"
    assert scraper[0]["from"][0]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": PROMETHEUS_SERVICE}
    }
    unrouted = resolved_model(stack, "llama-3-8b-neuron")
    assert picker_pod_monitor(unrouted) is None


def test_a_dashboard_shows_the_pickers_metrics_where_an_engine_it_reads_is_served():
    (board,) = [
        b
        for b in dashboards({"vllm": ENGINES["vllm"].facts}, set())
        if b["metadata"]["name"] == "dashboard-endpoint-picker"
    ]
    exprs = " ".join(t["expr"] for p in json.loads(next(iter(board["data"].values())))["panels"] for t in p["targets"])
    for m in PICKER_METRICS.values():
        assert m.name in exprs, f"{m.name} is on the dashboard"
    assert not [
        b
        for b in dashboards({e: ENGINES[e].facts for e in ("tgi", "ollama")}, set())
        if b["metadata"]["name"] == "dashboard-endpoint-picker"
    ]


def test_an_exposed_vllm_or_sglang_model_is_routed_by_its_picker_unless_it_opts_out():
    """The default the issue names: prefix-cache for vLLM and SGLang; every other engine keeps Envoy
    Gateway's balancing; round-robin turns the picker off; no route, no picker; a model that scales to
    zero is round-robin (the interceptor that wakes it forwards to its Service, past any picker)."""
    sections = sections_of(FRONTDOOR)
    for model in sections["models"]:
        model.pop("routing", None)
    stack = resolved_stack(sections)
    strategies = {m.name: m.routing.strategy if m.routing else None for m in stack.models}
    for model in stack.models:
        pickable = model.engine in ("vllm", "sglang") and model.expose
        expected = ("round-robin" if model.config.autoscaling.to_zero else "prefix-cache") if pickable else None
        assert strategies[model.name] == expected, (model.name, model.engine, strategies[model.name])
    assert any(s == "prefix-cache" for s in strategies.values()) and any(s is None for s in strategies.values())
    opted_out = sections_of(FRONTDOOR)
    for model in opted_out["models"]:
        model["routing"] = {"strategy": "round-robin"}
    assert not [m for m in resolved_stack(opted_out).models if m.routing and m.routing.picker]
    assert "endpoint-picker" not in resolved_stack(opted_out).images, "no picker, no picker image to pin"
    gatewayless = sections_of(DEV)
    gatewayless["gateway"] = {"enabled": False}
    for model in gatewayless["models"]:
        model.pop("routing", None)
        model["expose"] = False
    assert all(m.routing is None for m in resolved_stack(gatewayless).models), "no route, nothing to pick on"
