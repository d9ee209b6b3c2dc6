"""Issue 15, groups of pods across nodes: a replica of `nodesPerReplica` > 1 is one LeaderWorkerSet
group (components/engines/group.py), sized per node, wired with each engine's own multi-node flags,
and refused before any resource when the engine, the model's heads, the pool or its EFA cannot hold it.
Built from a ResolvedStack directly (milliseconds), like the other engine tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stacks.conformance import schema_dir, validate_custom
from stacks.exports import resolve_pool
from stacks.pipeline import check_sections
from stacks.resolved import LWS_WORKER_INDEX
from tests.conftest import DEV, sections_of
from tests.engines_helpers import flag, objects, stack_of
from tests.guard_support import has, problems, problems_of

H100 = {
    "name": "h100",
    "accelerator": "nvidia",
    "instanceTypes": ["p5.48xlarge"],
    "capacityTypes": ["on-demand"],
    "amiAlias": "al2023@latest",
    "rootVolumeGiB": 2000,
    "efa": True,
    "limits": {"accelerators": 32},
}
LLAMA_405B = {
    "name": "llama-405b",
    "engine": "vllm",
    "model": "meta-llama/Llama-3.1-405B-Instruct",
    "revision": "069992c75aed59df00ec06c17177e76c63296a26",
    "pool": "h100",
    "acceleratorsPerReplica": 16,
    "nodesPerReplica": 2,
    "parallelism": {"tensor": 8, "pipeline": 2},
    "parameters": "405B",
    "dtype": "bf16",
    "maxModelLen": 8192,
}


def with_group(model: dict[str, Any] | None = None, pool: dict[str, Any] | None = None) -> dict[str, Any]:
    sections = sections_of(DEV)
    sections["nodePools"] = [*sections["nodePools"], copy.deepcopy(pool or H100)]
    sections["models"] = [*sections["models"], copy.deepcopy(model or LLAMA_405B)]
    return sections


def lws_of(sections: dict[str, Any], name: str = "llama-405b") -> dict[str, Any]:
    return objects(stack_of(sections), name)["LeaderWorkerSet"]


def _engine(template: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in template["spec"]["containers"] if c["name"] == "engine")


@pytest.mark.schemas
def test_llama_405b_on_two_p5_nodes_is_one_leaderworkerset_group_of_two_pods_with_8_gpus_and_the_efa_devices():
    stack = stack_of(with_group())
    served = next(m for m in stack.models if m.name == "llama-405b")
    assert served.workload == ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llama-405b"), (
        "the scale target is the LWS (its scale subresource counts groups)"
    )
    assert served.pool.efa_per_node > 0, "p5.48xlarge with efa: true offers EFA devices"
    objs = objects(stack, "llama-405b")
    lws = objs["LeaderWorkerSet"]
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2, "one replica = one group of nodesPerReplica pods"
    assert t["restartPolicy"] == "RecreateGroupOnPodRestart", "a collective cannot lose one rank and go on"
    assert lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {"maxSurge": 0, "maxUnavailable": 1}
    for template in (t["leaderTemplate"], t["workerTemplate"]):
        res = _engine(template)["resources"]
        assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "8", "8 GPUs per node"
        efa = str(served.pool.efa_per_node)
        assert res["requests"]["vpc.amazonaws.com/efa"] == res["limits"]["vpc.amazonaws.com/efa"] == efa
        assert not any(k.startswith("hugepages") for k in res["requests"]), "Karpenter does not model hugepages"
        env = {e["name"]: e.get("value") for e in _engine(template)["env"]}
        assert env["FI_PROVIDER"] == "efa"
    root = schema_dir()
    assert root is not None, "INFERENCE_PLATFORM_SCHEMAS must point at the shared schemas"
    assert validate_custom(lws, root) == [], "the LWS must validate against the v0.10.0 CRD"


def test_vllm_group_runs_the_mp_launcher_with_the_leader_address_and_headless_workers():
    t = lws_of(with_group())["spec"]["leaderWorkerTemplate"]
    leader, worker = _engine(t["leaderTemplate"])["args"], _engine(t["workerTemplate"])["args"]
    for args in (leader, worker):
        assert flag(args, "--tensor-parallel-size") == "8" and flag(args, "--pipeline-parallel-size") == "2"
        assert flag(args, "--nnodes") == "2" and flag(args, "--node-rank") == "$(LWS_WORKER_INDEX)"
        assert flag(args, "--master-addr") == "$(LWS_LEADER_ADDRESS)", "LWS's leader DNS name, no .svc suffix"
        assert flag(args, "--distributed-executor-backend") == "mp", "vLLM 0.29 allows nnodes > 1 only with mp"
    assert "--headless" in worker and "--headless" not in leader, "only the leader runs the API server"


def test_only_the_leader_is_probed_served_and_scraped_and_workers_follow_it_into_its_zone():
    sections = with_group()
    stack = stack_of(sections)
    objs = objects(stack, "llama-405b")
    t = objs["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]
    leader, worker = _engine(t["leaderTemplate"]), _engine(t["workerTemplate"])
    assert "readinessProbe" in leader and "startupProbe" in leader
    assert "readinessProbe" not in worker and "ports" not in worker, "headless workers serve no HTTP"
    assert objs["Service"]["spec"]["selector"][LWS_WORKER_INDEX] == "0", "the Service reaches leaders only"
    served = next(m for m in stack.models if m.name == "llama-405b")
    assert served.metrics_selector[LWS_WORKER_INDEX] == "0", "only leaders export metrics"
    assert "prometheus.io/scrape" not in t["workerTemplate"]["metadata"].get("annotations", {})
    (term,) = t["workerTemplate"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "topology.kubernetes.io/zone", "EFA does not cross an Availability Zone"
    assert term["matchLabelKeys"] == ["leaderworkerset.sigs.k8s.io/group-key"], "its own group's leader"
    assert "leaderworkerset.sigs.k8s.io/exclusive-topology" not in objs["LeaderWorkerSet"]["metadata"].get(
        "annotations", {}
    ), "exclusive topology on the zone key would allow one group per zone"


def test_a_multi_node_model_installs_leaderworkerset_even_when_the_addon_is_off():
    stack = stack_of(with_group())
    assert stack.platform.addons.lws.enabled, "LWS objects need the LWS controller and CRD"
    assert not stack_of(sections_of(DEV)).platform.addons.lws.enabled


def test_sglang_group_passes_the_total_tp_and_the_dist_init_address():
    model = LLAMA_405B | {"name": "llama-sgl", "engine": "sglang", "parallelism": {}}
    t = lws_of(with_group(model), "llama-sgl")["spec"]["leaderWorkerTemplate"]
    args = _engine(t["workerTemplate"])["args"]
    assert flag(args, "--tp-size") == "16", "SGLang's --tp spans the whole group"
    assert flag(args, "--nnodes") == "2" and flag(args, "--node-rank") == "$(LWS_WORKER_INDEX)"
    assert flag(args, "--dist-init-addr") == "$(LWS_LEADER_ADDRESS):20000"


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"parallelism": {"tensor": 8, "pipeline": 4}}, "models[2].parallelism", ("llama-405b", "h100", "32", "16")),
        ({"acceleratorsPerReplica": 15, "parallelism": {}}, "models[2].acceleratorsPerReplica", ("15", "2 nodes")),
        (
            {"engine": "tgi", "tgi": {"acceptMaintenanceMode": True}},
            "models[2].nodesPerReplica",
            ("tgi", "one machine"),
        ),
        ({"engine": "ollama", "model": "llama3.1:405b"}, "models[2].nodesPerReplica", ("ollama", "one machine")),
    ],
)
def test_a_group_the_engine_or_pool_cannot_hold_is_refused_naming_the_key(change, key, words):
    found = problems(with_group(LLAMA_405B | change))
    assert has(found, key, *words), found


def test_a_group_on_a_pool_that_also_allows_smaller_types_is_refused_naming_them():
    pool = H100 | {"instanceTypes": ["p5.48xlarge", "g6.12xlarge"]}
    found = problems(with_group(pool=pool))
    assert has(found, "models[2].nodesPerReplica", "8 accelerators", "g6.12xlarge"), found


def test_a_tensor_size_that_does_not_divide_the_heads_is_refused_on_one_node_too():
    model = {k: v for k, v in LLAMA_405B.items() if k not in ("parameters", "dtype")}
    model |= {"nodesPerReplica": 1, "acceleratorsPerReplica": 6, "parallelism": {}}
    found = problems(with_group(model))
    assert has(found, "models[2].acceleratorsPerReplica", "6", "128 attention heads", "vLLM 0.29"), found


def test_a_group_on_a_pool_without_efa_is_refused_unless_tcp_is_accepted():
    pool = H100 | {"efa": False}
    found = problems(with_group(pool=pool))
    assert has(found, "models[2].pool", "llama-405b", "h100", "98 s", "allowTcp"), found
    assert resolve_pool_efa(pool) == 0
    stack_of(with_group(LLAMA_405B | {"allowTcp": True}, pool))


def resolve_pool_efa(pool: dict[str, Any]) -> int:
    from stacks.config.pools import NodePoolSection

    return resolve_pool(NodePoolSection.model_validate(pool), None).efa_per_node


def test_pool_limits_must_admit_one_whole_group():
    found = problems(with_group(pool=H100 | {"limits": {"accelerators": 8}}))
    assert any("llama-405b" in p and "h100" in p for p in found), found


def test_plan_shows_the_group_as_nodes_times_gpus_per_node():
    from stacks.pipeline import check_sections
    from stacks.plan import plan

    text = plan(check_sections(with_group(), "us-west-2"))
    assert "group of 2 nodes x 8 GPUs (tensor 8 x pipeline 2)" in text, text


def test_a_group_rollout_replaces_whole_groups_one_at_a_time_unless_the_stack_allows_a_surge():
    strategy = lws_of(with_group())["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    assert strategy == {"maxSurge": 0, "maxUnavailable": 1}, "no second set of GPUs by default"
    surging = with_group({**LLAMA_405B, "rollout": {"maxSurge": 1}})
    strategy = lws_of(surging)["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    assert strategy == {"maxSurge": 1, "maxUnavailable": 0}, "with room for a surge group, nothing stops early"
    deployment = objects(stack_of(with_group()), "qwen3-8b")["Deployment"]
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}


def test_a_surge_the_pools_limits_cannot_hold_is_refused_at_its_key():
    # 32 accelerators hold one 16-GPU group plus one surge group, not two surge groups.
    check_sections(with_group({**LLAMA_405B, "rollout": {"maxSurge": 1}}), "us-west-2")  # accepted
    found = problems(with_group({**LLAMA_405B, "rollout": {"maxSurge": 2}}))
    assert has(found, "models[2].rollout.maxSurge", "llama-405b", "1 + 2 replicas", "48 accelerators", "32"), found


def test_a_neuron_parallelism_other_than_the_replicas_neuroncores_is_refused_and_the_cores_are_accepted():
    """neuron-vllm's tensor-parallel degree is the NeuronCores of its devices (4 inf2 devices = 8 cores):
    `tensor: 4` would silently run 8, and `tensor: 8` is exactly what runs."""
    sections = sections_of(DEV)
    neuron = sections["models"][1]
    assert neuron["engine"] == "neuron-vllm" and neuron["acceleratorsPerReplica"] == 4
    neuron["parallelism"] = {"tensor": 4}
    found = problems(sections)
    assert has(found, "models[1].parallelism", "8 NeuronCores", "tensor 8 x pipeline 1", "NeuronCores of"), found
    neuron["parallelism"] = {"tensor": 8, "pipeline": 1}
    assert not [p for p in problems_of(sections) if "models[1].parallelism" in p], "the cores are what runs"


@pytest.mark.parametrize(
    ("engine", "extra", "words"),
    [
        ("tgi", {"tgi": {"acceptMaintenanceMode": True}}, ("--num-shard", "tensor 4 x pipeline 1")),
        ("ollama", {"model": "qwen3:8b"}, ("Ollama", "tensor 4 x pipeline 1")),
    ],
)
def test_parallel_sizes_an_engine_does_not_take_are_refused_naming_what_it_runs(engine, extra, words):
    sections = sections_of(DEV)
    model = sections["models"][0]
    model.update({"engine": engine, "acceleratorsPerReplica": 4, "parallelism": {"tensor": 2, "pipeline": 2}, **extra})
    for key in ("routing", "autoscaling", "slo", "parameters", "dtype", "revision"):
        model.pop(key, None)
    found = problems_of(sections)
    assert has(found, "models[0].parallelism", *words), found


def test_a_group_that_strands_accelerators_on_the_nodes_it_owns_is_refused_with_the_node_count_that_fits():
    """8 GPUs over 2 p5 nodes (8 GPUs each): each pod owns its node and uses 4, so 8 stay idle and one node
    would hold the whole replica."""
    model = LLAMA_405B | {"acceleratorsPerReplica": 8, "parallelism": {}, "parameters": "70B"}
    found = problems(with_group(model))
    assert has(found, "models[2].nodesPerReplica", "4 of each node's 8", "nodesPerReplica: 1", "16"), found
