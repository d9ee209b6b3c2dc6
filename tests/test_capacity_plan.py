"""`python -m stacks plan`: per pool the allowed types and their allocatable, per model where it fits,
and, for every shipped stack, exactly the pods, replicas and resources the render asks for."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from stacks.__main__ import main
from stacks.golden import stack_files
from stacks.load import ROOT
from stacks.pipeline import check_file
from stacks.plan import plan_json
from stacks.resolved import EFA_RESOURCE, MODEL_LABEL
from tests.conftest import stack_manifests


def test_plan_lists_each_pools_types_with_allocatable_and_where_each_model_fits(capsys):
    assert main(["plan", "dev"]) == 0
    out = capsys.readouterr().out
    assert "pool gpu: accelerator nvidia" in out and "pool inferentia: accelerator neuron" in out
    inf2 = next(line.split() for line in out.splitlines() if line.strip().startswith("inf2.xlarge"))
    # facts: 3920m / 14162Mi, less aws-node, kube-proxy, ebs-csi-node, the Neuron problem detector and,
    # with monitoring on, neuron-monitor (256m / 128Mi, AWS's own DaemonSet); the EFS CSI node requests nothing.
    assert inf2[1:3] == ["3519m", "13914Mi"] and inf2[5:8] == ["1", "2", "58"], inf2
    assert "model llama-3-8b-neuron on pool inferentia" in out and "fits inf2.24xlarge" in out
    assert "model qwen3-8b on pool gpu" in out and "fits g6.xlarge, g6.12xlarge" in out


def test_plan_of_a_stack_whose_model_fits_nowhere_prints_the_refusal_not_a_traceback(tmp_path, capsys):
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["inference-platform:models"][1]["acceleratorsPerReplica"] = 24
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert "inference-platform:models[1].acceleratorsPerReplica" in err and "inf2.24xlarge" in err


# --- the plan is the render ------------------------------------------------------------------------


def _container(template: dict[str, Any]) -> dict[str, Any]:
    return template["spec"]["containers"][0]  # every engine's serving container is its pod's first


def rendered_pods(obj: dict[str, Any]) -> list[tuple[str, int, int | None, dict[str, Any]]]:
    """(role, pods per replica, replicas asked for or None, serving container resources) of each kind of
    pod a model's workload renders."""
    spec = obj["spec"]
    match obj["kind"]:
        case "Deployment":
            return [("server", 1, spec.get("replicas"), _container(spec["template"])["resources"])]
        case "LeaderWorkerSet":
            t, replicas = spec["leaderWorkerTemplate"], spec.get("replicas")
            return [
                ("leader", 1, replicas, _container(t["leaderTemplate"])["resources"]),
                ("worker", t["size"] - 1, replicas, _container(t["workerTemplate"])["resources"]),
            ]
        case "DynamoGraphDeployment":
            return [
                (
                    c["type"],
                    (c.get("multinode") or {}).get("nodeCount", 1),
                    c.get("replicas"),
                    _container(c["podTemplate"])["resources"],
                )
                for c in spec["components"]
            ]
        case "RayService":
            cluster = spec["rayClusterConfig"]
            head = ("head", 1, 1, _container(cluster["headGroupSpec"]["template"])["resources"])
            # A worker group's replicas count Ray nodes: a Serve replica's `count` of them each.
            return [head] + [
                ("worker", 1, g["replicas"], _container(g["template"])["resources"])
                for g in cluster["workerGroupSpecs"]
            ]
        case "NIMService":
            return [("server", 1, spec.get("replicas"), spec["resources"])]
    raise AssertionError(f"{obj['kind']}: a model workload this test cannot read; teach rendered_pods its pods")


def _planned(pod: dict[str, Any], kind: str) -> tuple[str, int, int | None, dict[str, Any]]:
    if kind == "RayService" and pod["role"] == "worker":
        return ("worker", 1, pod["pods"], pod["resources"])
    return (pod["role"], pod["count"], pod["replicas"], pod["resources"])


SHIPPED = stack_files()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_plan_prints_exactly_the_pods_and_resources_the_render_asks_for(path):
    """For every model and canary of every shipped stack: the roles, pods per replica, replicas (or the
    autoscaler's) and serving-container resources `stacks plan --json` prints are the rendered ones."""
    planned = plan_json(check_file(path).stack)["models"]
    workloads = {(m["kind"], m["metadata"]["name"]): m for m in stack_manifests(path) if m["kind"] in WORKLOAD_KINDS}
    seen = set()
    for model in planned:
        key = (model["workload"]["kind"], model["workload"]["name"])
        assert key in workloads, f"{model['name']}: the plan's workload {key} is not rendered"
        seen.add(key)
        have = sorted(rendered_pods(workloads[key]), key=lambda p: p[0])
        want = sorted((_planned(p, key[0]) for p in model["pods"]), key=lambda p: p[0])
        assert want == have, f"{path.name} {key}: plan {want}\nrender {have}"
    modelled = {k for k, m in workloads.items() if MODEL_LABEL in (m["metadata"].get("labels") or {})}
    assert modelled <= seen, f"rendered model workloads the plan leaves out: {sorted(modelled - seen)}"


WORKLOAD_KINDS = {"Deployment", "LeaderWorkerSet", "DynamoGraphDeployment", "RayService", "NIMService"}


def test_the_shipped_stacks_put_every_kind_of_pod_through_the_plan_check():
    roles = {
        (m["workload"]["kind"], p["role"])
        for path in SHIPPED
        for m in plan_json(check_file(path).stack)["models"]
        for p in m["pods"]
    }
    assert roles >= {
        ("Deployment", "server"),
        ("LeaderWorkerSet", "leader"),
        ("LeaderWorkerSet", "worker"),
        ("DynamoGraphDeployment", "frontend"),
        ("DynamoGraphDeployment", "worker"),
        ("DynamoGraphDeployment", "prefill"),
        ("DynamoGraphDeployment", "decode"),
        ("RayService", "head"),
        ("RayService", "worker"),
    }, roles
    efa = [
        p
        for path in SHIPPED
        for m in plan_json(check_file(path).stack)["models"]
        for p in m["pods"]
        if EFA_RESOURCE in p["resources"]["requests"]
    ]
    assert efa, "a group across nodes over EFA is among them, so its devices are compared too"
    canaries = [
        m for path in SHIPPED for m in plan_json(check_file(path).stack)["models"] if m["workload"]["name"] != m["name"]
    ]
    assert canaries, "and a canary"
