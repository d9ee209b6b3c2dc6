"""KEDA as a model's autoscaling owner (issue 17, item 1): one ScaledObject per workload on a
cluster-total Prometheus query of the engine's queue gauge with a per-replica threshold; targets a
Deployment, a LeaderWorkerSet or a Dynamo graph's scaling adapter; KEDA installed beside
prometheus-adapter; one owner per workload, including the pairs KEDA's webhook cannot see; every
refusal names its key."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.autoscaling.keda import SCALED_REF_KINDS, keda_values, scaled_objects
from stacks import conformance
from stacks.errors import ConfigError
from stacks.exports import export_platform
from stacks.load import ROOT
from stacks.pipeline import PlatformLookup, check_sections
from stacks.resolved import KEDA_NAMESPACE
from tests.builders import by_kind, engine_objects, resolved_model, resolved_stack
from tests.conftest import live_platform, rendered_stack, sections_of
from tests.serving_support import SCHEMAS
from tests.test_multinode_example import MULTINODE
from tests.test_stack_roles import platform_exports
from tests.test_team_wiring import TEAM

P = "inference-platform:"
EXAMPLES_DIR = ROOT / "stacks" / "examples"
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def keda(dev: dict[str, Any], index: int = 0, **scaling: Any) -> dict[str, Any]:
    sections = copy.deepcopy(dev)
    model = sections["models"][index]
    model["autoscaling"] = {"owner": "keda", "minReplicas": 1, "maxReplicas": 4, **scaling}
    if scaling.get("minReplicas") == 0:
        model.pop("routing", None)
    return sections


def refusals(sections: dict[str, Any], platforms: PlatformLookup | None = None) -> list[str]:
    with pytest.raises(ConfigError) as err:
        check_sections(sections, "us-west-2", platforms=platforms)
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def only_scaled_object(stack, name: str) -> dict[str, Any]:
    model = resolved_model(stack, name)
    (obj,) = scaled_objects(model, stack.platform.prometheus or "")
    return obj


def valid_custom(obj: dict[str, Any]) -> None:
    assert SCHEMAS is not None
    assert not conformance.unvalidated(obj, SCHEMAS), "the KEDA CRDs are on file"
    assert conformance.validate_custom(obj, SCHEMAS) == []


@pytest.mark.schemas
def test_a_keda_owned_vllm_model_gets_a_scaled_object_on_its_queue_and_no_hpa(dev):
    stack = resolved_stack(keda(dev, targetValue="8"))
    obj = only_scaled_object(stack, "qwen3-8b")
    spec = obj["spec"]
    namespace = resolved_model(stack, "qwen3-8b").namespace
    assert obj["metadata"]["name"] == "qwen3-8b" and obj["metadata"]["namespace"] == namespace
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen3-8b"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, 4)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metadata"]["serverAddress"] == PROMETHEUS
    # A cluster total (KEDA refuses a multi-series result) over the model's own pods, and the threshold
    # per replica (KEDA's default AverageValue divides the total by the replicas).
    assert trigger["metadata"]["query"] == (
        f'sum(vllm:num_requests_waiting{{namespace="{namespace}",inference_platform_io_model="qwen3-8b"}})'
    )
    assert trigger["metadata"]["threshold"] == "8" and "metricType" not in trigger
    assert "cooldownPeriod" not in spec, "cooldown only matters to a model that scales to zero"
    # KEDA's HPA takes the name an `owner: hpa` HPA of this model had, and KEDA may adopt that one: moving
    # from hpa to keda is one pulumi up, not a webhook refusal.
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["name"] == "qwen3-8b"
    assert obj["metadata"]["annotations"] == {"scaledobject.keda.sh/transfer-hpa-ownership": "true"}
    hpa_sections = copy.deepcopy(dev)
    (hpa,) = by_kind(engine_objects(resolved_stack(hpa_sections), "qwen3-8b"), "HorizontalPodAutoscaler")
    assert hpa["metadata"]["name"] == spec["advanced"]["horizontalPodAutoscalerConfig"]["name"]
    valid_custom(obj)
    objects = engine_objects(stack, "qwen3-8b")
    assert not by_kind(objects, "HorizontalPodAutoscaler"), "KEDA creates and keeps its own HPA"
    (deployment,) = by_kind(objects, "Deployment")
    assert "replicas" not in deployment["spec"], "the count is KEDA's; pulumi up must not reset it"


def test_sglang_scales_on_its_own_queue_gauge_which_its_flags_turn_on(dev):
    sections = keda(dev)
    model = sections["models"][0]
    model["engine"] = "sglang"
    stack = resolved_stack(sections)
    query = only_scaled_object(stack, "qwen3-8b")["spec"]["triggers"][0]["metadata"]["query"]
    assert query.startswith("sum(sglang:num_queue_reqs{")
    (deployment,) = by_kind(engine_objects(stack, "qwen3-8b"), "Deployment")
    assert "--enable-metrics" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_a_chosen_gauge_is_summed_instead_of_the_queue(dev):
    stack = resolved_stack(keda(dev, metric="vllm:num_requests_running"))
    query = only_scaled_object(stack, "qwen3-8b")["spec"]["triggers"][0]["metadata"]["query"]
    assert query.startswith("sum(vllm:num_requests_running{")


def test_keda_is_installed_beside_prometheus_adapter_with_narrowed_scale_rights(dev):
    # The engines example's vLLM model is KEDA-scaled: its one render, shared by the session.
    render = rendered_stack(EXAMPLES_DIR / "Pulumi.engines.yaml")
    releases = {r["name"]: r for r in render.releases()}
    release = releases["keda"]
    assert release["namespace"] == KEDA_NAMESPACE and release["version"] == "2.20.2"
    assert release["values"] == keda_values()
    values = release["values"]
    # Its metrics server serves external.metrics; the adapter keeps custom.metrics and gets no external rules.
    assert values["metricsServer"]["enabled"] is True
    assert "external" not in releases["prometheus-adapter"]["values"]["rules"]
    kinds = {k["kind"] for k in values["rbac"]["scaledRefKinds"]}
    assert kinds == {"leaderworkersets", "dynamographdeploymentscalingadapters"} and "*" not in kinds
    assert values["rbac"]["scaledRefKinds"] == SCALED_REF_KINDS
    assert any(m["kind"] == "ScaledObject" for m in render.manifests())
    # The platform exports KEDA and the Prometheus its teams' triggers query.
    exports = export_platform(resolved_stack(keda(dev)).platform)
    assert exports["addons"]["keda"] is True and exports["prometheus"] == PROMETHEUS


def test_without_a_keda_model_keda_is_not_installed(dev_render):
    assert "keda" not in {r["name"] for r in dev_render.releases()}


@pytest.mark.schemas
def test_a_multi_node_group_is_scaled_through_the_leader_worker_set(dev):
    sections = sections_of(MULTINODE)
    sections["models"][0]["autoscaling"] = {"owner": "keda", "minReplicas": 1, "maxReplicas": 2}
    sections["models"][0].pop("replicas", None)
    stack = resolved_stack(sections)
    name = sections["models"][0]["name"]
    obj = only_scaled_object(stack, name)
    assert obj["spec"]["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": name,
    }
    # The leaders' metrics only: workers serve no API.
    assert f'inference_platform_io_model="{name}"' in obj["spec"]["triggers"][0]["metadata"]["query"]
    (lws,) = by_kind(engine_objects(stack, name), "LeaderWorkerSet")
    assert "replicas" not in lws["spec"]
    valid_custom(obj)


def dynamo_sections(dev: dict[str, Any], mode: str) -> dict[str, Any]:
    sections = keda(dev, maxReplicas=3)
    model = sections["models"][0]
    model["engine"] = "dynamo"
    model["dynamo"] = {"mode": mode, "backend": "vllm"}
    model.pop("routing", None)
    sections["addons"]["dynamo"] = {"enabled": True}
    model.pop("replicas", None)
    return sections


@pytest.mark.schemas
@pytest.mark.parametrize(("mode", "component"), [("aggregated", "Worker"), ("disaggregated", "DecodeWorker")])
def test_a_dynamo_graph_scales_through_its_scaling_adapter(dev, mode, component):
    stack = resolved_stack(dynamo_sections(dev, mode))
    obj = only_scaled_object(stack, "qwen3-8b")
    adapter = f"qwen3-8b-{component.lower()}"
    assert obj["metadata"]["name"] == adapter
    assert obj["spec"]["scaleTargetRef"] == {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "name": adapter,
    }
    assert obj["spec"]["minReplicaCount"] == 1
    # Dynamo 1.4's queue: the frontend's requests not yet at a worker (queued_requests is deprecated).
    namespace = resolved_model(stack, "qwen3-8b").namespace
    assert obj["spec"]["triggers"][0]["metadata"]["query"] == (
        f'sum(dynamo_frontend_stage_requests{{namespace="{namespace}",inference_platform_io_model="qwen3-8b",'
        'stage=~"preprocess|route|dispatch"})'
    )
    valid_custom(obj)
    (graph,) = by_kind(engine_objects(stack, "qwen3-8b"), "DynamoGraphDeployment")
    components = {c["name"]: c for c in graph["spec"]["components"]}
    scaled = components[component]
    assert scaled["scalingAdapter"] == {} and "replicas" not in scaled, "the adapter owns the count"
    others = [c for name, c in components.items() if name != component]
    assert all("scalingAdapter" not in c and "replicas" in c for c in others)
    valid_custom(graph)


@pytest.mark.schemas
@pytest.mark.parametrize(
    ("mode", "count", "component"),
    [("disaggregated", {"dynamo": {"decodeWorkers": 2}}, "DecodeWorker"), ("aggregated", {"replicas": 2}, "Worker")],
)
def test_the_worker_count_a_dynamo_graph_asks_for_holds_under_keda(dev, mode, count, component):
    """The operator creates the scaling adapter at one replica; `dynamo.decodeWorkers: 2` (or an aggregated
    graph's `replicas: 2`) is KEDA's floor, so the graph runs two scaled workers, and the fixed prefill
    workers keep their own count."""
    sections = dynamo_sections(dev, mode)
    model = sections["models"][0]
    model["autoscaling"].pop("minReplicas")  # the count asked for is the floor; a second one is refused
    for key, value in count.items():
        model[key] = {**model[key], **value} if isinstance(value, dict) else value
    if mode == "disaggregated":
        model["dynamo"]["prefillWorkers"] = 3
    stack = resolved_stack(sections)
    obj = only_scaled_object(stack, "qwen3-8b")
    assert obj["metadata"]["name"] == f"qwen3-8b-{component.lower()}"
    assert (obj["spec"]["minReplicaCount"], obj["spec"]["maxReplicaCount"]) == (2, 3), "2 workers, never fewer"
    (graph,) = by_kind(engine_objects(stack, "qwen3-8b"), "DynamoGraphDeployment")
    components = {c["name"]: c for c in graph["spec"]["components"]}
    if mode == "disaggregated":
        assert components["PrefillWorker"]["replicas"] == 3, "prefill is not scaled: it runs dynamo.prefillWorkers"
    valid_custom(obj)


@pytest.mark.parametrize(
    ("count", "scaling", "key", "fix"),
    [
        ({"dynamo": {"decodeWorkers": 2}}, {"minReplicas": 1}, "dynamo.decodeWorkers", "drop autoscaling.minReplicas"),
        ({"dynamo": {"decodeWorkers": 4}}, {}, "dynamo.decodeWorkers", "raise autoscaling.maxReplicas to at least 4"),
        ({"replicas": 5}, {}, "replicas", "raise autoscaling.maxReplicas to at least 5"),
    ],
)
def test_a_dynamo_worker_count_keda_could_not_keep_is_refused_naming_the_key(dev, count, scaling, key, fix):
    mode = "disaggregated" if "dynamo" in count else "aggregated"
    sections = dynamo_sections(dev, mode)
    model = sections["models"][0]
    model["autoscaling"].pop("minReplicas")
    model["autoscaling"].update(scaling)
    for name, value in count.items():
        model[name] = {**model[name], **value} if isinstance(value, dict) else value
    problems = [p for p in refusals(sections) if p.startswith(f"{P}models[0].{key}:")]
    assert problems and fix in problems[0], refusals(sections)


@pytest.mark.parametrize(
    ("example", "engine", "operator"),
    [("Pulumi.serving.yaml", "ray-serve", False), ("Pulumi.engines.yaml", "nim", True)],
)
def test_keda_on_an_engine_without_a_scale_subresource_is_refused(example, engine, operator):
    sections = sections_of(EXAMPLES_DIR / example)
    i = next(i for i, m in enumerate(sections["models"]) if m["engine"] == engine)
    sections["models"][i]["autoscaling"] = {"owner": "keda"}
    if operator:  # NIM is a NIMService only with the NIM Operator
        sections["addons"]["nimOperator"] = {"enabled": True}
        sections["models"][i].setdefault("secrets", {})["ngcApiKey"] = "ngc-api-key"
    problems = [p for p in refusals(sections) if "autoscaling.owner" in p]
    assert any(p.startswith(f"{P}models[{i}].autoscaling.owner:") and "no scale subresource" in p for p in problems), (
        problems
    )


def test_nim_without_its_operator_is_a_deployment_keda_scales_on_vllms_queue():
    sections = sections_of(EXAMPLES_DIR / "Pulumi.engines.yaml")
    assert not sections["addons"].get("nimOperator", {}).get("enabled"), "the example runs NIM as a Deployment"
    model = next(m for m in sections["models"] if m["engine"] == "nim")
    model["autoscaling"] = {"owner": "keda", "minReplicas": 1, "maxReplicas": 2}
    stack = resolved_stack(sections)
    obj = only_scaled_object(stack, model["name"])
    assert obj["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": model["name"]}
    assert obj["spec"]["triggers"][0]["metadata"]["query"].startswith("sum(vllm:num_requests_waiting{")
    (deployment,) = by_kind(engine_objects(stack, model["name"]), "Deployment")
    assert "replicas" not in deployment["spec"]


@pytest.mark.parametrize("owner", ["hpa", "aibrix", "none"])
def test_zero_with_any_owner_but_keda_is_refused(dev, owner):
    sections = copy.deepcopy(dev)
    sections["models"][0]["autoscaling"] = {"owner": owner, "minReplicas": 0}
    sections["addons"]["aibrix"] = {"enabled": owner == "aibrix"}
    problems = refusals(sections)
    assert any(p.startswith(f"{P}models[0].autoscaling.minReplicas:") and "owner: keda" in p for p in problems)


def test_a_dynamo_graph_cannot_scale_to_zero(dev):
    sections = dynamo_sections(dev, "aggregated")
    sections["models"][0]["autoscaling"]["minReplicas"] = 0
    assert any("minReplicas" in p and "404" in p for p in refusals(sections))


def test_zero_without_a_route_is_refused(dev):
    sections = keda(dev, minReplicas=0)
    sections["models"][0]["expose"] = False
    assert any("autoscaling.minReplicas" in p and "expose: false" in p for p in refusals(sections))


def test_zero_with_an_endpoint_picker_is_refused_and_the_default_is_round_robin_with_its_reason(dev):
    sections = keda(dev, minReplicas=0)
    sections["models"][0]["routing"] = {"strategy": "prefix-cache"}
    (problem,) = [p for p in refusals(sections) if "routing.strategy" in p]
    assert problem.startswith(f"{P}models[0].routing.strategy:") and "round-robin" in problem
    routing = resolved_model(resolved_stack(keda(dev, minReplicas=0)), "qwen3-8b").routing
    assert routing is not None and routing.strategy == "round-robin" and not routing.picker, (
        "a vLLM model that scales to zero is routed round-robin, said, not silently left without a picker"
    )
    assert "interceptor" in routing.reason, routing.reason


def test_keda_without_a_prometheus_is_refused(dev):
    sections = keda(dev)
    sections["addons"]["monitoring"] = {"enabled": False}
    for model in sections["models"]:
        model.pop("slo", None)
    problems = [p for p in refusals(sections) if "models[0].autoscaling.owner" in p]
    assert problems and "addons.monitoring.enabled: true" in problems[0]


def test_a_team_model_runs_on_its_platforms_keda_and_prometheus():
    sections = sections_of(TEAM)
    name = sections["models"][0]["name"]
    sections["models"][0]["autoscaling"] = {"owner": "keda", "minReplicas": 0, "maxReplicas": 2}
    sections["models"][0].pop("routing", None)
    live = platform_exports()
    assert live["addons"]["keda"] and live["addons"]["kedaHttp"], "the platform example runs both for its teams"
    stack = resolved_stack(sections, exports=live)
    obj = only_scaled_object(stack, name)
    assert obj["spec"]["triggers"][-1]["metadata"]["serverAddress"] == live["prometheus"] == PROMETHEUS
    for key, missing in (("keda", "addons.keda"), ("kedaHttp", "addons.kedaHttp")):
        off = copy.deepcopy(live)
        off["addons"][key] = False
        found = refusals(sections, live_platform(off))
        assert any(missing in p and "platform team" in p for p in found), found
    off = copy.deepcopy(live)
    off.pop("prometheus")
    found = refusals(sections, live_platform(off))
    assert any("models[0].autoscaling.owner" in p and "no Prometheus" not in p and "Prometheus" in p for p in found)


def test_the_catalog_uses_dynamo_1_4s_queue_and_not_the_deprecated_gauges():
    from components.engines import ENGINES

    dynamo = ENGINES["dynamo"].facts.metrics
    names = {m.name for m in dynamo.values()}
    assert not names & {"dynamo_frontend_queued_requests", "dynamo_frontend_inflight_requests"}
    queue = dynamo["queue"]
    assert queue.series() == 'dynamo_frontend_stage_requests{stage=~"preprocess|route|dispatch"}'
    assert dynamo["running"].name == "dynamo_frontend_active_requests"


def test_every_scaled_object_and_its_hpa_name_fit_keda_s_63_character_limit():
    """KEDA's webhook refuses a ScaledObject whose name, or `keda-hpa-<name>`, exceeds 63 characters:
    the longest a model name may be, with the longest adapter suffix, still fits."""
    from components.autoscaling.keda import HPA_PREFIX
    from components.engines.dynamo import ROLE_NAMES
    from stacks.config.models import ModelSection

    longest_name = ModelSection.model_fields["name"].metadata
    most = next(m.max_length for m in longest_name if getattr(m, "max_length", None))
    suffix = max(len("-" + role.lower()) for role in ROLE_NAMES.values())
    assert len(HPA_PREFIX) + most + suffix <= 63, (most, suffix)


def test_a_teams_quota_is_held_to_the_autoscalers_maximum_not_the_unused_replicas():
    from stacks.pipeline import stack_warnings

    sections = sections_of(TEAM)
    gpu_model = next(m for m in sections["models"] if m["pool"] == "gpu")
    gpu_model["replicas"] = 1
    gpu_model["autoscaling"] = {"owner": "keda", "minReplicas": 1, "maxReplicas": 8}
    warned = [f"{p.path}: {p.message}" for p in stack_warnings(check_sections(sections, "us-west-2"))]
    assert any("stack.team" in w and "quota.gpus" in w and "all replicas together" in w for w in warned), warned
