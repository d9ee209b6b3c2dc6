"""NodePool and EC2NodeClass builders: taints, labels, tolerations, AMI, volumes, limits, disruption,
each variant validated against Karpenter v1.14.1's CRDs."""

from __future__ import annotations

import pytest

from components.capacity.nodepools import BUSINESS_HOURS, ec2_node_class, node_pool
from components.scheduling import placement, pool_labels, pool_taints
from stacks import conformance
from stacks.config.pools import NodePoolSection
from stacks.exports import resolve_pool

SCHEMAS = conformance.schema_dir()


def pool(**kw) -> NodePoolSection:
    raw = {"name": "gpu", "accelerator": "nvidia", "instanceTypes": ["g6.xlarge", "g6.12xlarge"]}
    raw.update(kw)
    return NodePoolSection.model_validate(raw)


def node_class(p: NodePoolSection) -> dict:
    return ec2_node_class(
        resolve_pool(p, None), cluster="inference-dev", node_role="inference-dev-karpenter-node", tags={"a": "b"}
    )


VARIANTS = {
    "gpu-al2023": pool(),
    "gpu-raid0-families-spot": pool(
        instanceTypes=[],
        instanceFamilies=["g6", "g6e"],
        localNvme="raid0",
        capacityTypes=["spot", "on-demand"],
        weight=10,
    ),
    "gpu-bottlerocket": pool(amiAlias="bottlerocket@v1.40.0"),
    "neuron": pool(
        name="inf", accelerator="neuron", instanceTypes=["inf2.xlarge", "inf2.24xlarge"], limits={"accelerators": 12}
    ),
    "cpu": pool(name="cpu", accelerator="none", instanceTypes=["m7i.large"], limits={"cpu": "64", "memory": "256Gi"}),
    "custom-budgets": pool(disruptionBudgets=[{"nodes": "1"}], consolidationPolicy="WhenEmpty", consolidateAfter="1h"),
}


@pytest.mark.schemas
@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_every_variant_validates_against_the_upstream_crds(variant):
    assert SCHEMAS is not None
    p = VARIANTS[variant]
    for obj in (node_class(p), node_pool(p)):
        assert conformance.validate_custom(obj, SCHEMAS) == [], (obj["kind"], variant)


def test_a_gpu_pool_is_tainted_so_cpu_pods_stay_off():
    taints = node_pool(pool())["spec"]["template"]["spec"]["taints"]
    assert taints == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]


def test_a_neuron_pool_is_tainted_with_the_neuron_resource():
    taints = node_pool(VARIANTS["neuron"])["spec"]["template"]["spec"]["taints"]
    assert taints == [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}]


def test_a_cpu_pool_has_no_taint():
    assert "taints" not in node_pool(VARIANTS["cpu"])["spec"]["template"]["spec"]


def test_a_workload_placed_on_a_pool_tolerates_exactly_its_taint():
    for p in (pool(), VARIANTS["neuron"]):
        tolerations = placement(p).tolerations
        assert [(t["key"], t["effect"]) for t in tolerations] == [(t["key"], t["effect"]) for t in pool_taints(p)]
        assert placement(p).node_selector == {"inference-platform.io/pool": p.name}


def test_al2023_gpu_nodes_carry_the_label_the_nvidia_plugin_needs_without_nfd():
    labels = node_pool(pool())["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["inference-platform.io/accelerator"] == "nvidia"
    assert labels == pool_labels(pool()), "one source for pool labels"


def test_bottlerocket_gpu_nodes_keep_our_plugin_off_because_theirs_is_built_in():
    assert "nvidia.com/gpu.present" not in pool_labels(VARIANTS["gpu-bottlerocket"])


def test_the_node_class_uses_discovery_tags_the_node_role_and_imdsv2_hop_limit_one():
    spec = node_class(pool())["spec"]
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "inference-dev"}}]
    assert spec["securityGroupSelectorTerms"] == spec["subnetSelectorTerms"]
    assert spec["role"] == "inference-dev-karpenter-node"
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1, "pods must not reach node credentials"
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]


def test_the_root_volume_is_encrypted_gp3_of_the_pools_size():
    (root,) = node_class(pool(rootVolumeGiB=300, imagePull="standard"))["spec"]["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda" and root["rootVolume"] is True
    assert root["ebs"] == {"volumeSize": "300Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    # A SOCI pool (the default here) adds exactly the throughput parallel unpack needs (tests/test_fast_path.py).
    (soci,) = node_class(pool(rootVolumeGiB=300))["spec"]["blockDeviceMappings"]
    assert soci["ebs"] == {**root["ebs"], "iops": 3000, "throughput": 600}


def test_bottlerocket_puts_the_sized_volume_on_its_data_device():
    devices = node_class(VARIANTS["gpu-bottlerocket"])["spec"]["blockDeviceMappings"]
    data = next(d for d in devices if d.get("rootVolume"))
    assert data["deviceName"] == "/dev/xvdb" and data["ebs"]["volumeSize"] == "200Gi"
    assert all(d["ebs"]["encrypted"] for d in devices)


def test_raid0_sets_the_instance_store_policy_only_when_asked():
    assert node_class(VARIANTS["gpu-raid0-families-spot"])["spec"]["instanceStorePolicy"] == "RAID0"
    assert "instanceStorePolicy" not in node_class(pool())["spec"]


def test_requirements_come_from_types_or_families_capacity_types_and_architecture():
    reqs = {
        r["key"]: r["values"]
        for r in node_pool(VARIANTS["gpu-raid0-families-spot"])["spec"]["template"]["spec"]["requirements"]
    }
    assert reqs["karpenter.k8s.aws/instance-family"] == ["g6", "g6e"]
    assert reqs["karpenter.sh/capacity-type"] == ["spot", "on-demand"]
    assert reqs["kubernetes.io/arch"] == ["amd64"]
    typed = {r["key"]: r["values"] for r in node_pool(pool())["spec"]["template"]["spec"]["requirements"]}
    assert typed["node.kubernetes.io/instance-type"] == ["g6.xlarge", "g6.12xlarge"]


def test_limits_derive_cpu_and_memory_so_the_accelerator_limit_binds_and_the_largest_type_fits():
    limits = node_pool(VARIANTS["neuron"])["spec"]["limits"]
    assert limits["aws.amazon.com/neuron"] == "12"
    # inf2.xlarge has 4 vCPU and 16GiB per device, inf2.24xlarge 16 vCPU and 64GiB: 12 devices at 16.
    assert limits["cpu"] == "192" and limits["memory"] == "768Gi"
    assert int(limits["cpu"]) >= 96, "one whole inf2.24xlarge fits"


def test_given_cpu_and_memory_limits_are_kept():
    assert node_pool(VARIANTS["cpu"])["spec"]["limits"] == {"cpu": "64", "memory": "256Gi"}


def test_a_pool_without_limits_has_none():
    assert "limits" not in node_pool(pool())["spec"]


def test_accelerator_nodes_are_not_consolidated_in_business_hours_by_default():
    disruption = node_pool(pool())["spec"]["disruption"]
    assert disruption["consolidateAfter"] == "10m"
    hours = [b for b in disruption["budgets"] if b.get("schedule")]
    assert hours == [BUSINESS_HOURS.model_dump(by_alias=True, exclude_none=True)]
    assert hours[0]["nodes"] == "0" and set(hours[0]["reasons"]) == {"Underutilized", "Drifted"}


def test_cpu_pools_and_explicit_budgets_do_not_get_the_business_hours_budget():
    assert node_pool(VARIANTS["cpu"])["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}]
    custom = node_pool(VARIANTS["custom-budgets"])["spec"]["disruption"]
    assert custom == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h", "budgets": [{"nodes": "1"}]}


def test_the_node_pool_references_its_node_class():
    ref = node_pool(pool())["spec"]["template"]["spec"]["nodeClassRef"]
    assert ref == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}
