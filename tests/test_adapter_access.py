"""An AIBrix ModelAdapter's artifact is readable by what loads it (issue 28 item 6).

At AIBrix 0.7.0 the adapter controller never reads an artifact: with its runtime sidecar in the pod it
hands the `s3://` URL to the sidecar, which downloads it as the pod's identity and loads it into vLLM
from local disk (without the sidecar, vLLM itself would get `s3://` as a path it cannot open). So the
model's pod carries the sidecar and runs as `model-reader`, whose Pod Identity role lists and reads only
its owner's prefix of the platform's bucket; an artifact anywhere else is refused before a deploy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.serving import aibrix
from components.storage.storage_iam import reader_policy
from stacks.errors import ConfigError
from stacks.pipeline import check_sections
from stacks.resolved import READER_SERVICE_ACCOUNT
from tests.conftest import live_platform, rendered_stack, sections_of, stack_manifests
from tests.iam_eval import allows
from tests.serving_support import SERVING, config_of, model_entry, serving_objects, serving_sections, serving_stack
from tests.test_team_wiring import TEAM, platform_exports, problems

NAME = "qwen3-8b-lora"
ADAPTER = "s3://acme-models/platform/qwen3-8b-lora/adapters/support-lora/"
BUCKET = "arn:aws:s3:::acme-models"


def _pod() -> dict[str, Any]:
    """The adapter model's pod as the stack renders it (with the storage's service account)."""
    (deployment,) = [o for o in stack_manifests(SERVING) if o["kind"] == "Deployment" and o["metadata"]["name"] == NAME]
    return deployment["spec"]["template"]["spec"]


def _refusals(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        config_of(sections)
    return [str(p) for p in info.value.problems]


def test_the_adapter_loader_is_aibrixs_runtime_sidecar_in_the_models_pod_running_as_the_model_reader():
    pod = _pod()
    assert pod["serviceAccountName"] == READER_SERVICE_ACCOUNT, "the pod's one AWS identity reads the artifact"
    engine, sidecar = pod["containers"]
    assert sidecar["name"] == "aibrix-runtime", "the name the 0.7.0 controller detects the sidecar by"
    assert sidecar["image"] == "docker.io/aibrix/runtime:v0.7.0", "the runtime of the pinned AIBrix release"
    assert sidecar["command"] == ["aibrix_runtime", "--port", "8080"], "the port the controller calls"
    env = {e["name"]: e["value"] for e in sidecar["env"]}
    assert env == {
        "INFERENCE_ENGINE": "vllm",
        "INFERENCE_ENGINE_ENDPOINT": "http://localhost:8000",
        "AWS_DEFAULT_REGION": "us-west-2",
    }, "it loads into vLLM on localhost, and its S3 client signs for the bucket's region"
    assert not any("KEY" in e["name"] or "SECRET" in e["name"] for e in sidecar["env"]), "no static credentials"
    shared = {"name": "adapter-storage", "mountPath": "/tmp/aibrix/adapters"}
    assert shared in engine["volumeMounts"] and shared in sidecar["volumeMounts"], (
        "vLLM loads the adapter from the directory the sidecar downloaded it into"
    )
    assert {"name": "adapter-storage", "emptyDir": {}} in pod["volumes"]
    assert sidecar["securityContext"]["runAsNonRoot"] and sidecar["securityContext"]["capabilities"] == {
        "drop": ["ALL"]
    }


def test_a_model_without_adapters_has_no_runtime_sidecar():
    pod_of = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in serving_objects(NAME) if o["kind"] == "Deployment"
    }
    assert [c["name"] for c in pod_of[NAME]["containers"]] == ["engine", aibrix.RUNTIME_CONTAINER]
    sections = serving_sections()
    model_entry(sections, NAME).pop("adapters")
    (deployment,) = [o for o in serving_objects(NAME, sections) if o["kind"] == "Deployment"]
    assert [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]] == ["engine"]
    assert "aibrix-runtime" not in serving_stack(sections).images, "nor an image to pin"


def test_the_runtime_image_is_one_the_stack_renders_and_pins():
    assert "aibrix-runtime" in serving_stack().images, "prod asks for its digest at images.aibrix-runtime"


def test_the_model_readers_role_lists_and_reads_the_adapters_prefix_and_nothing_beside_it():
    doc = reader_policy(BUCKET, "platform")
    key = ADAPTER.removeprefix("s3://acme-models/")
    assert allows(doc, "s3:GetObject", f"{BUCKET}/{key}adapter_model.safetensors")
    assert allows(doc, "s3:GetObject", f"{BUCKET}/{key}adapter_config.json")
    assert allows(doc, "s3:ListBucket", BUCKET, s3__prefix=key), "the runtime lists the folder's objects"
    assert not allows(doc, "s3:ListBucket", BUCKET, s3__prefix="teams/"), "held to the prefix by s3:prefix"
    assert not allows(doc, "s3:GetObject", f"{BUCKET}/teams/chat/x/adapters/a/adapter_config.json")
    assert not allows(doc, "s3:GetObject", f"arn:aws:s3:::other-bucket/{key}adapter_config.json")
    for action in ("s3:PutObject", "s3:DeleteObject"):
        assert not allows(doc, action, f"{BUCKET}/{key}adapter_model.safetensors"), action


def test_the_rendered_reader_role_is_bound_to_model_reader_in_the_adapters_namespace():
    rec = rendered_stack(SERVING).mocks
    namespace = next(m.namespace for m in serving_stack().models if m.name == NAME)
    bound = [
        r
        for r in rec.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r.inputs.get("serviceAccount") == READER_SERVICE_ACCOUNT and r.inputs.get("namespace") == namespace
    ]
    assert len(bound) == 1, "one Pod Identity association gives the pod's account its role"
    (policy,) = [r for r in rec.of_type("aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-readers-read")]
    doc = json.loads(policy.inputs["policy"])
    key = ADAPTER.removeprefix("s3://acme-models/")
    assert allows(doc, "s3:GetObject", f"{BUCKET}/{key}adapter_model.safetensors")
    assert allows(doc, "s3:ListBucket", BUCKET, s3__prefix=key)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("s3://acme-models/adapters/support/", ["outside platform/", "s3://<model bucket>/platform/"]),
        ("s3://acme-models/teams/chat/lora/", ["outside platform/"]),
        ("s3://other-bucket/platform/qwen3-8b-lora/adapters/x/", ["not in the platform's model bucket", "acme-models"]),
        ("s3://acme-models/platform/qwen3-8b-lora/adapters/support-lora", ["one object", "end it with '/'"]),
    ],
)
def test_an_s3_adapter_the_pods_cannot_read_is_refused_at_its_artifact_url(url, words):
    sections = serving_sections()
    model_entry(sections, NAME)["adapters"][0]["artifactURL"] = url
    found = _refusals(sections)
    where = "inference-platform:models[2].adapters[0].artifactURL: "
    assert any(p.startswith(where) and all(w in p for w in words) for p in found), found


def test_an_s3_adapter_in_a_bucket_whose_name_is_generated_asks_for_the_name():
    sections = serving_sections()
    sections["storage"]["modelBucket"] = {"create": True}
    found = _refusals(sections)
    assert any("artifactURL" in p and "storage.modelBucket.name" in p for p in found), found


def test_a_teams_adapter_is_read_only_under_its_teams_prefix():
    live = platform_exports()
    live["addons"]["aibrix"] = True
    team = sections_of(TEAM)
    model = team["models"][0]
    model["adapters"] = [{"name": "sql-lora", "artifactURL": "s3://acme-models/platform/qwen3-8b/adapters/sql-lora/"}]
    found = problems(team, live_platform(live))
    assert any("models[0].adapters[0].artifactURL" in p and "outside teams/search/" in p for p in found), found
    model["adapters"][0]["artifactURL"] = "s3://acme-models/teams/search/qwen3-8b/adapters/sql-lora/"
    check_sections(team, "us-west-2", platforms=live_platform(live))


def test_an_aibrix_adapters_rank_starts_vllm_with_room_for_it():
    sections = serving_sections()
    model_entry(sections, NAME)["adapters"][0]["rank"] = 64
    (deployment,) = [o for o in serving_objects(NAME, sections) if o["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--max-lora-rank") + 1] == "64", "vLLM's default 16 would refuse a rank-64 adapter"
    (plain,) = [o for o in serving_objects(NAME) if o["kind"] == "Deployment"]
    assert "--max-lora-rank" not in plain["spec"]["template"]["spec"]["containers"][0]["args"]
