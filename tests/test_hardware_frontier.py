"""The newest accelerators in the catalog (p6-b200, p6-b300, g6f fractional L4s) and the refusals that
keep a stack from landing on hardware it cannot run on: each figure is recomputed from Karpenter's
formulas (shared/facts/CAPACITY.md), each refusal names its key."""

from __future__ import annotations

import json
import math

import pytest

from stacks import versions
from stacks.errors import ConfigError
from stacks.hardware import DATA_FRONTIER, catalog, uncatalogued
from stacks.pipeline import check_sections, stack_warnings


def entries() -> list[dict]:
    return json.loads(DATA_FRONTIER.read_text())["instances"]


def problems(sections) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        check_sections(sections, "us-west-2")
    return [str(p) for p in exc.value.problems]


def found(sections, key: str) -> list[str]:
    """The problems at this key, if the stack is refused at all (an accepted stack has none)."""
    try:
        check_sections(sections, "us-west-2")
    except ConfigError as exc:
        return [str(p) for p in exc.problems if str(p).startswith(f"inference-platform:{key}: ")]
    return []


def at(sections, key: str) -> list[str]:
    return [p for p in problems(sections) if p.startswith(f"inference-platform:{key}: ")]


def kube_reserved_cpu_m(vcpu: int) -> int:
    bands = [(1, 60), (1, 10), (2, 5), (max(vcpu - 4, 0), 2.5)]
    left, total = vcpu, 0
    for cores, millis in bands:
        take = min(left, cores)
        total += int(take * millis)
        left -= take
    return total


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e["name"])
def test_every_new_types_allocatable_is_karpenters_formula(entry):
    alloc = entry["karpenter_allocatable"]
    mib = int(entry["memory_gib"] * 1024)
    pods = entry["max_enis_default_card"] * (entry["ipv4_per_eni"] - 1) + 2
    assert alloc["pods"] == pods, "ENI-limited pods"
    assert alloc["cpu_millicores"] == entry["vcpu"] * 1000 - kube_reserved_cpu_m(entry["vcpu"])
    assert alloc["memory_mib"] == mib - math.ceil(mib * 0.075) - (11 * pods + 255) - 100
    assert any("instance-types.md" in s for s in entry["sources"]), "every entry names its source"


def test_p6_b200_and_b300_carry_eight_blackwell_gpus_with_efa_and_nvme():
    b200, b300 = catalog()["p6-b200.48xlarge"], catalog()["p6-b300.48xlarge"]
    assert (b200.gpu_name, b200.gpu_count, b200.gpu_memory_gib) == ("b200", 8, 179.06)
    assert (b300.gpu_name, b300.gpu_count, b300.gpu_memory_gib) == ("b300", 8, 268.59)
    assert (b200.efa_interfaces, b300.efa_interfaces) == (8, 16), "Karpenter's vpc.amazonaws.com/efa"
    assert (b200.network_mbps, b300.network_mbps) == (3_200_000, 6_400_000)
    assert b200.ebs_mbps == b300.ebs_mbps == 100_000, "cold-start rates read the EBS bandwidth"
    assert b200.nvme_gib == b300.nvme_gib == 30400
    assert b300.memory_gib == 4096 and b300.alloc_memory_mib == 3877198
    assert b200.architecture == b300.architecture == "amd64"
    assert len(b300.efa_layout) == 17 and b300.efa_pods == 149, "an efa pool attaches all 16 EFA devices"


def test_g6f_sizes_are_fractions_of_one_l4_with_that_share_of_its_memory():
    l4 = catalog()["g6.xlarge"].gpu_memory_gib
    for name, fraction in [("g6f.large", 1 / 8), ("g6f.xlarge", 1 / 8), ("g6f.2xlarge", 1 / 4), ("g6f.4xlarge", 1 / 2)]:
        t = catalog()[name]
        assert t.gpu_fraction == fraction and t.gpu_count == 1, "the device plugin shows one vGPU"
        assert t.memory_per_accelerator_gib == pytest.approx(l4 * fraction, abs=0.01), name
        assert t.karpenter_gpus == 0, "EC2 reports the fraction as 0 GPUs, and so does Karpenter"


def test_the_ultraserver_and_unpublished_types_are_named_with_why_they_are_not_sized():
    known = uncatalogued()
    assert set(known) == {"p6e-gb200.36xlarge", "trn2u.48xlarge", "trn2.3xlarge"}
    assert known["p6e-gb200.36xlarge"].architecture == "arm64", "Grace hosts"
    assert all(t.name not in catalog() for t in known.values())


def test_a_pool_naming_p6e_gb200_is_refused_with_the_reason_and_catalogued_choices(dev):
    dev["nodePools"][0]["instanceTypes"] = ["p6e-gb200.36xlarge"]
    [message] = at(dev, "nodePools[0].instanceTypes[0]")
    assert "UltraServer" in message and "p6-b300.48xlarge" in message and "instances-frontier.json" in message


def test_a_g6f_pool_is_accepted_because_a_node_overlay_adds_the_gpu_karpenter_does_not_count(dev):
    from components.capacity.nodepools import node_overlays
    from stacks.config.pools import NodePoolSection

    dev["nodePools"][0]["instanceTypes"] = ["g6.xlarge", "g6f.4xlarge"]
    dev["models"][0]["parameters"] = "4B"
    assert not found(dev, "nodePools[0].instanceTypes[1]")
    [overlay] = node_overlays(NodePoolSection.model_validate(dev["nodePools"][0]))
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu": "1"}, "only the g6f needs it; g6.xlarge's GPU is counted"
    assert overlay["spec"]["requirements"][1]["values"] == ["g6f.4xlarge"]


def test_a_g6f_family_pool_gets_an_overlay_for_every_size(dev):
    from components.capacity.nodepools import node_overlays
    from stacks.config.pools import NodePoolSection

    dev["nodePools"][0].pop("instanceTypes")
    dev["nodePools"][0]["instanceFamilies"] = ["g6f"]
    assert not found(dev, "nodePools[0].instanceFamilies[0]")
    [overlay] = node_overlays(NodePoolSection.model_validate(dev["nodePools"][0]))
    assert overlay["spec"]["requirements"][1]["values"] == ["g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge"]


def test_the_weights_fit_rule_uses_the_fractional_gpu_memory(dev):
    dev["nodePools"][0]["instanceTypes"] = ["g6f.4xlarge"]
    [message] = at(dev, "models[0].acceleratorsPerReplica")
    assert "11.18 GiB (l4 on g6f.4xlarge)" in message, "8B bf16 weights do not fit half an L4"


def test_tgi_on_an_arm64_pool_is_refused_because_its_image_is_amd64_only(dev):
    dev["nodePools"][0]["architecture"] = "arm64"
    dev["models"][0].update(engine="tgi", tgi={"acceptMaintenanceMode": True})
    [message] = at(dev, "models[0].pool")
    assert "text-generation-inference:3.3.7 is published for amd64 only" in message and "arm64" in message


def test_vllm_on_an_arm64_pool_passes_the_image_rule_it_has_an_arm64_build(dev):
    dev["nodePools"][0]["architecture"] = "arm64"
    assert not at(dev, "models[0].pool"), "vllm/vllm-openai:v0.29.0 is a multi-arch manifest"


def blackwell(dev) -> dict:
    dev["nodePools"][0]["instanceTypes"] = ["p6-b200.48xlarge"]
    dev["nodePools"][0]["limits"] = {"accelerators": 16}
    return dev


def warnings_of(sections) -> list[str]:
    return [str(w) for w in stack_warnings(check_sections(sections, "us-west-2"))]


def test_vllm_on_p6_b200_is_accepted_without_a_blackwell_warning(dev):
    assert not [w for w in warnings_of(blackwell(dev)) if "Blackwell" in w]


def test_an_image_with_unknown_blackwell_kernels_on_p6_b200_is_a_warning_naming_the_key(dev):
    blackwell(dev)["models"][0]["image"] = {"tag": "v0.30.0"}
    [warning] = [w for w in warnings_of(dev) if "Blackwell" in w]
    assert warning.startswith("inference-platform:models[0].image: ") and "CUDA 12.8" in warning


def test_an_image_known_to_lack_blackwell_kernels_is_refused_on_p6_b200(dev, monkeypatch):
    old = versions.ImagePlatforms(frozenset({"amd64"}), False, "a CUDA 12.4 build")
    monkeypatch.setitem(versions.IMAGE_PLATFORMS, ("registry.example.com/vllm", "cu124"), old)
    blackwell(dev)["models"][0]["image"] = {"repository": "registry.example.com/vllm", "tag": "cu124"}
    [message] = at(dev, "models[0].image")
    assert "no Blackwell kernels" in message and "p6-b200.48xlarge" in message and "CUDA 12.8+" in message


def test_the_prod_70b_example_ships_a_p6_b200_pool_that_validates_without_blackwell_warnings():
    from stacks.load import ROOT
    from tests.conftest import sections_of

    prod = sections_of(ROOT / "stacks" / "examples" / "Pulumi.prod-70b.yaml")
    [pool] = [p for p in prod["nodePools"] if p["name"] == "b200"]
    assert pool["instanceTypes"] == ["p6-b200.48xlarge"]
    assert not [w for w in warnings_of(prod) if "Blackwell" in w]
