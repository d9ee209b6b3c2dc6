"""A team's quota holds what the platform runs in the team's namespaces besides the serving pods: the
acceptance Job, the benchmark Job and CronJob, the KV-cache tier pruner, the Neuron compile Job and a
streamed model's fill Job (stacks/resolve/helpers.py), each with the requests its builder renders, and
the preparation init containers of the serving pods themselves (stacks/rules/quota.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from policypack import validators as v
from stacks.errors import ConfigError
from stacks.fit import Requests, requests_of
from stacks.helper_pods import pod_requests
from stacks.load import ROOT
from stacks.pipeline import check_sections, stack_warnings
from stacks.quantity import mebibytes, millicores
from stacks.rules.quota import serving_load
from tests.builders import resolved_stack
from tests.conftest import rendered_stack, sections_of, team_quota
from tests.test_policies import res, stack, violations

EXAMPLES = ROOT / "stacks" / "examples"
TEAM = EXAMPLES / "Pulumi.team-search.yaml"
POD_KINDS = {
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _pod(inputs: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        inputs = inputs[key]
    return inputs


def _quota_part(r: Requests) -> tuple[int, ...]:
    return (r.cpu_m, r.memory_mib, r.ephemeral_mib, r.gpu, r.neuron, r.gpu_shared, r.mig)


@pytest.mark.parametrize(
    "example",
    [
        "Pulumi.engines.yaml",
        "Pulumi.sharing.yaml",
        "Pulumi.storage-fsx.yaml",
        "Pulumi.frontdoor.yaml",
        "Pulumi.team-chat.yaml",
    ],
)
def test_every_helper_pod_in_a_model_namespace_is_a_resolved_fact_with_the_requests_it_renders(example):
    """One source: each rendered Job and CronJob in a model's namespace is one helper pod of the resolved
    stack, asking exactly what the quota rules count (the acceptance and benchmark Jobs, the scheduled
    benchmark, the KV-tier pruner, the Neuron compile Job, the bucket fill Job are among these examples)."""
    seen = resolved_stack(sections_of(EXAMPLES / example))
    namespaces = {m.namespace for m in seen.models}
    mocks = rendered_stack(EXAMPLES / example).mocks
    rendered = Counter(
        (r.inputs["metadata"]["namespace"], _quota_part(pod_requests(_pod(r.inputs, path))))
        for typ, path in POD_KINDS.items()
        for r in mocks.of_type(typ)
        if r.inputs["metadata"]["namespace"] in namespaces
    )
    # The picker is a Helm release, not a Job (the next test holds it to its release's values).
    jobs = [h for m in seen.models for h in m.helpers if h.kind != "endpoint-picker"]
    resolved = Counter((h.namespace, _quota_part(h.requests)) for h in jobs)
    assert rendered == resolved, f"rendered helper pods {rendered} are not the resolved ones {resolved}"


def test_the_examples_resolve_each_helper_kind_the_quota_rules_count():
    kinds = {
        h.kind
        for example in ("engines", "sharing", "storage-fsx", "frontdoor", "team-chat")
        for m in resolved_stack(sections_of(EXAMPLES / f"Pulumi.{example}.yaml")).models
        for h in m.helpers
    }
    assert kinds == {
        "acceptance",
        "benchmark",
        "benchmark-schedule",
        "kv-prune",
        "neuron-compile",
        "bucket-fill",
        "endpoint-picker",
    }


@pytest.mark.parametrize("example", ["Pulumi.team-search.yaml", "Pulumi.team-chat.yaml", "Pulumi.engines.yaml"])
def test_each_endpoint_picker_release_in_a_model_namespace_asks_what_its_helper_fact_says(example):
    """The picker is a Helm release (one pod: the chart's router.epp.replicas 1), so its pod's requests are
    the release's `router.epp.resources`: one picker helper per release, in the same namespace, asking them."""
    seen = resolved_stack(sections_of(EXAMPLES / example))
    pickers = Counter(
        (h.namespace, _quota_part(h.requests)) for m in seen.models for h in m.helpers if h.kind == "endpoint-picker"
    )
    releases = [
        r.inputs
        for r in rendered_stack(EXAMPLES / example).mocks.of_type("kubernetes:helm.sh/v3:Release")
        if "llm-d-router-standalone" in str(r.inputs.get("chart"))
    ]
    rendered = Counter(
        (r["namespace"], _quota_part(requests_of(r["values"]["router"]["epp"]["resources"]))) for r in releases
    )
    assert rendered == pickers and pickers, (rendered, pickers)
    assert all("replicas" not in r["values"]["router"]["epp"] for r in releases), "the chart's one replica"


@pytest.mark.parametrize("example", ["Pulumi.engines.yaml", "Pulumi.team-search.yaml", "Pulumi.storage-fsx.yaml"])
def test_a_serving_pod_is_charged_what_its_rendered_pod_asks_its_init_containers_included(example):
    seen = resolved_stack(sections_of(EXAMPLES / example))
    mocks = rendered_stack(EXAMPLES / example).mocks
    deployments = {r.inputs["metadata"]["name"]: r.inputs for r in mocks.of_type("kubernetes:apps/v1:Deployment")}
    checked = 0
    for model in seen.models:
        served = deployments.get(model.workload[2]) if model.workload[1] == "Deployment" else None
        if served is None or served["metadata"]["namespace"] != model.namespace:
            continue
        got = pod_requests(served["spec"]["template"]["spec"])
        assert _quota_part(got) == _quota_part(model.charged_serving_pod), model.name
        checked += 1
    assert checked, "at least one Deployment compared"


def test_a_small_model_s_pod_is_charged_its_preparation_step_where_that_is_larger():
    """The init containers run before the engine, one at a time: a pod asking less than a preparation step
    (500m, 1Gi) is charged the step's."""
    seen = resolved_stack(sections_of(EXAMPLES / "Pulumi.engines.yaml"))
    model = next(m for m in seen.models if m.prepared)
    assert (model.preparation.cpu_m, model.preparation.memory_mib) == (500, 1024)
    small = next(p for p in model.pods if p.pool)
    tiny = type(small)(**{**small.__dict__, "requests": Requests(cpu_m=100, memory_mib=256)})
    charged = model.charged(tiny)
    assert (charged.cpu_m, charged.memory_mib) == (500, 1024)


# ---- the rules, on a team stack against the example platform ------------------------------------------


def _exact_quota(team: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A quota that holds the team's models at their most replicas exactly (cpu, memory, devices, pods)."""
    roomy = {"cpu": "100000", "memory": "100000Gi", "gpus": 1000, "neuronDevices": 1000, "pods": 10000}
    seen = check_sections(team, "us-west-2", platforms=team_quota(**roomy))
    total, pods = Requests(), 0
    for entry in seen.entries:
        need, n = serving_load(seen, entry, entry.config.most_replicas)
        total, pods = total + need, pods + n
    return {
        "cpu": f"{total.cpu_m}m",
        "memory": f"{total.memory_mib}Mi",
        "gpus": total.gpu,
        "neuronDevices": total.neuron,
        "pods": pods,
        **extra,
    }


def _outcome(team: dict[str, Any], quota: dict[str, Any], name: str = "search") -> tuple[list[str], list[str]]:
    """(refusals, warnings) of the team's stack with the platform declaring this quota for team `name`."""
    platforms = team_quota(name, **quota)
    try:
        checked = check_sections(team, "us-west-2", platforms=platforms)
    except ConfigError as info:
        return [str(p) for p in info.problems], []
    return [], [str(w) for w in stack_warnings(checked)]


def test_a_team_quota_sized_to_its_models_refuses_their_endpoint_picker_which_pulumi_up_waits_for():
    """The picker is a Deployment of its own beside the replicas for as long as they serve, and its Helm
    release waits for it: with no room for its 1 cpu and 1Gi every `pulumi up` fails."""
    team = sections_of(TEAM)
    refused, _ = _outcome(team, _exact_quota(team))
    found = [p for p in refused if p.startswith("inference-platform:models[0].routing:")]
    assert found and "the endpoint picker of qwen3-8b" in found[0] and "`pulumi up` fails" in found[0], refused
    assert "routing.strategy: round-robin" in found[0], "the fix names the key that asks for the picker"


def _unpicked(team: dict[str, Any]) -> dict[str, Any]:
    """The team's models without an endpoint picker (round-robin), so another helper is alone beside them."""
    for model in team["models"]:
        model["routing"] = {"strategy": "round-robin"}
    return team


def test_a_team_quota_sized_to_its_models_warns_that_the_acceptance_jobs_do_not_fit_beside_them():
    team = _unpicked(sections_of(TEAM))
    refused, warned = _outcome(team, _exact_quota(team))
    assert not refused, refused
    found = [w for w in warned if w.startswith("inference-platform:stack.team:") and "requests.cpu" in w]
    assert found, warned
    assert "the acceptance Job of qwen3-8b (inference-platform:models[0].acceptance)" in found[0], found
    assert "the acceptance Job of llama-3-8b-neuron" in found[0], "every helper beside them is named"
    assert any("stack.team" in w and "pods" in w and "acceptance Job" in w for w in warned), "quota.pods too"


def test_a_gated_acceptance_job_that_does_not_fit_beside_the_fewest_replicas_is_refused():
    """`pulumi up` waits for a gated acceptance Job; refused by the API server, the update fails."""
    team = sections_of(TEAM)
    team["models"][0]["acceptance"] = {"gate": True}
    refused, _ = _outcome(team, _exact_quota(team))
    found = [p for p in refused if p.startswith("inference-platform:models[0].acceptance:")]
    assert found and "`pulumi up` fails" in found[0] and "teams[].quota.cpu" in found[0], refused
    assert "acceptance: false" in found[0], "the fix names the key that asks for the Job"


def test_a_team_quota_with_room_for_its_acceptance_jobs_is_neither_refused_nor_warned():
    team = sections_of(TEAM)
    team["models"][0]["acceptance"] = {"gate": True}
    quota = _exact_quota(team)
    roomy = {"cpu": "100000", "memory": "100000Gi", "gpus": 1000, "neuronDevices": 1000, "pods": 10000}
    helpers = [h for m in check_sections(team, "us-west-2", platforms=team_quota(**roomy)).models for h in m.helpers]
    assert {h.kind for h in helpers} == {"acceptance", "endpoint-picker"}
    room = sum((h.requests for h in helpers), Requests())
    quota.update(
        cpu=f"{millicores(quota['cpu']) + room.cpu_m}m",
        memory=f"{mebibytes(quota['memory']) + room.memory_mib}Mi",
        pods=quota["pods"] + len(helpers),
    )
    refused, warned = _outcome(team, quota)
    assert not refused, refused
    assert not [w for w in warned if "stack.team" in w and "teams[].quota" in w], warned


def test_a_compile_job_the_team_s_neuron_devices_cannot_hold_beside_its_replica_is_refused():
    """The compile Job asks the replica's own devices; a new revision compiles while the running replica
    keeps its four, so a quota of exactly one replica's devices fails every such `pulumi up`."""
    team = sections_of(TEAM)
    team["models"][1]["neuron"] = {"compile": "ahead"}
    refused, _ = _outcome(team, _exact_quota(team, cpu="400", memory="2000Gi", pods=50))
    found = [p for p in refused if p.startswith("inference-platform:models[1].neuron.compile:")]
    assert found, refused
    assert "requests.aws.amazon.com/neuron" in found[0] and "teams[].quota.neuronDevices" in found[0], found
    assert "on-start" in found[0], "the fix: let the first replica compile"


def test_a_kv_tier_pruner_beyond_a_quota_sized_to_the_models_is_named_in_the_warning():
    team = sections_of(TEAM)
    model = team["models"][0]
    # Four GPUs a replica: a g6.12xlarge, whose memory holds a CPU tier beside the engine.
    model.update(engine="sglang", acceleratorsPerReplica=4, replicas=1)
    model.update(kvCacheOffload={"cpuGiB": 8, "shared": {"sizeGiB": 50}})
    model.pop("consumers", None)
    team["models"] = [model | {"acceptance": False}]
    _unpicked(team)
    refused, warned = _outcome(team, _exact_quota(team))
    assert not refused, refused
    found = [w for w in warned if "stack.team" in w and "requests.memory" in w]
    assert found and "KV-cache tier pruner (CronJob) of qwen3-8b" in found[0], warned
    assert "models[0].kvCacheOffload.shared" in found[0], found


def test_a_benchmark_pod_larger_than_the_whole_quota_is_refused_at_its_key():
    """guidellm asks 2 cpu and 4Gi: a team whose one small model fits in 1.5 cpu cannot run its benchmark."""
    team = sections_of(TEAM)
    model = team["models"][0] | {
        "resources": {"cpu": "1", "memory": "16Gi"},
        "acceptance": False,
        "benchmark": {"concurrency": [1], "inputTokens": 64, "outputTokens": 16, "requests": 10, "apiKeySecret": "k"},
    }
    team["secrets"]["k"] = {"fromConfig": {"api-key": "hfToken"}}
    team["models"] = [model]
    refused, _ = _outcome(team, {"cpu": "1500m", "memory": "64Gi"})
    found = [p for p in refused if p.startswith("inference-platform:models[0].benchmark:")]
    assert found, refused
    assert "the benchmark Job of qwen3-8b requests 2000m of requests.cpu" in found[0], found
    assert "teams[].quota.cpu" in found[0] and "remove inference-platform:models[0].benchmark" in found[0], found


# ---- the platform's own stack, and the policy pack ----------------------------------------------------


def test_the_platform_runs_no_pod_of_its_own_in_a_team_namespace():
    """The platform's quotas are only on its teams' namespaces, and nothing of the platform stack creates a
    pod there (its key Job runs in litellm, its warm-node placeholders in kube-system as virtual pods): what
    a team's quota holds is its own stack's pods alone."""
    mocks = rendered_stack(EXAMPLES / "Pulumi.platform.yaml").mocks
    quotas = {r.inputs["metadata"]["namespace"] for r in mocks.of_type("kubernetes:core/v1:ResourceQuota")}
    assert quotas == {"search", "chat", "chat-staging"}, quotas
    kinds = (*v.WORKLOADS, v.JOB, v.CRON_JOB, "kubernetes:apps/v1:DaemonSet", "kubernetes:core/v1:Pod")
    inside = [r.name for r in mocks.records if r.type in kinds and r.inputs["metadata"].get("namespace") in quotas]
    assert not inside, inside


def test_the_policy_pack_refuses_a_helper_cron_job_whose_pod_the_quota_cannot_admit():
    cron = rendered_stack(EXAMPLES / "Pulumi.team-chat.yaml").mocks.of_type(v.CRON_JOB)[0]
    quota = rendered_stack(EXAMPLES / "Pulumi.platform.yaml").mocks.named(
        "kubernetes:core/v1:ResourceQuota", "resourcequota-chat-chat-quota"
    )
    pod = res(v.CRON_JOB, cron.inputs, "bench")
    assert not violations(v.replicas_within_team_quota, stack(res(v.RESOURCE_QUOTA, quota.inputs), pod))
    small = {**quota.inputs, "spec": {"hard": {**quota.inputs["spec"]["hard"], "requests.cpu": "1"}}}
    found = violations(v.replicas_within_team_quota, stack(res(v.RESOURCE_QUOTA, small), pod))
    assert any("requests.cpu" in m and cron.inputs["metadata"]["name"] in m for m in found), found


def test_every_pod_of_a_multi_node_replica_is_counted_against_the_quota():
    """A group across two nodes is a leader and a worker pod, each with its accelerators: both are charged."""
    seen = resolved_stack(sections_of(EXAMPLES / "Pulumi.multinode.yaml"))
    entry = next(e for e in seen.entries if e.config.nodes_per_replica == 2)
    model = seen.placed(entry)
    assert model is not None
    need, pods = serving_load(seen, entry, 1)
    assert pods == 2, "one replica, two pods"
    assert need.gpu == 2 * model.charged_serving_pod.gpu and need.gpu > 0, need


def test_each_team_namespace_is_held_to_the_whole_quota_on_its_own():
    """The platform gives every namespace of a team the whole quota: the chat team's two namespaces, each
    within it, are not warned though together they are over it."""
    team = sections_of(EXAMPLES / "Pulumi.team-chat.yaml")
    seen = check_sections(team, "us-west-2", platforms=team_quota("chat", cpu="1000", memory="1000Gi", gpus=100))
    per_namespace: dict[str, Requests] = {}
    for entry in seen.entries:
        need, _ = serving_load(seen, entry, entry.config.most_replicas)
        placed = seen.placed(entry)
        assert placed is not None
        helpers = sum((h.requests for h in placed.helpers), Requests())
        per_namespace[entry.namespace] = per_namespace.get(entry.namespace, Requests()) + need + helpers
    assert set(per_namespace) == {"chat", "chat-staging"}
    largest = max(per_namespace.values(), key=lambda r: r.cpu_m)
    together = sum(per_namespace.values(), Requests())
    quota = {"cpu": f"{largest.cpu_m}m", "memory": f"{largest.memory_mib}Mi", "gpus": largest.gpu}
    assert together.cpu_m > largest.cpu_m
    refused, warned = _outcome(team, quota, "chat")
    assert not refused, refused
    assert not [w for w in warned if "stack.team" in w and "teams[].quota" in w], warned


def test_a_rollout_surge_beside_the_most_replicas_is_counted_in_the_warning():
    """At the autoscaler's maximum a rollout still starts its surge pod first: a quota of exactly the most
    replicas' GPUs is warned (the surge beside the fewest fits, so nothing is refused)."""
    team = sections_of(TEAM)
    gpu_model = team["models"][0]
    gpu_model["autoscaling"] = {"owner": "keda", "minReplicas": 1, "maxReplicas": 2}
    quota = _exact_quota(team, cpu="400", memory="2000Gi", pods=50)
    gpu_model["rollout"] = {"maxSurge": 1}
    refused, warned = _outcome(team, quota)
    assert not refused, refused
    assert any("stack.team" in w and "teams[].quota.gpus" in w and "all replicas together" in w for w in warned), warned


def test_stacks_plan_lists_each_model_s_helper_pods_with_what_they_ask():
    from stacks.plan import plan, plan_json

    seen = resolved_stack(sections_of(EXAMPLES / "Pulumi.storage-fsx.yaml"))
    text = plan(seen)
    assert "helper: the Neuron compile Job of llama-3-8b-neuron (awaited by pulumi up" in text, text
    assert "neuron 4" in text.split("helper: the Neuron compile Job", 1)[1].splitlines()[0]
    neuron = next(m for m in plan_json(seen)["models"] if m["name"] == "llama-3-8b-neuron")
    compile_job = next(h for h in neuron["helpers"] if h["kind"] == "neuron-compile")
    assert compile_job["key"] == "inference-platform:models[1].neuron.compile" and compile_job["awaited"]
    assert compile_job["requests"]["neuron"] == 4


def test_a_team_model_s_graph_profiling_is_warned_as_charged_to_the_quota_but_not_counted():
    """The operator sizes the profiling Jobs, so their requests are not the platform's to count: said, not
    guessed (components/engines/dynamo.py warnings)."""
    from components.engines import ENGINES
    from stacks.config.models import DynamoGraph

    seen = resolved_stack(sections_of(TEAM))
    entry = seen.entries[0]
    graph = DynamoGraph.model_validate({"requestProfiling": True, "profileConcurrency": 4})
    profiled = replace(entry, config=entry.config.model_copy(update={"dynamo": graph}))
    engine = next(spec for spec in ENGINES.values() if spec.warnings.__module__.endswith(".dynamo"))
    [problem] = list(engine.warnings(profiled, seen))
    assert str(problem).startswith("inference-platform:models[0].dynamo.requestProfiling:"), problem
    assert "team search's quota" in str(problem) and "not counted" in str(problem)
