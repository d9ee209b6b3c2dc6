"""Issue 17 item 5: weights straight from the bucket (`models[].loadFormat: runai-streamer`). The engine
streams `s3://<bucket>/<name>/<revision>/` with the Run:ai streamer as the bucket reader, nothing is
copied into a cache, a one-time Job fills an empty prefix as the bucket writer, and only safetensors
on vLLM or SGLang are accepted."""

from __future__ import annotations

import json
from typing import Any

from components.gateway.isolation import POD_IDENTITY_AGENT, egress
from components.model_servers import model_objects, workload_spec
from components.storage.cache import streamed_prefixes
from components.storage.storage_iam import prefix_writer_policy
from stacks.resolved import READER_SERVICE_ACCOUNT, WRITER_SERVICE_ACCOUNT
from tests.builders import TEST_BUCKET, by_kind, engine_objects, streaming_context
from tests.conftest import ROOT, rendered_stack
from tests.engines_helpers import engine_container, env_of, example, flag, stack_of
from tests.engines_helpers import objects as engine_objects_by_kind
from tests.guard_support import refused, sections

REVISION = "b968826d9c46dd6066d109eabc6255188de91218"
PREP_STEPS = {"model-from-bucket", "model-from-hub"}


def streamed_example(**extra: Any) -> dict[str, Any]:
    s = example()
    for m in s["models"]:
        if m["name"] in ("qwen3-8b", "qwen3-8b-sglang"):
            m["loadFormat"] = "runai-streamer"
            m |= extra
    return s


def model_at(s: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    return next((i, m) for i, m in enumerate(s["models"]) if m["name"] == name)


def spec_of(stack: Any, served: Any) -> Any:
    cache = streaming_context(stack, served)
    return workload_spec(served, stack.platform.storage, cache, stack.platform.neuron_scheduler, images=stack.images)


def pod_of(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return by_kind(objs, "Deployment")[0]["spec"]["template"]["spec"]


def test_vllm_streams_the_bucket_prefix_with_the_runai_loader_under_the_models_name():
    stack = stack_of(streamed_example())
    model = next(m for m in stack.models if m.name == "qwen3-8b")
    args = engine_container(by_kind(engine_objects(stack, "qwen3-8b"), "Deployment")[0])["args"]
    prefix = f"platform/{model.name}/{model.config.revision}/"
    assert args[0] == f"s3://$(MODEL_BUCKET)/{prefix}", (
        "the bucket prefix is the owner's and the model's; the kubelet expands the bucket"
    )
    assert flag(args, "--load-format") == "runai_streamer"
    extra = json.loads(flag(args, "--model-loader-extra-config") or "{}")
    assert set(extra) <= {"distributed", "concurrency", "memory_limit"}, "vLLM 0.29 refuses any other key"
    assert extra["concurrency"] == 16
    assert flag(args, "--served-model-name") == "qwen3-8b", "else the API and metric name is the s3 URI"


def test_a_streamed_engine_gets_the_bucket_the_region_and_a_writable_config_cache():
    stack = stack_of(streamed_example())
    container = engine_container(by_kind(engine_objects(stack, "qwen3-8b"), "Deployment")[0])
    env = env_of(container)
    assert env["MODEL_BUCKET"] == TEST_BUCKET
    assert env["AWS_REGION"] == stack.region, "the streamer's S3 client needs the region"
    assert env["VLLM_ASSETS_CACHE"].startswith(env["HOME"]), "config and tokenizer files go to the writable home"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert env["HOME"] in mounts


def test_sglang_streams_the_bucket_prefix_with_the_runai_loader_under_the_models_name():
    stack = stack_of(streamed_example())
    container = engine_container(by_kind(engine_objects(stack, "qwen3-8b-sglang"), "Deployment")[0])
    args = container["args"]
    assert (flag(args, "--model-path") or "").startswith("s3://$(MODEL_BUCKET)/platform/qwen3-8b-sglang/")
    assert flag(args, "--load-format") == "runai_streamer"
    assert flag(args, "--served-model-name") == "qwen3-8b-sglang"
    env = env_of(container)
    assert env["SGLANG_CACHE_DIR"].startswith(env["HOME"]) and env["AWS_REGION"] == stack.region


def test_a_streamed_model_has_no_copy_to_cache_step_and_no_cache_volume():
    stack = stack_of(streamed_example())
    pod = pod_of(engine_objects(stack, "qwen3-8b"))
    inits = [c["name"] for c in pod["initContainers"]]
    assert not PREP_STEPS & set(inits), "streaming and a cache copy would read the bucket twice"
    assert inits == ["model-in-bucket", "streamer-check"]
    assert not any(v["name"] == "model-cache" for v in pod["volumes"])
    assert pod["serviceAccountName"] == READER_SERVICE_ACCOUNT, "the engine itself reads the bucket"


def test_a_model_not_streamed_keeps_its_preparation_steps():
    stack = stack_of(streamed_example())
    pod = pod_of(engine_objects(stack, "llama-inf2"))
    assert {c["name"] for c in pod["initContainers"]} >= {"model-from-hub"}


def test_the_streamed_pod_waits_read_only_for_the_fill_jobs_marker():
    stack = stack_of(streamed_example())
    objs = engine_objects(stack, "qwen3-8b")
    (job,) = by_kind(objs, "Job")
    assert job["metadata"]["name"] == "qwen3-8b-to-bucket"
    wait = pod_of(objs)["initContainers"][0]
    env = env_of(wait)
    assert env["MODEL_PREFIX"] == f"platform/qwen3-8b/{REVISION}"
    assert "${src}.prepared" in wait["command"][-1] and "sync" not in wait["command"][-1], "it only lists"


def test_the_engine_image_is_checked_for_the_streamer_before_the_engine_starts():
    stack = stack_of(streamed_example())
    pod = pod_of(engine_objects(stack, "qwen3-8b"))
    check = next(c for c in pod["initContainers"] if c["name"] == "streamer-check")
    assert check["image"] == engine_container({"spec": {"template": {"spec": pod}}})["image"]
    assert "import runai_model_streamer, runai_model_streamer_s3" in check["command"][-1]


def test_the_fill_job_runs_as_the_writer_and_no_model_selector_picks_it():
    stack = stack_of(streamed_example())
    objs = engine_objects(stack, "qwen3-8b")
    (job,) = by_kind(objs, "Job")
    (svc,) = by_kind(objs, "Service")
    pod = job["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == WRITER_SERVICE_ACCOUNT
    labels = pod["metadata"]["labels"]
    assert not all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "the Job never serves"
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true", "pulumi up does not block on a download"
    upload = pod["spec"]["containers"][0]["command"][-1]
    assert '--exclude "*.bin"' in upload and "*.safetensors" in upload, "only safetensors go up, none means failure"
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["model-from-hub"]


def test_the_writer_may_fill_only_the_streamed_prefixes_and_delete_nothing():
    doc = prefix_writer_policy("arn:aws:s3:::acme-models", ["qwen3-8b/abc"])
    actions = {a for st in doc["Statement"] for a in st["Action"]}
    assert actions == {"s3:ListBucket", "s3:GetObject", "s3:PutObject"}
    objects = next(st for st in doc["Statement"] if st["Sid"] == "FillStreamedPrefixes")
    assert objects["Resource"] == ["arn:aws:s3:::acme-models/qwen3-8b/abc/*"]
    listing = next(st for st in doc["Statement"] if st["Sid"] == "ListStreamedPrefixes")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["qwen3-8b/abc/*"]}}


def test_the_storage_example_binds_the_writer_only_where_a_model_streams():
    rec = rendered_stack(ROOT / "stacks" / "examples" / "Pulumi.storage-fsx.yaml").mocks
    accounts = [r for r in rec.of_type("kubernetes:core/v1:ServiceAccount") if "writers" in r.name]
    assert [a.inputs["metadata"]["namespace"] for a in accounts] == ["inference"]
    (policy,) = [r for r in rec.of_type("aws:iam/rolePolicy:RolePolicy") if r.name.endswith("writers-write")]
    resources = json.loads(policy.inputs["policy"])["Statement"][1]["Resource"]
    assert resources == [f"arn:aws:s3:::acme-models/platform/qwen3-8b/{REVISION}/*"], "the platform's prefix only"


def test_the_model_namespaces_egress_admits_s3_and_the_pod_identity_agent_for_every_pod():
    policy = egress("inference")
    assert policy["spec"]["podSelector"] == {}, "the engine and the fill Job both reach S3"
    rules = policy["spec"]["egress"]
    assert POD_IDENTITY_AGENT in rules
    assert {"protocol": "TCP", "port": 443} in [p for r in rules for p in r.get("ports", [])]


def test_streaming_on_another_engine_is_refused_at_load_format():
    s = example()
    i, m = model_at(s, "qwen-awq-tgi")
    m["loadFormat"] = "runai-streamer"
    refused(s, f"models[{i}].loadFormat", "vllm and sglang only", "remove loadFormat")


def test_a_gguf_repository_is_refused_for_streaming():
    s = streamed_example()
    i, m = model_at(s, "qwen3-8b")
    m["model"] = "Qwen/Qwen3-8B-GGUF"
    refused(s, f"models[{i}].model", "only safetensors")


def test_gguf_quantization_in_engine_args_is_refused_in_every_spelling():
    for spelled in (["--quantization", "gguf"], ["--quantization=gguf"], ["-q", "gguf"], ["--quant", "GGUF"]):
        s = streamed_example()
        i, m = model_at(s, "qwen3-8b")
        m["engineArgs"] = spelled
        refused(s, f"models[{i}].engineArgs[0]", "only safetensors")


def test_a_safetensors_quantization_is_accepted_with_streaming():
    s = streamed_example()
    _, m = model_at(s, "qwen3-8b")
    m["engineArgs"] = ["--quantization", "fp8"]
    stack_of(s)


def test_engine_args_that_set_the_loader_are_refused_for_a_streamed_model():
    for spelled in (["--load-format", "safetensors"], ["--load_format=auto"], ["--model-loader-extra-config", "{}"]):
        s = streamed_example()
        i, m = model_at(s, "qwen3-8b")
        m["engineArgs"] = spelled
        refused(s, f"models[{i}].engineArgs[0]", "platform owns")


def test_streaming_from_a_workloads_stack_is_refused_naming_the_writer():
    s = sections("stacks/examples/Pulumi.team-search.yaml")
    s["models"][0]["loadFormat"] = "runai-streamer"
    refused(s, "models[0].loadFormat", "bucket writer", "platform stack")


def test_the_engines_objects_without_streaming_have_no_fill_job():
    stack = stack_of(example())
    assert "Job" not in engine_objects_by_kind(stack, "qwen3-8b")


def test_a_streamed_canary_has_its_own_fill_job_and_prefix_at_its_revision():
    s = streamed_example()
    _, m = model_at(s, "qwen3-8b")
    m["canary"] = {"revision": "0" * 40, "weight": 10}
    stack = stack_of(s)
    model = next(x for x in stack.models if x.name == "qwen3-8b")
    assert model.canary is not None
    prefixes = streamed_prefixes(stack.models)["inference"]
    assert {"platform/qwen3-8b/" + "0" * 40, f"platform/qwen3-8b/{REVISION}"} <= set(prefixes), (
        "the writer may fill both revisions"
    )
    (job,) = by_kind(model_objects(spec_of(stack, model.canary), streaming_context(stack, model.canary)), "Job")
    assert job["metadata"]["name"] == "qwen3-8b-canary-to-bucket"


def test_the_fill_job_downloads_on_the_models_own_pool_whose_nodes_have_the_disk():
    """Not the system nodes (a small root volume): the model's pool, as its copy steps would run."""
    stack = stack_of(streamed_example())
    (job,) = by_kind(engine_objects(stack, "qwen3-8b"), "Job")
    (deployment,) = by_kind(engine_objects(stack, "qwen3-8b"), "Deployment")
    pod, served = job["spec"]["template"]["spec"], deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == served["nodeSelector"], "the model's pool"
    assert pod["tolerations"] == served["tolerations"], "its taint tolerated, as the model's pods do"
    assert "ephemeral-storage" in pod["initContainers"][0]["resources"]["requests"], "room for the weights"
