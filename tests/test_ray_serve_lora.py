"""LoRA adapters on Ray Serve (issue 28: LoRA on Ray Serve): `models[].adapters` of a ray-serve model
become Ray Serve LLM's `lora_config` (one `dynamic_lora_loading_path` whose subfolders are the adapters,
asked for as `<model>:<adapter>`) and vLLM's LoRA engine kwargs; the worker pods download them as the
prefix-scoped `model-reader`; a layout Ray cannot serve, or adapters on an engine that cannot load them,
is refused at its key."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.storage.storage_iam import reader_policy
from stacks.errors import ConfigError
from stacks.resolved import READER_SERVICE_ACCOUNT
from tests.conftest import stack_manifests
from tests.iam_eval import allows
from tests.serving_support import SERVING, config_of, model_entry, serving_objects, serving_sections

NAME = "qwen3-4b-ray"
PREFIX = "s3://acme-models/platform/qwen3-4b-ray/adapters"


def _service() -> dict[str, Any]:
    (found,) = [o for o in stack_manifests(SERVING) if o["kind"] == "RayService" and o["metadata"]["name"] == NAME]
    return found


def _llm_config() -> dict[str, Any]:
    (app,) = yaml.safe_load(_service()["spec"]["serveConfigV2"])["applications"]
    (config,) = app["args"]["llm_configs"]
    return config


def _refused(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    return [str(p) for p in err.value.problems]


def test_the_adapters_become_ray_serve_llms_lora_config_on_the_models_prefix():
    config = _llm_config()
    assert config["lora_config"] == {"dynamic_lora_loading_path": PREFIX, "max_num_adapters_per_replica": 1}
    assert config["model_loading_config"]["model_id"] == NAME, "clients ask for qwen3-4b-ray:support-ray"
    kwargs = config["engine_kwargs"]
    assert (kwargs["enable_lora"], kwargs["max_lora_rank"], kwargs["max_loras"]) == (True, 16, 1)
    assert config["runtime_env"]["env_vars"]["AWS_REGION"] == "us-west-2", "Ray's S3 filesystem signs for it"


def test_the_workers_that_download_the_adapters_run_as_the_prefix_scoped_model_reader():
    spec = _service()["spec"]["rayClusterConfig"]
    (workers,) = spec["workerGroupSpecs"]
    assert workers["template"]["spec"]["serviceAccountName"] == READER_SERVICE_ACCOUNT
    assert "serviceAccountName" not in spec["headGroupSpec"]["template"]["spec"], (
        "the head (num-cpus 0) runs no LLM replica and reads no bucket"
    )
    doc = reader_policy("arn:aws:s3:::acme-models", "platform")
    key = PREFIX.removeprefix("s3://acme-models/") + "/"
    assert allows(doc, "s3:ListBucket", "arn:aws:s3:::acme-models", s3__prefix=key), "listing the adapters"
    assert allows(doc, "s3:GetObject", f"arn:aws:s3:::acme-models/{key}support-ray/adapter_model.safetensors")
    assert not allows(doc, "s3:ListBucket", "arn:aws:s3:::acme-models", s3__prefix="teams/")


def test_a_model_without_adapters_has_no_lora_config():
    sections = serving_sections()
    model_entry(sections, NAME).pop("adapters")
    (service,) = [o for o in serving_objects(NAME, sections) if o["kind"] == "RayService"]
    (app,) = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"]
    (config,) = app["args"]["llm_configs"]
    assert "lora_config" not in config and "enable_lora" not in config["engine_kwargs"]


@pytest.mark.parametrize(
    ("adapter", "key", "words"),
    [
        ({"artifactURL": f"{PREFIX}/other-name/"}, "artifactURL", ["as qwen3-4b-ray:other-name", "name the folder"]),
        ({"artifactURL": "hf://acme/support-ray"}, "artifactURL", ["s3:// folder"]),
        ({"rank": None}, "rank", ["max_lora_rank", "adapter_config.json"]),
        ({"replicas": 1}, "replicas", ["AIBrix ModelAdapter's"]),
        ({"artifactURL": "s3://acme-models/teams/chat/support-ray/"}, "artifactURL", ["outside platform/"]),
    ],
)
def test_an_adapter_ray_serve_cannot_load_is_refused_at_its_key(adapter, key, words):
    sections = serving_sections()
    entry = model_entry(sections, NAME)["adapters"][0]
    entry.update(adapter)
    for k in [k for k, v in entry.items() if v is None]:
        del entry[k]
    found = _refused(sections)
    where = f"inference-platform:models[3].adapters[0].{key}: "
    assert any(p.startswith(where) and all(w in p for w in words) for p in found), found


def test_adapters_of_one_model_under_two_prefixes_are_refused():
    sections = serving_sections()
    adapters = model_entry(sections, NAME)["adapters"]
    adapters.append(
        {"name": "sql-ray", "artifactURL": "s3://acme-models/platform/qwen3-4b-ray/more/sql-ray/", "rank": 8}
    )
    found = _refused(sections)
    assert any(
        p.startswith("inference-platform:models[3].adapters[1].artifactURL: ") and f"{PREFIX}/sql-ray/" in p
        for p in found
    ), found


def test_a_ray_serve_model_with_adapters_needs_no_aibrix():
    sections = serving_sections()
    sections["addons"]["aibrix"] = {"enabled": False}
    found = _refused(sections)  # the vLLM model's AIBrix features are refused, and the gateway's TLS
    assert any(p.startswith("inference-platform:models[2].adapters: ") for p in found), "vLLM's need AIBrix"
    assert not any(p.startswith("inference-platform:models[3].") for p in found), found


def test_no_aibrix_model_adapter_is_made_for_a_ray_serve_adapter():
    made = [o["metadata"]["name"] for o in stack_manifests(SERVING) if o["kind"] == "ModelAdapter"]
    assert "support-ray" not in made and "support-lora" in made, made
