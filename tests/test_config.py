"""Stack-file rules: every bad input is refused with its key path and a fix, before any resource."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.errors import ConfigError
from stacks.pipeline import check_sections


def problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def test_the_dev_stack_is_valid(dev):
    config = check_sections(dev, "us-west-2").config
    assert config.cluster is not None and config.cluster.name == "inference-dev"


def test_an_unknown_key_is_refused_with_its_path_and_the_allowed_keys(dev):
    dev["cluster"]["vpc"]["cidrs"] = "10.0.0.0/16"
    found = problems(dev)
    assert any(p.startswith("inference-platform:cluster.vpc.cidrs: unknown key") and "cidr" in p for p in found), found


def test_an_unknown_section_is_refused(dev):
    dev["clusters"] = {"name": "x"}
    assert problems(dev) == [
        "inference-platform:clusters: unknown section; sections are stack, cluster, nodePools, "
        "addons, storage, gateway, models, images, teams, secrets; a Pulumi secret's key is read only when "
        "`secrets.<Secret>.fromConfig` names it"
    ]


def test_a_pulumi_secret_no_secret_reads_is_named_as_such_with_the_command_to_remove_it(dev):
    dev.pop("secrets", None)
    dev["hfToken"] = {"secure": "v1:abc"}
    found = [p for p in problems(dev) if p.startswith("inference-platform:hfToken:")]
    assert found and "is a Pulumi secret that no `secrets.<Secret>.fromConfig` entry names" in found[0], found
    assert "pulumi config rm inference-platform:hfToken" in found[0]


def test_a_wrong_type_names_the_key_and_the_value(dev):
    dev["cluster"]["systemNodes"]["min"] = "two"
    found = problems(dev)
    assert any(p.startswith("inference-platform:cluster.systemNodes.min:") and "'two'" in p for p in found), found


def test_a_cidr_that_is_not_one_is_refused(dev):
    dev["cluster"]["vpc"]["cidr"] = "10.42.0.0/33"
    found = problems(dev)
    assert any(p.startswith("inference-platform:cluster.vpc.cidr:") and "not a CIDR" in p for p in found), found


def test_a_cidr_with_host_bits_is_refused(dev):
    dev["cluster"]["vpc"]["cidr"] = "10.42.1.0/16"
    assert any("cluster.vpc.cidr" in p and "host bits" in p for p in problems(dev))


def test_adopting_a_vpc_without_subnets_is_refused(dev):
    dev["cluster"]["vpc"] = {"id": "vpc-0abc12345678"}
    found = problems(dev)
    assert any(p.startswith("inference-platform:cluster.vpc:") and "privateSubnetIds" in p for p in found), found


def test_subnets_without_a_vpc_id_are_refused(dev):
    dev["cluster"]["vpc"] = {"privateSubnetIds": ["subnet-0abc12345678", "subnet-0abc12345679"]}
    assert any("need the VPC's id" in p for p in problems(dev))


def test_adopting_a_vpc_with_two_private_subnets_is_accepted(dev):
    dev["cluster"]["vpc"] = {
        "id": "vpc-0abc12345678",
        "privateSubnetIds": ["subnet-0abc12345678", "subnet-0abc12345679"],
        # the internet-facing gateway's load balancer needs public subnets
        "publicSubnetIds": ["subnet-0abc1234567a"],
    }
    assert check_sections(dev, "us-west-2").cluster.vpc.adopted


def test_a_workloads_stack_without_platform_stack_is_refused():
    found = problems({"stack": {"role": "workloads", "team": "search"}})
    # At the missing key itself, so the fix says where it goes.
    assert any(
        p.startswith("inference-platform:stack.platformStack:") and "platformStack is required" in p for p in found
    ), found


def test_a_workloads_stack_cannot_define_platform_resources():
    found = problems(
        {
            "stack": {
                "role": "workloads",
                "team": "search",
                "platformStack": "acme/inference-platform/platform-prod",
            },
            "cluster": {"name": "x"},
        }
    )
    assert any("cannot change platform resources" in p for p in found), found


def test_a_platform_stack_needs_a_cluster():
    assert any("cluster section is required" in p for p in problems({"stack": {"role": "platform"}}))


def test_an_unsupported_kubernetes_version_is_refused(dev):
    dev["cluster"]["kubernetesVersion"] = "1.27"
    assert any(p.startswith("inference-platform:cluster.kubernetesVersion:") for p in problems(dev))


def test_an_admin_that_is_not_an_iam_arn_is_refused(dev):
    dev["cluster"]["admins"] = ["platform-admins"]
    assert any(p.startswith("inference-platform:cluster.admins[0]:") for p in problems(dev))


def test_system_node_bounds_are_checked(dev):
    dev["cluster"]["systemNodes"].update(min=5, max=2)
    assert any("cluster.systemNodes" in p and "must not exceed" in p for p in problems(dev))


def test_a_secret_value_in_config_is_refused(dev):
    dev["gateway"] = {"secure": "AAABAJ..."}
    assert any(p.startswith("inference-platform:gateway:") and "Secrets" in p for p in problems(dev))


def test_every_problem_is_reported_at_once(dev):
    dev["cluster"]["systemNodes"]["min"] = "two"
    dev["cluster"]["vpc"]["cidr"] = "nope"
    assert len(problems(dev)) >= 2


def test_an_eks_addon_version_must_be_an_eksbuild_version(dev):
    dev["cluster"]["addonVersions"] = {"vpc-cni": "latest"}
    assert any(p.startswith("inference-platform:cluster.addonVersions.vpc-cni:") for p in problems(dev))
