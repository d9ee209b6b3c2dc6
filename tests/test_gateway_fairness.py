"""Fair queues (`models[].routing.flowControl`): the endpoint picker's flow control, the fairness id the
route writes from the authenticated client, the alerts on its shedding, and the refusals where it
cannot apply."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.gateway import picker
from components.monitoring.collection import flow_control_prometheus_rule, flow_control_rules
from stacks.errors import ConfigError
from stacks.load import ROOT
from stacks.metrics import FLOW_CONTROL_METRICS
from stacks.pipeline import check_sections
from stacks.resolved import FAIRNESS_HEADER, FAIRNESS_HEADER_ALIAS, OBJECTIVE_HEADERS, ResolvedModel
from stacks.versions import IMAGES, Image
from tests.builders import resolved_model, resolved_stack
from tests.conftest import DEV, sections_of
from tests.serving_support import SCHEMAS

FRONTDOOR = ROOT / "stacks" / "examples" / "Pulumi.frontdoor.yaml"
FAIR = "qwen3-8b-sglang"
# The router's docs as the schema folder keeps them (INFERENCE_PLATFORM_SCHEMAS; CI: ../shared/schemas).
ROUTER_DOCS = (SCHEMAS or Path("/nonexistent")) / "llm-d-router" / "v0.10.0" / "docs"

# The EndpointPickerConfig's JSON fields, as llm-d-router v0.10.0 apix/config/v1alpha1
# endpointpickerconfig_types.go spells them: the picker parses strictly, so any other key stops it at start.
UPSTREAM_FIELDS: dict[str, set[str]] = {
    "config": {
        "apiVersion",
        "kind",
        "featureGates",
        "plugins",
        "schedulingProfiles",
        "dataLayer",
        "flowControl",
        "requestHandler",
        "saturationDetector",
        "parser",
    },
    "plugin": {"name", "type", "parameters"},
    "profile": {"name", "plugins"},
    "profilePlugin": {"pluginRef", "weight"},
    "flowControl": {
        "maxBytes",
        "maxRequests",
        "defaultRequestTTL",
        "defaultPriorityBand",
        "defaultNegativePriorityBand",
        "priorityBands",
        "usageLimitPolicyPluginRef",
        "saturationDetector",
        "enableEviction",
    },
    "band": {"priority", "maxBytes", "maxRequests", "fairnessPolicyRef", "orderingPolicyRef"},
}


def _fair(path: Path = FRONTDOOR, **flow: Any) -> ResolvedModel:
    sections = sections_of(path)
    if flow:
        model = next(m for m in sections["models"] if m["name"] == FAIR)
        model["routing"]["flowControl"] = flow
    return resolved_model(resolved_stack(sections), FAIR)


def _config(served: ResolvedModel) -> dict[str, Any]:
    epp = picker.values(served, picker_image())["router"]["epp"]
    return yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])


def picker_image() -> Image:
    return IMAGES["endpoint-picker"]


def _problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def test_flow_control_turns_on_the_pickers_gate_with_the_stacks_bounds_and_round_robin_between_clients():
    config = _config(_fair())
    assert config["featureGates"] == ["flowControl"], "without the gate the flowControl block is ignored"
    fc = config["flowControl"]
    assert fc["defaultRequestTTL"] == "60s" and fc["maxRequests"] == "500" and fc["maxBytes"] == "512Mi"
    band = fc["defaultPriorityBand"]
    assert band["maxRequests"] == "500" and band["maxBytes"] == "512Mi", "the band is bounded as tightly as the whole"
    assert band["fairnessPolicyRef"] == "round-robin-fairness-policy", "the default serves the oldest of any client"
    assert {"type": "round-robin-fairness-policy"} in config["plugins"], "a policy ref names a listed plugin"
    scorers = [p["pluginRef"] for p in config["schedulingProfiles"][0]["plugins"]]
    assert scorers == ["queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"], "still prefix-cache"
    extractor = next(p for p in config["plugins"] if p["type"] == "core-metrics-extractor")
    assert extractor["parameters"] == {"defaultEngine": "sglang"}


def test_unset_bounds_default_to_an_upstream_ttl_and_queues_under_the_pickers_memory_limit():
    sections = sections_of(FRONTDOOR)
    model = next(m for m in sections["models"] if m["name"] == FAIR)
    model["routing"]["flowControl"] = {}
    fc = _config(resolved_model(resolved_stack(sections), FAIR))["flowControl"]
    assert fc["defaultRequestTTL"] == "60s", "the router's own default TTL"
    assert fc["maxRequests"] == "1000", "bounded: upstream's global cap is unlimited"
    mib = int(fc["maxBytes"].removesuffix("Mi"))
    limit = picker.values(_fair(), picker_image())["router"]["epp"]["resources"]["limits"]["memory"]
    assert mib * 2 <= int(limit.removesuffix("Gi")) * 1024, "queued bodies leave room for in-flight requests"


def test_the_picker_config_uses_only_fields_of_the_upstream_types():
    config = _config(_fair())
    assert set(config) <= UPSTREAM_FIELDS["config"], set(config) - UPSTREAM_FIELDS["config"]
    for plugin in config["plugins"]:
        assert set(plugin) <= UPSTREAM_FIELDS["plugin"], plugin
    for profile in config["schedulingProfiles"]:
        assert set(profile) <= UPSTREAM_FIELDS["profile"]
        for ref in profile["plugins"]:
            assert set(ref) <= UPSTREAM_FIELDS["profilePlugin"]
    fc = config["flowControl"]
    assert set(fc) <= UPSTREAM_FIELDS["flowControl"], set(fc) - UPSTREAM_FIELDS["flowControl"]
    assert set(fc["defaultPriorityBand"]) <= UPSTREAM_FIELDS["band"]
    assert re.fullmatch(r"\d+s", fc["defaultRequestTTL"]), "a metav1.Duration"


def test_the_route_writes_the_fairness_id_from_the_authenticated_client_over_anything_the_client_sent():
    served = _fair()
    assert served.routing is not None and served.routing.flow_control is not None
    policy = picker.extension_policy(served, resolved_stack(sections_of(FRONTDOOR)).platform.gateway_parent)
    (lua,) = policy["spec"]["lua"]
    script = lua["inline"]
    assert "function envoy_on_request(request_handle)" in script, "Envoy Gateway refuses a script without it"
    assert 'headers:get("x-client-id")' in script, "the id the JWT filter wrote from the token's sub"
    assert f'headers:replace("{FAIRNESS_HEADER}", client)' in script, "replace overwrites a client-sent value"
    for forged in (FAIRNESS_HEADER_ALIAS, *OBJECTIVE_HEADERS):
        assert f'headers:remove("{forged}")' in script, f"the picker also reads {forged}"
    assert policy["spec"]["extProc"], "the same route policy calls the picker after the script (Lua 13, ext_proc 100+)"
    assert FAIRNESS_HEADER == "x-llm-d-inference-fairness-id", "pkg/epp/metadata/consts.go at v0.10.0"


def test_the_fairness_id_follows_the_rate_limits_client_header_when_it_names_another():
    sections = sections_of(FRONTDOOR)
    sections["gateway"]["rateLimit"]["clientHeader"] = "x-caller"
    served = resolved_model(resolved_stack(sections), FAIR)
    assert served.routing is not None and served.routing.flow_control is not None
    assert 'headers:get("x-caller")' in picker.fairness_script(served.routing.flow_control)


def test_without_flow_control_the_picker_and_route_are_as_before():
    served = resolved_model(resolved_stack(sections_of(DEV)), "qwen3-8b")
    router = picker.values(served, picker_image())["router"]
    assert "pluginsConfigFile" not in router["epp"], "the chart's own default profile"
    policy = picker.extension_policy(served, resolved_stack(sections_of(DEV)).platform.gateway_parent)
    assert "lua" not in policy["spec"]
    assert flow_control_prometheus_rule(served) is None


def test_alerts_fire_on_full_queues_queue_timeouts_no_pods_and_stale_metrics_with_the_routers_metric_names():
    served = _fair()
    rules = {r["alert"]: r for r in flow_control_rules(served)}
    assert set(rules) == {
        "FlowControlQueueFull",
        "FlowControlQueueTimeout",
        "FlowControlNoEndpoints",
        "FlowControlStaleEndpoints",
    }
    assert 'outcome="RejectedCapacity"' in rules["FlowControlQueueFull"]["expr"]
    assert 'outcome="EvictedTTL"' in rules["FlowControlQueueTimeout"]["expr"]
    assert 'outcome="RejectedNoEndpoints"' in rules["FlowControlNoEndpoints"]["expr"]
    assert "429" in rules["FlowControlQueueFull"]["annotations"]["description"]
    assert "503" in rules["FlowControlNoEndpoints"]["annotations"]["description"]
    for rule in rules.values():
        assert f'namespace="{served.namespace}"' in rule["expr"], "one model's picker, not every picker"
    rule = flow_control_prometheus_rule(served)
    assert rule is not None and rule["metadata"]["name"] == f"{FAIR}-fairness"


@pytest.mark.schemas
def test_every_flow_control_metric_is_one_the_routers_metrics_docs_name():
    docs = (ROUTER_DOCS / "metrics.md").read_text()
    for metric in FLOW_CONTROL_METRICS.values():
        name = metric.name.removeprefix("llm_d_epp_")
        assert f"`{name}`" in docs, f"{metric.name} is not in llm-d-router v0.10.0 docs/metrics.md"
        for label in metric.labels:
            assert f"`{label}`" in docs


def _with_flow(sections: dict[str, Any], name: str) -> int:
    i = next(i for i, m in enumerate(sections["models"]) if m["name"] == name)
    routing = sections["models"][i].setdefault("routing", {})
    routing["flowControl"] = {}
    return i


def test_flow_control_on_a_round_robin_model_is_refused_at_its_key():
    sections = sections_of(FRONTDOOR)
    i = _with_flow(sections, "mistral-tgi")
    found = _problems(sections)
    assert any(
        p.startswith(f"inference-platform:models[{i}].routing.flowControl: ") and "round-robin runs no picker" in p
        for p in found
    ), found


def test_flow_control_on_a_model_woken_through_the_interceptor_is_refused_naming_it():
    sections = sections_of(FRONTDOOR)
    i = _with_flow(sections, "qwen3-8b-idle")
    found = _problems(sections)
    assert any(
        p.startswith(f"inference-platform:models[{i}].routing.flowControl: ") and "interceptor" in p for p in found
    ), found


def test_flow_control_without_authentication_is_refused_because_every_request_would_share_one_queue():
    sections = sections_of(DEV)
    sections["gateway"] = {**sections.get("gateway", {}), "auth": "none", "allowUnauthenticated": True}
    sections["models"][0]["routing"] = {"strategy": "prefix-cache", "flowControl": {}}
    found = _problems(sections)
    assert any(
        p.startswith("inference-platform:models[0].routing.flowControl: ") and "gateway.auth" in p for p in found
    ), found


def test_a_queue_timeout_beyond_the_routes_request_timeout_is_refused_at_its_key():
    sections = sections_of(FRONTDOOR)
    i = next(i for i, m in enumerate(sections["models"]) if m["name"] == FAIR)
    sections["models"][i]["routing"]["flowControl"] = {"queueTimeoutSeconds": 3600}
    found = _problems(sections)
    assert any(f"models[{i}].routing.flowControl.queueTimeoutSeconds" in p for p in found), found


def test_flow_control_keeps_a_kv_cache_cpu_tiers_prefix_index_and_scorer():
    from components.gateway.picker import CPU_PRODUCER, CPU_SCORER, picker_config
    from stacks.resolved import FlowLimits

    limits = FlowLimits(queue_timeout_seconds=60, max_requests=1000, max_queued_mib=1024, client_header="x-client-id")
    config = picker_config("vllm", "/metrics", True, limits, cpu_blocks=4096)
    assert config["featureGates"] == ["flowControl"] and "flowControl" in config
    named = {p.get("name", p["type"]): p for p in config["plugins"]}
    assert named[CPU_PRODUCER]["parameters"]["lruCapacityPerServer"] == 4096
    assert named[CPU_SCORER]["parameters"] == {"prefixMatchInfoProducerName": CPU_PRODUCER}
    weights = {p["pluginRef"]: p["weight"] for p in config["schedulingProfiles"][0]["plugins"]}
    assert weights[CPU_SCORER] == 2 and weights["prefix-cache-scorer"] == 3
