"""Weighted canaries (`models[].canary`): a second Deployment and Service of another revision beside
the model's, weighted on its route, scraped per revision, and refused where it cannot work."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from components.autoscaling.keda import scaled_objects
from components.engines import ENGINES
from components.gateway.routing import backend_grant, http_route
from components.model_servers import model_objects, workload_spec
from components.monitoring.collection import pod_monitor
from components.monitoring.dashboards import engine_dashboard
from stacks.load import ROOT
from stacks.resolved import MODEL_LABEL, REVISION_LABEL, ResolvedModel, ResolvedStack
from tests.builders import resolved_model
from tests.conftest import sections_of
from tests.engines_helpers import example, stack_of
from tests.guard_support import has, problems

CANARY = "5206a32e0bd3067aef1ce90f5528ade7d866253f"
STABLE = "0e9e39f249a16976918f6564b8830bc894c89659"


def with_canary(name: str, **canary: Any) -> dict[str, Any]:
    sections = copy.deepcopy(example())
    model = next(m for m in sections["models"] if m["name"] == name)
    model["canary"] = {"revision": CANARY, "weight": 10, **canary}
    return sections


def objects_of(stack: ResolvedStack, served: ResolvedModel) -> dict[str, dict[str, Any]]:
    spec = workload_spec(served, stack.platform.storage, None, stack.platform.neuron_scheduler, images=stack.images)
    return {o["kind"]: o for o in model_objects(spec)}


@pytest.fixture(scope="module")
def vllm() -> tuple[ResolvedStack, ResolvedModel]:
    stack = stack_of(with_canary("qwen3-8b", revision=CANARY))
    return stack, resolved_model(stack, "qwen3-8b")


def test_a_canary_is_its_own_deployment_and_service_of_the_canary_revision(vllm):
    stack, model = vllm
    assert model.canary is not None
    stable, canary = objects_of(stack, model), objects_of(stack, model.canary)
    assert canary["Deployment"]["metadata"]["name"] == "qwen3-8b-canary"
    assert canary["Service"]["metadata"]["name"] == "qwen3-8b-canary"
    assert canary["Deployment"]["spec"]["replicas"] == 1, "a canary is one fixed replica"
    assert "HorizontalPodAutoscaler" not in canary, "the stable model's scaler never scales the canary"
    # The example's KEDA scales the stable Deployment only, on the stable revision's queue alone.
    assert model.keda_targets == (("apps/v1", "Deployment", "qwen3-8b"),) and model.canary.keda_targets == ()
    (scaled,) = scaled_objects(model, "http://prometheus:9090")
    assert (
        f'inference_platform_io_revision="{model.config.revision}"'
        in scaled["spec"]["triggers"][0]["metadata"]["query"]
    )
    labels = canary["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert labels[MODEL_LABEL] == "qwen3-8b", "policies and the PodMonitor select the canary by the model label"
    assert labels[REVISION_LABEL] == CANARY
    stable_labels = stable["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert stable_labels[REVISION_LABEL] != CANARY


def test_the_stable_service_and_budget_never_select_canary_pods(vllm):
    stack, model = vllm
    assert model.canary is not None
    stable, canary = objects_of(stack, model), objects_of(stack, model.canary)
    canary_pods = canary["Deployment"]["spec"]["template"]["metadata"]["labels"]
    for kind, sel in (
        ("Service", stable["Service"]["spec"]["selector"]),
        ("PodDisruptionBudget", stable["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]),
    ):
        assert not sel.items() <= canary_pods.items(), f"the stable {kind} would select canary pods"
    assert canary["PodDisruptionBudget"]["metadata"]["name"] == "qwen3-8b-canary"


def test_the_canary_prepares_and_serves_its_own_revision(vllm):
    stack, model = vllm
    assert model.canary is not None
    pod = objects_of(stack, model.canary)["Deployment"]["spec"]["template"]["spec"]
    engine = next(c for c in pod["containers"] if c["name"] == "engine")
    assert engine["args"][0].endswith(f"/qwen3-8b/{CANARY}"), "vLLM serves the canary revision's directory"
    prep_env = [e for c in pod.get("initContainers", []) for e in c.get("env", [])]
    assert {"name": "MODEL_REVISION", "value": CANARY} in prep_env, "preparation fetches the canary revision"


def test_the_route_splits_one_rule_by_weight_and_the_grant_covers_both_services(vllm):
    stack, model = vllm
    gw = stack.platform.gateway
    route = http_route(gw, model, stack.route_parent)
    # The model's benchmark measures the stable revision through a pinned rule of its own
    # (tests/test_benchmark_schedule.py); every other rule is the clients' weighted split.
    pinned = f"{model.path_prefix}/-/stable/v1/chat/completions"
    split = [r for r in route["spec"]["rules"] if r["matches"][0]["path"]["value"] != pinned]
    assert len(split) == len(route["spec"]["rules"]) - 1, "one pinned rule, for the benchmark's stable revision"
    for rule in split:
        refs = {r["name"]: r["weight"] for r in rule["backendRefs"]}
        assert refs == {"qwen3-8b": 90, "qwen3-8b-canary": 10}, refs
    assert route["metadata"]["namespace"] == model.namespace, "beside both Services: no grant needed"
    aibrix = replace(stack.route_parent, namespace="aibrix-system", shared=False)
    grant = backend_grant(model, aibrix)
    assert {t["name"] for t in grant["spec"]["to"]} == {"qwen3-8b", "qwen3-8b-canary"}, (
        "on AIBrix's Gateway the route lives in its namespace, and the grant covers both Services"
    )


def test_a_model_without_a_canary_keeps_one_unweighted_backend():
    stack = stack_of(example())
    model = resolved_model(stack, "qwen3-8b")
    rule = http_route(stack.platform.gateway, model, stack.route_parent)["spec"]["rules"][0]
    assert rule["backendRefs"] == [{"kind": "Service", "name": "qwen3-8b", "namespace": "inference", "port": 8000}]


def test_the_frontdoor_example_routes_a_canary_from_its_own_namespace():
    stack = stack_of(sections_of(ROOT / "stacks" / "examples" / "Pulumi.frontdoor.yaml"))
    model = resolved_model(stack, "qwen3-8b-sglang")
    assert model.canary is not None and model.canary.namespace == "chat"
    route = http_route(stack.platform.gateway, model, stack.route_parent)
    assert route["metadata"]["namespace"] == "chat"
    assert {(r["name"], r["namespace"]) for rule in route["spec"]["rules"] for r in rule["backendRefs"]} == {
        ("qwen3-8b-sglang", "chat"),
        ("qwen3-8b-sglang-canary", "chat"),
    }


def test_the_pod_monitor_keeps_the_revision_and_the_dashboard_compares_revisions(vllm):
    _, model = vllm
    monitor = pod_monitor(model)
    assert monitor is not None and REVISION_LABEL in monitor["spec"]["podTargetLabels"]
    board = engine_dashboard("vllm", ENGINES["vllm"].facts)
    assert board is not None
    titles = [p["title"] for p in board["panels"]]
    assert "Canary: stable and canary revisions" in titles
    assert any("inference_platform_io_revision" in t["expr"] for p in board["panels"] for t in p.get("targets", []))


def test_a_nim_canary_runs_as_the_platforms_deployment():
    stack = stack_of(with_canary("llama-nim"))
    model = resolved_model(stack, "llama-nim")
    assert model.canary is not None
    deployment = objects_of(stack, model.canary)["Deployment"]
    env = {e["name"]: e.get("value") for c in deployment["spec"]["template"]["spec"]["containers"] for e in c["env"]}
    assert env["NIM_MODEL_PATH"].endswith(f"/llama-nim/{CANARY}")
    assert model.config.revision == STABLE


@pytest.mark.parametrize(
    ("model", "canary", "key", "words"),
    [
        ("qwen-awq-tgi", {}, "models[3].canary", ("tgi", "cannot run a canary")),
        ("qwen3-8b", {"weight": 0}, "models[0].canary.weight", ()),
        ("qwen3-8b", {"weight": 100}, "models[0].canary.weight", ()),
        ("qwen3-8b", {"revision": "main"}, "models[0].canary.revision", ()),
        (
            "qwen3-8b",
            {"revision": "b968826d9c46dd6066d109eabc6255188de91218"},
            "models[0].canary.revision",
            ("equals",),
        ),
    ],
)
def test_a_canary_that_cannot_work_is_refused_naming_the_key(model, canary, key, words):
    found = problems(with_canary(model, **canary))
    assert has(found, key, *words), found


def test_a_canary_on_the_nim_operator_or_an_unexposed_model_is_refused():
    sections = with_canary("qwen3-8b")
    sections["models"][0]["expose"] = False
    assert has(problems(sections), "models[0].canary", "expose"), "the split lives on the route"
    sections = with_canary("llama-nim")
    sections["addons"]["nimOperator"] = {"enabled": True}
    nim = next(m for m in sections["models"] if m["name"] == "llama-nim")
    nim["secrets"]["ngcApiKey"] = "ngc-api-key"
    assert has(problems(sections), "models[2].canary", "NIM Operator"), problems(sections)


def test_the_team_quota_counts_the_canary_beside_the_replicas():
    from stacks.pipeline import check_sections, stack_warnings
    from tests.conftest import team_quota

    sections = sections_of(ROOT / "stacks" / "examples" / "Pulumi.team-search.yaml")
    sections["models"] = sections["models"][:1]
    two = team_quota(gpus=2)  # exactly qwen3-8b's two replicas

    def warned() -> list[str]:
        return [str(w) for w in stack_warnings(check_sections(sections, "us-west-2", platforms=two))]

    assert not any("quota.gpus" in w for w in warned()), "two replicas fit two GPUs"
    sections["models"][0]["canary"] = {"revision": "0" * 40, "weight": 10}
    assert any("stack.team" in w and "quota.gpus" in w and "Pending" in w for w in warned()), (
        "the canary's GPU is a third one the quota must hold"
    )


def test_a_canary_of_a_model_across_nodes_is_a_second_leaderworkerset_group_of_the_canary_revision():
    from tests.test_engines_groups import LLAMA_405B, with_group

    sections = with_group({**LLAMA_405B, "canary": {"revision": CANARY, "weight": 5}})
    stack = stack_of(sections)
    model = resolved_model(stack, "llama-405b")
    assert model.canary is not None
    stable, canary = objects_of(stack, model), objects_of(stack, model.canary)
    assert stable["LeaderWorkerSet"]["metadata"]["name"] == "llama-405b"
    lws = canary["LeaderWorkerSet"]
    assert lws["metadata"]["name"] == "llama-405b-canary" and lws["spec"]["replicas"] == 1
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2, "the canary is one whole group too"
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    assert leader["metadata"]["labels"][REVISION_LABEL] == CANARY
    assert canary["Service"]["metadata"]["name"] == "llama-405b-canary"
    assert canary["Service"]["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0", "leaders only"
    assert canary["Service"]["spec"]["selector"] != stable["Service"]["spec"]["selector"]


def test_a_canary_the_pools_limits_cannot_hold_beside_a_replica_is_refused_at_its_key():
    from tests.test_engines_groups import H100, LLAMA_405B, with_group

    canaried = {**LLAMA_405B, "canary": {"revision": CANARY, "weight": 5}}
    stack_of(with_group(canaried))  # 32 accelerators: a 16-GPU group and its canary group
    tight = with_group(canaried, {**H100, "limits": {"accelerators": 16}})
    assert has(problems(tight), "models[2].canary", "llama-405b", "32 accelerators", "limit of 16"), problems(tight)
