"""Engine refusals: each bad stack file is a ConfigError naming the key and the fix, before any
resource exists."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.errors import ConfigError
from stacks.pipeline import check_sections
from tests.engines_helpers import example

P = "inference-platform:"


def problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def model(sections: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    return next((i, m) for i, m in enumerate(sections["models"]) if m["name"] == name)


def test_the_engines_example_is_valid():
    check_sections(example(), "us-west-2")


def test_nim_on_inferentia_is_refused():
    s = example()
    i, m = model(s, "llama-nim")
    m["pool"], m["acceleratorsPerReplica"] = "inferentia", 1
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].engine:") and "nvidia" in p and "NIM" in p for p in found), found


def test_neuron_vllm_on_a_gpu_pool_is_refused():
    s = example()
    i, m = model(s, "llama-inf2")
    m["pool"] = "gpu"
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].engine:") and "neuron" in p for p in found), found


def test_eight_gpus_per_replica_on_a_four_gpu_only_pool_is_refused_with_the_shortfall():
    s = example()
    s["nodePools"][0] = {"name": "gpu", "accelerator": "nvidia", "instanceTypes": ["g6.12xlarge"]}
    s["models"] = [m for m in s["models"] if m["pool"] == "gpu"][:1]
    s["models"][0]["acceleratorsPerReplica"] = 8
    found = problems(s)
    msg = next(p for p in found if p.startswith(f"{P}models[0].acceleratorsPerReplica:") and "fits no" in p)
    assert "g6.12xlarge" in msg and "nvidia.com/gpu 8 > 4" in msg, msg


def test_a_70b_bf16_model_on_one_24gb_gpu_is_refused_with_the_arithmetic():
    s = example()
    s["nodePools"][0]["instanceTypes"] = ["g6.xlarge"]
    s["models"] = [m for m in s["models"] if m["name"] == "qwen3-8b"]
    s["models"][0].update({"parameters": "70B", "dtype": "bf16", "autoscaling": {"owner": "none"}})
    found = problems(s)
    msg = next(p for p in found if "weights do not fit" in p)
    assert msg.startswith(f"{P}models[0].acceleratorsPerReplica:")
    assert "70B parameters x 2 bytes (bf16) = 130.4 GiB" in msg, msg
    assert "1 x 22.35 GiB" in msg and "KV cache" in msg, msg


def test_weights_are_checked_against_the_smallest_gpu_the_pool_may_get():
    s = example()
    _, m = model(s, "qwen3-8b")
    m["parameters"] = "20B"  # 37 GiB bf16: fits an L40S (g6e) but not an L4 (g6)
    found = problems(s)
    assert any("weights do not fit" in p and "g6.xlarge" in p for p in found), found


def test_tgi_without_the_maintenance_mode_opt_in_is_refused():
    s = example()
    i, m = model(s, "qwen-awq-tgi")
    m["tgi"]["acceptMaintenanceMode"] = False
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}]") and "maintenance mode" in p for p in found), found


def test_tgi_awq_quantization_of_ordinary_weights_is_refused():
    s = example()
    _, m = model(s, "qwen-awq-tgi")
    m["tgi"]["weightsFormat"] = "safetensors"
    found = problems(s)
    assert any("does not convert ordinary weights" in p for p in found), found


def test_an_unpinned_image_and_revision_are_refused_in_prod():
    s = example()
    s["stack"]["environment"] = "prod"
    j, unpinned = model(s, "llama-nim")
    del unpinned["revision"]
    found = problems(s)
    i, _ = model(s, "qwen3-8b")
    assert f"{P}models[{i}].image.digest" in {p.split(": ")[0] for p in found}, found
    assert any(p.startswith(f"{P}models[{j}].revision:") for p in found), found


def test_the_vllm_neuron_beta_image_is_refused_on_inferentia2():
    s = example()
    i, m = model(s, "llama-inf2")
    m["image"] = {"tag": "0.24.0.1.1.0-neuronx-py313-sdk2.32.0-ubuntu24.04"}
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].image.tag:") and "Trn2/Trn3" in p for p in found), found


def test_neuron_vllm_on_an_inf2_only_pool_is_the_supported_nxd_inference_path():
    from components.engines import neuron_vllm
    from stacks.load import parse_sections
    from stacks.resolve import resolve

    s = example()
    s["nodePools"][1]["instanceTypes"] = ["inf2.xlarge"]
    stack = resolve(parse_sections(s, "us-west-2"))
    on_inf2 = [e for e in stack.entries if e.config.engine == "neuron-vllm"]
    refused = [p for e in on_inf2 for p in neuron_vllm.checks(e, stack)]
    assert on_inf2 and not refused, "inf2 is the NxD Inference target"


def test_pool_limits_smaller_than_one_replica_are_refused():
    s = example()
    s["nodePools"][1]["limits"] = {"accelerators": 1}
    i, m = model(s, "llama-inf2")
    m["acceleratorsPerReplica"] = 2
    s["nodePools"][1]["instanceTypes"] = ["inf2.24xlarge"]
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].acceleratorsPerReplica:") and "limited to 1" in p for p in found), found


def test_an_ngc_model_without_a_prepared_path_is_refused():
    s = example()
    i, m = model(s, "llama-nim")
    m["model"] = "meta/llama-3.1-8b-instruct"  # a model-specific NIM: its weights come from NGC
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].model:") and "nim.modelPath" in p for p in found), found


def test_an_ngc_key_on_a_nim_deployment_is_refused_as_unused():
    s = example()
    i, m = model(s, "llama-nim")
    m["secrets"] = {"ngcApiKey": "ngc-api-key", "huggingFaceToken": "hf-token"}
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].secrets.ngcApiKey:") and "authSecret" in p for p in found), found


def test_nim_pull_secret_and_model_credential_must_be_different_secrets():
    s = example()
    s["addons"]["nimOperator"] = {"enabled": True}
    i, m = model(s, "llama-nim")
    m["secrets"] = {"ngcApiKey": "ngc-api-key"}
    m["nim"]["imagePullSecret"] = "ngc-api-key"
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].nim.imagePullSecret:") for p in found), found


def test_an_explicit_replica_size_larger_than_any_instance_type_is_refused():
    s = example()
    i, m = model(s, "qwen3-8b")
    m["resources"] = {"memory": "2000Gi"}
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].resources.memory:") for p in found), found


def test_an_hpa_on_another_engines_metric_is_refused():
    s = example()
    i, m = model(s, "qwen3-8b-sglang")
    m["autoscaling"] = {"owner": "hpa", "maxReplicas": 2, "metric": "vllm:num_requests_waiting"}
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].autoscaling.metric:") and "sglang:num_queue_reqs" in p for p in found), (
        found
    )


@pytest.mark.parametrize("owner", ["hpa", "aibrix"])
def test_an_autoscaler_on_a_histogram_is_refused_naming_the_gauges(owner):
    s = example()
    i, m = model(s, "qwen3-8b-sglang")
    m["autoscaling"] = {"owner": owner, "maxReplicas": 2, "metric": "sglang:time_to_first_token_seconds"}
    found = [p for p in problems(s) if p.startswith(f"{P}models[{i}].autoscaling.metric:")]
    assert found and "not a gauge" in found[0] and "sglang:num_running_reqs" in found[0], found


def test_an_hpa_without_a_metric_scales_on_the_engines_queue_depth():
    s = example()
    i, m = model(s, "qwen3-8b-sglang")
    m["autoscaling"] = {"owner": "hpa", "maxReplicas": 2}
    config = check_sections(s, "us-west-2").config  # accepted
    assert config.models[i].autoscaling.metric is None


def test_an_hpa_on_ollama_is_refused_because_it_exports_no_metrics():
    s = example()
    i, m = model(s, "qwen3-ollama")
    m["autoscaling"] = {"owner": "hpa"}
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].autoscaling.owner:") for p in found), found


def test_a_neuron_request_whose_cores_do_not_split_the_heads_is_refused():
    # Was a warning; 12 NeuronCores do not divide Llama-3.1-8B's 32 heads, which vLLM refuses at start-up.
    s = example()
    i, m = model(s, "llama-inf2")
    s["nodePools"][1]["instanceTypes"] = ["inf2.24xlarge"]
    s["nodePools"][1]["limits"] = {"accelerators": 12}
    m["acceleratorsPerReplica"] = 6
    with pytest.raises(ConfigError) as info:
        check_sections(s, "us-west-2")
    found = [str(p) for p in info.value.problems]
    assert any(p.startswith(f"{P}models[{i}].acceleratorsPerReplica:") and "12 NeuronCores" in p for p in found)


def test_a_neuron_replica_holds_its_weights_in_host_memory():
    from stacks.sizing import replica_requests

    config = check_sections(example(), "us-west-2").config
    llama = next(m for m in config.models if m.name == "llama-inf2")
    pool = config.pool("inferentia")
    assert pool is not None
    req = replica_requests(llama, pool, config.storage)
    assert req.memory_mib >= 8e9 * 2 * 1.25 / 2**20, "NxD Inference shards the checkpoint on the host"
    assert req.neuron == 1 and req.gpu == 0


def test_nim_serving_a_public_hugging_face_model_needs_no_ngc_key():
    s = example()
    _, m = model(s, "llama-nim")
    m["secrets"] = {"huggingFaceToken": "hf-token"}
    check_sections(s, "us-west-2")


def test_a_replica_asking_for_accelerators_on_a_cpu_pool_is_refused():
    s = example()
    i, m = model(s, "qwen3-ollama")
    m["acceleratorsPerReplica"] = 1
    found = problems(s)
    assert any(p.startswith(f"{P}models[{i}].acceleratorsPerReplica:") and "0" in p for p in found), found
