"""Issue #28 item 5 (wake): scale to zero and back for an engine without a Prometheus gauge, on the KEDA
HTTP add-on's own count of the model's requests; the routing of a model that scales to zero said, not
silent (round-robin with its reason, in `stacks plan` and the docs); and every autoscaler number checked
against what the HPA, KEDA and the add-on accept at the pinned versions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.autoscaling import keda as keda_builders
from components.autoscaling import wake
from components.autoscaling.keda import scaled_objects
from components.monitoring.autoscaling import scaling_dashboard, scaling_rules
from stacks import conformance
from stacks.config.models import INT32_MAX, Autoscaling
from stacks.errors import ConfigError
from stacks.load import ROOT
from stacks.pipeline import check_file, check_sections
from stacks.plan import plan, plan_json
from stacks.resolve.models import INTERCEPTOR_ROUND_ROBIN
from stacks.resolved import ResolvedModel
from tests.builders import resolved_model, resolved_stack
from tests.conftest import live_platform, sections_of
from tests.guard_support import has, problems, problems_of, refused, warnings_of
from tests.serving_support import SCHEMAS
from tests.test_gateway_picker import FRONTDOOR
from tests.test_stack_roles import platform_exports
from tests.test_team_wiring import TEAM

OLLAMA = "llama-ollama"
IDLE = "qwen3-8b-idle"


@pytest.fixture(scope="module")
def frontdoor() -> dict[str, Any]:
    return sections_of(FRONTDOOR)


@pytest.fixture(scope="module")
def ollama(frontdoor) -> ResolvedModel:
    return resolved_model(resolved_stack(frontdoor), OLLAMA)


def model_index(sections: dict[str, Any], name: str) -> int:
    return next(i for i, m in enumerate(sections["models"]) if m["name"] == name)


def with_scaling(sections: dict[str, Any], name: str, **scaling: Any) -> tuple[dict[str, Any], int]:
    """The sections with model `name`'s autoscaling replaced (its fixed replicas dropped)."""
    out = copy.deepcopy(sections)
    i = model_index(out, name)
    out["models"][i].pop("replicas", None)
    out["models"][i]["autoscaling"] = scaling
    return out, i


def valid(obj: dict[str, Any]) -> None:
    assert SCHEMAS is not None
    assert not conformance.unvalidated(obj, SCHEMAS), f"{obj['kind']}'s CRD is pinned and on file"
    assert conformance.validate_custom(obj, SCHEMAS) == [], obj


# ---- Ollama scales to zero and back on the request count -------------------------------------------------


def test_ollama_under_keda_resolves_to_the_add_ons_request_count_with_its_reason(ollama):
    signal = ollama.scaling
    assert signal is not None and signal.source == "requests", "Ollama exports no gauge: the add-on counts"
    assert (signal.metric, signal.target) == ("concurrency", "4"), "the shipped example's autoscaling.requests"
    assert "exports no Prometheus gauge" in signal.reason
    assert ollama.wake is not None, "its requests go through the interceptor, which counts them"


@pytest.mark.schemas
def test_the_ollama_scaled_object_has_the_push_trigger_alone_and_sleeps_after_idle_seconds(ollama):
    (obj,) = scaled_objects(ollama, None)
    valid(obj)
    spec = obj["spec"]
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "external-push" and trigger["metadata"]["interceptorRoute"] == OLLAMA, (
        "the add-on's scaler answers 0..N: active above zero requests, the count per replica above one"
    )
    assert spec["minReplicaCount"] == 0 and spec["cooldownPeriod"] == 900


@pytest.mark.schemas
def test_the_ollama_interceptor_route_counts_what_autoscaling_requests_says(ollama):
    route = wake.interceptor_route(ollama)
    valid(route)
    assert route["spec"]["scalingMetric"] == {"concurrency": {"targetValue": 4}}
    assert route["spec"]["target"] == {"service": OLLAMA, "port": 11434}


@pytest.mark.schemas
def test_a_request_rate_target_renders_the_crds_request_rate_metric(frontdoor):
    sections, _ = with_scaling(
        frontdoor,
        OLLAMA,
        owner="keda",
        minReplicas=0,
        maxReplicas=2,
        requests={"metric": "requestRate", "targetValue": 2},
    )
    route = wake.interceptor_route(resolved_model(resolved_stack(sections), OLLAMA))
    valid(route)
    assert route["spec"]["scalingMetric"] == {"requestRate": {"targetValue": 2}}


def test_a_model_on_the_request_count_at_one_replica_still_goes_through_the_interceptor(frontdoor):
    sections, _ = with_scaling(frontdoor, OLLAMA, owner="keda", minReplicas=1, maxReplicas=3)
    model = resolved_model(resolved_stack(sections), OLLAMA)
    assert model.wake is not None, "only requests through the interceptor are counted"
    (obj,) = scaled_objects(model, None)
    assert [t["type"] for t in obj["spec"]["triggers"]] == ["external-push"]
    assert "cooldownPeriod" not in obj["spec"], "cooldown matters only to the step to zero"


def test_a_vllm_model_may_scale_on_requests_without_any_prometheus(frontdoor):
    sections, i = with_scaling(frontdoor, IDLE, owner="keda", minReplicas=0, maxReplicas=2, signal="requests")
    sections["addons"]["monitoring"] = {"enabled": False}
    for model in sections["models"]:
        model.pop("slo", None)
    found = problems_of(sections)
    assert not [p for p in found if f"models[{i}]" in p], found
    model = resolved_model(resolved_stack(sections), IDLE)
    (obj,) = scaled_objects(model, None)
    assert [t["type"] for t in obj["spec"]["triggers"]] == ["external-push"], "no Prometheus trigger to fail"


def test_the_ollama_scaling_dashboard_and_rules_read_no_queue_gauge(frontdoor, ollama):
    images = resolved_stack(frontdoor).images
    dashboard = scaling_dashboard(ollama, images)
    assert dashboard is not None and "vllm:" not in str(dashboard)
    alerts = [r["alert"] for r in scaling_rules(ollama, images)]
    assert "ScalingPinnedAtMax" not in alerts, "no queue in Prometheus to compare with the ceiling"
    assert "ScalerCannotReadMetric" in alerts and "ColdStartSlow" in alerts


def test_stacks_plan_says_what_each_model_scales_on_and_how_its_pod_is_picked():
    stack = check_file(ROOT / "stacks" / "examples" / "Pulumi.frontdoor.yaml").stack
    text = plan(stack)
    assert "scales on requests: the HTTP add-on's concurrency at 4 per replica (Ollama" in text
    assert "scales on gauge: the gauge vllm:num_requests_waiting at 10 per replica" in text
    by_name = {m["name"]: m for m in plan_json(stack)["models"]}
    assert by_name[OLLAMA]["scaling"]["signal"] == "requests"
    assert by_name[IDLE]["routing"] == {"strategy": "round-robin", "reason": "routing.strategy as written"}
    assert "routing: the KEDA HTTP add-on's interceptor forwards to the model's Service, which picks the pod" in text
    assert by_name[OLLAMA]["routing"]["strategy"] is None, "no picker reads Ollama, and the interceptor is in front"


# ---- what still cannot work is refused at its key --------------------------------------------------------


def test_ollama_on_the_request_count_without_a_route_is_refused_naming_the_route(frontdoor):
    sections, i = with_scaling(frontdoor, OLLAMA, owner="keda", minReplicas=1, maxReplicas=2)
    sections["models"][i]["expose"] = False
    refused(sections, f"models[{i}].autoscaling.owner", "front-door route", "expose: false")


def test_signal_requests_with_an_hpa_is_refused(frontdoor):
    sections, i = with_scaling(frontdoor, IDLE, owner="hpa", minReplicas=1, maxReplicas=2, signal="requests")
    refused(sections, f"models[{i}].autoscaling.signal", "only KEDA", "owner: keda")


def test_signal_without_an_autoscaler_is_refused(frontdoor):
    sections, i = with_scaling(frontdoor, "mistral-tgi", owner="none", signal="gauge")
    refused(sections, f"models[{i}].autoscaling.signal", "remove signal")


def test_signal_gauge_on_an_engine_without_one_is_refused(frontdoor):
    sections, i = with_scaling(frontdoor, OLLAMA, owner="keda", minReplicas=1, maxReplicas=2, signal="gauge")
    refused(sections, f"models[{i}].autoscaling.signal", "exports no Prometheus metrics")


def test_an_hpa_on_ollama_is_refused_pointing_at_the_request_count(frontdoor):
    sections, i = with_scaling(frontdoor, OLLAMA, owner="hpa", minReplicas=1, maxReplicas=2)
    refused(sections, f"models[{i}].autoscaling.owner", "owner: keda", "count of its requests")


@pytest.mark.parametrize(("key", "value"), [("targetValue", "4"), ("metric", "vllm:num_requests_waiting")])
def test_the_gauges_keys_on_a_model_that_scales_on_requests_are_refused_not_dropped(frontdoor, key, value):
    sections, i = with_scaling(frontdoor, OLLAMA, owner="keda", minReplicas=0, maxReplicas=2, **{key: value})
    refused(sections, f"models[{i}].autoscaling.{key}", "requests.targetValue")


# ---- the numbers an autoscaler accepts ---------------------------------------------------------------------


@pytest.mark.parametrize("target", [0, INT32_MAX + 1])
def test_a_request_target_outside_the_crds_int32_from_one_is_refused_at_its_key(frontdoor, target):
    sections, i = with_scaling(
        frontdoor, OLLAMA, owner="keda", minReplicas=0, maxReplicas=2, requests={"targetValue": target}
    )
    assert has(problems(sections), f"models[{i}].autoscaling.requests.targetValue")


@pytest.mark.parametrize(("owner", "target"), [("hpa", "0"), ("keda", "0"), ("keda", "0.0005"), ("aibrix", "0.0")])
def test_a_gauge_target_the_hpa_or_keda_would_turn_into_zero_is_refused(frontdoor, owner, target):
    sections, i = with_scaling(frontdoor, IDLE, owner=owner, minReplicas=1, maxReplicas=2, targetValue=target)
    if owner == "aibrix":
        sections["addons"]["aibrix"] = {"enabled": True}
    found = problems_of(sections)
    assert has(found, f"models[{i}].autoscaling.targetValue", "not positive"), found


def test_a_small_positive_gauge_target_is_accepted_by_an_hpa_and_by_keda_from_a_thousandth(frontdoor):
    for owner, target in (("hpa", "0.0005"), ("keda", "0.001")):
        sections, i = with_scaling(frontdoor, IDLE, owner=owner, minReplicas=1, maxReplicas=2, targetValue=target)
        assert not has(problems_of(sections), f"models[{i}].autoscaling.targetValue"), (owner, target)


def test_more_min_than_max_replicas_is_refused_naming_the_autoscaling_key(frontdoor):
    sections, i = with_scaling(frontdoor, IDLE, owner="keda", minReplicas=3, maxReplicas=2)
    found = problems(sections)
    assert any(f"models[{i}].autoscaling" in p and "maxReplicas" in p for p in found), found


def test_idle_seconds_and_requests_where_nothing_reads_them_are_warned(frontdoor):
    sections, i = with_scaling(
        frontdoor, IDLE, owner="keda", minReplicas=1, maxReplicas=2, idleSeconds=600, requests={"targetValue": 8}
    )
    warned = warnings_of(sections)
    assert has(warned, f"models[{i}].autoscaling.idleSeconds", "no effect")
    assert has(warned, f"models[{i}].autoscaling.requests", "no effect")


@pytest.mark.schemas
def test_the_windows_and_polling_the_platform_sets_are_within_what_kedas_crd_accepts():
    assert SCHEMAS is not None
    crd = yaml.safe_load((SCHEMAS / "keda/v2.20.2/crds/keda.sh_scaledobjects.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    behavior = spec["advanced"]["properties"]["horizontalPodAutoscalerConfig"]["properties"]["behavior"]
    window = behavior["properties"]["scaleDown"]["properties"]["stabilizationWindowSeconds"]
    assert "3600" in window["description"], "KEDA's CRD documents the HPA's 0..3600 s window"
    for rules in keda_builders.HPA_BEHAVIOR.values():
        assert 0 <= rules["stabilizationWindowSeconds"] <= 3600
    least_idle = Autoscaling.model_fields["idle_seconds"].metadata[0].ge
    assert least_idle > keda_builders.POLLING_SECONDS, "KEDA polls more often than the shortest cooldown"


# ---- the routing default, pinned in docs and behaviour together -----------------------------------------


def test_a_vllm_model_that_scales_to_zero_is_round_robin_and_the_docs_say_why(frontdoor):
    sections, i = with_scaling(frontdoor, IDLE, owner="keda", minReplicas=0, maxReplicas=2)
    sections["models"][i].pop("routing", None)
    routing = resolved_model(resolved_stack(sections), IDLE).routing
    assert routing is not None and (routing.strategy, routing.picker) == ("round-robin", False)
    assert routing.reason == INTERCEPTOR_ROUND_ROBIN and "forwards to the model's Service" in routing.reason
    sections["models"][i]["autoscaling"]["minReplicas"] = 1
    awake = resolved_model(resolved_stack(sections), IDLE)
    assert awake.routing is not None and awake.routing.strategy == "prefix-cache"
    reference = (ROOT / "docs" / "reference" / "stack-file.md").read_text()
    guide = " ".join((ROOT / "docs" / "operator-guide.md").read_text().split())
    assert "prefix-cache, except round-robin for a model that scales to zero, because" in reference
    assert "The default is prefix-cache, except round-robin for a model that scales to zero, because" in guide


def test_a_teams_model_on_the_request_count_needs_its_platforms_http_add_on_but_no_prometheus():
    sections = sections_of(TEAM)
    sections["models"][0]["autoscaling"] = {"owner": "keda", "minReplicas": 1, "maxReplicas": 2, "signal": "requests"}
    sections["models"][0].pop("routing", None)
    live = platform_exports()
    no_prometheus = copy.deepcopy(live)
    no_prometheus.pop("prometheus")
    for model in sections["models"]:
        model.pop("slo", None)
        model.pop("benchmark", None)
    found = problems_of_on(sections, live_platform(no_prometheus))
    assert not [p for p in found if "models[0].autoscaling" in p], found
    off = copy.deepcopy(live)
    off["addons"]["kedaHttp"] = False
    found = problems_of_on(sections, live_platform(off))
    assert has(found, "models[0].autoscaling.signal", "interceptor", "addons.kedaHttp"), found


def problems_of_on(sections: dict[str, Any], platforms: Any) -> list[str]:
    try:
        check_sections(sections, "us-west-2", platforms=platforms)
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_an_unset_routing_that_resolves_to_round_robin_is_warned_at_the_routing_key(frontdoor):
    sections, i = with_scaling(frontdoor, IDLE, owner="keda", minReplicas=0, maxReplicas=2)
    sections["models"][i].pop("routing", None)
    assert has(warnings_of(sections), f"models[{i}].routing", "round-robin", "not prefix-cache")
    assert not has(warnings_of(frontdoor), f"models[{i}].routing"), "written round-robin: nothing to say"
