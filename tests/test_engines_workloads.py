"""Each engine's workload as it would be applied: command, ports, probes, metrics, resources,
placement, security and secrets (the engine modules' builders, on the engines example stack resolved)."""

from __future__ import annotations

import re

import pytest

from stacks.coldstart import safe
from tests.engines_helpers import engine_container, env_of, example, flag, objects, stack_of

STACK = stack_of(example())


def prepared_dir(objs) -> str:
    """The directory the preparation init containers fill (MODEL_DIR), the same in each of them."""
    inits = objs["Deployment"]["spec"]["template"]["spec"]["initContainers"]
    (directory,) = {e["value"] for c in inits for e in c["env"] if e["name"] == "MODEL_DIR"}
    return directory


def pod(objs):
    return objs["Deployment"]["spec"]["template"]


@pytest.mark.parametrize(
    ("name", "port", "live", "ready", "metrics"),
    [
        ("qwen3-8b", 8000, "/health", "/health", "/metrics"),
        ("qwen3-8b-sglang", 30000, "/health", "/health", "/metrics"),
        ("llama-nim", 8000, "/v1/health/live", "/v1/health/ready", "/v1/metrics"),
        ("qwen-awq-tgi", 8080, "/health", "/health", "/metrics"),
        ("llama-inf2", 8000, "/health", "/health", "/metrics"),
        ("qwen3-ollama", 11434, "/", "/api/version", None),
    ],
)
def test_every_engine_serves_on_its_port_with_probes_on_its_real_health_paths(name, port, live, ready, metrics):
    objs = objects(STACK, name)
    c = engine_container(objs["Deployment"])
    assert c["ports"][0] == {"name": "http", "containerPort": port, "protocol": "TCP"}
    assert c["livenessProbe"]["httpGet"]["path"] == live, "liveness must hit the engine's own health path"
    assert c["readinessProbe"]["httpGet"]["path"] == ready
    assert c["startupProbe"]["httpGet"]["path"] == ready
    startup = c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"]
    served = next(m for m in STACK.models if m.name == name)
    first = served.first_start_estimate
    assert startup == served.startup_seconds >= safe(first.in_container), (
        "loading, a cold compile and the weights' read take minutes: the probe allows the first start's estimate"
    )
    annotations = pod(objs)["metadata"].get("annotations", {})
    assert annotations.get("prometheus.io/path") == metrics, "scrapers must read the engine's metrics path"
    svc = objs["Service"]
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["ports"][0]["port"] == port
    assert svc["spec"]["selector"] == objs["Deployment"]["spec"]["selector"]["matchLabels"]
    assert objs["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1


def test_vllm_runs_the_openai_server_with_the_pinned_revision_and_tp_equal_to_the_gpus():
    objs = objects(STACK, "qwen3-8b")
    c = engine_container(objs["Deployment"])
    args = c["args"]
    assert c["command"] == ["vllm", "serve"] and args[0] == prepared_dir(objs), (
        "the server loads what the init containers prepared; a repo id would download it again"
    )
    assert args[0].endswith("/b968826d9c46dd6066d109eabc6255188de91218"), "the pinned revision's directory"
    assert "--revision" not in args and "--download-dir" not in args and "HF_HOME" not in env_of(c)
    assert flag(args, "--served-model-name") == "qwen3-8b"
    assert flag(args, "--tensor-parallel-size") == "1"
    assert flag(args, "--max-model-len") == "8192"
    assert flag(args, "--host") == "0.0.0.0"
    assert "--trust-remote-code" not in args, "remote code runs only when the stack opts in"


def test_vllm_trusts_remote_code_only_when_the_model_entry_says_so():
    sections = example()
    sections["models"][0]["trustRemoteCode"] = True
    args = engine_container(objects(stack_of(sections), "qwen3-8b")["Deployment"])["args"]
    assert "--trust-remote-code" in args


def test_sglang_launches_with_tp_host_metrics_and_the_chosen_grammar_backend():
    objs = objects(STACK, "qwen3-8b-sglang")
    c = engine_container(objs["Deployment"])
    args = c["args"]
    assert c["command"] == ["python3", "-m", "sglang.launch_server"]
    assert flag(args, "--model-path") == prepared_dir(objs)
    assert "--revision" not in args and "--download-dir" not in args
    assert flag(args, "--tp-size") == "1"
    assert flag(args, "--host") == "0.0.0.0", "bound to localhost the Service could not reach it"
    assert "--enable-metrics" in args
    assert flag(args, "--grammar-backend") == "llguidance"


def test_sglang_defaults_to_xgrammar():
    sections = example()
    del sections["models"][1]["sglang"]
    args = engine_container(objects(stack_of(sections), "qwen3-8b-sglang")["Deployment"])["args"]
    assert flag(args, "--grammar-backend") == "xgrammar"


def test_nim_serves_the_prepared_hub_model_with_an_explicit_profile_and_no_credential():
    objs = objects(STACK, "llama-nim")
    spec = pod(objs)["spec"]
    c = engine_container(objs["Deployment"])
    env = env_of(c)
    assert env["NIM_MODEL_PROFILE"] == "vllm-bf16-tp4-pp1"
    assert spec["imagePullSecrets"] == [{"name": "ngc-registry"}]
    assert env["NIM_MODEL_PATH"] == prepared_dir(objs), "model-free NIM serves the prepared local directory"
    hub = next(i for i in spec["initContainers"] if i["name"] == "model-from-hub")
    assert {"name": "MODEL_ID", "value": "meta-llama/Llama-3.1-8B-Instruct"} in hub["env"], "hf:// dropped"
    assert not {"NGC_API_KEY", "HF_TOKEN", "HF_TOKEN_PATH"} & set(env), "the server holds no credential"
    assert not env["NIM_CACHE_PATH"].startswith("/models"), "NIM's own cache stays off the shared model cache"
    assert "command" not in c, "the image's entrypoint dispatches on its first argument"
    assert c["args"][0] == "nim-serve", "the action first, then the vLLM flags it forwards"
    assert flag(c["args"], "--served-model-name") == "llama-nim", "serve flags follow nim-serve"
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_nim_with_a_prepared_model_path_needs_no_credential_at_all():
    sections = example()
    nim = sections["models"][2]
    nim["nim"]["modelPath"] = "/models/llama-nim/prepared"
    nim["model"] = "meta/llama-3.1-8b-instruct"  # an NGC model, prepared elsewhere
    del nim["secrets"]
    objs = objects(stack_of(sections), "llama-nim")
    c = engine_container(objs["Deployment"])
    assert env_of(c)["NIM_MODEL_PATH"] == "/models/llama-nim/prepared"
    assert c["args"][:3] == ["nim-serve", "--served-model-name", "llama-nim"]
    assert "initContainers" not in objs["Deployment"]["spec"]["template"]["spec"], "nothing left to prepare"


def test_tgi_shards_over_its_gpus_quantizes_only_awq_weights_and_waits_long_for_startup():
    objs = objects(STACK, "qwen-awq-tgi")
    c = engine_container(objs["Deployment"])
    args = c["args"]
    assert "command" not in c, "the image entrypoint activates TGI's venv before the launcher"
    assert flag(args, "--model-id") == prepared_dir(objs), "TGI takes a local directory as its model id"
    assert "--revision" not in args and "--huggingface-hub-cache" not in args
    assert flag(args, "--num-shard") == "1"
    assert flag(args, "--quantize") == "awq"
    assert flag(args, "--hostname") == "0.0.0.0" and flag(args, "--port") == "8080"
    probe = c["startupProbe"]
    served = next(m for m in STACK.models if m.name == "qwen-awq-tgi")
    assert probe["periodSeconds"] * probe["failureThreshold"] == served.startup_seconds, "its estimate's window"


def test_ollama_listens_on_all_interfaces_and_pulls_in_a_bounded_preparation_step():
    objs = objects(STACK, "qwen3-ollama")
    spec = pod(objs)["spec"]
    c = engine_container(objs["Deployment"])
    env = env_of(c)
    assert env["OLLAMA_HOST"] == "0.0.0.0:11434", "bound to localhost the Service could not reach it"
    assert env["OLLAMA_MODELS"].startswith("/models/"), "models live on the model volume"
    assert "lifecycle" not in c, "no postStart sleep pretending to wait for a pull"
    pull = next(i for i in spec["initContainers"] if i["name"] == "pull-models")
    script = pull["command"][-1]
    assert "ollama pull" in script and "qwen3:8b" in script
    assert "-ge 5" in script and "exit 1" in script, "pulls retry a bounded number of times, then fail"
    assert "until ollama list" in script, "the pull waits for the private server to answer"
    assert "nvidia.com/gpu" not in c["resources"]["requests"], "a CPU pool replica asks for no GPU"
    assert c["resources"]["requests"]["cpu"] == "4000m" and c["resources"]["requests"]["memory"] == "16384Mi"


def test_neuron_vllm_asks_for_whole_devices_and_uses_their_neuroncores_for_tensor_parallelism():
    objs = objects(STACK, "llama-inf2")
    spec = pod(objs)["spec"]
    c = engine_container(objs["Deployment"])
    res = c["resources"]
    assert res["requests"]["aws.amazon.com/neuron"] == res["limits"]["aws.amazon.com/neuron"] == "1"
    assert flag(c["args"], "--tensor-parallel-size") == "2", "one Inferentia2 device holds two NeuronCores"
    env = env_of(c)
    assert c["args"][0] == prepared_dir(objs), "vllm-neuron ignores the revision of a repo id and copies it"
    assert "VLLM_NEURON_FRAMEWORK" not in env, "read only by the legacy V0 fork, not by vllm-neuron"
    assert env["NEURON_COMPILED_ARTIFACTS"].startswith("/models/_compile/platform/llama-inf2/"), (
        "artifacts in the cache's compiled-artifact tree (CacheMount.compiled_dir)"
    )
    assert re.search(r"/tp2-[0-9a-f]{10}$", env["NEURON_COMPILED_ARTIFACTS"]), (
        "keyed by tensor-parallel degree and the serving flags' digest (vllm-neuron ignores differing flags)"
    )
    assert not env["NEURON_COMPILED_ARTIFACTS"].startswith(c["args"][0]), "artifacts apart from weights"
    assert [e["name"] for e in c["env"]].count("NEURON_COMPILED_ARTIFACTS") == 1, (
        "one entry per env name: server-side apply refuses duplicates"
    )
    assert spec["schedulerName"] == "neuron-scheduler"
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert c["image"].endswith(":0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"), "the last NxD Inference DLC (inf2)"


def test_gpu_pods_tolerate_the_gpu_taint_land_on_their_pool_and_request_what_they_limit():
    spec = pod(objects(STACK, "qwen3-8b"))["spec"]
    c = engine_container({"spec": {"template": {"spec": spec}}})
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["nodeSelector"] == {"inference-platform.io/pool": "gpu"}
    res = c["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "1"
    assert res["requests"]["memory"] == res["limits"]["memory"]
    assert {t["topologyKey"] for t in spec["topologySpreadConstraints"]} >= {"topology.kubernetes.io/zone"}


def test_the_hugging_face_token_is_a_mounted_file_named_by_hf_token_path():
    c = engine_container(objects(STACK, "qwen3-8b")["Deployment"])
    env = env_of(c)
    assert env["HF_TOKEN_PATH"] == "/var/run/secrets/huggingface/token"
    assert "HF_TOKEN" not in env, "a token is never an env value"
    assert any(m["mountPath"] == "/var/run/secrets/huggingface" and m["readOnly"] for m in c["volumeMounts"])


@pytest.mark.parametrize(
    ("name", "non_root"),
    [
        ("qwen3-8b", True),
        ("qwen3-8b-sglang", True),
        ("llama-nim", True),
        ("qwen3-ollama", True),
        # Images that need root: TGI's Python lives under /root, the Neuron DLC needs its devices.
        ("qwen-awq-tgi", False),
        ("llama-inf2", False),
    ],
)
def test_engine_containers_run_restricted_and_non_root_where_the_image_allows(name, non_root):
    c = engine_container(objects(STACK, name)["Deployment"])
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert sc.get("runAsNonRoot", False) is non_root
    assert any(m["mountPath"] == "/home/engine" for m in c["volumeMounts"]), "caches are written to a volume"


def test_a_replica_spanning_several_gpus_gets_a_memory_backed_dev_shm():
    objs = objects(STACK, "llama-nim")
    spec = pod(objs)["spec"]
    shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert any(m["mountPath"] == "/dev/shm" for m in engine_container(objs["Deployment"])["volumeMounts"])
    single = pod(objects(STACK, "qwen3-8b"))["spec"]
    assert not any(v["name"] == "dshm" for v in single["volumes"])


def test_an_hpa_owner_gets_an_autoscaling_v2_hpa_on_the_workload():
    sections = example()
    sections["models"][0]["autoscaling"] = {"owner": "hpa", "minReplicas": 1, "maxReplicas": 3}
    objs = objects(stack_of(sections), "qwen3-8b")
    hpa = objs["HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen3-8b"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert "HorizontalPodAutoscaler" not in objects(STACK, "qwen3-8b-sglang")


def test_aibrix_labels_are_on_the_pods_only_when_aibrix_is_on():
    assert "model.aibrix.ai/name" not in pod(objects(STACK, "qwen3-8b"))["metadata"]["labels"]
    sections = example()
    sections["addons"]["aibrix"] = {"enabled": True}
    labels = pod(objects(stack_of(sections), "qwen3-8b"))["metadata"]["labels"]
    assert labels["model.aibrix.ai/name"] == "qwen3-8b"
    assert labels["model.aibrix.ai/port"] == "8000"


def test_an_image_override_replaces_repository_tag_and_digest():
    sections = example()
    digest = "sha256:" + "a" * 64
    sections["models"][0]["image"] = {"tag": "v0.31.0", "digest": digest}
    c = engine_container(objects(stack_of(sections), "qwen3-8b")["Deployment"])
    assert c["image"] == f"vllm/vllm-openai:v0.31.0@{digest}"
