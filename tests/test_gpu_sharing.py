"""GPU sharing (`nodePools[].gpuSharing`, issue #29 item 3): time-slicing and MIG through the NVIDIA device
plugin's sharing config, Karpenter told the slices exist (NodeOverlay), the fit and quota rules counting
slices, and the g6f vGPU made launchable by the same NodeOverlay. Each refusal names its key; the shipped
example (stacks/examples/Pulumi.sharing.yaml) is rendered and checked as a user would rely on it."""

from __future__ import annotations

import json

import pytest
import yaml

from stacks.errors import ConfigError
from stacks.fit import allocatable
from stacks.hardware import catalog
from stacks.pipeline import check_sections
from stacks.sharing import DATA, mig_model, mig_models, slice_memory_gib
from tests.conftest import EXAMPLES_DIR, rendered_stack, sections_of

SHARING = EXAMPLES_DIR / "Pulumi.sharing.yaml"


def problems(sections) -> list[str]:
    try:
        check_sections(sections, "us-west-2")
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def at(sections, key: str) -> list[str]:
    return [p for p in problems(sections) if p.startswith(f"inference-platform:{key}: ")]


def shared(dev, sharing: dict, types: list[str] | None = None) -> dict:
    pool = dev["nodePools"][0]
    pool["gpuSharing"] = sharing
    if types is not None:
        pool["instanceTypes"] = types
    return dev


def small_model(dev, parameters: str = "1.7B") -> dict:
    dev["models"][0]["parameters"] = parameters
    return dev


# ---- the MIG catalog -------------------------------------------------------------------------------------


def test_every_mig_capable_gpu_in_the_catalog_has_its_profile_table():
    for name in ("p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5e.48xlarge", "p6-b200.48xlarge"):
        model = mig_model(catalog()[name])
        assert model is not None, f"{name}'s GPU has MIG"
        smallest = next(iter(model.profiles.values()))
        assert smallest.profile.startswith("1g.") and smallest.per_gpu == 7, "seven 1g instances per GPU"
        assert all(p.per_gpu * p.memory_eighths <= 8 for p in model.profiles.values()), "no layout exceeds the GPU"
    sources = json.loads(DATA.read_text())["generated_from"]
    assert any("mig-user-guide" in s for s in sources) and any("mig-parted" in s for s in sources)


def test_a100_40gb_and_80gb_have_their_own_profile_names():
    assert "1g.5gb" in mig_model(catalog()["p4d.24xlarge"]).profiles
    assert "1g.10gb" in mig_model(catalog()["p4de.24xlarge"]).profiles
    assert mig_models()["h200-141gb"].profiles["3g.71gb"].per_gpu == 2


@pytest.mark.parametrize("itype", ["g5.xlarge", "g6.xlarge", "g6e.xlarge", "g6f.4xlarge"])
def test_gpus_without_mig_have_no_profile_table(itype):
    assert mig_model(catalog()[itype]) is None


# ---- refusals ----------------------------------------------------------------------------------------------


def test_a_pool_takes_time_slicing_or_mig_but_not_both(dev):
    shared(dev, {"timeSlicing": {"replicas": 2}, "mig": {"profile": "1g.10gb"}})
    [message] = at(dev, "nodePools[0].gpuSharing")
    assert "exactly one of timeSlicing" in message


@pytest.mark.parametrize("itype,gpu", [("g6.xlarge", "L4"), ("g5.xlarge", "A10G"), ("g6e.xlarge", "L40S")])
def test_mig_is_refused_on_gpus_without_it_naming_the_key_and_the_gpus_that_have_it(dev, itype, gpu):
    shared(dev, {"mig": {"profile": "1g.10gb"}}, [itype])
    [message] = at(dev, "nodePools[0].gpuSharing.mig")
    assert f"{itype} has {gpu} GPUs, which have no MIG" in message and "H100 80 GiB" in message


def test_a_mig_profile_the_gpu_does_not_offer_is_refused_with_the_ones_it_does(dev):
    shared(dev, {"mig": {"profile": "1g.5gb"}}, ["p5.4xlarge"])
    [message] = at(dev, "nodePools[0].gpuSharing.mig.profile")
    assert "offers no MIG profile 1g.5gb" in message and "1g.10gb, 1g.20gb" in message


def test_gpu_sharing_is_refused_on_a_neuron_pool(dev):
    dev["nodePools"][1]["gpuSharing"] = {"timeSlicing": {"replicas": 2}}
    [message] = at(dev, "nodePools[1].gpuSharing")
    assert "shares NVIDIA GPUs" in message


@pytest.mark.parametrize("layout", [["4g.40gb", "1g.10gb"], "4g.40gb,1g.10gb", "3g.40gb+2g.20gb"])
def test_a_mixed_mig_layout_is_refused_naming_the_profile_key_and_why(dev, layout):
    shared(dev, {"mig": {"profile": layout}}, ["p5.4xlarge"])
    found = [p for p in problems(dev) if "gpuSharing.mig.profile" in p]
    assert found and "mixed MIG layout" in found[0] and "one pool per profile" in found[0], problems(dev)


def test_mig_is_refused_on_bottlerocket_naming_the_key_the_reason_and_the_fix(dev):
    shared(dev, {"mig": {"profile": "3g.40gb"}}, ["p5.4xlarge"])
    dev["nodePools"][0]["amiAlias"] = "bottlerocket@v1.44.0"
    [message] = at(dev, "nodePools[0].gpuSharing.mig")
    assert "migStrategy single" in message and "nvidia.com/gpu" in message, "why: its instances are not our slices"
    assert "amiAlias: al2023@<version>" in message, "and the fix"


def test_time_slicing_on_bottlerocket_is_accepted_without_the_device_plugin_chart(dev):
    shared(dev, {"timeSlicing": {"replicas": 2}})
    dev["nodePools"][0]["amiAlias"] = "bottlerocket@v1.44.0"
    dev["addons"]["nvidiaDevicePlugin"] = {"enabled": False}
    assert not at(dev, "nodePools[0].gpuSharing"), "Bottlerocket's own host plugin time-slices"


def test_time_slicing_on_a_bottlerocket_older_than_its_settings_is_refused_at_the_alias(dev):
    shared(dev, {"timeSlicing": {"replicas": 2}})
    dev["nodePools"][0]["amiAlias"] = "bottlerocket@v1.24.1"
    [message] = at(dev, "nodePools[0].amiAlias")
    assert "from v1.25.0" in message and "bottlerocket@v1.25.0 or later" in message


def test_a_time_sliced_bottlerocket_pool_sets_its_host_plugins_sharing_in_the_node_class_user_data():
    import tomllib

    from tests.conftest import render_sections

    sections = sections_of(SHARING)
    sections["nodePools"][0]["amiAlias"] = "bottlerocket@v1.44.0"
    rendered = render_sections(sections)
    classes = {m["metadata"]["name"]: m for m in rendered.manifests() if m["kind"] == "EC2NodeClass"}
    settings = tomllib.loads(classes["l4-shared"]["spec"]["userData"])["settings"]
    nvidia = settings["kubelet-device-plugins"]["nvidia"]
    assert nvidia["device-sharing-strategy"] == "time-slicing"
    assert nvidia["time-slicing"] == {"replicas": 2, "rename-by-default": True, "fail-requests-greater-than-one": True}
    assert settings["container-runtime"] == {"snapshotter": "soci"}, "beside the SOCI setting, in one TOML document"
    overlays = {m["metadata"]["name"] for m in rendered.manifests() if m["kind"] == "NodeOverlay"}
    assert {"l4-shared-shared-2", "l4-shared-shared-8"} <= overlays, "Karpenter still learns the slices"
    [plugin] = [r for r in rendered.mocks.of_type("kubernetes:helm.sh/v3:Release") if "nvidia-device-plugin" in r.name]
    configs = plugin.inputs["values"]["config"]["map"]
    assert "time-slicing-2" not in configs, "the chart's plugin never runs on Bottlerocket nodes"
    assert "mig-3g.40gb" in configs, "the AL2023 MIG pool keeps its config"


def test_gpu_sharing_is_refused_without_the_device_plugin(dev):
    shared(dev, {"timeSlicing": {"replicas": 2}})
    dev["addons"]["nvidiaDevicePlugin"] = {"enabled": False}
    assert any("addons.nvidiaDevicePlugin.enabled is false" in m for m in at(dev, "nodePools[0].gpuSharing"))


def test_a_g6f_vgpu_is_not_shared_further(dev):
    shared(dev, {"timeSlicing": {"replicas": 2}}, ["g6f.4xlarge"])
    [message] = at(dev, "nodePools[0].gpuSharing")
    assert "g6f.4xlarge already carry a fraction of an L4" in message


def test_a_replica_on_a_shared_pool_takes_one_slice_not_several(dev):
    shared(small_model(dev), {"timeSlicing": {"replicas": 2}})
    dev["models"][0]["acceleratorsPerReplica"] = 2
    [message] = at(dev, "models[0].acceleratorsPerReplica")
    assert "takes one slice (acceleratorsPerReplica: 1)" in message


def test_sglang_is_refused_on_a_time_sliced_pool_naming_the_pool_key(dev):
    shared(small_model(dev), {"timeSlicing": {"replicas": 2}})
    dev["models"][0]["engine"] = "sglang"
    [message] = at(dev, "models[0].pool")
    assert "time-sliced" in message and "only vllm" in message and "memory free at start" in message


def test_sglang_is_accepted_on_a_mig_pool(dev):
    shared(dev, {"mig": {"profile": "3g.40gb"}}, ["p5.4xlarge"])
    dev["nodePools"][0]["limits"] = {"accelerators": 2}
    dev["models"][0]["engine"] = "sglang"
    assert not at(dev, "models[0].pool")


def test_engine_args_may_not_set_the_memory_share_on_a_time_sliced_pool(dev):
    shared(small_model(dev), {"timeSlicing": {"replicas": 2}})
    dev["models"][0]["engineArgs"] = ["--enable-prefix-caching", "--gpu-memory-utilization=0.9", "--gpu_memory_util"]
    [message] = at(dev, "models[0].engineArgs[1]")
    assert "set by the platform on time-sliced pool gpu" in message
    [spelled] = at(dev, "models[0].engineArgs[2]")
    assert "--gpu_memory_util sets --gpu-memory-utilization" in spelled, "vLLM reads _ as - and takes a prefix"


# ---- fit: slices of memory and of the node ------------------------------------------------------------------


def test_time_slicing_gives_each_replica_the_gpus_memory_divided_by_the_replicas(dev):
    shared(dev, {"timeSlicing": {"replicas": 2}})  # the dev model: 8B bf16, 15.3 GiB of weights
    [message] = at(dev, "models[0].pool")
    assert (
        "weights do not fit a slice" in message and "1/2 of a time-sliced GPU on g6.xlarge) holds 11.2 GiB" in message
    )


def test_a_mig_instance_holds_its_profiles_memory_and_no_more(dev):
    shared(dev, {"mig": {"profile": "1g.10gb"}}, ["p5.4xlarge"])
    dev["nodePools"][0]["limits"] = {"accelerators": 2}
    [message] = at(dev, "models[0].pool")
    assert "MIG 1g.10gb instance on p5.4xlarge) holds 10.0 GiB" in message
    shared(dev, {"mig": {"profile": "3g.40gb"}})
    assert not at(dev, "models[0].pool"), "8B bf16 fits a 3g.40gb instance"


def test_a_shared_node_advertises_slices_and_no_whole_gpus(dev):
    pool = check_sections(shared(small_model(dev), {"timeSlicing": {"replicas": 4}}), "us-west-2").platform.pools[0]
    alloc = allocatable(pool.config, catalog()["g6.12xlarge"])
    assert (alloc.gpu, alloc.gpu_shared, alloc.mig) == (0, 16, 0), "4 L4s x 4 replicas"
    assert slice_memory_gib(pool.config, catalog()["g6.12xlarge"]) == pytest.approx(22.35 / 4)


def test_a_time_sliced_replica_requests_one_shared_gpu_and_a_quarter_of_the_node(dev):
    stack = check_sections(shared(small_model(dev), {"timeSlicing": {"replicas": 4}}), "us-west-2")
    model = stack.models[0]
    assert (model.requests.gpu, model.requests.gpu_shared) == (0, 1)
    resources = model.pods[0].resources
    assert resources["limits"]["nvidia.com/gpu.shared"] == "1" and "nvidia.com/gpu" not in resources["limits"]
    g6 = catalog()["g6.xlarge"]
    assert model.requests.memory_mib * 4 <= g6.alloc_memory_mib, "four replicas share one g6.xlarge"


# ---- the shipped example, rendered ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def render():
    return rendered_stack(SHARING)


def objects(render, kind: str) -> dict[str, dict]:
    return {m["metadata"]["name"]: m for m in render.manifests() if m["kind"] == kind}


def test_karpenter_learns_each_shared_pools_slices_per_node_from_a_node_overlay(render):
    overlays = objects(render, "NodeOverlay")
    assert set(overlays) == {"l4-shared-shared-2", "l4-shared-shared-8", "h100-mig-mig-2", "l4-half-gpu-1"}
    big = overlays["l4-shared-shared-8"]["spec"]
    assert big["capacity"] == {"nvidia.com/gpu.shared": "8"}, "4 L4s x 2 replicas"
    assert {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["l4-shared"]} in big["requirements"]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.12xlarge"]} in big[
        "requirements"
    ]
    assert overlays["h100-mig-mig-2"]["spec"]["capacity"] == {"nvidia.com/mig-3g.40gb": "2"}


def test_a_g6f_pool_launches_because_its_overlay_adds_the_gpu_ec2_does_not_report(render):
    spec = objects(render, "NodeOverlay")["l4-half-gpu-1"]["spec"]
    assert spec["capacity"] == {"nvidia.com/gpu": "1"}
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6f.4xlarge"]} in spec[
        "requirements"
    ]


def test_karpenters_node_overlay_gate_is_on_only_where_an_overlay_is_rendered(render, dev_render):
    [karpenter] = [r for r in render.releases() if r["name"] == "karpenter"]
    assert karpenter["values"]["settings"]["featureGates"]["nodeOverlay"] is True
    [plain] = [r for r in dev_render.releases() if r["name"] == "karpenter"]
    assert "nodeOverlay" not in plain["values"]["settings"].get("featureGates", {})
    assert not objects(dev_render, "NodeOverlay"), "the dev stack shares nothing"


def test_the_device_plugin_gets_one_config_per_sharing_picked_by_each_pools_node_label(render):
    [plugin] = [r for r in render.releases() if r["chart"] == "nvidia-device-plugin"]
    config = plugin["values"]["config"]
    assert config["default"] == "default"
    parsed = {name: yaml.safe_load(text) for name, text in config["map"].items()}
    assert parsed["default"] == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert parsed["mig-3g.40gb"]["flags"] == {"migStrategy": "mixed"}
    assert parsed["time-slicing-2"]["sharing"]["timeSlicing"] == {
        "renameByDefault": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
    }
    pools = objects(render, "NodePool")
    labels = {name: pools[name]["spec"]["template"]["metadata"]["labels"] for name in pools}
    assert labels["l4-shared"]["nvidia.com/device-plugin.config"] == "time-slicing-2"
    assert labels["h100-mig"]["nvidia.com/device-plugin.config"] == "mig-3g.40gb"
    assert "nvidia.com/device-plugin.config" not in labels["l4-half"], "whole (v)GPUs: the default config"


def test_a_mig_pools_nodes_partition_their_gpus_before_the_kubelet_starts(render):
    node_class = objects(render, "EC2NodeClass")["h100-mig"]["spec"]
    data = node_class["userData"]
    assert 'Content-Type: text/x-shellscript; charset="us-ascii"' in data
    assert "nvidia-smi -mig 1\nnvidia-smi mig -cgi 3g.40gb,3g.40gb -C\n" in data
    assert "FastImagePull: true" in data, "the SOCI part stays in the same archive"
    assert "nvidia-smi" not in objects(render, "EC2NodeClass")["l4-shared"]["spec"].get("userData", "")


def test_each_model_requests_its_pools_slice_and_vllm_holds_to_its_share(render):
    deployments = objects(render, "Deployment")
    limits = {
        name: deployments[name]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        for name in ("qwen3-4b-shared", "qwen3-8b-mig", "qwen3-4b-vgpu")
    }
    assert limits["qwen3-4b-shared"]["nvidia.com/gpu.shared"] == "1"
    assert limits["qwen3-8b-mig"]["nvidia.com/mig-3g.40gb"] == "1"
    assert limits["qwen3-4b-vgpu"]["nvidia.com/gpu"] == "1"
    args = deployments["qwen3-4b-shared"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.45", "0.9 of half the GPU"
    mig_args = deployments["qwen3-8b-mig"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--mem-fraction-static" not in mig_args, "a MIG instance is a GPU of its own"


# ---- warm nodes on a shared pool ask for slices ----------------------------------------------------------------


def warm_templates(sections) -> dict[str, dict]:
    from tests.conftest import render_sections

    rendered = render_sections(sections)
    return {m["metadata"]["name"]: m for m in rendered.manifests() if m["kind"] == "PodTemplate"}


def placeholder_resources(template: dict) -> dict:
    [container] = template["template"]["spec"]["containers"]
    return container["resources"]


def test_a_warm_node_of_a_shared_pool_holds_slices_not_gpus_its_nodes_never_advertise():
    sections = sections_of(SHARING)
    sections["models"] = [m for m in sections["models"] if m["pool"] == "l4-half"]  # l4-shared, h100-mig: none
    sections["nodePools"][0]["warmNodes"] = 1
    sections["nodePools"][1]["warmNodes"] = 1
    templates = warm_templates(sections)
    sliced = placeholder_resources(templates["warm-l4-shared"])
    assert sliced["requests"] == sliced["limits"] == {"nvidia.com/gpu.shared": "2"}, (
        "a g6.xlarge (the smallest type) time-sliced 2 ways advertises 2 nvidia.com/gpu.shared and no nvidia.com/gpu"
    )
    mig = placeholder_resources(templates["warm-h100-mig"])
    assert mig["requests"] == mig["limits"] == {"nvidia.com/mig-3g.40gb": "2"}, (
        "a p5.4xlarge cut into 3g.40gb holds 2 instances, the NodeOverlay's count"
    )


def test_a_warm_node_of_a_shared_pool_with_a_model_holds_the_models_one_slice():
    sections = sections_of(SHARING)
    sections["nodePools"][1]["warmNodes"] = 1
    mig = placeholder_resources(warm_templates(sections)["warm-h100-mig"])
    assert mig["limits"].get("nvidia.com/mig-3g.40gb") == "1", mig
    assert "nvidia.com/gpu" not in {**mig["requests"], **mig["limits"]}, "never a whole GPU on a MIG pool"


# ---- team quotas count slices --------------------------------------------------------------------------------

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
MIG_POOL = {
    "name": "h100-mig",
    "accelerator": "nvidia",
    "instanceTypes": ["p5.4xlarge"],
    "limits": {"accelerators": 2},
    "gpuSharing": {"mig": {"profile": "3g.40gb"}},
}


def test_a_team_quota_bounds_shared_gpus_and_each_mig_profile_it_names():
    from components.team import resource_quota
    from stacks.config.stack import Quota

    quota = Quota.model_validate({"cpu": "8", "memory": "32Gi", "sharedGpus": 4, "migInstances": {"3g.40gb": 2}})
    hard = resource_quota("search", "search", quota)["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu.shared"] == "4" and hard["requests.nvidia.com/mig-3g.40gb"] == "2"
    unset = resource_quota("chat", "chat", Quota.model_validate({"cpu": "8", "memory": "32Gi"}))["spec"]["hard"]
    assert unset["requests.nvidia.com/gpu.shared"] == "0", "a quota bounds shared GPUs even when it allows none"


def test_a_team_quota_that_leaves_out_a_mig_profile_of_the_platform_is_refused():
    platform = sections_of(PLATFORM)
    platform["nodePools"].append(dict(MIG_POOL))
    found = at(platform, "teams[0].quota.migInstances")
    assert found and "MIG 3g.40gb, which team search's quota does not name" in found[0], found
    for team in platform["teams"]:
        team["quota"]["migInstances"] = {"3g.40gb": 0}
    assert not at(platform, "teams[0].quota.migInstances")


def team_on(tmp_path, pool: dict, model: dict) -> list[str]:
    """The problems of the search team's first model moved to `pool`, added to the platform example."""
    from stacks.pipeline import PlatformExports, exports_from_file

    platform = yaml.safe_load(PLATFORM.read_text())
    config = platform["config"]
    config["inference-platform:nodePools"].append(dict(pool))
    for team in config["inference-platform:teams"]:
        team["quota"]["migInstances"] = {"3g.40gb": 0}
    path = tmp_path / "Pulumi.platform.yaml"
    path.write_text(yaml.safe_dump(platform))
    exports = PlatformExports(exports_from_file(path), str(path))
    team = sections_of(EXAMPLES_DIR / "Pulumi.team-search.yaml")
    team["models"] = [team["models"][0] | {"pool": pool["name"], "acceleratorsPerReplica": 1} | model]
    try:
        check_sections(team, "us-west-2", platforms=lambda ref: exports)
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_a_team_model_on_a_mig_pool_needs_that_profile_in_its_quota(tmp_path):
    found = team_on(tmp_path, MIG_POOL, {})
    assert any("needs 1 of nvidia.com/mig-3g.40gb but team search's quota allows 0" in p for p in found), found


def test_a_team_model_on_a_time_sliced_pool_counts_against_shared_gpus_not_gpus(tmp_path):
    sliced = {
        "name": "l4-shared",
        "accelerator": "nvidia",
        "instanceTypes": ["g6.xlarge"],
        "limits": {"accelerators": 4},
    }
    sliced["gpuSharing"] = {"timeSlicing": {"replicas": 2}}
    found = team_on(tmp_path, sliced, {"parameters": "4B"})
    assert any("requests.nvidia.com/gpu.shared" in p and "teams[].quota.sharedGpus" in p for p in found), found
    assert not any("of requests.nvidia.com/gpu but" in p for p in found), "a slice is not a whole GPU"


SLICED_POOL = {
    "name": "l4-shared",
    "accelerator": "nvidia",
    "instanceTypes": ["g6.xlarge"],
    "limits": {"accelerators": 4},
    "gpuSharing": {"timeSlicing": {"replicas": 2}},
}


def team_on_quota(tmp_path, pool: dict, model: dict, quota: dict) -> tuple[list[str], list[str]]:
    """The search team's first model moved to `pool` of the platform example, with `quota` in its team's
    quota: (what `stacks validate` refuses, what the policy pack refuses of the same pod against the
    ResourceQuota the platform renders for that quota). The pod is rendered with a quota that holds it."""
    from components.team import resource_quota
    from policypack import validators as v
    from stacks.config.stack import Quota
    from stacks.pipeline import PlatformExports, exports_from_file
    from tests.conftest import render_sections
    from tests.test_policies import res, stack, violations

    platform = yaml.safe_load(PLATFORM.read_text())
    platform["config"]["inference-platform:nodePools"].append(dict(pool))
    for team in platform["config"]["inference-platform:teams"]:
        team["quota"]["migInstances"] = {"3g.40gb": 1}
        team["quota"]["sharedGpus"] = 1
    path = tmp_path / "Pulumi.platform.yaml"
    path.write_text(yaml.safe_dump(platform))
    live = exports_from_file(path)
    team = sections_of(EXAMPLES_DIR / "Pulumi.team-search.yaml")
    team["models"] = [team["models"][0] | {"pool": pool["name"], "acceleratorsPerReplica": 1} | model]
    deployment = render_sections(team, platform_exports=live).mocks.named(
        "kubernetes:apps/v1:Deployment", f"platform-models-deployment-{team['models'][0]['name']}"
    )
    search = next(t for t in live["teams"] if t["name"] == "search")
    search["quota"] |= quota
    try:
        check_sections(team, "us-west-2", platforms=lambda ref: PlatformExports(live, str(path)))
        refused = []
    except ConfigError as exc:
        refused = [str(p) for p in exc.problems]
    hard = resource_quota("search", "search", Quota.model_validate(search["quota"]))
    pod = res(v.WORKLOADS[0], deployment.inputs, "model")
    return refused, violations(v.replicas_within_team_quota, stack(res(v.RESOURCE_QUOTA, hard), pod))


def test_the_policy_pack_refuses_a_team_pod_over_its_mig_instances_as_validate_does(tmp_path):
    refused, pack = team_on_quota(tmp_path, MIG_POOL, {}, {"migInstances": {"3g.40gb": 0}})
    assert any("needs 1 of nvidia.com/mig-3g.40gb but team search's quota allows 0" in p for p in refused), refused
    assert any("requests 1 of requests.nvidia.com/mig-3g.40gb" in m and "allows 0" in m for m in pack), (
        f"the pack counts the pod's MIG instances against its profile's quota key, as validate does: {pack}"
    )
    refused, pack = team_on_quota(tmp_path, MIG_POOL, {}, {"migInstances": {"3g.40gb": 1}})
    assert not refused and not pack, f"one instance is within a quota of one, for both: {refused} {pack}"


def test_the_policy_pack_refuses_a_team_pod_over_its_shared_gpus_as_validate_does(tmp_path):
    refused, pack = team_on_quota(tmp_path, SLICED_POOL, {"parameters": "4B"}, {"sharedGpus": 0})
    assert any("requests.nvidia.com/gpu.shared" in p and "teams[].quota.sharedGpus" in p for p in refused), refused
    assert any("requests 1 of requests.nvidia.com/gpu.shared" in m and "allows 0" in m for m in pack), pack
    assert not any("requests.nvidia.com/gpu " in m for m in pack), "a slice is not a whole GPU to the pack either"
    refused, pack = team_on_quota(tmp_path, SLICED_POOL, {"parameters": "4B"}, {"sharedGpus": 1})
    assert not refused and not pack, f"one slice is within a quota of one, for both: {refused} {pack}"


def test_the_pack_counts_mig_instances_per_profile_and_leaves_an_unnamed_profile_unbounded():
    from policypack.validators import pod_mig_requests, quota_mig_limits
    from stacks.guards import mig_quota_shortfalls

    pod = {
        "containers": [
            {"resources": {"limits": {"nvidia.com/mig-1g.10gb": 2}}},
            {"resources": {"requests": {"nvidia.com/mig-3g.40gb": "1"}, "limits": {"nvidia.com/mig-3g.40gb": "1"}}},
        ]
    }
    need = pod_mig_requests(pod)
    assert need == {"1g.10gb": 2, "3g.40gb": 1}, "each profile counted on its own, a limit standing for a request"
    hard = {"requests.nvidia.com/mig-1g.10gb": "1"}
    [short] = mig_quota_shortfalls(need, quota_mig_limits(hard, need))
    assert (short.resource, short.requested, short.available) == ("requests.nvidia.com/mig-1g.10gb", "2", "1")


def test_the_policy_pack_reads_a_shared_pools_slices_from_its_device_plugin_label(render):
    from policypack.validators import pool_section

    pools = objects(render, "NodePool")
    mig, sliced = pool_section(pools["h100-mig"]), pool_section(pools["l4-shared"])
    assert mig is not None and mig.gpu_sharing is not None and mig.gpu_sharing.mig is not None
    assert mig.gpu_sharing.mig.profile == "3g.40gb", "its replicas are fitted against MIG instances, not GPUs"
    assert sliced is not None and sliced.gpu_sharing is not None and sliced.gpu_sharing.time_slicing is not None
    assert sliced.gpu_sharing.time_slicing.replicas == 2


def test_mig_on_b300_is_refused_as_not_recorded_rather_than_as_absent(dev):
    shared(dev, {"mig": {"profile": "1g.23gb"}}, ["p6-b300.48xlarge"])
    [message] = at(dev, "nodePools[0].gpuSharing.mig")
    assert "B300 GPUs, whose MIG profiles the catalog does not hold" in message


def test_stacks_plan_shows_the_slices_each_shared_node_holds_and_each_replica_takes():
    from stacks.pipeline import check_file
    from stacks.plan import plan

    text = plan(check_file(SHARING).stack)
    assert "each node advertises nvidia.com/gpu.shared (the slices column), no nvidia.com/gpu" in text
    assert "each node advertises nvidia.com/mig-3g.40gb" in text
    assert "gpu 0, neuron 0, gpu slices 1" in text, "a replica takes one slice, not a GPU"


# ---- the NodeOverlays against the CRD's CEL rules (the conformance check reads its schema, not its CEL) ------


def _cel_find(text, pattern):
    """CEL's strings extension `find(regex)`, which the CRD's key rules use and celpy does not provide."""
    import re

    from celpy import celtypes

    found = re.search(str(pattern), str(text))
    return celtypes.StringType(found.group(0) if found else "")


def cel_violations(schema: dict, value, where: str = "") -> list[str]:
    """Every `x-kubernetes-validations` rule of the schema, evaluated at its node of the object."""
    import celpy

    out = []
    for rule in schema.get("x-kubernetes-validations") or []:
        env = celpy.Environment()
        program = env.program(env.compile(rule["rule"]), functions={"find": _cel_find})
        if not program.evaluate({"self": celpy.json_to_cel(value)}):
            out.append(f"{where or '.'}: {rule['message']}")
    if isinstance(value, dict):
        for key, sub in value.items():
            child = (schema.get("properties") or {}).get(key) or schema.get("additionalProperties")
            if isinstance(child, dict):
                out += cel_violations(child, sub, f"{where}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            out += cel_violations(schema["items"], sub, f"{where}[{i}]")
    return out


@pytest.fixture(scope="module")
def overlay_schema() -> dict:
    from stacks import conformance

    root = conformance.schema_dir()
    assert root is not None
    ((_, schema),) = conformance.crd_schemas(root, "karpenter.sh", "v1alpha1", "NodeOverlay")
    return schema


@pytest.mark.schemas
def test_every_rendered_node_overlay_passes_the_crds_cel_rules(render, overlay_schema):
    overlays = objects(render, "NodeOverlay")
    assert overlays
    for name, overlay in overlays.items():
        assert not cel_violations(overlay_schema, overlay), name


@pytest.mark.schemas
def test_the_cel_walk_catches_what_the_api_server_would_refuse(overlay_schema):
    bad = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "bad"},
        "spec": {
            "requirements": [{"key": "karpenter.sh/other", "operator": "In", "values": ["x"]}],
            "capacity": {"cpu": "1"},
        },
    }
    found = cel_violations(overlay_schema, bad)
    assert any("invalid resource restricted" in f for f in found), found
    assert any('label domain "karpenter.sh" is restricted' in f for f in found), found


def test_a_shared_pool_with_a_capacity_preference_has_its_overlay_cover_every_tier():
    from components.capacity.nodepools import node_overlays
    from stacks.config.pools import NodePoolSection

    pool = NodePoolSection.model_validate(
        {
            "name": "l4",
            "accelerator": "nvidia",
            "instanceTypes": ["g6.12xlarge"],
            "capacityPreference": ["on-demand", "spot"],
            "gpuSharing": {"timeSlicing": {"replicas": 2}},
            "limits": {"accelerators": 8},
        }
    )
    (overlay,) = node_overlays(pool)
    assert {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["l4", "l4-spot"]} in overlay["spec"][
        "requirements"
    ], "a spot-tier node advertises the same slices as an on-demand one"


def test_a_team_whose_replicas_together_exceed_its_mig_instances_is_warned(tmp_path):
    """One replica fits the team's one 3g.40gb instance; three (its replicas) do not: the pods beyond the
    quota stay unscheduled, as stacks/rules/workloads.py says of the other resources."""
    from stacks.pipeline import PlatformExports, exports_from_file, stack_warnings

    platform = yaml.safe_load(PLATFORM.read_text())
    platform["config"]["inference-platform:nodePools"].append(dict(MIG_POOL))
    for team in platform["config"]["inference-platform:teams"]:
        team["quota"]["migInstances"] = {"3g.40gb": 1}
    path = tmp_path / "Pulumi.platform.yaml"
    path.write_text(yaml.safe_dump(platform))
    exports = PlatformExports(exports_from_file(path), str(path))
    team = sections_of(EXAMPLES_DIR / "Pulumi.team-search.yaml")
    first = team["models"][0] | {"pool": MIG_POOL["name"], "acceleratorsPerReplica": 1, "replicas": 3}
    first.pop("autoscaling", None)
    team["models"] = [first]
    warnings = [str(w) for w in stack_warnings(check_sections(team, "us-west-2", platforms=lambda ref: exports))]
    [warning] = [w for w in warnings if "teams[].quota.migInstances" in w]
    assert warning.startswith("inference-platform:stack.team: all replicas together need 3 of requests.nvidia.com/mig")
    assert "quota's 1" in warning


@pytest.mark.parametrize(
    "itype,gpu,instances",
    [("g7e.2xlarge", "RTX-PRO-SERVER-6000", "up to 4"), ("g7.2xlarge", "RTX-PRO-4500", "up to 2")],
)
def test_mig_on_g7_and_g7e_is_refused_because_nvidia_lists_it_but_the_catalog_holds_no_profile_table(
    dev, itype, gpu, instances
):
    shared(dev, {"mig": {"profile": "1g.24gb"}}, [itype])
    [message] = at(dev, "nodePools[0].gpuSharing.mig")
    assert f"{itype} has {gpu} GPUs, whose MIG profiles the catalog does not hold" in message
    assert "NVIDIA's MIG user guide" in message and instances in message, "what NVIDIA says, so not 'no MIG'"
    assert "which have no MIG" not in message and "Use timeSlicing" in message
    assert mig_model(catalog()[itype]) is None


def test_time_slicing_a_g7e_gpu_is_accepted_and_counts_its_replicas(dev):
    from stacks.config.pools import NodePoolSection
    from stacks.sharing import slices_per_node

    shared(small_model(dev), {"timeSlicing": {"replicas": 4}}, ["g7e.2xlarge"])
    dev["models"][0]["acceleratorsPerReplica"] = 1
    assert not problems(dev), "time-slicing works on any NVIDIA GPU"
    pool = NodePoolSection.model_validate(dev["nodePools"][0])
    assert slices_per_node(pool, catalog()["g7e.2xlarge"]) == 4
    assert slice_memory_gib(pool, catalog()["g7e.2xlarge"]) == 24.0, "96 GiB shared four ways"
