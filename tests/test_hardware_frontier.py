"""The newest accelerators in the catalog (p6-b200, p6-b300, g6f fractional L4s, p6e-gb200, trn2u,
trn2.3xlarge) and the refusals that keep a stack from landing on hardware it cannot run on: each figure is
recomputed from Karpenter's formulas (shared/facts/CAPACITY.md) and names its source, each refusal names
its key."""

from __future__ import annotations

import json
import math

import pytest

from stacks import versions
from stacks.errors import ConfigError
from stacks.hardware import DATA_FRONTIER, catalog
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
    in_karpenters_reference = any("instance-types.md" in s for s in entry["sources"])
    assert in_karpenters_reference or entry["name"] in OUTSIDE_KARPENTERS_REFERENCE, "every entry names its source"


# Types Karpenter v1.14's generated reference does not list: sized from AWS's Neuron and EKS sources, with
# every figure no EC2-generated table publishes named in `secondary_figures`.
OUTSIDE_KARPENTERS_REFERENCE = {
    "p6e-gb200.36xlarge": {"vcpu", "memory_gib", "gpu_memory_gib", "nvme_gib", "ebs_baseline_mbps"},
    "trn2u.48xlarge": set(),
    "trn2.3xlarge": {"vcpu", "memory_gib"},
}


@pytest.mark.parametrize("name", sorted(OUTSIDE_KARPENTERS_REFERENCE))
def test_a_type_outside_karpenters_reference_names_where_each_unpublished_figure_comes_from(name):
    [entry] = [e for e in entries() if e["name"] == name]
    secondary = entry["secondary_figures"]
    assert OUTSIDE_KARPENTERS_REFERENCE[name] <= set(secondary), "the sizing figures no EC2 table publishes"
    assert all(len(why) > 40 for why in secondary.values()), "each says where it comes from"
    if name != "trn2.3xlarge":
        assert {"max_enis_default_card", "ipv4_per_eni"} <= set(secondary), "no ENI table lists UltraServer members"
    assert entry["sources"] and all(s for s in entry["sources"])


def test_trn2u_is_trn2_48xlarges_server_from_the_neuron_docs():
    trn2u, trn2 = catalog()["trn2u.48xlarge"], catalog()["trn2.48xlarge"]
    assert (trn2u.vcpu, trn2u.memory_gib, trn2u.neuron_devices, trn2u.accelerator_memory_gib) == (192, 2048.0, 16, 1536)
    assert (trn2u.alloc_cpu_m, trn2u.alloc_memory_mib, trn2u.alloc_pods) == (
        trn2.alloc_cpu_m,
        trn2.alloc_memory_mib,
        trn2.alloc_pods,
    )
    assert trn2u.efa_interfaces == 16 and trn2u.network_mbps == 3_200_000
    assert trn2u.ultraserver and "Capacity Block" in trn2u.ultraserver
    assert any("trn2-arch.rst" in s for s in trn2u.sources)


def test_trn2_3xlarge_is_one_trainium2_chip_with_the_eks_amis_eni_limits():
    small = catalog()["trn2.3xlarge"]
    assert (small.neuron_devices, small.neuron_cores, small.accelerator_memory_gib) == (1, 8, 96)
    assert (small.max_enis, small.ipv4_per_eni, small.alloc_pods) == (2, 15, 30), "instance-info.jsonl"
    assert small.network_mbps == 200_000 and small.efa_interfaces == 0
    family = [t.name for t in catalog().values() if t.family == "trn2"]
    assert family == ["trn2.3xlarge", "trn2.48xlarge"], "smallest first within a family, across the files"


def test_p6e_gb200_is_an_arm64_node_of_four_blackwell_gpus():
    gb = catalog()["p6e-gb200.36xlarge"]
    assert (gb.architecture, gb.gpu_name, gb.gpu_count, gb.vcpu, gb.memory_gib) == ("arm64", "gb200", 4, 144, 960.0)
    assert gb.gpu_memory_gib == pytest.approx(185e9 / 2**30, abs=0.01), "185 GB HBM3e a GPU"
    assert gb.network_mbps == 3_200_000, "Karpenter's bandwidth table"
    assert gb.efa_interfaces == 0 and not gb.efa_layout, "GB200's card layout is not the one the catalog writes"
    assert gb.ultraserver and "UltraServer" in gb.ultraserver


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


def gb200(dev) -> dict:
    pool = dev["nodePools"][0]
    pool.update(instanceTypes=["p6e-gb200.36xlarge"], architecture="arm64", limits={"accelerators": 8})
    pool.update(capacityTypes=["reserved"], capacityReservations=[{"id": "cr-0123456789abcdef0"}])
    return dev


def test_a_gb200_pool_with_its_capacity_block_is_accepted_and_warned_to_confirm_its_figures(dev):
    warnings = warnings_of(gb200(dev))
    [figures] = [w for w in warnings if "describe-instance-types" in w]
    assert figures.startswith("inference-platform:nodePools[0].instanceTypes: p6e-gb200.36xlarge's vCPUs, memory")
    assert "ENI limits" in figures and "instances-frontier.json" in figures
    assert not [w for w in warnings if "UltraServer" in w], "capacityTypes [reserved] with its reservation"
    assert not [w for w in warnings if "Blackwell" in w], "vLLM's release tag carries Blackwell kernels"


def test_a_gb200_pool_without_reserved_capacity_is_warned_that_only_capacity_blocks_sell_it(dev):
    gb200(dev)["nodePools"][0].update(capacityTypes=["on-demand"])
    dev["nodePools"][0].pop("capacityReservations")
    [warning] = [w for w in warnings_of(dev) if "UltraServer" in w]
    assert warning.startswith("inference-platform:nodePools[0].capacityTypes: p6e-gb200.36xlarge is an UltraServer")
    assert "capacityTypes: [reserved]" in warning and "capacityReservations" in warning


def test_a_gb200_pool_on_amd64_is_refused_naming_its_architecture(dev):
    gb200(dev)["nodePools"][0]["architecture"] = "amd64"
    [message] = at(dev, "nodePools[0].architecture")
    assert "p6e-gb200.36xlarge is arm64" in message


def test_gb200_on_bottlerocket_is_warned_that_the_eks_guide_lists_al2023_arm_nvidia(dev):
    gb200(dev)["nodePools"][0]["amiAlias"] = "bottlerocket@v1.44.0"
    [warning] = [w for w in warnings_of(dev) if "ml-eks-optimized-ami" in w]
    assert warning.startswith("inference-platform:nodePools[0].amiAlias: ") and "al2023" in warning


def test_a_replica_over_two_gb200_nodes_is_warned_that_nvlink_does_not_cross_them(dev):
    gb200(dev)["models"][0].update(
        nodesPerReplica=2, acceleratorsPerReplica=8, parallelism={"tensor": 4, "pipeline": 2}
    )
    dev["models"][0]["allowTcp"] = True
    [warning] = [w for w in warnings_of(dev) if "IMEX" in w]
    assert warning.startswith("inference-platform:models[0].nodesPerReplica: ") and "DRA" in warning


def test_an_efa_pool_on_gb200_is_refused_because_its_card_layout_is_not_catalogued(dev):
    gb200(dev)["nodePools"][0]["efa"] = True
    assert at(dev, "nodePools[0].efa") or at(dev, "nodePools[0].instanceTypes"), "no EFA layout to attach"


def test_trn2u_and_trn2_3xlarge_pools_are_accepted(dev):
    pool = dev["nodePools"][0]
    pool.update(accelerator="neuron", instanceTypes=["trn2.3xlarge", "trn2u.48xlarge"], limits={"accelerators": 32})
    warnings = [w for w in warnings_of_any(dev) if "describe-instance-types" in w]
    assert len(warnings) == 2 and "trn2.3xlarge's vCPUs, memory" in warnings[0]


def warnings_of_any(sections) -> list[str]:
    """The warnings of a stack whose models may not fit the pool (the pool rules still run)."""
    sections["models"] = []
    return warnings_of(sections)


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


def test_the_prod_70b_example_serves_a_model_on_an_arm64_gb200_pool_from_its_capacity_block():
    from stacks.load import ROOT
    from tests.conftest import sections_of

    prod = sections_of(ROOT / "stacks" / "examples" / "Pulumi.prod-70b.yaml")
    [pool] = [p for p in prod["nodePools"] if p["name"] == "gb200"]
    assert (pool["instanceTypes"], pool["architecture"], pool["capacityTypes"]) == (
        ["p6e-gb200.36xlarge"],
        "arm64",
        ["reserved"],
    )
    [model] = [m for m in prod["models"] if m["pool"] == "gb200"]
    assert model["engine"] == "vllm" and model["acceleratorsPerReplica"] == 4
    warnings = warnings_of(prod)
    assert not [w for w in warnings if "Blackwell" in w or "UltraServer" in w or "arm64 build" in w]


def test_the_prod_70b_example_ships_a_p6_b200_pool_that_validates_without_blackwell_warnings():
    from stacks.load import ROOT
    from tests.conftest import sections_of

    prod = sections_of(ROOT / "stacks" / "examples" / "Pulumi.prod-70b.yaml")
    [pool] = [p for p in prod["nodePools"] if p["name"] == "b200"]
    assert pool["instanceTypes"] == ["p6-b200.48xlarge"]
    assert not [w for w in warnings_of(prod) if "Blackwell" in w]


@pytest.mark.schemas
def test_the_neuron_device_plugin_schedules_onto_every_neuron_type_in_the_catalog():
    """The Neuron chart's device-plugin DaemonSet requires its node's instance type to be in
    `neuronInstances`: a catalogued Neuron type missing there would get nodes with no Neuron devices."""
    import yaml

    from stacks import conformance

    root = conformance.schema_dir()
    assert root is not None
    [(_, values_file)] = conformance.CHART_VALUES["neuron-helm-chart"][0]
    listed = set(yaml.safe_load((root / values_file).read_text())["neuronInstances"])
    neuron = {t.name for t in catalog().values() if t.accelerator == "neuron"}
    assert {"trn2.3xlarge", "trn2u.48xlarge"} <= neuron
    assert neuron <= listed, sorted(neuron - listed)


def test_the_capacity_example_ships_a_trn2_3xlarge_pool_from_its_capacity_block():
    from stacks.load import ROOT
    from tests.conftest import sections_of

    capacity = sections_of(ROOT / "stacks" / "examples" / "Pulumi.capacity.yaml")
    [pool] = [p for p in capacity["nodePools"] if p["name"] == "trainium"]
    assert (pool["accelerator"], pool["instanceTypes"], pool["capacityTypes"]) == (
        "neuron",
        ["trn2.3xlarge"],
        ["reserved"],
    )
    warnings = warnings_of(capacity)
    assert [w for w in warnings if "trn2.3xlarge's vCPUs, memory" in w], "its secondary figures are named"


G7 = ["g7.2xlarge", "g7.4xlarge", "g7.8xlarge", "g7.12xlarge", "g7.24xlarge", "g7.48xlarge"]
G7E = [name.replace("g7.", "g7e.") for name in G7]


def test_g7_and_g7e_carry_karpenters_rtx_pro_blackwell_gpus_smallest_first():
    assert [t.name for t in catalog().values() if t.family == "g7"] == G7
    assert [t.name for t in catalog().values() if t.family == "g7e"] == G7E
    for name in G7:
        t = catalog()[name]
        assert (t.gpu_name, t.gpu_memory_gib, t.architecture) == ("rtx-pro-4500", 32.0, "amd64"), name
        assert t.karpenter_gpus == t.gpu_count, "whole GPUs: Karpenter counts them, no NodeOverlay needed"
    for name in G7E:
        t = catalog()[name]
        assert (t.gpu_name, t.gpu_memory_gib, t.architecture) == ("rtx-pro-server-6000", 96.0, "amd64"), name
    assert [catalog()[n].gpu_count for n in G7E] == [1, 1, 1, 2, 4, 8]
    assert catalog()["g7e.48xlarge"].memory_gib == 2048 and catalog()["g7e.48xlarge"].nvme_gib == 15200


def test_g7_pods_are_the_eni_formula_uncapped_with_64_addresses_an_eni():
    """Karpenter's reference shows g7.2xlarge with 254 pods, over the 110 and 250 seen elsewhere: 4 ENIs of 64
    IPv4 addresses, (64 - 1) x 4 + 2, which neither Karpenter's ENILimitedPods nor nodeadm's CalcMaxPods caps."""
    small, big = catalog()["g7.2xlarge"], catalog()["g7.24xlarge"]
    assert (small.max_enis, small.ipv4_per_eni, small.alloc_pods) == (4, 64, 254)
    assert (big.max_enis, big.alloc_pods) == (24, 1514)
    g7_48 = catalog()["g7.48xlarge"]
    assert (g7_48.network_cards, g7_48.max_enis, g7_48.alloc_pods) == (2, 12, 758), "only the default card's ENIs"
    assert all("instance-info.jsonl" in " ".join(catalog()[n].sources) for n in G7 + G7E), "EKS AMI cross-check"


def test_g7e_efa_is_laid_out_one_device_per_network_card():
    counts = {n: (catalog()[n].efa_interfaces, len(catalog()[n].efa_layout)) for n in G7E}
    assert counts == {
        "g7e.2xlarge": (0, 0),
        "g7e.4xlarge": (0, 0),
        "g7e.8xlarge": (1, 2),
        "g7e.12xlarge": (1, 2),
        "g7e.24xlarge": (2, 3),
        "g7e.48xlarge": (4, 5),
    }, "Karpenter's vpc.amazonaws.com/efa, with the primary ENA beside them"
    assert [i.network_card_index for i in catalog()["g7e.48xlarge"].efa_layout] == [0, 0, 1, 2, 3]
    assert catalog()["g7.48xlarge"].efa_interfaces == 2 and len(catalog()["g7.48xlarge"].efa_layout) == 3


def test_every_g7_and_g7e_size_has_karpenters_on_demand_price():
    from stacks.pricing import on_demand

    assert all(on_demand(n) for n in G7 + G7E)
    assert on_demand("g7e.2xlarge") == 3.36312 and on_demand("g7.2xlarge") == 2.52


def test_g7_entries_say_the_eks_gpu_ami_guide_lists_g7e_but_not_g7():
    g7e, g7 = entries_named("g7e.2xlarge"), entries_named("g7.2xlarge")
    assert any("ml-eks-optimized-ami" in s and "g7e" in s for s in g7e["sources"])
    assert "lists g7e but not g7" in g7["notes"]


def entries_named(name: str) -> dict:
    [entry] = [e for e in entries() if e["name"] == name]
    return entry


def g7e(dev) -> dict:
    dev["nodePools"][0]["instanceTypes"] = ["g7e.2xlarge"]
    dev["nodePools"][0]["limits"] = {"accelerators": 4}
    return dev


def sm120_warnings(sections) -> list[str]:
    return [w for w in warnings_of(sections) if "sm_120" in w]


def test_vllm_on_g7e_is_accepted_without_an_sm_120_warning_its_release_arch_list_has_12_0(dev):
    warnings = warnings_of(g7e(dev))
    assert not [w for w in warnings if "sm_120" in w], "vLLM 0.29.0's release build lists 12.0"
    assert not [w for w in warnings if "Blackwell" in w and "sm_100" in w], "not B200's sm_100 rule"
    assert versions.IMAGE_PLATFORMS["vllm/vllm-openai", "v0.29.0"].sm120 is True


def test_g7e_is_not_counted_as_b200_class_blackwell():
    from stacks.rules.hardware import BLACKWELL, RTX_BLACKWELL

    assert {catalog()[n].gpu_name for n in G7 + G7E} == RTX_BLACKWELL
    assert not RTX_BLACKWELL & BLACKWELL, "sm_120 is not sm_100/sm_103: separate kernels, separate facts"


def test_an_image_whose_sm_120_kernels_are_not_known_on_g7e_is_a_warning_naming_the_key(dev):
    g7e(dev)["models"][0]["image"] = {"tag": "v0.30.0"}
    [warning] = sm120_warnings(dev)
    assert warning.startswith("inference-platform:models[0].image: pool ") and "g7e.2xlarge" in warning
    assert "includes 12.0" in warning


def test_sglang_on_a_g7_pool_is_warned_because_its_sm_120_kernels_are_not_read(dev):
    dev["nodePools"][0]["instanceTypes"] = ["g7.2xlarge"]
    dev["models"][0]["engine"] = "sglang"
    [warning] = sm120_warnings(dev)
    assert warning.startswith("inference-platform:models[0].pool: ") and "lmsysorg/sglang:v0.5.19" in warning


def test_an_image_known_to_lack_sm_120_kernels_is_refused_on_g7e(dev, monkeypatch):
    sm100 = versions.ImagePlatforms(frozenset({"amd64"}), True, "a build for 9.0 10.0 only", sm120=False)
    monkeypatch.setitem(versions.IMAGE_PLATFORMS, ("registry.example.com/vllm", "sm100"), sm100)
    g7e(dev)["models"][0]["image"] = {"repository": "registry.example.com/vllm", "tag": "sm100"}
    [message] = at(dev, "models[0].image")
    assert "has no sm_120 kernels" in message and "g7e.2xlarge" in message and "includes 12.0" in message


def test_the_engines_example_serves_a_32b_bf16_model_on_one_g7e_gpu_without_a_kernel_warning():
    from stacks.load import ROOT
    from tests.conftest import sections_of

    engines = sections_of(ROOT / "stacks" / "examples" / "Pulumi.engines.yaml")
    [pool] = [p for p in engines["nodePools"] if p["name"] == "rtx"]
    assert pool["instanceTypes"] == ["g7e.2xlarge"]
    [model] = [m for m in engines["models"] if m["pool"] == "rtx"]
    assert (model["engine"], model["acceleratorsPerReplica"], model["dtype"]) == ("vllm", 1, "bf16")
    warnings = warnings_of(engines)
    assert not [w for w in warnings if "sm_120" in w or "Blackwell" in w]
    assert not [w for w in warnings if "rtx" in w and "fit" in w]


def test_a_g7_pool_is_warned_that_the_eks_amis_do_not_list_it_and_g7e_is_not(dev):
    dev["nodePools"][0]["instanceTypes"] = ["g7.2xlarge"]
    dev["models"] = []
    [warning] = [w for w in warnings_of(dev) if "ml-eks-optimized-ami" in w]
    assert warning.startswith("inference-platform:nodePools[0].instanceTypes: g7: ") and "R575.64" in warning
    assert "nvidia-smi" in warning
    dev["nodePools"][0]["instanceTypes"] = ["g7e.2xlarge"]
    assert not [w for w in warnings_of(dev) if "ml-eks-optimized-ami" in w], "the guide lists g7e"
