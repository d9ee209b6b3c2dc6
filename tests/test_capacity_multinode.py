"""The capacity side of multi-node serving: EFA pools (their network layout, device plugin, security
group and pods per node), capacity reservations and Capacity Blocks, and static pools. Builders are
tested on resolved pools, refusals through the stack rules; the one component test builds only the
Capacity component."""

from __future__ import annotations

from typing import Any

import pytest

from components.capacity.nodepools import EFA_SECURITY_GROUP_TAG, ec2_node_class, node_pool
from components.capacity.plugins import efa_values, karpenter_values, needs_efa_plugin
from components.scheduling import EFA_LABEL
from stacks import conformance
from stacks.config.pools import NodePoolSection
from stacks.exports import resolve_pool
from stacks.fit import allocatable
from stacks.hardware import catalog
from stacks.pipeline import check_sections
from stacks.resolved import ResolvedPool
from tests.test_capacity_karpenter import capacity_records
from tests.test_capacity_rules import one, problems

SCHEMAS = conformance.schema_dir()
needs_schemas = pytest.mark.schemas
RELEASE = "kubernetes:helm.sh/v3:Release"

H100 = {
    "name": "h100",
    "accelerator": "nvidia",
    "instanceTypes": ["p5.48xlarge"],
    "capacityTypes": ["reserved"],
    "capacityReservations": [{"id": "cr-0123456789abcdef0"}],
    "efa": True,
}


def resolved(**kw: Any) -> ResolvedPool:
    return resolve_pool(NodePoolSection.model_validate({**H100, **kw}), None)


def node_class(p: ResolvedPool) -> dict[str, Any]:
    return ec2_node_class(p, cluster="inference-dev", node_role="inference-dev-karpenter-node", tags={})


def with_pool(dev: dict[str, Any], **kw: Any) -> dict[str, Any]:
    dev["nodePools"].append({**H100, **kw})
    return dev


# ---- EFA ---------------------------------------------------------------------------------------


def test_a_p5_efa_pool_attaches_the_primary_ena_and_one_efa_only_interface_on_each_of_32_cards():
    interfaces = node_class(resolved())["spec"]["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    efa = [i for i in interfaces if i["interfaceType"] == "efa-only"]
    assert len(efa) == 32 and {i["networkCardIndex"] for i in efa} == set(range(32)), "one EFA per card"
    assert {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"} in efa
    assert resolved().efa_per_node == 32 == len(efa), "pods request exactly what the layout attaches"


@pytest.mark.parametrize(("itype", "efa"), [("p4d.24xlarge", 4), ("g6e.48xlarge", 4), ("p5en.48xlarge", 16)])
def test_each_efa_type_gets_one_efa_only_interface_per_network_card(itype, efa):
    interfaces = node_class(resolved(instanceTypes=[itype]))["spec"]["networkInterfaces"]
    assert len(interfaces) == efa + 1 and sum(i["interfaceType"] == "efa-only" for i in interfaces) == efa


def test_a_pool_without_efa_keeps_karpenters_single_interface_and_the_cluster_security_group_only():
    spec = node_class(resolved(efa=False))["spec"]
    assert "networkInterfaces" not in spec
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "inference-dev"}}]


def test_an_efa_pool_selects_the_efa_security_group_beside_the_clusters():
    terms = node_class(resolved())["spec"]["securityGroupSelectorTerms"]
    assert {"tags": {EFA_SECURITY_GROUP_TAG: "inference-dev"}} in terms and len(terms) == 2


@pytest.mark.parametrize(("itype", "pods"), [("p5.48xlarge", 51), ("p4d.24xlarge", 688), ("g6e.48xlarge", 443)])
def test_the_efa_only_interface_on_card_0_lowers_the_pods_a_node_takes_and_frees_their_reserved_memory(itype, pods):
    pool = NodePoolSection.model_validate({**H100, "instanceTypes": [itype]})
    plain = NodePoolSection.model_validate({**H100, "instanceTypes": [itype], "efa": False})
    t = catalog()[itype]
    assert allocatable(pool, t).pods == pods, "Karpenter's ENILimitedPods less the efa-only ENI on card 0"
    gained = allocatable(pool, t).memory_mib - allocatable(plain, t).memory_mib
    assert gained == 11 * (t.max_pods - pods), "kube-reserved memory is 11Mi per pod"


def test_the_efa_device_plugin_is_installed_only_with_an_efa_pool_and_tolerates_its_taint():
    gpu = resolved(efa=False)
    assert not needs_efa_plugin([gpu]) and needs_efa_plugin([gpu, resolved()])
    values = efa_values([gpu, resolved()])
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], (
        "the chart tolerates only CriticalAddonsOnly: without the GPU taint no EFA device is ever advertised"
    )
    assert values["nodeSelector"] == {EFA_LABEL: "true"}
    labels = node_pool(resolved().config)["spec"]["template"]["metadata"]["labels"]
    assert labels[EFA_LABEL] == "true", "the plugin's node selector matches the EFA pool's nodes"


@needs_schemas
def test_the_efa_device_plugin_values_are_keys_of_its_chart():
    assert SCHEMAS is not None
    assert conformance.validate_values("aws-efa-k8s-device-plugin", efa_values([resolved()]), SCHEMAS) == []


def test_the_capacity_component_adds_the_plugin_and_a_security_group_open_to_itself_in_and_out(mocks, dev):
    records = capacity_records(mocks, with_pool(dev))
    release = next(r for r in records if r.type == RELEASE and r.inputs["name"] == "aws-efa-k8s-device-plugin")
    assert release.inputs["chart"] == "aws-efa-k8s-device-plugin" and release.inputs["version"] == "v0.5.30"
    assert release.inputs["repositoryOpts"]["repo"] == "https://aws.github.io/eks-charts"
    group = next(r for r in records if r.type == "aws:ec2/securityGroup:SecurityGroup")
    assert group.inputs["tags"][EFA_SECURITY_GROUP_TAG] == "inference-dev", "the EFA node class selects it by tag"
    for kind in (
        "securityGroupIngressRule:SecurityGroupIngressRule",
        "securityGroupEgressRule:SecurityGroupEgressRule",
    ):
        rule = next(r for r in records if r.type == f"aws:vpc/{kind}")
        assert rule.inputs["ipProtocol"] == "-1", "EFA needs all traffic"
        assert rule.inputs["referencedSecurityGroupId"] == rule.inputs["securityGroupId"], "to and from itself"


def test_without_an_efa_pool_there_is_no_efa_plugin_or_security_group(mocks, dev):
    records = capacity_records(mocks, dev)
    assert not [r for r in records if r.type == "aws:ec2/securityGroup:SecurityGroup"]
    assert "aws-efa-k8s-device-plugin" not in {r.inputs.get("name") for r in records if r.type == RELEASE}


def test_efa_on_a_type_without_efa_is_refused_naming_the_key(dev):
    message = one(with_pool(dev, instanceTypes=["g6.xlarge"], efa=True), "nodePools[2].efa")
    assert "g6.xlarge" in message and "no EFA" in message and "p5.48xlarge" in message


def test_efa_over_a_family_with_small_types_is_refused_for_each_type_without_efa(dev):
    with_pool(dev, instanceTypes=[], instanceFamilies=["g6e"])
    found = [p for p in problems(dev) if p.startswith("inference-platform:nodePools[2].efa: ")]
    assert any("g6e.xlarge" in p and "no EFA" in p for p in found), found


def test_efa_types_with_different_layouts_are_refused(dev):
    message = one(with_pool(dev, instanceTypes=["p5.48xlarge", "p5en.48xlarge"]), "nodePools[2].efa")
    assert "p5.48xlarge 32" in message and "p5en.48xlarge 16" in message


def test_efa_types_with_different_accelerator_counts_are_refused(dev):
    with_pool(dev, instanceTypes=["g6e.24xlarge", "g6e.48xlarge"], capacityTypes=["on-demand"])
    dev["nodePools"][2].pop("capacityReservations")
    found = [p for p in problems(dev) if p.startswith("inference-platform:nodePools[2].efa: ")]
    assert any("accelerators" in p and "g6e.24xlarge 4" in p for p in found), found


def test_efa_on_a_type_whose_network_cards_the_catalog_lacks_is_refused(dev):
    with_pool(dev, accelerator="neuron", instanceTypes=["trn2.48xlarge"])
    found = [p for p in problems(dev) if p.startswith("inference-platform:nodePools[2].efa: ")]
    assert any("trn2.48xlarge" in p and "network cards" in p for p in found), found


# ---- reserved capacity and Capacity Blocks -----------------------------------------------------


def test_a_reservation_by_id_and_one_by_tags_become_the_node_class_selector_terms():
    p = resolved(
        capacityReservations=[{"id": "cr-0123456789abcdef0"}, {"tags": {"team": "ml"}, "ownerId": "111122223333"}]
    )
    assert node_class(p)["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"tags": {"team": "ml"}, "ownerID": "111122223333"},
    ]
    requirements = {r["key"]: r["values"] for r in node_pool(p.config)["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["reserved"]


def test_reserved_without_selector_terms_is_refused_because_it_would_match_nothing(dev):
    with_pool(dev, capacityTypes=["on-demand", "reserved"])
    dev["nodePools"][2].pop("capacityReservations")
    message = one(dev, "nodePools[2].capacityTypes[1]")
    assert "selects none" in message and "capacityReservations" in message


def test_selector_terms_without_reserved_are_refused_not_completed(dev):
    message = one(with_pool(dev, capacityTypes=["on-demand"]), "nodePools[2].capacityReservations")
    assert "add reserved to capacityTypes" in message


@pytest.mark.parametrize(
    "term",
    [{}, {"id": "cr-0abc", "tags": {"a": "b"}}, {"id": "cr-0abc", "ownerId": "111122223333"}, {"id": "0abc"}],
    ids=["empty", "id-and-tags", "id-and-owner", "bad-id"],
)
def test_a_reservation_term_is_exactly_an_id_or_tags(dev, term):
    found = problems(with_pool(dev, capacityReservations=[term]))
    assert any(p.startswith("inference-platform:nodePools[2].capacityReservations[0]") for p in found), found


# ---- static pools -----------------------------------------------------------------------------


def test_a_static_pool_renders_replicas_and_only_its_node_limit():
    p = resolved(replicas=2, limits={"nodes": 4})
    spec = node_pool(p.config)["spec"]
    assert spec["replicas"] == 2 and spec["limits"] == {"nodes": "4"} and "weight" not in spec
    assert p.static


def test_a_static_pool_turns_on_karpenters_static_capacity_gate_and_no_other():
    assert karpenter_values(cluster="c", queue="q", static_capacity=True)["settings"]["featureGates"] == {
        "staticCapacity": True
    }
    assert "featureGates" not in karpenter_values(cluster="c", queue="q")["settings"], "chart defaults otherwise"


@needs_schemas
def test_the_static_capacity_gate_is_a_key_of_the_karpenter_chart():
    assert SCHEMAS is not None
    values = karpenter_values(cluster="c", queue="q", static_capacity=True)
    assert conformance.validate_values("karpenter", values, SCHEMAS) == []


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"limits": {"accelerators": 16}}, "nodePools[2].limits.accelerators"),
        ({"limits": {"cpu": "256"}}, "nodePools[2].limits.cpu"),
        ({"weight": 10}, "nodePools[2].weight"),
        ({"consolidateAfter": "1h"}, "nodePools[2].consolidateAfter"),
        ({"limits": {"nodes": 1}}, "nodePools[2].replicas"),
    ],
    ids=["accelerator-limit", "cpu-limit", "weight", "consolidation", "over-node-limit"],
)
def test_a_static_pool_refuses_what_karpenter_does_not_take_on_one(dev, extra, key):
    message = one(with_pool(dev, replicas=2, **extra), key)
    assert "static pool" in message or "limits.nodes" in message, message


def test_a_node_limit_on_a_dynamic_pool_is_refused(dev):
    assert "set replicas" in one(with_pool(dev, limits={"nodes": 4}), "nodePools[2].limits.nodes")


# ---- the multi-node pool as a whole -----------------------------------------------------------


def test_a_reserved_p5_efa_static_pool_passes_every_rule_and_validates_against_karpenters_crds(dev):
    config = check_sections(with_pool(dev, replicas=2, limits={"nodes": 2}), "us-west-2").config
    p = resolve_pool(config.node_pools[2], None)
    objects = [node_class(p), node_pool(p.config)]
    assert objects[0]["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    if SCHEMAS is not None:
        for obj in objects:
            assert conformance.validate_custom(obj, SCHEMAS) == [], obj["kind"]
