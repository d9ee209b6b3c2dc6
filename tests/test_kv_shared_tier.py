"""The shared KV-cache file tier (`models[].kvCacheOffload.shared`, issue 29 item 1): SGLang 0.5.19's
HiCache `file` storage backend on the platform's shared model cache, in the model's own revision directory,
`sizeGiB` bounding the whole directory through every writer rank's LRU cap (the most pods x each pod's
writer ranks; one a stage on MLA models), 64-token pages (a file each), a pruning CronJob that removes
revisions no workload serves and trims after gone pods, streaming; its flags reserved in engineArgs; the
refusals naming the key; the plan and the dashboard showing it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from components.engines import ENGINES, sglang
from components.model_servers import model_objects, workload_spec
from components.monitoring.dashboards import engine_dashboard
from components.storage import kvtier
from stacks import offload
from stacks.load import ROOT
from stacks.plan import plan, plan_json
from tests.builders import engine_objects
from tests.conftest import sections_of
from tests.engines_helpers import engine_container, env_of, example, flag, stack_of

from .guard_support import has, problems, problems_of

SHARING = ROOT / "stacks" / "examples" / "Pulumi.sharing.yaml"
FSX = ROOT / "stacks" / "examples" / "Pulumi.storage-fsx.yaml"
SHIPPED = "qwen3-8b-mig"
REVISION = "b968826d9c46dd6066d109eabc6255188de91218"
GIB = 2**30

# SGLang 0.5.19's hierarchical-cache arguments (srt/server_args.py, section "Hierarchical cache"): the
# argparse choices of those the platform sets, as the pinned source spells them. The engine's own parser
# would refuse any other value at start.
SGLANG_HICACHE_CHOICES = {
    "--hicache-storage-backend": {"file", "sim", "mooncake", "hf3fs", "nixl", "aibrix", "dynamic", "eic", "simm"}
    | {"mori", "shm"},
}
SGLANG_HICACHE_FLAGS = {
    "--enable-hierarchical-cache",
    "--hicache-host-memory-mode",
    "--hicache-ratio",
    "--hicache-size",
    "--hicache-write-policy",
    "--hicache-io-backend",
    "--hicache-mem-layout",
    "--hicache-storage-backend",
    "--hicache-storage-prefetch-policy",
    "--hicache-storage-backend-extra-config",
    "--hicache-storage-prefetch-retry-poll-interval",
    "--hicache-storage-prefetch-retry-max-attempts",
}


def sharing() -> dict[str, Any]:
    return sections_of(SHARING)


def index_of(sections: dict[str, Any], name: str) -> int:
    return next(i for i, m in enumerate(sections["models"]) if m["name"] == name)


def objs(sections: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    stack = stack_of(sections)
    return {o["kind"]: o for o in engine_objects(stack, name)}


def pruner_env(cron: dict[str, Any]) -> dict[str, str]:
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"]}


# ---- the engine on the shared tier ------------------------------------------------------------------------


def test_the_shipped_sglang_model_keeps_its_kv_cache_on_the_shared_efs_cache():
    sections = sharing()
    model = sections["models"][index_of(sections, SHIPPED)]
    assert model["kvCacheOffload"] == {"cpuGiB": 32, "shared": {"sizeGiB": 100}}, "the sharing example ships it"
    assert sections["storage"]["modelCache"] == "efs"
    c = engine_container(objs(sections, SHIPPED)["Deployment"])
    assert flag(c["args"], "--hicache-storage-backend") == "file", c["args"]
    assert "--enable-hierarchical-cache" in c["args"], "the file tier sits under the CPU tier"
    env = env_of(c)
    # SGLang 0.5.19 srt/environ.py: HiCacheFile's directory; its default (/tmp/hicache) is the pod's own.
    assert env["SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR"] == f"/models/_kvcache/platform/{SHIPPED}/{REVISION}"
    # Two replicas of one rank each share the directory: half the bound each, so together they keep it.
    assert env["SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE"] == str(100 * GIB // 2)
    mounts = [m["mountPath"] for m in c["volumeMounts"]]
    assert "/models" in mounts, "the shared claim the weights come from holds the tier too"


def test_the_engines_offload_flags_are_sglang_0_5_19_arguments_with_admissible_values():
    sections = sharing()
    args = engine_container(objs(sections, SHIPPED)["Deployment"])["args"]
    emitted = [a for a in args if a.startswith("--hicache") or a == "--enable-hierarchical-cache"]
    assert emitted and all(a in SGLANG_HICACHE_FLAGS for a in emitted), emitted
    for name, choices in SGLANG_HICACHE_CHOICES.items():
        assert flag(args, name) in choices, (name, args)
    assert set(sglang.OFFLOAD) >= SGLANG_HICACHE_FLAGS, "every hierarchical-cache flag of 0.5.19 is reserved"


def test_each_rank_caps_its_files_at_the_bound_over_every_rank_of_every_pod_that_can_share_the_directory():
    sections = example()
    model = next(m for m in sections["models"] if m["engine"] == "sglang")
    model |= {
        "acceleratorsPerReplica": 4,
        "kvCacheOffload": {"cpuGiB": 64, "shared": {"sizeGiB": 100}},
        "autoscaling": {"owner": "keda", "minReplicas": 1, "maxReplicas": 3},
        "rollout": {"maxSurge": 1},
    }
    env = env_of(engine_container(objs(sections, model["name"])["Deployment"]))
    # srt/mem_cache/storage/file/lru_file_evictor.py: every rank evicts only the files it tracks, so the
    # (3 replicas + 1 surging) x 4 ranks that can write the directory at once get a sixteenth each.
    cap = int(env["SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE"])
    assert cap == 100 * GIB // 16 and cap * 16 <= 100 * GIB, "together they keep the directory within sizeGiB"


def test_an_mla_models_one_writer_rank_gets_the_whole_pods_share():
    sections = example()
    model = next(m for m in sections["models"] if m["engine"] == "sglang")
    model |= {
        "acceleratorsPerReplica": 4,
        "replicas": 2,
        "kvCacheOffload": {"cpuGiB": 64, "shared": {"sizeGiB": 100}},
        "architecture": {"attentionHeads": 128, "kvHeads": 128, "layers": 61, "mla": True},
    }
    env = env_of(engine_container(objs(sections, model["name"])["Deployment"]))
    # SGLang 0.5.19 HiCacheFile drops the tp rank from an MLA model's file names and only rank 0 tracks and
    # evicts (LRUFileEvictor._is_storage_owner; the others write nothing new with a cap set).
    assert env["SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE"] == str(100 * GIB // 2), "two pods, one writer each"
    model["architecture"]["mla"] = False
    env = env_of(engine_container(objs(sections, model["name"])["Deployment"]))
    assert env["SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE"] == str(100 * GIB // 8), "not MLA: every rank writes"


def test_an_mla_model_has_no_per_head_kv_size_for_the_picker():
    arch = offload.ModelArchitecture(128, 128, 61, "test", head_dim=128, mla=True)
    assert offload.kv_bytes_per_token(arch) is None, "its cache holds a latent per token, not K and V per head"


def test_the_tier_sets_64_token_pages_because_sglangs_default_is_a_file_per_token():
    args = engine_container(objs(sharing(), SHIPPED)["Deployment"])["args"]
    # SGLang 0.5.19 srt/arg_groups/overrides.py _page_size_default: unset resolves to 1 on CUDA.
    assert flag(args, "--page-size") == "64", args
    sections = sharing()
    sections["models"][index_of(sections, SHIPPED)]["kvCacheOffload"] = {"cpuGiB": 32}
    args = engine_container(objs(sections, SHIPPED)["Deployment"])["args"]
    assert "--page-size" not in args, "without the file tier the page size stays SGLang's"


@pytest.mark.parametrize("token", ["--page-size", "--page-size=16", "--page"])
def test_the_page_size_in_engine_args_is_refused_with_the_file_tier_only(token):
    sections = sharing()
    i = index_of(sections, SHIPPED)
    sections["models"][i]["engineArgs"] = [token] if "=" in token else [token, "16"]
    assert has(problems(sections), f"models[{i}].engineArgs[0]", "kvCacheOffload.shared", "64 tokens"), token
    sections["models"][i]["kvCacheOffload"] = {"cpuGiB": 32}
    assert problems_of(sections) == [], "its own choice without the tier"


def test_a_size_that_leaves_a_rank_under_a_gib_is_refused_with_the_smallest_that_works():
    sections = sharing()
    i = index_of(sections, SHIPPED)
    model = sections["models"][i]
    model["replicas"] = 1
    model["rollout"] = {"maxSurge": 1}  # a rollout's new pod writes beside the old one
    model["kvCacheOffload"]["shared"] = {"sizeGiB": 1}
    assert has(
        problems(sections),
        f"models[{i}].kvCacheOffload.shared.sizeGiB",
        "2 SGLang ranks",
        "surge of 1",
        "set sizeGiB to 2 or more",
    )
    model["kvCacheOffload"]["shared"] = {"sizeGiB": 2}
    assert problems_of(sections) == []


def test_a_model_without_the_shared_tier_gets_no_storage_backend_and_no_pruner():
    sections = sharing()
    sections["models"][index_of(sections, SHIPPED)]["kvCacheOffload"] = {"cpuGiB": 32}
    found = objs(sections, SHIPPED)
    args = engine_container(found["Deployment"])["args"]
    assert "--hicache-storage-backend" not in args and "--enable-hierarchical-cache" in args
    assert "CronJob" not in found


def test_the_directory_is_keyed_by_owner_model_and_revision_so_no_other_model_reads_it():
    sections = sharing()
    i = index_of(sections, SHIPPED)
    twin = dict(sections["models"][i], name="qwen3-8b-mig-b", revision="0" * 40)
    sections["models"].append(twin)
    stack = stack_of(sections)
    dirs = {m.name: m.cache.kv_dir for m in stack.models if m.name.startswith("qwen3-8b-mig")}
    assert dirs == {
        SHIPPED: f"/models/_kvcache/platform/{SHIPPED}/{REVISION}",
        "qwen3-8b-mig-b": f"/models/_kvcache/platform/qwen3-8b-mig-b/{'0' * 40}",
    }
    weights = {m.cache.model_dir for m in stack.models}
    assert not any(d.startswith(w) or w.startswith(d) for d in dirs.values() for w in weights), "apart from weights"


# ---- the bound: the pruning CronJob ----------------------------------------------------------------------


def test_the_pruner_cleans_the_models_directory_every_ten_minutes_as_a_non_root_user_without_a_token():
    cron = objs(sharing(), SHIPPED)["CronJob"]
    assert cron["metadata"]["name"] == f"{SHIPPED}-kv-prune"
    assert cron["spec"]["schedule"] == "*/10 * * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False, "it never calls the API server"
    assert pod["nodeSelector"] == {"inference-platform.io/node-role": "system"}, "no CPU node launched for it"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] >= 10000
    assert pod["securityContext"]["runAsGroup"] == 1000, "the engine's group, which owns the FSx directory"
    container = pod["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    env = pruner_env(cron)
    assert env["KV_BYTES"] == str(100 * GIB)
    assert env["KV_REVISION"] == REVISION and env["KV_LIVE"] == REVISION, "the one live revision it keeps"
    (mount,) = container["volumeMounts"]
    assert mount["subPath"] == f"_kvcache/platform/{SHIPPED}", "its own model's directory, every revision of it"
    (volume,) = pod["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == "model-cache"
    assert container["image"].startswith("docker.io/library/busybox:"), "a pinned catalog image"


CANARY = "0123456789abcdef0123456789abcdef01234567"


def test_a_canary_has_its_own_bounded_directory_and_both_pruners_keep_both_live_revisions():
    sections = sharing()
    sections["models"][index_of(sections, SHIPPED)]["canary"] = {"revision": CANARY, "weight": 10}
    stack = stack_of(sections)
    model = next(m for m in stack.models if m.name == SHIPPED)
    assert model.canary is not None
    assert model.canary.cache.kv_dir == f"/models/_kvcache/platform/{SHIPPED}/{CANARY}"
    assert model.canary.cache.kv_rank_bytes == 100 * GIB, "one pod of one rank writes the canary's directory"
    assert model.cache.kv_rank_bytes == 100 * GIB // 2
    for served in (model, model.canary):
        spec = workload_spec(served, stack.platform.storage, None, stack.platform.neuron_scheduler, images=stack.images)
        (cron,) = (o for o in model_objects(spec) if o["kind"] == "CronJob")
        env = pruner_env(cron)
        assert env["KV_LIVE"].split() == [REVISION, CANARY], "neither pruner deletes the other's revision"
        assert env["KV_REVISION"] == served.config.revision


def page(directory: Path, name: str, size: int, age_minutes: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(b"\0" * size)
    then = time.time() - age_minutes * 60
    os.utime(path, (then, then))


def age(path: Path, minutes: int) -> None:
    then = time.time() - minutes * 60
    os.utime(path, (then, then))


def prune(mount: Path, cap: int, live: str = "rev") -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "KV_MOUNT": str(mount), "KV_REVISION": "rev", "KV_LIVE": live}
    return subprocess.run(
        ["sh", "-c", kvtier.PRUNE], env=env | {"KV_BYTES": str(cap)}, capture_output=True, text=True, check=True
    )


def test_the_pruner_deletes_the_oldest_pages_until_the_directory_holds_the_bound(tmp_path):
    rev = tmp_path / "rev"
    for i, minutes in enumerate((50, 40, 30, 20, 10)):
        page(rev, f"h{i}_qwen3-8b-mig_0_1.bin", 1000, minutes)
    page(rev, "h9_qwen3-8b-mig_0_1.bin.tmp.7.8.abc", 10, 120)  # a crashed write's leftover
    page(rev, "h8_qwen3-8b-mig_0_1.bin.tmp.7.9.abc", 10, 1)  # a write under way
    done = prune(tmp_path, 2500)
    left = sorted(p.name for p in rev.iterdir())
    assert left == [
        "h3_qwen3-8b-mig_0_1.bin",
        "h4_qwen3-8b-mig_0_1.bin",
        "h8_qwen3-8b-mig_0_1.bin.tmp.7.9.abc",
    ], "the three oldest pages go (5000 bytes down to 2000 <= 2500); a write under way stays"
    assert "deleting 3000 bytes" in done.stderr, done.stderr


def test_the_pruner_leaves_a_directory_within_its_bound_alone(tmp_path):
    page(tmp_path / "rev", "a.bin", 1000, 30)
    prune(tmp_path, 1000)
    assert [p.name for p in (tmp_path / "rev").iterdir()] == ["a.bin"]


def test_the_pruner_removes_revisions_no_workload_serves_once_they_are_an_hour_quiet(tmp_path):
    page(tmp_path / "old", "a.bin", 10, 200)
    age(tmp_path / "old", 120)
    page(tmp_path / "new", "a.bin", 10, 1)  # a new revision's pod started before its pruner knows of it
    page(tmp_path / "canary", "a.bin", 10, 200)
    age(tmp_path / "canary", 120)
    page(tmp_path / "rev", "a.bin", 10, 200)
    done = prune(tmp_path, 10**9, live="rev canary")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canary", "new", "rev"], done.stderr
    assert "removing old" in done.stderr


def test_the_pruner_streams_without_holding_the_file_list_in_memory(tmp_path):
    assert "sort" not in kvtier.PRUNE, "a sort holds every line: 100k pages would crowd its 256Mi"
    rev = tmp_path / "rev"
    for i in range(600):
        page(rev, f"h{i}_m_0_1.bin", 100, 600 - i)  # one page a minute, oldest first
    prune(tmp_path, 30000)
    left = sorted(int(p.name.split("_")[0][1:]) for p in rev.iterdir())
    assert left == list(range(300, 600)), "exactly the 300 oldest go, by minute of mtime"


def test_on_fsx_the_kv_directory_is_handed_to_the_engines_group_before_it_starts():
    sections = sharing()
    sections["storage"] = sections_of(FSX)["storage"]
    assert sections["storage"]["modelCache"] == "fsx"
    stack = stack_of(sections)
    served = next(m for m in stack.models if m.name == SHIPPED)
    found = {o["kind"]: o for o in engine_objects(stack, SHIPPED)}
    inits = {c["name"]: c for c in found["Deployment"]["spec"]["template"]["spec"]["initContainers"]}
    owner = inits["kv-cache-dir"]
    env = {e["name"]: e["value"] for e in owner["env"]}
    assert env["COMPILE_DIR"] == served.cache.kv_dir and env["GROUP"] == "1000", "the pod's fsGroup"
    assert "chmod 2770" in owner["command"][-1], "group rwx: the engine writes and the pruner deletes"
    assert '"${COMPILE_DIR%/*}"' in owner["command"][-1], "the model's directory too: the pruner removes old revisions"
    assert "CronJob" in found


def test_a_streamed_model_mounts_only_the_claims_kv_tree():
    sections = sharing()
    model = sections["models"][index_of(sections, SHIPPED)]
    model["loadFormat"] = "runai-streamer"
    c = engine_container(objs(sections, SHIPPED)["Deployment"])
    mount = next(m for m in c["volumeMounts"] if m["name"] == "kv-cache")
    assert mount == {"name": "kv-cache", "mountPath": "/models/_kvcache", "subPath": "_kvcache"}


# ---- refusals, each naming the key -----------------------------------------------------------------------


def test_vllm_with_the_shared_tier_is_refused_because_its_file_tier_never_deletes():
    sections = sharing()
    i = index_of(sections, "qwen3-4b-shared")
    sections["models"][i]["kvCacheOffload"] = {"cpuGiB": 8, "shared": {"sizeGiB": 50}}
    assert has(problems(sections), f"models[{i}].kvCacheOffload.shared", "sglang", "not vllm", "never deletes")


@pytest.mark.parametrize("cache", ["local", "none"])
def test_the_shared_tier_without_a_shared_cache_is_refused_naming_efs_and_fsx(cache):
    sections = sharing()
    sections["storage"] = {"modelCache": cache}
    i = index_of(sections, SHIPPED)
    assert has(problems(sections), f"models[{i}].kvCacheOffload.shared", f"modelCache is {cache}", "efs or fsx")


def test_the_shared_tier_on_a_disaggregated_dynamo_graph_is_refused_at_kv_cache_offload():
    sections = sections_of(ROOT / "stacks" / "examples" / "Pulumi.serving.yaml")
    i, model = next((i, m) for i, m in enumerate(sections["models"]) if m["engine"] == "dynamo")
    model["dynamo"] = model.get("dynamo", {}) | {"mode": "disaggregated"}
    model["kvCacheOffload"] = {"cpuGiB": 8, "shared": {"sizeGiB": 50}}
    assert has(problems(sections), f"models[{i}].kvCacheOffload", "NIXL")


def test_file_tiers_that_fill_the_fsx_file_system_are_refused_naming_its_capacity():
    sections = sharing()
    sections["storage"] = sections_of(FSX)["storage"]
    capacity = sections["storage"]["fsx"]["storageCapacityGiB"]
    i = index_of(sections, SHIPPED)
    sections["models"][i]["kvCacheOffload"]["shared"] = {"sizeGiB": capacity}
    assert has(problems(sections), f"models[{i}].kvCacheOffload.shared.sizeGiB", f"holds {capacity}GiB")


def test_on_fsx_a_canary_counts_a_second_bound_for_its_own_directory():
    sections = sharing()
    sections["storage"] = sections_of(FSX)["storage"]
    capacity = sections["storage"]["fsx"]["storageCapacityGiB"]
    i = index_of(sections, SHIPPED)
    sections["models"][i]["kvCacheOffload"]["shared"] = {"sizeGiB": capacity // 2}
    assert problems_of(sections) == [], "half the capacity: one directory fits"
    sections["models"][i]["canary"] = {"revision": CANARY, "weight": 10}
    assert has(problems(sections), f"models[{i}].kvCacheOffload.shared.sizeGiB", f"come to {capacity // 2 * 2}GiB")


@pytest.mark.parametrize("size", [0, -5])
def test_a_shared_tier_of_zero_or_less_is_refused_when_the_stack_file_loads(size):
    sections = sharing()
    i = index_of(sections, SHIPPED)
    sections["models"][i]["kvCacheOffload"]["shared"] = {"sizeGiB": size}
    assert has(problems(sections), f"models[{i}].kvCacheOffload.shared.sizeGiB", "greater than or equal to 1")


@pytest.mark.parametrize(
    "args",
    [
        ["--hicache-storage-backend", "file"],
        ["--hicache-storage-backend-extra-config", '{"max_size": "1T"}'],
        ["--hicache-host-memory-mode", "buffer_only"],
        ["--hicache-storage-prefetch-retry-poll-interval", "2"],
        ["--hicache-storage-prefetch-retry-max-attempts=8"],
    ],
)
def test_the_file_tiers_flags_in_engine_args_are_refused_pointing_at_kv_cache_offload(args):
    sections = sharing()
    i = index_of(sections, SHIPPED)
    sections["models"][i]["engineArgs"] = args
    assert has(problems(sections), f"models[{i}].engineArgs[0]", "use kvCacheOffload"), args


# ---- plan and dashboard ----------------------------------------------------------------------------------


def test_the_plan_shows_the_file_tier_its_directory_and_bound():
    stack = stack_of(sharing())
    text = plan(stack)
    assert f"KV-cache file tier: /models/_kvcache/platform/{SHIPPED}/{REVISION}" in text, text
    assert "bounded to 100GiB (50.0GiB LRU cap for each of the 2 SGLang ranks" in text, text
    model = next(m for m in plan_json(stack)["models"] if m["name"] == SHIPPED)
    assert model["kvCacheOffload"] == {
        "cpuGiB": 32,
        "shared": {
            "directory": f"/models/_kvcache/platform/{SHIPPED}/{REVISION}",
            "sizeGiB": 100,
            "writers": 2,
            "rankCapBytes": 50 * GIB,
        },
    }
    other = next(m for m in plan_json(stack)["models"] if m["name"] == "qwen3-4b-shared")
    assert other["kvCacheOffload"] is None


def test_the_sglang_dashboard_shows_cpu_and_file_tier_hits_apart_from_sglangs_own_counter():
    board = engine_dashboard("sglang", ENGINES["sglang"].facts)
    assert board is not None
    panel = next(p for p in board["panels"] if "offload" in p["title"])
    (target,) = panel["targets"]
    # SGLang 0.5.19 srt/observability/metrics_collector.py: prefill tokens by `mode` (pre-seeded, so both
    # series exist from the start); host_hit is the CPU tier's, storage_hit the file tier's.
    assert 'rate(sglang:prefill_effective_tokens_total{mode=~"host_hit|storage_hit"}[5m])' in target["expr"]
    assert target["expr"].startswith("sum by (namespace, ") and ", mode)" in target["expr"], target["expr"]
    assert "{{mode}}" in target["legendFormat"]
    assert panel["fieldConfig"]["defaults"]["unit"] != "", "tokens per second"


def test_sizes_are_whole_bytes_sglang_reads_as_a_plain_integer():
    # srt/utils/common.py human_readable_int: a plain integer is bytes; no float ever reaches it.
    assert offload.sglang_rank_cap_bytes(100, 3) == 100 * GIB // 3
