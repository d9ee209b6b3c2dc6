"""Capacity refusals: a stack Karpenter could never serve fails validation, naming the key and the fix."""

from __future__ import annotations

import pytest

from stacks.errors import ConfigError
from stacks.pipeline import check_sections, stack_warnings


def problems(sections) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        check_sections(sections, "us-west-2")
    return [str(p) for p in exc.value.problems]


def one(sections, key: str) -> str:
    found = [p for p in problems(sections) if p.startswith(f"inference-platform:{key}: ")]
    assert len(found) == 1, problems(sections)
    return found[0]


def test_the_dev_stack_passes_every_capacity_rule(dev):
    check_sections(dev, "us-west-2")


def test_a_model_that_fits_no_type_names_model_pool_largest_type_and_resources(dev):
    dev["nodePools"][1]["instanceTypes"] = ["inf2.xlarge"]
    dev["models"][1].update(acceleratorsPerReplica=2, resources={"cpu": "8", "memory": "24Gi"})
    message = one(dev, "models[1].acceleratorsPerReplica")
    for text in ("llama-3-8b-neuron", "pool inferentia", "inf2.xlarge", "aws.amazon.com/neuron", "cpu", "memory"):
        assert text in message, message


def test_a_model_asking_more_memory_than_any_gpu_node_points_at_resources_memory(dev):
    dev["models"][0]["resources"] = {"memory": "2Ti"}
    message = one(dev, "models[0].resources.memory")
    assert "g6.12xlarge" in message, "the largest allowed type is named"


def test_a_replica_larger_than_the_pools_accelerator_limit_is_refused(dev):
    dev["nodePools"][0]["instanceTypes"] = ["g6.48xlarge"]
    dev["nodePools"][0]["limits"] = {"accelerators": 8}
    dev["models"][0]["acceleratorsPerReplica"] = 8
    check_sections(dev, "us-west-2")
    dev["nodePools"][0]["limits"] = {"accelerators": 4}
    assert any("limits" in p for p in problems(dev))


def test_limits_that_block_every_instance_type_are_an_error(dev):
    dev["nodePools"][0]["limits"] = {"accelerators": 16, "cpu": "2"}
    message = one(dev, "nodePools[0].limits")
    assert "block every instance type" in message and "g6.xlarge" in message


def test_an_accelerator_limit_below_every_nodes_device_count_blocks_the_pool(dev):
    dev["nodePools"][0]["instanceTypes"] = ["g6.12xlarge"]
    dev["nodePools"][0]["limits"] = {"accelerators": 2}
    dev["models"][0]["acceleratorsPerReplica"] = 1
    assert "accelerators (4)" in one(dev, "nodePools[0].limits")


def test_an_accelerator_limit_on_a_cpu_pool_is_refused(dev):
    dev["nodePools"].append(
        {"name": "cpu", "accelerator": "none", "instanceTypes": ["m7i.large"], "limits": {"accelerators": 2}}
    )
    assert "cpu and memory instead" in one(dev, "nodePools[2].limits.accelerators")


def test_raid0_on_inferentia_is_refused_because_inf2_has_no_instance_store(dev):
    dev["nodePools"][1]["localNvme"] = "raid0"
    message = one(dev, "nodePools[1].localNvme")
    assert "inf2.xlarge" in message and "localNvme: none" in message


def test_raid0_on_gpu_types_with_nvme_is_accepted(dev):
    dev["nodePools"][0]["localNvme"] = "raid0"
    check_sections(dev, "us-west-2")


def test_arm64_with_x86_types_is_refused(dev):
    dev["nodePools"][0]["architecture"] = "arm64"
    assert "amd64" in one(dev, "nodePools[0].architecture")


def test_an_al2023_gpu_pool_without_the_nvidia_device_plugin_is_refused(dev):
    dev["addons"]["nvidiaDevicePlugin"] = {"enabled": False}
    assert "nvidia.com/gpu" in one(dev, "addons.nvidiaDevicePlugin.enabled")


def test_a_bottlerocket_gpu_pool_needs_no_nvidia_device_plugin(dev):
    dev["addons"]["nvidiaDevicePlugin"] = {"enabled": False}
    dev["nodePools"][0]["amiAlias"] = "bottlerocket@v1.40.0"
    check_sections(dev, "us-west-2")


def test_a_neuron_pool_without_the_neuron_chart_is_refused(dev):
    dev["addons"]["neuron"] = {"enabled": False}
    assert "aws.amazon.com/neuron" in one(dev, "addons.neuron.enabled")


def test_prod_refuses_an_unpinned_ami(dev):
    dev["stack"]["environment"] = "prod"
    assert any(p.startswith("inference-platform:nodePools[0].amiAlias") for p in problems(dev))


def test_an_unknown_ami_family_is_refused_by_the_alias_pattern(dev):
    dev["nodePools"][0]["amiAlias"] = "windows2022@latest"
    assert any("nodePools[0].amiAlias" in p for p in problems(dev))


def test_a_neuron_request_that_is_not_a_power_of_two_warns(dev):
    # A model whose heads this program does not know: the split cannot be checked, the count still warns.
    dev["models"][1]["model"] = "acme/house-llm-8b"
    dev["models"][1]["acceleratorsPerReplica"] = 6
    config = check_sections(dev, "us-west-2")
    warnings = [str(w) for w in stack_warnings(config)]
    assert any("models[1].acceleratorsPerReplica" in w and "power-of-two" in w for w in warnings), warnings


def test_a_neuron_device_count_whose_cores_do_not_split_the_heads_is_refused_like_on_gpus(dev):
    # Llama-3.1-8B has 32 attention heads; 6 Inferentia2 devices are 12 NeuronCores, the TP degree.
    dev["models"][1]["acceleratorsPerReplica"] = 6
    found = problems(dev)
    refusal = next(p for p in found if p.startswith("inference-platform:models[1].acceleratorsPerReplica"))
    assert "12 NeuronCores" in refusal and "32 attention heads" in refusal, refusal
    assert "use 1, 2, 4, 8 devices per replica" in refusal, "the fix is named"
    dev["models"][1]["acceleratorsPerReplica"] = 4
    check_sections(dev, "us-west-2")  # 8 NeuronCores split the 32 heads: accepted


def test_a_cpu_type_outside_the_catalog_warns_that_its_fit_is_unchecked(dev):
    dev["nodePools"].append({"name": "cpu", "accelerator": "none", "instanceTypes": ["m6i.large"]})
    warnings = [str(w) for w in stack_warnings(check_sections(dev, "us-west-2"))]
    assert any(w.startswith("inference-platform:nodePools[2].instanceTypes[0]: m6i.large") for w in warnings)


def test_cpu_limits_that_stop_the_only_type_a_replica_fits_are_refused(dev):
    dev["nodePools"][0]["limits"] = {"cpu": "8", "memory": "64Gi"}
    dev["models"][0]["resources"] = {"cpu": "16"}
    message = one(dev, "nodePools[0].limits")
    assert "qwen3-8b fits only g6.12xlarge" in message and "cpu (48 vCPU)" in message


def test_a_cpu_family_outside_the_catalog_warns_too(dev):
    dev["nodePools"].append({"name": "cpu", "accelerator": "none", "instanceFamilies": ["r7i"]})
    warnings = [str(w) for w in stack_warnings(check_sections(dev, "us-west-2"))]
    assert any(w.startswith("inference-platform:nodePools[2].instanceFamilies[0]: family r7i") for w in warnings)
