"""Native multi-LoRA on vLLM and SGLang (issue 29 item 2): `models[].adapters` with `models[].lora` are
prepared into the model cache like the weights and loaded by the engine itself at start, without AIBrix;
each adapter is served under its own name on the model's route, listed by LiteLLM and `stacks plan`; the
engine's LoRA flags are the platform's (refused in engineArgs); what the engine cannot load or hold is
refused at its key."""

from __future__ import annotations

from typing import Any

import pytest

from components.engines import sglang
from components.serving.litellm import router_config
from stacks.errors import ConfigError
from stacks.plan import plan_json
from tests.conftest import stack_manifests
from tests.serving_support import SERVING, config_of, model_entry, serving_sections, serving_stack

NAME = "qwen3-8b-native"
INDEX = 4
ROOT = "/models/platform/qwen3-8b-native/adapters"
S3_REV = "3f1c2a9e0b7d4c6a8e5f1b2d3c4a5e6f7a8b9c0d"
HUB_REV = "8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7081920"


def _pod() -> dict[str, Any]:
    (found,) = [o for o in stack_manifests(SERVING) if o["kind"] == "Deployment" and o["metadata"]["name"] == NAME]
    return found["spec"]["template"]["spec"]


def _engine(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["containers"] if c["args"] and c["command"] == ["vllm", "serve"])


def _refused(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    return [str(p) for p in err.value.problems]


def _where(*path: str | int) -> str:
    tail = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return f"inference-platform:models[{INDEX}]{tail}: "


def test_the_shipped_vllm_model_loads_its_adapters_itself_from_the_cache_without_aibrix():
    pod = _pod()
    args = _engine(pod)["args"]
    i = args.index("--lora-modules")
    assert args[i + 1 : i + 3] == [
        f"support-native={ROOT}/support-native/{S3_REV}",
        f"sql-native={ROOT}/sql-native/{HUB_REV}",
    ]
    assert "--enable-lora" in args
    assert args[args.index("--max-lora-rank") + 1] == "32", "the largest adapter rank"
    assert (args[args.index("--max-loras") + 1], args[args.index("--max-cpu-loras") + 1]) == ("2", "2")
    names = [c["name"] for c in pod["containers"]]
    assert names == [_engine(pod)["name"]], "no AIBrix runtime sidecar beside the engine"
    made = [o["metadata"]["name"] for o in stack_manifests(SERVING) if o["kind"] == "ModelAdapter"]
    assert "support-native" not in made and "sql-native" not in made, "no AIBrix ModelAdapter for them"


def test_each_adapter_is_prepared_after_the_weights_into_its_revisions_directory():
    inits = _pod()["initContainers"]
    names = [c["name"] for c in inits]
    assert names.index("adapter-support-native") > names.index("model-from-hub"), "after the weights' steps"
    env = {c["name"]: {e["name"]: e.get("value") for e in c["env"]} for c in inits}
    s3 = env["adapter-support-native"]
    assert (s3["MODEL_BUCKET"], s3["MODEL_PREFIX"]) == (
        "acme-models",
        f"platform/qwen3-8b-native/adapters/support-native/{S3_REV}",
    )
    assert s3["MODEL_DIR"] == f"{ROOT}/support-native/{S3_REV}" and s3["CACHE_IMPORTED"] == "false"
    hub = env["adapter-sql-native"]
    assert (hub["MODEL_ID"], hub["MODEL_REVISION"]) == ("acme/qwen3-8b-sql-lora", HUB_REV), "the pinned commit"
    assert hub["MODEL_DIR"] == f"{ROOT}/sql-native/{HUB_REV}"
    assert hub["HF_TOKEN_FILE"].endswith("/token"), "the model's Hub token, read from a file"


def test_a_missing_s3_adapter_fails_its_init_container_instead_of_waiting_for_a_hub_step():
    (step,) = [c for c in _pod()["initContainers"] if c["name"] == "adapter-support-native"]
    script = step["command"][-1]
    assert "adapter preparation failed: no adapter at $src" in script and "exit 1" in script
    assert "no copy at $src; the Hugging Face step" not in script, "no Hub step follows an s3:// adapter"


def test_litellm_lists_each_natively_served_adapter_as_a_model_at_its_models_server():
    stack = serving_stack()
    config = router_config(stack.config.addons.litellm, stack.models, monitoring=True)
    by_name = {m["model_name"]: m["litellm_params"] for m in config["model_list"]}
    base = by_name[NAME]["api_base"]
    assert by_name["sql-native"] == {"model": "hosted_vllm/sql-native", "api_base": base}
    assert by_name["support-native"]["model"] == "hosted_vllm/support-native"
    assert "support-lora" not in by_name, "AIBrix's adapters are not LiteLLM models here (unchanged)"


def test_stacks_plan_lists_the_adapters_a_request_may_name_on_the_models_route():
    models = {m["name"]: m for m in plan_json(serving_stack())["models"]}
    assert models[NAME]["adapters"] == {"loader": "engine", "models": ["support-native", "sql-native"]}
    assert models["qwen3-4b-ray"]["adapters"] == {"loader": "prefix", "models": ["qwen3-4b-ray:support-ray"]}
    assert models["qwen3-8b-lora"]["adapters"]["loader"] == "aibrix"


def test_sglang_takes_the_same_list_as_lora_paths_with_its_own_batch_and_loaded_flags():
    sections = serving_sections()
    model_entry(sections, NAME)["engine"] = "sglang"
    stack = serving_stack(sections)
    from tests.serving_support import spec_for

    args = sglang.container(spec_for(stack, NAME)).args
    i = args.index("--lora-paths")
    assert args[i + 1 : i + 3] == [
        f"support-native={ROOT}/support-native/{S3_REV}",
        f"sql-native={ROOT}/sql-native/{HUB_REV}",
    ]
    assert "--enable-lora" in args and args[args.index("--max-lora-rank") + 1] == "32"
    assert (args[args.index("--max-loras-per-batch") + 1], args[args.index("--max-loaded-loras") + 1]) == ("2", "2")


@pytest.mark.parametrize(
    "flag", ["--enable-lora", "--lora-modules", "--max-lora-rank", "--max-loras", "--max-cpu-loras", "--max_loras"]
)
def test_the_lora_flags_are_refused_in_engine_args_with_use_adapters(flag):
    sections = serving_sections()
    model_entry(sections, NAME)["engineArgs"] = [flag, "4"]
    found = _refused(sections)
    assert any(p.startswith(_where("engineArgs", 0)) and "use adapters and lora" in p for p in found), found


@pytest.mark.parametrize("engine", ["tgi", "ollama", "ray-serve"])
def test_lora_on_an_engine_that_cannot_load_adapters_itself_is_refused_at_lora(engine):
    sections = serving_sections()
    entry = model_entry(sections, NAME)
    entry["engine"] = engine
    if engine == "tgi":
        entry["tgi"] = {"acceptMaintenanceMode": True}
    found = _refused(sections)
    assert any(p.startswith(_where("lora")) and "cannot take LoRA adapters" in p for p in found), found


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"artifactURL": "gcs://acme/adapters/x/"}, "artifactURL", ["prepared into the model cache", "hf://"]),
        ({"artifactURL": "hf://meta-llama/some-lora"}, "artifactURL", ["gates its repositories", "huggingFaceToken"]),
        ({"rank": None}, "rank", ["--max-lora-rank", "adapter_config.json"]),
        ({"replicas": 1}, "replicas", ["AIBrix ModelAdapter's"]),
        ({"rank": 48}, "rank", ["1", "512"]),
    ],
)
def test_an_adapter_the_engine_cannot_prepare_or_load_is_refused_at_its_key(change, key, words):
    sections = serving_sections()
    entry = model_entry(sections, NAME)
    adapter = entry["adapters"][1]
    adapter.update(change)
    for k in [k for k, v in adapter.items() if v is None]:
        del adapter[k]
    if "meta-llama" in str(change):
        entry["secrets"] = {}
    found = _refused(sections)
    assert any(p.startswith(_where("adapters", 1, key)) and all(w in p for w in words) for p in found), found


def test_more_adapters_than_the_engine_holds_in_memory_are_refused_at_max_cpu_loras():
    sections = serving_sections()
    model_entry(sections, NAME)["lora"] = {"maxLoras": 1}
    found = _refused(sections)
    assert any(p.startswith(_where("lora", "maxCpuLoras")) and "at least 2" in p for p in found), found


def test_a_cpu_cache_smaller_than_the_gpu_batch_is_refused_as_the_engines_refuse_it():
    sections = serving_sections()
    model_entry(sections, NAME)["lora"] = {"maxLoras": 4, "maxCpuLoras": 2}
    found = _refused(sections)
    assert any("maxCpuLoras (2) must be at least maxLoras (4)" in p for p in found), found


def test_an_adapter_named_like_another_model_is_refused():
    sections = serving_sections()
    model_entry(sections, NAME)["adapters"][0]["name"] = "qwen3-4b-ray"
    found = _refused(sections)
    assert any(p.startswith(_where("adapters", 0, "name")) and "shadow" in p for p in found), found


def test_an_unpinned_adapter_revision_is_refused_in_prod():
    sections = serving_sections()
    sections["stack"]["environment"] = "prod"
    model_entry(sections, NAME)["adapters"][1]["revision"] = "main"
    found = _refused(sections)
    assert any(p.startswith(_where("adapters", 1, "revision")) and "40-hex" in p for p in found), found


def test_a_streamed_model_cannot_prepare_adapters_and_is_refused_at_lora():
    sections = serving_sections()
    model_entry(sections, NAME)["loadFormat"] = "runai-streamer"
    found = _refused(sections)
    assert any(p.startswith(_where("lora")) and "runai-streamer" in p for p in found), found


def test_only_vllm_and_sglang_take_adapters_as_start_flags():
    from components.engines import ENGINES

    takes = sorted(name for name, spec in ENGINES.items() if spec.facts.lora_flags)
    assert takes == ["sglang", "vllm"], "NIM, neuron-vllm, TGI, Ollama, Dynamo and Ray Serve are refused at lora"
