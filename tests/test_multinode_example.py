"""Issue 15's done-when, on the shipped example (stacks/examples/Pulumi.multinode.yaml, rendered once
per run): Llama 3.1 405B in bf16 on vLLM across two reserved p5.48xlarge nodes over EFA, and the same
model as a Dynamo disaggregated graph whose workers span nodes."""

from __future__ import annotations

import re

from stacks.pipeline import check_file
from stacks.plan import plan
from tests.conftest import EXAMPLES, rendered_stack

MULTINODE = next(p for p in EXAMPLES if p.name == "Pulumi.multinode.yaml")


def objects(kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in rendered_stack(MULTINODE).manifests() if o["kind"] == kind}


def test_vllm_serves_the_405b_model_as_one_leaderworkerset_group_of_two_pods_with_8_gpus_and_32_efa_each():
    lws = objects("LeaderWorkerSet")["llama-405b"]
    group = lws["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2
    for role in ("leaderTemplate", "workerTemplate"):
        (engine,) = [c for c in group[role]["spec"]["containers"] if c["name"] == "engine"]
        requests = engine["resources"]["requests"]
        assert requests["nvidia.com/gpu"] == "8", role
        assert requests["vpc.amazonaws.com/efa"] == "32", f"{role}: every EFA device of a p5.48xlarge"


def test_the_pools_node_class_attaches_the_efa_layout_and_selects_its_reservations():
    node_class = objects("EC2NodeClass")["h100"]["spec"]
    interfaces = node_class["networkInterfaces"]
    assert len(interfaces) == 33, "the primary interface and one efa-only interface per EFA device"
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert sum(i["interfaceType"] == "efa-only" for i in interfaces) == 32
    assert node_class["capacityReservationSelectorTerms"] == [{"tags": {"inference-platform:pool": "h100"}}]
    pool = objects("NodePool")["h100"]["spec"]["template"]["spec"]["requirements"]
    capacity = next(r for r in pool if r["key"] == "karpenter.sh/capacity-type")
    assert capacity["values"] == ["reserved"], "only the reservations the pool selects"


def test_the_efa_device_plugin_lws_and_grove_are_installed_and_the_graphs_workers_span_two_nodes():
    releases = {r["name"]: r for r in rendered_stack(MULTINODE).releases()}
    assert {"aws-efa-k8s-device-plugin", "lws", "dynamo"} <= set(releases)
    assert releases["dynamo"]["values"]["global"]["grove"] == {"install": True, "enabled": True}
    graph = objects("DynamoGraphDeployment")["llama-405b-disagg"]
    workers = [c for c in graph["spec"]["components"] if c["type"] in ("prefill", "decode")]
    assert [c["multinode"] for c in workers] == [{"nodeCount": 2}, {"nodeCount": 2}]


def test_stacks_plan_shows_each_group():
    text = plan(check_file(MULTINODE).stack)
    assert "model llama-405b on pool h100: one replica is a group of 2 nodes x 8 GPUs (tensor 8 x pipeline 2)" in text
    assert "model llama-405b-disagg on pool h100: one replica is a group of 2 nodes x 8 GPUs" in text
    assert re.search(r"^\s+p5\.48xlarge\s.*\s51$", text, re.M), "the 51 pods the EFA layout leaves a p5.48xlarge"
