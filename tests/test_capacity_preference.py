"""Capacity preference (issue #28 item 2): `nodePools[].capacityPreference` orders capacity types as
weighted Karpenter NodePools of one pool (stacks/tiers.py), and several `capacityTypes` in one NodePool
warn that Karpenter, not the order written, decides (reserved, then spot, then on-demand). Builders are
tested on resolved pools, refusals and the warning through the stack rules, the create order and the
team's view on rendered and exported stacks."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from components.capacity.nodepools import node_pool
from components.scheduling import POOL_LABEL
from policypack import validators
from stacks import conformance
from stacks.config.pools import NodePoolSection
from stacks.exports import export_platform, read_platform, resolve_pool
from stacks.lifecycle import build_graph
from stacks.lifecycle_hazards import hazards
from stacks.load import ROOT
from stacks.pipeline import check_file
from stacks.plan import plan, plan_json
from stacks.resolved import ResolvedPool
from tests.builders import resolved_stack, sourced
from tests.conftest import render_sections, rendered_stack, sections_of
from tests.guard_support import problems_of, refused, warnings_of

DEV = ROOT / "Pulumi.dev.yaml"
PROD_70B = ROOT / "stacks/examples/Pulumi.prod-70b.yaml"
CAPACITY = ROOT / "stacks/examples/Pulumi.capacity.yaml"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"

GPU = {
    "name": "gpu",
    "accelerator": "nvidia",
    "instanceTypes": ["g6.xlarge", "g6.12xlarge"],
    "limits": {"accelerators": 16},
}
CR = [{"id": "cr-0123456789abcdef0"}]


def tiered(**kw: Any) -> ResolvedPool:
    return resolve_pool(NodePoolSection.model_validate({**GPU, **kw}), None)


def rendered(pool: ResolvedPool) -> list[dict[str, Any]]:
    return [node_pool(pool.config, tier) for tier in pool.tiers]


def capacity_types(manifest: dict[str, Any]) -> list[str]:
    reqs = manifest["spec"]["template"]["spec"]["requirements"]
    return next(r["values"] for r in reqs if r["key"] == "karpenter.sh/capacity-type")


def dev_with(**changes: Any) -> dict[str, Any]:
    """The dev stack with its gpu pool changed (a None value removes the key)."""
    sections = sections_of(DEV)
    gpu = sections["nodePools"][0]
    gpu.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del gpu[key]
    return sections


# ---- the rendered tiers -------------------------------------------------------------------------


def test_on_demand_then_spot_renders_two_nodepools_the_first_keeping_the_pools_name_with_descending_weights():
    first, second = rendered(tiered(capacityPreference=["on-demand", "spot"]))
    assert first["metadata"]["name"] == "gpu", "an existing pool keeps its NodePool: nothing is replaced"
    assert second["metadata"]["name"] == "gpu-spot"
    assert capacity_types(first) == ["on-demand"] and capacity_types(second) == ["spot"], "one type per tier"
    assert first["spec"]["weight"] == 2 and second["spec"]["weight"] == 1, "Karpenter tries the heavier first"


def test_every_tier_carries_the_pools_label_taints_node_class_and_limits_so_its_models_land_on_any():
    first, second = rendered(tiered(capacityPreference=["on-demand", "spot"]))
    for manifest in (first, second):
        template = manifest["spec"]["template"]
        assert template["metadata"]["labels"][POOL_LABEL] == "gpu", "models select the pool by this label"
        assert template["spec"]["taints"] == first["spec"]["template"]["spec"]["taints"]
        assert template["spec"]["nodeClassRef"]["name"] == "gpu", "one EC2NodeClass for every tier"
        assert manifest["spec"]["limits"]["nvidia.com/gpu"] == "16", "each tier holds the pool's limits whole"
        assert manifest["spec"]["disruption"] == first["spec"]["disruption"]


def test_reservation_first_then_on_demand_takes_its_weights_down_from_the_pools_weight():
    first, second = rendered(tiered(capacityPreference=["reserved", "on-demand"], capacityReservations=CR, weight=50))
    assert (first["metadata"]["name"], capacity_types(first), first["spec"]["weight"]) == ("gpu", ["reserved"], 50)
    assert (second["metadata"]["name"], capacity_types(second), second["spec"]["weight"]) == (
        "gpu-on-demand",
        ["on-demand"],
        49,
    )


def test_a_pool_without_a_preference_renders_its_one_nodepool_as_before():
    (only,) = rendered(tiered(capacityTypes=["spot", "on-demand"], weight=7))
    assert only["metadata"]["name"] == "gpu" and capacity_types(only) == ["spot", "on-demand"]
    assert only["spec"]["weight"] == 7
    assert "weight" not in rendered(tiered())[0]["spec"], "no weight unless one is asked for"


def test_the_shipped_prod_70b_renders_on_demand_and_spot_tiers_that_its_model_waits_for():
    records = rendered_stack(PROD_70B).resources
    g = build_graph(records)
    pools = {r.inputs["metadata"]["name"]: r for r in records if r.type == NODE_POOL}
    assert {name for name in pools if name.startswith("h100")} == {"h100", "h100-spot"}
    assert capacity_types(pools["h100"].inputs) == ["on-demand"] and pools["h100"].inputs["spec"]["weight"] == 2
    deployment = next(r for r in records if r.type == "kubernetes:apps/v1:Deployment" and r.name.endswith("-llama-70b"))
    upstream = g.upstream(deployment.urn)
    assert pools["h100"].urn in upstream and pools["h100-spot"].urn in upstream, "created after every tier"
    assert not [h for h in hazards(records, g) if h.detector == "workload-before-nodepool"]


def test_a_warm_tiered_pools_buffer_and_models_wait_for_every_tier():
    sections = dev_with(capacityTypes=None, capacityPreference=["on-demand", "spot"], warmNodes=1)
    records = render_sections(sourced(sections)).resources
    g = build_graph(records)
    tiers = [r.urn for r in records if r.type == NODE_POOL and r.inputs["metadata"]["name"] in ("gpu", "gpu-spot")]
    assert len(tiers) == 2
    buffer = next(r for r in records if r.inputs.get("kind") == "CapacityBuffer")
    assert all(t in g.upstream(buffer.urn) for t in tiers), "the warm nodes' virtual pods may land on any tier"
    qwen = next(r for r in records if r.type == "kubernetes:apps/v1:Deployment" and r.name.endswith("qwen3-8b"))
    assert all(t in g.upstream(qwen.urn) for t in tiers)
    assert not [h for h in hazards(records, g) if h.detector == "workload-before-nodepool"]


# ---- one pool to everything else ----------------------------------------------------------------


def test_the_plan_lists_the_tiers_in_the_order_karpenter_tries_them_with_limits_per_tier():
    stack = check_file(PROD_70B).stack
    text = plan(stack)
    assert "pool h100: accelerator nvidia, on-demand/spot," in text and "per tier" in text
    assert "capacity preference: on-demand (NodePool h100, weight 2), then spot (NodePool h100-spot, weight 1)" in text
    (h100,) = [p for p in plan_json(stack)["pools"] if p["name"] == "h100"]
    assert h100["tiers"] == [
        {"nodePool": "h100", "capacityTypes": ["on-demand"], "weight": 2},
        {"nodePool": "h100-spot", "capacityTypes": ["spot"], "weight": 1},
    ]
    models = {m["name"]: m["pool"] for m in plan_json(stack)["models"]}
    assert models["llama-70b"] == "h100", "the model plans on the one pool, not on one of its tiers"


def test_a_team_sees_a_tiered_pool_once_with_its_tiers():
    exports = export_platform(check_file(CAPACITY).stack.platform)
    assert [p["name"] for p in exports["nodePools"]].count("gpu-large") == 1
    assert "gpu-large-on-demand" not in [p["name"] for p in exports["nodePools"]], "a tier is not a pool"
    pool = read_platform(exports, "test").pool("gpu-large")
    assert pool is not None
    assert [(t.name, t.weight) for t in pool.tiers] == [("gpu-large", 50), ("gpu-large-on-demand", 49)]


def test_the_policy_pack_reads_every_tier_as_the_pool_its_label_names():
    manifests = [r.inputs for r in rendered_stack(PROD_70B).resources if r.type == NODE_POOL]
    sections = [validators.pool_section(m) for m in manifests]
    names = [m["metadata"]["name"] for m in manifests]
    read = [s.name if s is not None else None for s in sections]
    assert [r for n, r in zip(names, read, strict=True) if n.startswith("h100")] == ["h100", "h100"], (
        "the fit check reads both tiers as the one pool h100"
    )


# ---- refusals -----------------------------------------------------------------------------------


def test_a_preference_listing_a_type_twice_is_refused_at_the_second():
    message = refused(
        dev_with(capacityTypes=None, capacityPreference=["on-demand", "spot", "on-demand"]),
        "nodePools[0].capacityPreference[2]",
        "on-demand is listed twice",
    )
    assert "list it once" in message


def test_reserved_in_a_preference_without_capacity_reservations_is_refused_at_its_place():
    refused(
        dev_with(capacityTypes=None, capacityPreference=["reserved", "on-demand"]),
        "nodePools[0].capacityPreference[0]",
        "add capacityReservations",
    )


def test_capacity_reservations_with_a_preference_lacking_reserved_are_refused():
    refused(
        dev_with(capacityTypes=None, capacityPreference=["on-demand", "spot"], capacityReservations=CR),
        "nodePools[0].capacityReservations",
        "capacityPreference lacks reserved",
    )


def test_a_preference_beside_capacity_types_is_refused_naming_which_to_remove():
    refused(dev_with(capacityPreference=["on-demand", "spot"]), "nodePools[0].capacityTypes", "not both", "remove")


def test_a_preference_on_a_static_pool_is_refused():
    refused(
        dev_with(capacityTypes=None, capacityPreference=["on-demand", "spot"], replicas=2, limits={"nodes": 2}),
        "nodePools[0].capacityPreference",
        "static pool",
        "use capacityTypes",
    )


def test_a_weight_below_the_number_of_tiers_is_refused_as_karpenters_lowest_is_one():
    refused(
        dev_with(
            capacityTypes=None, capacityPreference=["reserved", "on-demand", "spot"], capacityReservations=CR, weight=2
        ),
        "nodePools[0].weight",
        "at least 3",
    )


def test_a_preference_of_one_type_is_refused_pointing_at_capacity_types():
    refused(
        dev_with(capacityTypes=None, capacityPreference=["spot"]),
        "nodePools[0].capacityPreference",
        "capacityTypes: [spot]",
    )


def test_a_tier_named_like_another_pool_is_refused():
    sections = dev_with(capacityTypes=None, capacityPreference=["on-demand", "spot"])
    sections["nodePools"].append({**GPU, "name": "gpu-spot"})
    refused(sections, "nodePools[0].capacityPreference[1]", "gpu-spot", "rename")


def test_untainted_pools_whose_tier_weights_overlap_are_refused_and_apart_they_pass():
    sections = sections_of(DEV)
    cpu = {"accelerator": "none", "instanceTypes": ["m7i.xlarge"]}
    sections["nodePools"] += [
        {**cpu, "name": "cpu", "capacityPreference": ["on-demand", "spot"], "weight": 10},
        {**cpu, "name": "cpu-batch", "weight": 9},
    ]
    refused(sections, "nodePools[3].weight", "weights 9-9", "interleaved")
    sections["nodePools"][3]["weight"] = 8
    assert not [p for p in problems_of(sections) if "weight" in p]


def test_a_valid_preference_passes_every_rule_and_warns_nothing_about_capacity():
    sections = dev_with(capacityTypes=None, capacityPreference=["on-demand", "spot"])
    assert problems_of(sections) == []
    assert not [w for w in warnings_of(sections) if "capacityTypes" in w or "capacityPreference" in w]


# ---- the ambiguous form -------------------------------------------------------------------------


@pytest.mark.parametrize("kinds", [["on-demand", "spot"], ["spot", "on-demand"]])
def test_on_demand_and_spot_in_capacity_types_warns_that_karpenter_launches_spot_first(kinds):
    (warned,) = [w for w in warnings_of(dev_with(capacityTypes=kinds)) if "nodePools[0].capacityTypes" in w]
    assert "Karpenter launches spot first" in warned and "falling back to on-demand" in warned
    assert "capacityPreference: [on-demand, spot]" in warned, "names the way to get on-demand first"


def test_reserved_with_other_types_warns_that_the_reservations_come_first():
    sections = dev_with(capacityTypes=["on-demand", "reserved"], capacityReservations=CR)
    (warned,) = [w for w in warnings_of(sections) if "nodePools[0].capacityTypes" in w]
    assert "reservations first" in warned and "capacityPreference: [reserved, on-demand]" in warned


def test_one_capacity_type_warns_nothing():
    assert not [w for w in warnings_of(dev_with(capacityTypes=["spot"])) if "capacityTypes" in w]


def test_the_shipped_stacks_state_their_order_instead_of_relying_on_karpenters():
    for path in (CAPACITY, PROD_70B):
        assert not [w for w in check_file(path).warnings if "capacityTypes" in str(w)], path.name
    assert resolved_stack(sections_of(CAPACITY)).platform.pool("gpu-large") is not None


# ---- every order --------------------------------------------------------------------------------

ORDERS = [list(p) for n in (2, 3) for p in itertools.permutations(["on-demand", "spot", "reserved"], n)]


@pytest.mark.parametrize("weight", [None, 3, 100])
@pytest.mark.parametrize("order", ORDERS, ids="/".join)
def test_every_order_renders_distinct_single_type_tiers_with_strictly_descending_weights_from_1_to_100(order, weight):
    extra: dict[str, Any] = {"capacityReservations": CR} if "reserved" in order else {}
    if weight is not None:
        extra["weight"] = weight
    manifests = rendered(tiered(capacityPreference=order, **extra))
    assert [capacity_types(m) for m in manifests] == [[kind] for kind in order], "one tier per type, in order"
    names = [m["metadata"]["name"] for m in manifests]
    assert names[0] == "gpu" and len(set(names)) == len(names), "the first keeps the pool's name; all distinct"
    weights = [m["spec"]["weight"] for m in manifests]
    assert all(1 <= w <= 100 for w in weights), "within the NodePool CRD's weight bounds"
    assert all(a > b for a, b in itertools.pairwise(weights)), "Karpenter tries them in the written order"
    assert {m["spec"]["template"]["metadata"]["labels"][POOL_LABEL] for m in manifests} == {"gpu"}


@pytest.mark.schemas
def test_each_tier_passes_the_nodepool_crds_schema_and_cel_rules():
    schemas = conformance.schema_dir()
    assert schemas is not None
    pool = tiered(capacityPreference=["reserved", "on-demand", "spot"], capacityReservations=CR, weight=10)
    for manifest in rendered(pool):
        assert conformance.validate_custom(manifest, schemas) == [], manifest["metadata"]["name"]


# ---- the pool's room is every tier's ------------------------------------------------------------


def _surging(surge: int, **pool: Any) -> dict[str, Any]:
    """dev's qwen3-8b (up to 4 replicas of 1 GPU) rolling out with `surge` on a pool of 4 GPUs a tier."""
    sections = dev_with(limits={"accelerators": 4}, **pool)
    sections["models"][0]["rollout"] = {"maxSurge": surge}
    return sections


def test_a_rollout_surge_beyond_one_tier_fits_a_tiered_pool_whose_tiers_together_hold_it():
    refused(_surging(1), "models[0].rollout.maxSurge", "5 accelerators", "the pool's limit of 4")
    tiered_pool = {"capacityTypes": None, "capacityPreference": ["on-demand", "spot"]}
    assert not [p for p in problems_of(_surging(1, **tiered_pool)) if "maxSurge" in p], "8 GPUs across 2 tiers"
    refused(_surging(5, **tiered_pool), "models[0].rollout.maxSurge", "9 accelerators", "the 8 its 2 capacity tiers")


def test_the_resolved_pool_counts_its_limit_once_per_tier():
    assert tiered(capacityPreference=["on-demand", "spot"]).accelerators_at_most == 32
    assert tiered().accelerators_at_most == 16
    assert resolve_pool(NodePoolSection.model_validate({**GPU, "limits": {}}), None).accelerators_at_most is None


def test_a_canary_beside_a_replica_fits_a_tiered_pool_of_one_gpu_a_tier():
    def canaried(**pool: Any) -> dict[str, Any]:
        sections = dev_with(limits={"accelerators": 1}, **pool)
        sections["models"][0]["canary"] = {"revision": "a" * 40, "weight": 10}
        return sections

    refused(canaried(), "models[0].canary", "2 accelerators", "the pool's limit of 1")
    tiered_pool = {"capacityTypes": None, "capacityPreference": ["on-demand", "spot"]}
    assert not [p for p in problems_of(canaried(**tiered_pool)) if "canary" in p], "one GPU on each tier"
