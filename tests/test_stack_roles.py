"""Stack roles: a platform stack exports what teams need and makes each team's quota'd namespaces; a
team's workloads stack reads the exports through a StackReference and is refused when its models cannot
run on the platform."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from stacks import exports
from stacks.errors import ConfigError
from stacks.exports import export_platform, read_pools
from stacks.load import ROOT
from stacks.pipeline import PlatformLookup, check_sections, stack_warnings
from stacks.resolve import own_platform
from stacks.resolved import NEURON_SCHEDULER
from tests.conftest import PLATFORM_REF, live_platform, rendered_stack, sections_of, team_quota

PLATFORM = ROOT / "stacks" / "examples" / "Pulumi.platform.yaml"
TEAM = ROOT / "stacks" / "examples" / "Pulumi.team-search.yaml"


def problems(sections: dict[str, Any], platforms: PlatformLookup | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2", platforms=platforms)
    return [str(p) for p in info.value.problems]


@pytest.fixture
def team() -> dict[str, Any]:
    return sections_of(TEAM)


def platform_exports(sections: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the platform stack exports (its resolved view), from its stack file or these sections."""
    config = check_sections(sections or sections_of(PLATFORM), "us-west-2").config
    return export_platform(own_platform(config))


def test_the_platform_exports_its_pools_with_accelerators_and_resolved_instance_types():
    out = platform_exports()
    pools = {p["name"]: p for p in out["nodePools"]}
    assert pools["gpu"]["accelerator"] == "nvidia" and pools["gpu"]["instanceTypes"] == ["g6.xlarge", "g6.12xlarge"]
    assert pools["inferentia"]["accelerator"] == "neuron"
    assert out["clusterName"] == "inference-platform"
    assert out["schedulerNames"] == {"neuron": NEURON_SCHEDULER} == {"neuron": "neuron-scheduler"}, (
        "the scheduler the platform's Neuron chart installs (scheduler: true), which Neuron pods must name"
    )
    assert out["gateway"]["hostname"] == "inference.staging.example.com"
    assert out["storage"]["modelCache"] == "efs" and out["storage"]["efs"]["cacheSizeGiB"] == 500
    assert "existingClaim" not in out["storage"], "a claim of the platform's namespaces is not the team's"
    assert out["storageClasses"] == {"modelCache": "efs-models"}
    assert out["gatewayParent"]["namespace"] == "inference-gateway" and out["gatewayParent"]["listener"] == "https"
    json.dumps(out)  # stack outputs must be plain JSON


def test_a_pool_given_by_family_is_exported_with_its_instance_types(dev):
    dev["nodePools"][0].pop("instanceTypes")
    dev["nodePools"][0]["instanceFamilies"] = ["g6"]
    out = platform_exports(dev)
    gpu = out["nodePools"][0]
    assert "g6.xlarge" in gpu["instanceTypes"] and "g6.48xlarge" in gpu["instanceTypes"], gpu
    read_back = [t.name for t in read_pools(out)[0].instance_types]
    assert read_back == gpu["instanceTypes"], "round trip for the fit check"


def test_the_platform_render_exports_the_contract_and_keeps_the_kubeconfig_secret():
    rendered = rendered_stack(PLATFORM)
    for key in ("clusterName", "clusterEndpoint", "nodePools", "schedulerNames", "gateway", "storage", "addons"):
        assert key in rendered.outputs, f"workloads stacks read {key}"
    for key in exports.OUTPUT_KEYS:
        assert key in rendered.outputs, f"workloads stacks read {key}"
    assert rendered.outputs["kubeconfig"] == "[secret]", "the kubeconfig is exported only as a secret"


def test_the_workloads_stack_renders_against_the_platforms_exports():
    rendered = rendered_stack(TEAM)
    mocks = rendered.mocks
    ref = mocks.of_type("pulumi:pulumi:StackReference")
    assert [r.inputs.get("name") for r in ref] == [PLATFORM_REF], "the platform is read through a StackReference"
    (provider,) = mocks.of_type("pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]
    assert isinstance(kubeconfig, str) and rpc._special_secret_sig not in kubeconfig, (
        "the team's kubeconfig holds no credential (its token comes from aws eks get-token as the team's role)"
    )
    assert "--role-arn" in json.loads(kubeconfig)["users"][0]["user"]["exec"]["args"], (
        "never the platform's kubeconfig export (tests/test_team_access.py checks every team stack)"
    )
    assert not mocks.of_type("eks:index:Cluster") and not mocks.of_type("aws:ec2/vpc:Vpc"), (
        "a workloads stack creates no platform resources"
    )
    for obj in mocks.kubernetes_objects():
        assert "::platform-k8s::" in obj.provider, f"{obj.type} {obj.name} must use the team's provider"
    assert not mocks.of_type("kubernetes:core/v1:ResourceQuota"), "the team's quota is the platform's, not its own"
    assert rendered.outputs["namespace"] == "search"


def test_the_platform_puts_each_teams_quota_and_limits_on_its_namespaces():
    platform = rendered_stack(PLATFORM).mocks
    quota = platform.named("kubernetes:core/v1:ResourceQuota", "resourcequota-search-search-quota").inputs
    assert quota["metadata"]["namespace"] == "search"
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "4",
        "requests.aws.amazon.com/neuron": "6",
        "requests.nvidia.com/gpu.shared": "0",
        "requests.cpu": "96",
        "requests.memory": "384Gi",
        "pods": "100",
    }
    limits = platform.named("kubernetes:core/v1:LimitRange", "limitrange-search-search-defaults").inputs
    assert limits["spec"]["limits"][0]["defaultRequest"] == {"cpu": "250m", "memory": "512Mi"}, (
        "a container without requests still counts against the quota"
    )
    chat = {
        q.inputs["metadata"]["namespace"]: q.inputs["spec"]["hard"]
        for q in platform.of_type("kubernetes:core/v1:ResourceQuota")
        if q.inputs["metadata"]["name"] == "chat-quota"
    }
    assert set(chat) == {"chat", "chat-staging"}, "each of the team's namespaces carries the team's quota"
    assert chat["chat"]["requests.nvidia.com/gpu"] == "4" and chat["chat"]["requests.cpu"] == "32"


def test_a_workloads_model_on_a_pool_the_platform_does_not_export_is_refused(team):
    team["models"][0]["pool"] = "h100"
    found = problems(team)
    assert any(p.startswith("inference-platform:models[0].pool:") and "gpu, inferentia" in p for p in found), found


def test_a_workloads_model_that_fits_no_platform_instance_type_is_refused(team):
    team["models"][0]["acceleratorsPerReplica"] = 8
    found = problems(team, team_quota(gpus=16))
    assert any(
        p.startswith("inference-platform:models[0]:") and "fits no instance type of pool gpu" in p for p in found
    ), found


def test_a_workloads_model_on_the_wrong_accelerator_is_refused(team):
    team["models"][0]["pool"] = "inferentia"
    found = problems(team)
    assert any(p.startswith("inference-platform:models[0].engine:") and "neuron" in p for p in found), found


def test_a_team_quota_smaller_than_one_replica_is_refused(team):
    found = problems(team, team_quota(neuronDevices=2))
    assert any(
        p.startswith("inference-platform:models[1]:") and "teams[].quota.neuronDevices" in p and "ask the platform" in p
        for p in found
    ), found


def test_a_quota_too_small_for_stated_memory_is_refused(team):
    team["models"][0]["resources"] = {"cpu": "8", "memory": "400Gi"}
    found = problems(team)
    assert any(p.startswith("inference-platform:models[0]:") and "teams[].quota.memory" in p for p in found), found


def test_a_quota_that_holds_one_replica_but_not_all_warns(team):
    team["models"][0]["replicas"] = 5
    config = check_sections(team, "us-west-2")
    assert any(
        "stack.team" in str(w) and "quota.gpus" in str(w) and "Pending" in str(w) for w in stack_warnings(config)
    )


def test_an_engine_whose_add_on_the_platform_lacks_is_refused(team):
    team["models"][0].update(engine="dynamo")
    found = problems(team)
    assert any("models[0].engine" in p and "dynamo add-on" in p for p in found), found


def test_the_exports_read_from_the_stack_reference_win_over_the_repository_file(team):
    live = platform_exports()
    live["nodePools"] = [p for p in live["nodePools"] if p["name"] != "inferentia"]
    found = problems(team, live_platform(live))
    assert any("models[1].pool" in p and "stack acme/inference-platform/platform" in p for p in found), found


def test_a_platform_stack_outside_the_repository_is_checked_at_preview_with_a_warning(team):
    team["stack"]["platformStack"] = "acme/inference-platform/platform-prod"
    config = check_sections(team, "us-west-2")
    assert any("only at preview" in str(w) for w in stack_warnings(config))


@pytest.mark.parametrize("section", ["cluster", "nodePools", "addons", "storage", "gateway"])
def test_a_workloads_stack_cannot_set_platform_sections(team, section):
    value: Any = {"name": "x"} if section == "cluster" else {"enabled": True}
    if section == "nodePools":
        value = [{"name": "gpu", "accelerator": "nvidia", "instanceTypes": ["g6.xlarge"]}]
    elif section == "addons":
        value = {"dynamo": {"enabled": True}}
    elif section == "storage":
        value = {"modelCache": "efs"}
    team[section] = value
    assert any("cannot change platform resources" in p and section in p for p in problems(team))


def test_a_workloads_model_in_another_namespace_is_refused(team):
    team["models"][0]["namespace"] = "ads"
    assert any(p.startswith("inference-platform:models[0].namespace:") for p in problems(team))


def test_a_workloads_stack_cannot_set_its_own_quota(team):
    team["stack"]["quota"] = {"gpus": 64, "cpu": "512", "memory": "4Ti"}
    found = problems(team)
    assert any(p.startswith("inference-platform:stack.quota:") and "teams[].quota" in p for p in found), found


def test_a_platform_stack_serves_no_models(dev):
    dev["stack"]["role"] = "platform"
    assert any("platform stack serves no models" in p for p in problems(dev))


def test_team_and_quota_are_refused_outside_a_workloads_stack(dev):
    dev["stack"]["team"] = "search"
    assert any("team is only read by a workloads stack" in p for p in problems(dev))


def test_under_pulumi_the_stack_reference_outputs_decide_and_a_misfit_registers_nothing(mocks, team, monkeypatch):
    from stacks.load import sections_to_pulumi_config
    from stacks.render import run_program

    answer = mocks._stack_reference_outputs

    def platform_without_inferentia(stack_ref: str) -> dict[str, Any]:
        out = answer(stack_ref)
        out["outputs"]["nodePools"] = [p for p in out["outputs"]["nodePools"] if p["name"] != "inferentia"]
        return out

    monkeypatch.setattr(mocks, "_stack_reference_outputs", platform_without_inferentia)
    with pytest.raises(Exception, match=r"models\[1\]\.pool.*exports no pool named 'inferentia'"):
        run_program(sections_to_pulumi_config(team, "us-west-2"))
    registered = {r.type for r in mocks.records}
    assert registered <= {"pulumi:pulumi:StackReference"}, f"nothing but the reference is registered: {registered}"


def test_a_platform_stack_that_is_itself_a_workloads_stack_is_refused(team):
    team["stack"]["platformStack"] = "acme/inference-platform/team-search"
    found = problems(team)
    assert any(
        p.startswith("inference-platform:stack.platformStack:") and "only a platform or all-in-one" in p for p in found
    ), found


def test_a_team_hpa_on_a_platform_without_prometheus_adapter_is_refused(team):
    team["models"][0]["autoscaling"] = {"owner": "hpa", "maxReplicas": 2}
    live = platform_exports()
    assert live["customMetrics"] is True
    check_sections(team, "us-west-2")  # accepted: the platform serves custom metrics
    live["customMetrics"] = False
    found = problems(team, live_platform(live))
    assert any("models[0].autoscaling.owner" in p and "prometheus-adapter" in p for p in found), found


def test_a_workloads_stack_whose_platform_is_itself_is_refused_as_a_cycle(team, tmp_path, monkeypatch):
    from stacks import pipeline

    loop = tmp_path / "Pulumi.loop.yaml"
    team["stack"]["platformStack"] = "acme/inference-platform/loop"
    config = {"aws:region": "us-west-2", **{f"inference-platform:{k}": v for k, v in team.items()}}
    loop.write_text(json.dumps({"config": config}))
    monkeypatch.setattr(pipeline, "platform_stack_file", lambda ref, root=None: loop if ref.endswith("/loop") else None)
    with pytest.raises(ConfigError, match=r"stack\.platformStack: refers back to Pulumi\.loop\.yaml"):
        pipeline.check_file(loop)


def test_another_thread_reading_the_same_platform_file_is_no_cycle():
    """The mocks answer the platform's StackReference on a worker thread while the program's thread
    reads the same file: the files being read are per thread."""
    import threading

    from stacks import pipeline

    seen: list[object] = []
    with pipeline._loading(PLATFORM):
        worker = threading.Thread(target=lambda: seen.append(pipeline.exports_from_file(PLATFORM)))
        worker.start()
        worker.join()
    assert seen and isinstance(seen[0], dict) and seen[0]["nodePools"], seen
