"""Issue 28 item 8, capacity that can never hold what is asked: a static pool against a model's replicas,
canary and surge (each model alone and all together), a team's quota against a rollout's surge and a
canary, and a single-node volume against a second pod (stacks/rules/capacity.py). Each is refused before
any resource, at the key that asks, with the fix."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import DEV, EXAMPLES, sections_of
from tests.guard_support import has, problems, problems_of

TEAM_SEARCH = next(p for p in EXAMPLES if p.name == "Pulumi.team-search.yaml")


def static_dev(nodes: int = 1, **model: Any) -> dict[str, Any]:
    """The dev stack with its GPU pool static: `nodes` g6.12xlarge (4 GPUs each), qwen3-8b on it."""
    sections = sections_of(DEV)
    pool = sections["nodePools"][0]
    pool.update({"instanceTypes": ["g6.12xlarge"], "replicas": nodes, "limits": {"nodes": 4}})
    pool.pop("consolidateAfter", None)
    sections["models"][0].update(model)
    return sections


def test_a_static_pool_that_holds_the_models_most_replicas_and_surge_is_accepted():
    sections = static_dev(autoscaling={"owner": "hpa", "minReplicas": 2, "maxReplicas": 3}, rollout={"maxSurge": 1})
    assert not [p for p in problems_of(sections) if "models[0]" in p or "nodePools[0]" in p]


@pytest.mark.parametrize(
    ("model", "key", "words"),
    [
        ({"autoscaling": {"owner": "hpa", "minReplicas": 5, "maxReplicas": 6}}, "autoscaling.minReplicas", ("5",)),
        ({"autoscaling": {"owner": "hpa", "minReplicas": 2, "maxReplicas": 6}}, "autoscaling.maxReplicas", ("6",)),
        (
            {"autoscaling": {"owner": "hpa", "minReplicas": 2, "maxReplicas": 4}, "rollout": {"maxSurge": 1}},
            "rollout.maxSurge",
            ("maxSurge 1", "5 replicas"),
        ),
        ({"autoscaling": {"owner": "none"}, "replicas": 3, "canary": None}, None, ()),
    ],
)
def test_a_static_pool_refuses_replicas_it_can_never_hold_at_the_key_that_asks(model, key, words):
    sections = static_dev(**{k: v for k, v in model.items() if v is not None})
    found = problems_of(sections)
    if key is None:
        assert not [p for p in found if "static pool" in p], found
        return
    assert has(found, f"models[0].{key}", "static pool gpu", "1 node of 4 accelerators", "hold 4", *words), found
    assert any("raise nodePools[0].replicas" in p for p in found), found


def test_a_static_pool_refuses_models_that_fit_alone_but_not_together():
    sections = static_dev(autoscaling={"owner": "hpa", "minReplicas": 2, "maxReplicas": 3})
    second = dict(sections["models"][0], name="qwen3-8b-b")
    second.pop("routing", None)
    sections["models"].append(second)
    found = problems(sections)
    assert has(found, "nodePools[0].replicas", "static pool gpu", "qwen3-8b, qwen3-8b-b", "6", "at least 2"), found


def test_a_team_quota_refuses_a_surge_it_cannot_hold_beside_the_fewest_replicas():
    """search's quota is 4 GPUs; qwen3-8b runs 2 of them: a surge of 3 would ask for 5 at once."""
    sections = sections_of(TEAM_SEARCH)
    sections["models"][0]["rollout"] = {"maxSurge": 3}
    found = problems(sections)
    assert has(found, "models[0].rollout.maxSurge", "requests.nvidia.com/gpu", "teams[].quota.gpus", "search"), found
    sections["models"][0]["rollout"] = {"maxSurge": 2}
    assert not [p for p in problems_of(sections) if "rollout.maxSurge" in p], "2 + 2 is the quota's 4"


def test_a_team_quota_refuses_a_canary_it_cannot_hold_beside_the_fewest_replicas():
    sections = sections_of(TEAM_SEARCH)
    model = sections["models"][0]
    model["replicas"] = 4
    model["canary"] = {"revision": "0123456789abcdef0123456789abcdef01234567", "weight": 10}
    found = problems(sections)
    assert has(found, "models[0].canary", "requests.nvidia.com/gpu", "teams[].quota.gpus", "drop canary"), found


def test_a_single_node_claim_refuses_a_surge_pod_that_could_never_attach_it():
    sections = sections_of(DEV)
    sections["storage"] = {"modelCache": "none", "existingClaim": {"name": "weights", "accessMode": "ReadWriteOnce"}}
    sections["models"][1]["rollout"] = {"maxSurge": 1}
    found = problems(sections)
    assert has(found, "models[1].rollout.maxSurge", "ReadWriteOnce", "attaches to one node", "maxSurge: 0"), found
    sections["storage"]["existingClaim"]["accessMode"] = "ReadWriteMany"
    assert not [p for p in problems_of(sections) if "models[1].rollout.maxSurge" in p], "ReadWriteMany holds both"


@pytest.mark.parametrize(
    ("model", "key", "words"),
    [
        ({"rollout": {"maxSurge": 2}}, "rollout.maxSurge", ("6 replicas", "cpu 288 > 200")),
        ({"autoscaling": {"owner": "hpa", "minReplicas": 2, "maxReplicas": 6}}, "autoscaling.maxReplicas", ("6",)),
    ],
)
def test_a_pools_cpu_limit_refuses_the_replicas_and_surge_it_can_never_launch_nodes_for(model, key, words):
    """A replica of 4 GPUs takes a whole g6.12xlarge (48 vCPU): 4 replicas are 192 vCPU of node capacity
    within the pool's 200, 6 (4 and a surge of 2, or maxReplicas 6) are 288, which Karpenter never
    launches."""
    sections = sections_of(DEV)
    pool = sections["nodePools"][0]
    pool.update({"instanceTypes": ["g6.12xlarge"], "limits": {"cpu": "200"}})
    sections["models"][0].update({"acceleratorsPerReplica": 4, "parameters": "8B", **model})
    found = problems(sections)
    assert has(found, f"models[0].{key}", "pool gpu", "over its limits", "nodePools[0].limits", *words), found


def test_a_disaggregated_graph_whose_prefill_and_decode_workers_exceed_the_pools_limit_together_is_refused():
    """Each role alone fits the dev pool's 16 GPUs; 3 prefill and up to 3 decode workers of 4 GPUs are 24."""
    sections = sections_of(DEV)
    sections["addons"]["dynamo"] = {"enabled": True}
    model = sections["models"][0]
    for key in ("routing", "slo"):
        model.pop(key, None)
    model.update(
        {
            "engine": "dynamo",
            "acceleratorsPerReplica": 4,
            "dynamo": {"mode": "disaggregated", "prefillWorkers": 3},
            "autoscaling": {"owner": "keda", "maxReplicas": 3},
        }
    )
    found = problems(sections)
    assert has(found, "models[0].dynamo", "prefill 3 x 4 + decode 3 x 4 = 24", "limit of 16"), found
    model["dynamo"]["prefillWorkers"] = 1
    assert not [p for p in problems_of(sections) if "worker roles" in p], "4 + 12 GPUs fit 16"
