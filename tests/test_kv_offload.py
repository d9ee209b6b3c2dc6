"""KV-cache offload (`models[].kvCacheOffload`, issue 29 item 1): the engine flags from the one key, the
pod sized for the tier (memory request and limit, vLLM's /dev/shm, the fit and the team quota), the
offload flags reserved in engineArgs, the refusals naming the key, and the dashboard's hits panel."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from components.engines import ENGINES
from components.gateway.picker import values as picker_chart_values
from components.monitoring.dashboards import engine_dashboard
from stacks import offload
from stacks.architectures import ARCHITECTURES
from stacks.load import ROOT
from stacks.pipeline import check_sections
from stacks.sizing import engine_memory_mib, largest_tier_gib, replica_requests
from tests.conftest import sections_of, team_quota
from tests.engines_helpers import engine_container, example, flag, objects, stack_of

from .guard_support import has, problems

PROD = ROOT / "stacks" / "examples" / "Pulumi.prod-70b.yaml"
TEAM = ROOT / "stacks" / "examples" / "Pulumi.team-search.yaml"
GIB = 1024


@pytest.fixture
def prod() -> dict[str, Any]:
    return sections_of(PROD)


def sglang_offloading(cpu_gib: int = 64) -> dict[str, Any]:
    """The engines example's SGLang model on four GPUs (only the pool's g6.12xlarge holds them) with a tier."""
    sections = example()
    model = next(m for m in sections["models"] if m["engine"] == "sglang")
    model |= {"acceleratorsPerReplica": 4, "kvCacheOffload": {"cpuGiB": cpu_gib}}
    return sections


def memory_of(container: dict[str, Any]) -> tuple[str, str]:
    res = container["resources"]
    return res["requests"]["memory"], res["limits"]["memory"]


def mib(quantity: str) -> int:
    return int(quantity[:-2]) * (GIB if quantity.endswith("Gi") else 1)


# ---- the engines' flags from the one key -------------------------------------------------------------


def test_the_shipped_70b_model_offloads_its_kv_cache_with_vllms_native_connector(prod):
    assert prod["models"][0]["kvCacheOffload"] == {"cpuGiB": 256}, "prod-70b ships a model that offloads"
    args = engine_container(objects(stack_of(prod), "llama-70b")["Deployment"])["args"]
    assert flag(args, "--kv-offloading-backend") == "native", args
    # vLLM 0.29 reads --kv-offloading-size as GiB summed over the tensor-parallel ranks: the pod's whole tier.
    assert flag(args, "--kv-offloading-size") == "256", args
    assert "--kv-transfer-config" not in args, "the size flag wires the OffloadingConnector itself"


def test_sglang_gets_its_hierarchical_cache_sized_per_rank_in_gb():
    stack = stack_of(sglang_offloading(64))
    args = engine_container(objects(stack, "qwen3-8b-sglang")["Deployment"])["args"]
    assert "--enable-hierarchical-cache" in args
    # 64 GiB over 4 ranks is 17.18 GB a rank; SGLang takes whole GB per rank, rounded down so the ranks
    # never hold more than the pod is sized for.
    assert flag(args, "--hicache-size") == "17", args
    assert 17 * 4 * 10**9 <= 64 * 2**30


def test_a_model_without_offload_gets_no_offload_flags(prod):
    del prod["models"][0]["kvCacheOffload"]
    args = engine_container(objects(stack_of(prod), "llama-70b")["Deployment"])["args"]
    assert not [a for a in args if "offload" in a or "hicache" in a or "hierarchical" in a], args


# ---- the pod sized for the tier ------------------------------------------------------------------------


def test_the_pods_memory_request_and_limit_hold_the_engine_and_the_whole_tier(prod):
    stack = stack_of(prod)
    model = stack.models[0]
    container = engine_container(objects(stack, "llama-70b")["Deployment"])
    request, limit = memory_of(container)
    assert request == limit, "memory limit equals the request"
    engine = engine_memory_mib(model.config, model.pool.config)
    assert mib(request) == engine + 256 * GIB, (request, engine)
    assert engine >= offload.ENGINE_FLOOR_MIB, "the engine keeps its floor beside the tier"
    bare = prod | {"models": [prod["models"][0] | {"kvCacheOffload": None}]}
    del bare["models"][0]["kvCacheOffload"]
    without = stack_of(bare).models[0].requests.memory_mib
    assert mib(request) > without, "the tier grows the pod's memory"


def test_vllms_dev_shm_holds_the_whole_tier_because_its_cpu_tier_is_a_shared_memory_region(prod):
    pod = objects(stack_of(prod), "llama-70b")["Deployment"]["spec"]["template"]["spec"]
    (shm,) = [v for v in pod["volumes"] if v["name"] == "dshm"]
    assert shm["emptyDir"]["medium"] == "Memory"
    assert mib(shm["emptyDir"]["sizeLimit"]) >= 256 * GIB, shm


def test_a_one_gpu_vllm_model_that_offloads_gets_a_dev_shm_for_its_tier():
    sections = example()
    sections["nodePools"][0]["instanceTypes"] = ["g6.12xlarge"]  # 4 L4, 192 GiB: 48 GiB a GPU
    sections["models"][0]["kvCacheOffload"] = {"cpuGiB": 16}
    pod = objects(stack_of(sections), "qwen3-8b")["Deployment"]["spec"]["template"]["spec"]
    (shm,) = [v for v in pod["volumes"] if v["name"] == "dshm"]
    assert shm["emptyDir"]["sizeLimit"] == f"{16 * GIB}Mi", shm


def test_the_fit_rule_refuses_a_tier_the_node_cannot_hold_naming_the_largest_that_fits(prod):
    prod["models"][0]["kvCacheOffload"] = {"cpuGiB": 4096}
    found = problems(prod)
    assert has(found, "models[0].kvCacheOffload.cpuGiB", "does not fit pool h100", "the largest that fits is"), found
    assert not any(".resources.memory:" in p for p in found), "the fit rule names the tier, not a key never set"
    assert has(found, "models[0].kvCacheOffload.cpuGiB", "fits no instance type", "4096GiB CPU tier"), found
    line = next(p for p in found if "the largest that fits is" in p)
    largest = int(line.split("the largest that fits is ")[1].split()[0])
    prod["models"][0]["kvCacheOffload"] = {"cpuGiB": largest}
    check_sections(prod, "us-west-2")  # the size the message names does fit


def test_the_largest_tier_leaves_the_engine_its_given_memory_and_stays_in_the_pods_part_of_the_node(prod):
    stack = stack_of(prod)
    model, pool = stack.models[0].config, stack.models[0].pool.config
    given = model.model_copy(update={"resources": model.resources.model_copy(update={"memory": "1500Gi"})})
    largest = largest_tier_gib(given, pool)
    assert 0 < largest < 2048 - 1500, largest
    prod["models"][0]["resources"] = {"memory": "1500Gi"}
    prod["models"][0]["kvCacheOffload"] = {"cpuGiB": largest + 1}
    assert has(problems(prod), "models[0].kvCacheOffload.cpuGiB", "resources.memory", f"is {largest}")


def test_a_team_quota_counts_the_tier():
    team = sections_of(TEAM)
    team["models"] = [team["models"][0] | {"acceleratorsPerReplica": 4, "kvCacheOffload": {"cpuGiB": 32}}]
    seen = stack_of(team)
    model = seen.models[0]
    need = replica_requests(model.config, model.pool.config, seen.platform.storage)
    assert need.memory_mib == engine_memory_mib(model.config, model.pool.config) + 32 * GIB
    short = f"{need.memory_mib - GIB}Mi"
    found = problems(team, team_quota(memory=short, gpus=8))
    assert any("quota.memory" in p and f"{need.memory_mib}Mi" in p and "kvCacheOffload.cpuGiB" in p for p in found), (
        found
    )
    check_sections(team, "us-west-2", platforms=team_quota(memory=f"{need.memory_mib}Mi", gpus=8))


# ---- refusals naming the key -----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, -8])
def test_a_tier_of_zero_or_less_is_refused_when_the_stack_file_loads(dev, size):
    dev["models"][0]["kvCacheOffload"] = {"cpuGiB": size}
    assert has(problems(dev), "models[0].kvCacheOffload.cpuGiB", "greater than or equal to 1"), size


@pytest.mark.parametrize("engine", ["tgi", "ollama", "nim", "neuron-vllm"])
def test_an_engine_without_offload_is_refused_naming_the_engines_that_have_it(engine):
    sections = example()
    i = next(i for i, m in enumerate(sections["models"]) if m["engine"] == engine)
    sections["models"][i]["kvCacheOffload"] = {"cpuGiB": 8}
    assert has(problems(sections), f"models[{i}].kvCacheOffload", "vllm", "sglang", f"not {engine}")


def test_a_disaggregated_dynamo_graph_is_refused_because_its_nixl_connector_conflicts():
    sections = sections_of(ROOT / "stacks" / "examples" / "Pulumi.serving.yaml")
    i, model = next((i, m) for i, m in enumerate(sections["models"]) if m["engine"] == "dynamo")
    model["dynamo"] = model.get("dynamo", {}) | {"mode": "disaggregated"}
    model["kvCacheOffload"] = {"cpuGiB": 8}
    assert has(problems(sections), f"models[{i}].kvCacheOffload", "NIXL", "--kv-transfer-config")


def test_a_replica_across_nodes_is_refused():
    sections = sections_of(ROOT / "stacks" / "examples" / "Pulumi.multinode.yaml")
    i, model = next((i, m) for i, m in enumerate(sections["models"]) if m.get("nodesPerReplica", 1) > 1)
    model["kvCacheOffload"] = {"cpuGiB": 8}
    assert has(problems(sections), f"models[{i}].kvCacheOffload", "nodesPerReplica: 1")


def test_an_sglang_tier_under_one_gb_a_rank_is_refused_naming_the_smallest():
    sections = sglang_offloading(3)
    i = next(i for i, m in enumerate(sections["models"]) if m["engine"] == "sglang")
    assert has(problems(sections), f"models[{i}].kvCacheOffload.cpuGiB", "per rank", "set cpuGiB to 4")


# ---- the offload flags are the key's, not engineArgs' ---------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--kv-offloading-size", "100"],
        ["--kv_offloading_backend=native"],
        ["--kv-offloading", "100"],
        ["--kv-transfer-config", '{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}'],
    ],
)
def test_vllm_offload_flags_in_engine_args_are_refused_pointing_at_kv_cache_offload(dev, args):
    dev["models"][0]["engineArgs"] = args
    assert has(problems(dev), "models[0].engineArgs[0]", "use kvCacheOffload"), args


@pytest.mark.parametrize(
    "args",
    [
        ["--enable-hierarchical-cache"],
        ["--hicache-size", "30"],
        ["--hicache-ratio=2"],
        ["--hicache-storage-backend", "file"],
    ],
)
def test_sglang_hierarchical_cache_flags_in_engine_args_are_refused(dev, args):
    dev["models"][0] |= {"engine": "sglang", "engineArgs": args}
    assert has(problems(dev), "models[0].engineArgs[0]", "use kvCacheOffload"), args


def test_offload_flags_on_a_vllm_the_platform_wires_no_offload_for_are_refused():
    sections = example()
    i = next(i for i, m in enumerate(sections["models"]) if m["engine"] == "nim")
    sections["models"][i]["engineArgs"] = ["--kv-offloading-size", "64"]
    assert has(problems(sections), f"models[{i}].engineArgs[0]", "not sized", "vllm and sglang only")


def test_the_other_kv_cache_flags_still_pass(dev):
    for args in (["--kv-cache-dtype", "fp8"], ["--kv-cache-memory-bytes", "1000000"]):
        check_sections(dict(copy.deepcopy(dev), models=[dev["models"][0] | {"engineArgs": args}]), "us-west-2")


# ---- the dashboard ---------------------------------------------------------------------------------------


def test_the_vllm_dashboard_shows_cpu_tier_hits_from_vllms_own_counter():
    board = engine_dashboard("vllm", ENGINES["vllm"].facts)
    assert board is not None
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert any("rate(vllm:external_prefix_cache_hits_total[5m])" in e for e in exprs), exprs
    json.dumps(board)


def test_no_engine_without_a_known_hits_series_gets_an_offload_panel():
    # SGLang's hits are a known series since #29's file tier (tests/test_kv_shared_tier.py).
    for name in ("tgi", "nim", "neuron-vllm"):
        board = engine_dashboard(name, ENGINES[name].facts)
        assert board is None or not any("offload" in p["title"] for p in board["panels"]), name


# ---- the endpoint picker learns the tier ----------------------------------------------------------------


def routed_offloading(dev: dict[str, Any], architecture: dict[str, int] | None) -> dict[str, Any]:
    """dev's routed vLLM model with a 16GiB tier on the pool's 4-GPU type (48 GiB a GPU)."""
    gpu = next(p for p in dev["nodePools"] if p["name"] == dev["models"][0]["pool"])
    gpu["instanceTypes"] = ["g6.12xlarge"]
    dev["models"][0]["kvCacheOffload"] = {"cpuGiB": 16}
    if architecture is not None:
        dev["models"][0]["architecture"] = architecture
    return dev


def picker_values(stack: Any, name: str) -> dict[str, Any]:
    model = next(m for m in stack.models if m.name == name)
    return picker_chart_values(model, stack.images["endpoint-picker"])["router"]["epp"]


def test_the_picker_scores_the_cpu_tier_with_a_second_prefix_index_sized_to_the_tier(dev):
    qwen3_8b = {"attentionHeads": 32, "kvHeads": 8, "layers": 36, "headDim": 128}
    epp = picker_values(stack_of(routed_offloading(dev, qwen3_8b)), "qwen3-8b")
    config = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    producers = [p for p in config["plugins"] if p["type"] == "approx-prefix-cache-producer"]
    assert [p.get("name") for p in producers] == [None, "cpu-prefix-cache-producer"], (
        "the GPU index keeps the default name the conditional-decode gate reads"
    )
    # 16 GiB over (2 x 36 layers x 8 KV heads x 128 x 2 bytes) a token, in the picker's 64-token blocks.
    per_token = 2 * 36 * 8 * 128 * 2
    assert producers[1]["parameters"] == {
        "autoTune": False,
        "blockSizeTokens": 64,
        "lruCapacityPerServer": 16 * 2**30 // (per_token * 64),
    }
    scorers = {p.get("name", p["type"]): p for p in config["plugins"] if p["type"] == "prefix-cache-scorer"}
    assert scorers["cpu-prefix-cache-scorer"]["parameters"] == {
        "prefixMatchInfoProducerName": "cpu-prefix-cache-producer"
    }
    weights = {p["pluginRef"]: p["weight"] for p in config["schedulingProfiles"][0]["plugins"]}
    assert weights == {
        "queue-scorer": 2,
        "kv-cache-utilization-scorer": 2,
        "prefix-cache-scorer": 3,
        "cpu-prefix-cache-scorer": 2,
    }, "the chart's own profile plus the CPU tier's scorer"


def test_without_a_known_head_size_the_picker_keeps_the_charts_own_profile(dev):
    epp = picker_values(stack_of(routed_offloading(dev, None)), "qwen3-8b")
    assert "pluginsConfigFile" not in epp, "Qwen3-8B's head size is not in the catalog: no guessed index"


def test_the_shipped_70b_models_kv_bytes_per_token_come_from_its_config():
    arch = ARCHITECTURES["meta-llama/Llama-3.3-70B-Instruct"]
    assert offload.kv_bytes_per_token(arch) == 2 * 80 * 8 * 128 * 2 == 327_680
