"""Upgrades without surprises: prod refuses a model whose every rollout is an outage, and every node
pool drains for longer than its models take to shut down (stacks/rules/upgrades.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.capacity.nodepools import node_pool
from components.scheduling import POOL_LABEL
from stacks.config.pools import NodePoolSection
from stacks.engine_facts import SHUTDOWN_SECONDS
from stacks.rules.upgrades import duration_seconds

from .conftest import ALL_STACKS, stack_manifests
from .guard_support import has, problems, problems_of, warnings_of

ONE_REPLICA = 1  # models[1] of Pulumi.dev.yaml: qwen on the inferentia pool, replicas: 1


def prod(dev: dict[str, Any]) -> dict[str, Any]:
    dev["stack"]["environment"] = "prod"
    return dev


def the_one_replica_model(dev: dict[str, Any]) -> dict[str, Any]:
    model: dict[str, Any] = dev["models"][ONE_REPLICA]
    assert model["replicas"] == 1 and "rollout" not in model, "the dev stack's second model runs one replica"
    return model


def downtime(found: list[str]) -> list[str]:
    return [p for p in found if p.startswith(f"inference-platform:models[{ONE_REPLICA}].acceptDowntime: ")]


def test_prod_refuses_a_model_with_one_replica_and_no_surge_naming_the_key_the_rollout_and_node_expiry(dev):
    the_one_replica_model(dev)
    found = downtime(problems(prod(dev)))
    assert found, "prod refuses a model whose every rollout stops its only pod"
    message = found[0]
    for words in ("replicas: 1", "rollout.maxSurge", "expireAfter", "models[1].acceptDowntime: true"):
        assert words in message, (words, message)


def test_prod_accepts_the_one_replica_model_when_the_stack_accepts_the_downtime(dev):
    the_one_replica_model(dev)["acceptDowntime"] = True
    assert not downtime(problems_of(prod(dev))), "acceptDowntime: true is the explicit acceptance"


@pytest.mark.parametrize(
    "change",
    [{"replicas": 2}, {"rollout": {"maxSurge": 1}}],
    ids=["two replicas", "a surge"],
)
def test_prod_accepts_one_replica_rollouts_that_keep_a_replica_serving(dev, change):
    the_one_replica_model(dev).update(change)
    assert not downtime(problems_of(prod(dev))), change


def test_prod_counts_an_autoscalers_minimum_as_the_replicas_a_rollout_may_find(dev):
    dev["models"][0]["autoscaling"]["minReplicas"] = 1
    the_one_replica_model(dev)["acceptDowntime"] = True
    found = problems(prod(dev))
    assert has(found, "models[0].acceptDowntime", "autoscaling.minReplicas: 1"), found


@pytest.mark.parametrize("environment", ["dev", "staging"])
def test_dev_and_staging_warn_about_the_one_replica_model_instead(dev, environment):
    the_one_replica_model(dev)
    dev["stack"]["environment"] = environment
    assert has(warnings_of(dev), f"models[{ONE_REPLICA}].acceptDowntime", "outage"), environment


# --- the drain limit --------------------------------------------------------------------------------


def test_a_node_pool_renders_its_drain_limit_with_a_default_above_the_models_shutdown():
    pool = NodePoolSection.model_validate({"name": "gpu", "accelerator": "nvidia", "instanceTypes": ["g6.xlarge"]})
    spec = node_pool(pool)["spec"]["template"]["spec"]
    assert spec["terminationGracePeriod"] == "1h", "the default drain limit"
    assert duration_seconds(spec["terminationGracePeriod"]) > SHUTDOWN_SECONDS
    tuned = pool.model_copy(update={"termination_grace_period": "45m"})
    assert node_pool(tuned)["spec"]["template"]["spec"]["terminationGracePeriod"] == "45m"


def test_a_drain_limit_no_longer_than_a_models_shutdown_is_refused_naming_both_keys(dev):
    gpu = next(i for i, p in enumerate(dev["nodePools"]) if p["name"] == dev["models"][0]["pool"])
    dev["nodePools"][gpu]["terminationGracePeriod"] = "60s"
    found = problems(dev)
    assert has(found, f"nodePools[{gpu}].terminationGracePeriod", "models[0].pool", f"{SHUTDOWN_SECONDS}s"), found
    dev["nodePools"][gpu]["terminationGracePeriod"] = "61s"
    assert not [p for p in problems_of(dev) if "terminationGracePeriod" in p], "a longer limit is accepted"


def test_a_drain_limit_that_is_not_a_karpenter_duration_is_refused(dev):
    dev["nodePools"][0]["terminationGracePeriod"] = "1 hour"
    assert has(problems(dev), "nodePools[0].terminationGracePeriod"), "the NodePool CRD's ^([0-9]+(s|m|h))+$"


def test_karpenter_durations_read_as_seconds():
    assert [duration_seconds(d) for d in ("90s", "1h30m", "2h", "1m1s")] == [90, 5400, 7200, 61]


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_node_pool_of_every_shipped_stack_drains_longer_than_its_models_shut_down(path):
    manifests = stack_manifests(path)
    pools = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "NodePool"}
    for name, pool in pools.items():
        limit = pool["spec"]["template"]["spec"].get("terminationGracePeriod")
        assert limit, f"{path.name}: NodePool {name} has a drain limit (else a blocked drain never ends)"
        shutdowns = [
            template["spec"].get("terminationGracePeriodSeconds", 30)  # Kubernetes' default
            for m in manifests
            for template in pod_templates(m)
            if (template["spec"].get("nodeSelector") or {}).get(POOL_LABEL) == name
        ]
        assert duration_seconds(limit) > max(shutdowns, default=0), (path.name, name, limit, shutdowns)


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a Deployment, StatefulSet or LeaderWorkerSet (leader and worker)."""
    spec = obj.get("spec") or {}
    found = [spec["template"]] if isinstance(spec.get("template"), dict) and "spec" in spec["template"] else []
    group = (spec.get("leaderWorkerTemplate") or {}) if obj.get("kind") == "LeaderWorkerSet" else {}
    found += [group[k] for k in ("leaderTemplate", "workerTemplate") if isinstance(group.get(k), dict)]
    return found
