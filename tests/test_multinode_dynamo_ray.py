"""Issue 15, Dynamo and Ray Serve across nodes: a Dynamo replica of `nodesPerReplica` N > 1 is its
worker component's `multinode.nodeCount` (run by the operator's Grove orchestrator, which the platform
chart then installs and enables), and a Ray Serve replica is N Ray worker pods its engine's placement
group packs node by node. Built from a ResolvedStack directly (milliseconds), like the other engine
tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.serving.values import dynamo_values
from stacks.conformance import schema_dir, validate_custom, validate_values
from tests.conftest import DEV, sections_of
from tests.engines_helpers import env_of, flag, objects, stack_of
from tests.guard_support import has, problems
from tests.test_engines_groups import H100

BASE: dict[str, Any] = {
    "model": "meta-llama/Llama-3.1-405B-Instruct",
    "revision": "be673f326cab4cd22ccfef76109faf68e41aa5f1",
    "pool": "h100",
    "acceleratorsPerReplica": 16,
    "nodesPerReplica": 2,
    "parameters": "405B",
    "dtype": "bf16",
    "maxModelLen": 8192,
}
DYNAMO = {**BASE, "name": "llama-405b-dynamo", "engine": "dynamo"}
RAY = {**BASE, "name": "llama-405b-ray", "engine": "ray-serve", "parallelism": {"tensor": 8, "pipeline": 2}}


def with_model(model: dict[str, Any], pool: dict[str, Any] | None = None) -> dict[str, Any]:
    sections = sections_of(DEV)
    sections["nodePools"] = [*sections["nodePools"], copy.deepcopy(pool or H100)]
    sections["models"] = [*sections["models"], copy.deepcopy(model)]
    addons = sections.setdefault("addons", {})
    addons.setdefault("dynamo", {})["enabled"] = True
    addons.setdefault("kuberay", {})["enabled"] = True
    return sections


def dynamo(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(DYNAMO), **changes}


def graph_of(sections: dict[str, Any], name: str = "llama-405b-dynamo") -> dict[str, Any]:
    return objects(stack_of(sections), name)["DynamoGraphDeployment"]


def workers(graph: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in graph["spec"]["components"] if c["type"] != "frontend"]


def main_of(component: dict[str, Any]) -> dict[str, Any]:
    return component["podTemplate"]["spec"]["containers"][0]


@pytest.mark.schemas
def test_a_dynamo_replica_across_two_p5_nodes_is_a_multinode_worker_of_node_count_2_with_8_gpus_per_pod():
    graph = graph_of(with_model(dynamo()))
    (worker,) = workers(graph)
    assert worker["multinode"] == {"nodeCount": 2}, "v1beta1 components[].multinode.nodeCount is the group's nodes"
    assert worker["replicas"] == 1, "replicas counts groups of nodeCount pods"
    main = main_of(worker)
    res = main["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "8", (
        "each pod requests its node's share: total GPUs = nodeCount x the container's GPU request"
    )
    assert flag(main["args"], "--tensor-parallel-size") == "16", "Dynamo's TP must equal nodeCount x gpu"
    assert "--pipeline-parallel-size" not in main["args"]
    frontend = next(c for c in graph["spec"]["components"] if c["type"] == "frontend")
    assert "multinode" not in frontend, "the CPU frontend is one pod"
    root = schema_dir()
    assert root is not None, "INFERENCE_PLATFORM_SCHEMAS must point at the shared schemas"
    assert validate_custom(graph, root) == [], "the DGD must validate against the 1.4.0-cut (e147ceea) CRD"


def test_a_multinode_dynamo_worker_on_an_efa_pool_requests_the_nodes_efa_devices_and_the_libfabric_env():
    stack = stack_of(with_model(dynamo()))
    efa = next(m for m in stack.models if m.name == "llama-405b-dynamo").pool.efa_per_node
    assert efa > 0
    main = main_of(workers(objects(stack, "llama-405b-dynamo")["DynamoGraphDeployment"])[0])
    res = main["resources"]
    assert res["requests"]["vpc.amazonaws.com/efa"] == res["limits"]["vpc.amazonaws.com/efa"] == str(efa)
    env = env_of(main)
    for name, value in {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_EFA_ENABLE_SHM_TRANSFER": "0",
        "FI_EFA_ENABLE_SHM": "0",
        "FI_EFA_USE_HUGE_PAGE": "0",
    }.items():
        assert env[name] == value, f"efa-on-aws.mdx asks for {name}={value} (no hugepages: Karpenter lacks them)"
    assert not any(k.startswith("hugepages") for k in res["requests"]), "Karpenter does not model hugepages"
    assert "LD_LIBRARY_PATH" not in env, "the kubelet would not expand ${LD_LIBRARY_PATH}: the EFA image sets it"


@pytest.mark.schemas
def test_disaggregated_vllm_workers_over_efa_move_kv_blocks_with_nixls_libfabric_backend_on_both_roles():
    graph = graph_of(with_model(dynamo(dynamo={"mode": "disaggregated", "prefillWorkers": 1, "decodeWorkers": 1})))
    roles = {c["type"]: c for c in workers(graph)}
    assert set(roles) == {"prefill", "decode"}
    assert len({flag(main_of(c)["args"], "--kv-transfer-config") for c in roles.values()}) == 1, "one connector"
    for role, component in roles.items():
        assert component["multinode"] == {"nodeCount": 2}, f"the {role} workers span the group's nodes"
        config = yaml.safe_load(flag(main_of(component)["args"], "--kv-transfer-config") or "{}")
        assert config["kv_connector"] == "NixlConnector"
        assert config["kv_connector_extra_config"]["backends"] == ["LIBFABRIC"], (
            f"{role}: UCX, NIXL's default, runs at about TCP speed over EFA; both ends must use LIBFABRIC"
        )
        assert main_of(component)["securityContext"] == {"privileged": True, "capabilities": {"add": ["IPC_LOCK"]}}, (
            f"{role}: NIXL's fi_mr_reg of GPU memory over EFA needs privileged (IPC_LOCK alone fails)"
        )
    waived = " ".join(graph["metadata"]["annotations"].values())
    assert "CKV_K8S_16=" in waived and "fi_mr_reg" in waived, "the privilege carries its reason"
    assert validate_custom(graph, schema_dir()) == []  # type: ignore[arg-type]
    aggregated = graph_of(with_model(dynamo()))
    assert all("securityContext" not in main_of(c) for c in workers(aggregated)), "no NIXL, no privilege"
    waivers = [v for v in aggregated["metadata"].get("annotations", {}).values() if "CKV_" in v]
    assert not waivers, "no privilege, no scanner waiver (its annotations are only the await's)"


def test_disaggregated_sglang_workers_over_efa_select_the_libfabric_nixl_backend():
    graph = graph_of(with_model(dynamo(dynamo={"backend": "sglang", "mode": "disaggregated", "prefillWorkers": 1})))
    for component in workers(graph):
        env = env_of(main_of(component))
        assert env["SGLANG_DISAGGREGATION_NIXL_BACKEND"] == "LIBFABRIC", component["type"]
        assert flag(main_of(component)["args"], "--tensor-parallel-size") == "16", "SGLang's TP is the group's"


def test_a_single_node_dynamo_graph_has_no_multinode_no_efa_and_nixl_over_its_default_backend_on_both_roles():
    model = dynamo(acceleratorsPerReplica=8, nodesPerReplica=1, parameters="8B", dynamo={"mode": "disaggregated"})
    roles = {c["type"]: c for c in workers(graph_of(with_model(model)))}
    for component in roles.values():
        assert "multinode" not in component
        assert "vpc.amazonaws.com/efa" not in main_of(component)["resources"]["requests"]
    prefill, decode = (flag(main_of(roles[r])["args"], "--kv-transfer-config") for r in ("prefill", "decode"))
    assert decode == prefill, "the decode role receives KV through the connector the prefill role sends with"
    assert "kv_connector_extra_config" not in yaml.safe_load(decode or "{}"), "LIBFABRIC is for EFA pools only"


@pytest.mark.schemas
def test_grove_is_installed_and_enabled_only_when_some_dynamo_model_spans_nodes():
    multi = stack_of(with_model(dynamo())).platform.addons
    assert multi.dynamo.grove, "a multinode DGD with no orchestrator fails: no multinode orchestrator available"
    values = dynamo_values(multi.dynamo)
    assert values["global"]["grove"] == {"install": True, "enabled": True}, (
        "operator-config.yaml renders orchestrators.grove.enabled explicitly: false disables an installed Grove"
    )
    root = schema_dir()
    assert root is not None
    assert validate_values("dynamo-platform", values, root) == [], "keys of the e147ceea chart's values.yaml"
    single = stack_of(with_model(dynamo(acceleratorsPerReplica=8, nodesPerReplica=1, parameters="8B")))
    assert not single.platform.addons.dynamo.grove
    assert "grove" not in dynamo_values(single.platform.addons.dynamo)["global"], "the chart default stays"
    assert not multi.lws.enabled, "a Dynamo graph is no LeaderWorkerSet: no LWS controller for it"


def test_a_dynamo_parallelism_other_than_one_tensor_group_over_the_replica_is_refused_at_its_key():
    found = problems(with_model(dynamo(parallelism={"tensor": 8, "pipeline": 2})))
    i = len(sections_of(DEV)["models"])
    assert has(found, f"models[{i}].parallelism", "dynamo", "tensor: 16, pipeline: 1"), found


def test_a_multinode_dynamo_graph_on_a_pool_without_efa_is_refused_unless_tcp_is_accepted():
    pool = {**H100, "efa": False}
    i = len(sections_of(DEV)["models"])
    assert has(problems(with_model(dynamo(), pool)), f"models[{i}].pool", "allowTcp"), "collectives over TCP"
    graph = graph_of(with_model(dynamo(allowTcp=True), pool))
    main = main_of(workers(graph)[0])
    assert "vpc.amazonaws.com/efa" not in main["resources"]["requests"] and "FI_PROVIDER" not in env_of(main)


def ray_of(sections: dict[str, Any]) -> dict[str, Any]:
    return objects(stack_of(sections), "llama-405b-ray")["RayService"]


@pytest.mark.schemas
def test_a_ray_serve_replica_across_two_nodes_is_two_ray_worker_pods_per_replica_with_8_gpus_each():
    sections = with_model({**RAY, "rayServe": {"minWorkers": 1, "maxWorkers": 3}})
    service = ray_of(sections)
    (group,) = service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (2, 2, 6), (
        "each Serve replica is nodesPerReplica worker pods (one Ray node each)"
    )
    (app,) = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"]
    scaling = app["args"]["llm_configs"][0]["deployment_config"]["autoscaling_config"]
    assert (scaling["min_replicas"], scaling["max_replicas"]) == (1, 3), (
        "Serve counts replicas and the worker group N x that: the in-tree autoscaler's bounds hold whole replicas"
    )
    assert group["rayStartParams"]["num-gpus"] == "8", "a Ray node advertises its pod's GPUs"
    container = group["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "8"
    efa = str(next(m for m in stack_of(sections).models if m.name == "llama-405b-ray").pool.efa_per_node)
    assert container["resources"]["requests"]["vpc.amazonaws.com/efa"] == efa
    assert env_of(container)["FI_PROVIDER"] == "efa"
    (term,) = group["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {
        "labelSelector": {"matchLabels": {"ray.io/node-type": "head"}},
        "matchLabelKeys": ["ray.io/cluster"],
        "topologyKey": "topology.kubernetes.io/zone",
    }, "the workers follow their own cluster's head into one zone"
    root = schema_dir()
    assert root is not None
    assert validate_custom(service, root) == [], "the RayService must validate against the KubeRay v1.7.0 CRD"


def test_ray_serve_engine_kwargs_carry_the_groups_split_and_a_placement_group_packed_node_by_node():
    (app,) = yaml.safe_load(ray_of(with_model(RAY))["spec"]["serveConfigV2"])["applications"]
    (config,) = app["args"]["llm_configs"]
    kwargs = config["engine_kwargs"]
    assert (kwargs["tensor_parallel_size"], kwargs["pipeline_parallel_size"]) == (8, 2)
    assert "distributed_executor_backend" not in kwargs, "Ray Serve LLM sets ray itself and rejects any other"
    assert config["placement_group_config"] == {"bundle_per_worker": {"CPU": 1, "GPU": 1}, "strategy": "PACK"}, (
        "PACK fills a node before spilling: a tensor group stays on one node, pipeline stages cross nodes; "
        "STRICT_PACK cannot span nodes and SPREAD would scatter a tensor group"
    )
    assert config["deployment_config"]["autoscaling_config"]["min_replicas"] == 1, "Serve counts replicas"


def test_a_single_node_ray_serve_model_gets_no_placement_group_override():
    model = {**RAY, "acceleratorsPerReplica": 8, "nodesPerReplica": 1, "parameters": "8B", "parallelism": {}}
    (app,) = yaml.safe_load(ray_of(with_model(model))["spec"]["serveConfigV2"])["applications"]
    assert "placement_group_config" not in app["args"]["llm_configs"][0], "Ray's default PACK on one node"


def test_a_group_on_efa_running_the_catalogs_image_is_warned_and_a_prod_dynamo_one_refused():
    """Dynamo's stock runtime images carry neither libfabric nor aws-ofi-nccl: over EFA they fall back
    to TCP (NCCL) or fail (NIXL LIBFABRIC). vLLM's image is not verified either: a warning."""
    from tests.guard_support import warnings_of

    sections = with_model(dynamo())
    assert has(warnings_of(sections), "models[2].image", "libfabric and aws-ofi-nccl", "--make-efa"), sections
    as_vllm = {k: v for k, v in dynamo().items() if k != "dynamo"} | {"engine": "vllm", "name": "llama-405b-vllm"}
    vllm = with_model(as_vllm)
    assert has(warnings_of(vllm), "models[2].image", "not verified to carry aws-ofi-nccl", "NET/OFI")
    own = with_model({**dynamo(), "image": {"repository": "111122223333.dkr.ecr.us-west-2.amazonaws.com/dynamo-efa"}})
    assert not [w for w in warnings_of(own) if "aws-ofi-nccl" in w], "an image of the stack's own is its call"
    prod = with_model(dynamo())
    prod["stack"]["environment"] = "prod"
    assert has(problems(prod), "models[2].image", "llama-405b-dynamo", "EFA build"), "prod refuses the stock image"


# ---- NIM across nodes: the NIM Operator's NIMService multiNode -------------------------------------------

NIM_405B = {
    "name": "llama-405b-nim",
    "engine": "nim",
    "model": "hf://meta-llama/Llama-3.1-405B-Instruct",
    "revision": "069992c75aed59df00ec06c17177e76c63296a26",
    "pool": "h100",
    "acceleratorsPerReplica": 16,
    "nodesPerReplica": 2,
    "parameters": "405B",
    "dtype": "bf16",
    "nim": {"profile": "vllm-bf16-tp8-pp2", "imagePullSecret": "ngc-registry"},
    "secrets": {"huggingFaceToken": "hf-token", "ngcApiKey": "ngc-api-key"},
}


def with_nim(model: dict[str, Any] | None = None, cache: str = "efs") -> dict[str, Any]:
    sections = with_model(model or NIM_405B)
    sections["addons"]["nimOperator"] = {"enabled": True}
    sections["storage"] = {**sections.get("storage", {}), "modelCache": cache}
    return sections


def test_a_nim_replica_across_two_p5_nodes_is_a_nimservice_multinode_of_pipeline_2_tensor_8_with_efa():
    svc = objects(stack_of(with_nim()), "llama-405b-nim")["NIMService"]
    body = svc["spec"]
    assert body["multiNode"] == {
        "backendType": "lws",
        "parallelism": {"pipeline": 2, "tensor": 8},
        "mpi": {"mpiStartTimeout": 6000},
    }, "NIM's pipeline is the node count (the LWS size) and tensor the GPUs of one node"
    assert body["resources"]["limits"]["nvidia.com/gpu"] == "8", "resources are per pod"
    assert body["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32", "the node's EFA devices"
    assert {"name": "FI_PROVIDER", "value": "efa"} in body["env"]
    (term,) = body["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "topology.kubernetes.io/zone", "the group in its leader's zone"
    assert "scale" not in body, "the CRD forbids autoscaling beside multiNode"
    root = schema_dir()
    if root is not None:
        assert validate_custom({k: v for k, v in svc.items() if k != "metadata"}, root) == []


def test_a_multi_node_nim_needs_the_operator_its_own_split_no_autoscaler_and_a_shared_cache():
    without = with_nim()
    without["addons"]["nimOperator"] = {"enabled": False}
    assert has(problems(without), "models[2].nodesPerReplica", "llama-405b-nim", "NIMService multiNode")
    split = with_nim({**NIM_405B, "parallelism": {"tensor": 16, "pipeline": 1}})
    assert has(problems(split), "models[2].parallelism", "tensor 8 x pipeline 2", "not tensor 16 x pipeline 1")
    scaled = with_nim({**NIM_405B, "autoscaling": {"owner": "hpa", "maxReplicas": 2}})
    assert has(problems(scaled), "models[2].autoscaling.owner", "forbids autoscaling")
    local = with_nim(cache="local")
    assert has(problems(local), "models[2].nodesPerReplica", "ReadWriteMany", "efs or fsx")
