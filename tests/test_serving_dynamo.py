"""Dynamo: aggregated and disaggregated DynamoGraphDeployments, the profiling request and the
Service the frontend is reached on."""

from __future__ import annotations

import json

import pytest

from components import peers
from components.engines import ENGINES, dynamo
from components.gateway import isolation
from components.monitoring.collection import pod_monitor
from stacks import conformance
from stacks.errors import ConfigError
from tests.builders import resolved_model
from tests.netpol import Peer, admitted
from tests.serving_support import SCHEMAS, config_of, model_entry, serving_objects, serving_sections, serving_stack


def program(main: dict) -> list[str]:
    """The worker program a container runs: itself, or what the token prelude execs."""
    command = main["command"]
    if command[:2] != ["/bin/sh", "-c"]:
        return command
    return command[2].rsplit("exec ", 1)[1].removesuffix(' "$@"').split()


def _graph(name: str, sections: dict | None = None) -> dict:
    return serving_objects(name, sections)[0]


def _components(graph: dict) -> dict[str, dict]:
    return {c["name"]: c for c in graph["spec"]["components"]}


def _main(component: dict) -> dict:
    return component["podTemplate"]["spec"]["containers"][0]


def test_an_aggregated_graph_is_a_frontend_and_one_worker_role_with_the_models_gpus():
    graph = _graph("qwen3-8b-dynamo")
    assert graph["apiVersion"] == "nvidia.com/v1beta1" and graph["kind"] == "DynamoGraphDeployment"
    assert isinstance(graph["spec"]["components"], list), "v1beta1 uses a components list, not a services map"
    roles = {c["type"]: c for c in graph["spec"]["components"]}
    assert set(roles) == {"frontend", "worker"}, "aggregated: the worker does prefill and decode"
    worker = roles["worker"]
    # The example's KEDA owns the worker count through the graph's scaling adapter (tests/test_keda.py);
    # without an autoscaler the worker role runs models[].replicas.
    assert worker["scalingAdapter"] == {} and "replicas" not in worker
    sections = serving_sections()
    fixed = next(m for m in sections["models"] if m["name"] == "qwen3-8b-dynamo")
    fixed.pop("autoscaling")
    fixed["replicas"] = 2
    unscaled = {c["type"]: c for c in _graph("qwen3-8b-dynamo", sections)["spec"]["components"]}["worker"]
    assert unscaled["replicas"] == 2 and "scalingAdapter" not in unscaled
    main = _main(worker)
    assert main["name"] == "main", "the operator finds the main container by name"
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "1", "GPUs per worker come from acceleratorsPerReplica"
    assert program(main) == ["python3", "-m", "dynamo.vllm"]
    assert main["args"][:4] == ["--model", "Qwen/Qwen3-8B", "--revision", "b968826d9c46dd6066d109eabc6255188de91218"]
    assert main["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.2", "the pinned runtime image of the backend"


def test_only_gpu_workers_tolerate_the_gpu_taint_and_the_frontend_stays_on_cpu_nodes():
    comps = _components(_graph("qwen3-8b-dynamo"))
    worker_spec = comps["Worker"]["podTemplate"]["spec"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker_spec["tolerations"]
    assert "tolerations" not in comps["Frontend"]["podTemplate"]["spec"], "a CPU frontend must not hold a GPU node"


def test_a_disaggregated_graph_has_prefill_and_decode_roles_on_the_same_backend_image_and_revision():
    graph = _graph("qwen3-32b-disagg")
    roles = {c["type"]: c for c in graph["spec"]["components"]}
    assert set(roles) == {"frontend", "prefill", "decode"}
    prefill, decode = _main(roles["prefill"]), _main(roles["decode"])
    assert prefill["image"] == decode["image"], "KV transfer needs the same runtime on both roles"
    assert program(prefill) == program(decode) == ["python3", "-m", "dynamo.vllm"]
    revision = "9216db5781bf21249d130ec9da846c4624c16137"
    for role in (prefill, decode):
        assert role["args"][role["args"].index("--revision") + 1] == revision, "both roles load the same weights"
        assert role["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert prefill["args"][prefill["args"].index("--disaggregation-mode") + 1] == "prefill"
    assert decode["args"][decode["args"].index("--disaggregation-mode") + 1] == "decode"
    assert "--kv-transfer-config" in prefill["args"], "the prefill role hands its KV cache over NIXL"
    assert roles["prefill"]["replicas"] == 1, "prefill workers run dynamo.prefillWorkers"
    # KEDA scales the decode role through its adapter, which starts at one: decodeWorkers: 2 is KEDA's floor.
    assert roles["decode"]["scalingAdapter"] == {} and "replicas" not in roles["decode"]
    assert resolved_model(serving_stack(), "qwen3-32b-disagg").min_replicas == 2
    assert graph["spec"]["backendFramework"] == "vllm"


def test_the_profiling_request_never_applies_a_second_graph():
    objects = serving_objects("qwen3-32b-disagg")
    request = next(o for o in objects if o["kind"] == "DynamoGraphDeploymentRequest")
    assert request["spec"]["autoApply"] is False, (
        "a DGDR profiles on the cluster's GPUs and, with autoApply (default true), creates its own DGD: "
        "a second deployment and scaler owner for the same model"
    )
    assert request["spec"]["model"] == "Qwen/Qwen3-32B" and request["spec"]["backend"] == "vllm"
    assert request["spec"]["image"] == "nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.4.2", "1.4: the planner image"
    assert request["spec"]["workload"] == {"concurrency": 64}, "required when no planner runs"
    assert request["spec"]["sla"] == {"ttft": 1500.0, "itl": 50.0}, "the model's SLO, in milliseconds"
    assert not any(o["kind"] == "DynamoGraphDeploymentRequest" for o in serving_objects("qwen3-8b-dynamo"))


@pytest.mark.schemas
@pytest.mark.parametrize("name", ["qwen3-8b-dynamo", "qwen3-32b-disagg"])
def test_every_dynamo_object_passes_the_upstream_crd(name):
    assert SCHEMAS is not None
    for obj in serving_objects(name):
        assert conformance.validate_custom(obj, SCHEMAS) == [], obj["kind"]


def test_clients_reach_the_operator_generated_frontend_service():
    served = resolved_model(serving_stack(), "qwen3-8b-dynamo")
    assert (served.service, served.port) == ("qwen3-8b-dynamo-frontend", 8000), "<dgd name>-frontend on 8000"
    assert (dynamo.service(served.config), dynamo.FRONTEND_PORT) == (served.service, served.port)
    assert served.scale_target == ("nvidia.com/v1beta1", "DynamoGraphDeployment", "qwen3-8b-dynamo")
    assert ENGINES["dynamo"].facts.controller == "dynamo", "DGDs wait for the dynamo-platform release"


def test_a_prefill_revision_that_differs_from_the_decode_revision_is_refused():
    sections = serving_sections()
    model_entry(sections, "qwen3-32b-disagg")["dynamo"]["prefillRevision"] = "0" * 40
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[1].dynamo.prefillRevision") for p in err.value.problems), err.value


def test_a_disaggregated_graph_without_a_pinned_revision_is_refused():
    sections = serving_sections()
    del model_entry(sections, "qwen3-32b-disagg")["revision"]
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[1].revision") and "same weights" in p.message for p in err.value.problems)


def test_prefill_and_decode_counts_are_refused_on_an_aggregated_graph():
    sections = serving_sections()
    model_entry(sections, "qwen3-8b-dynamo")["dynamo"]["decodeWorkers"] = 3
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[0].dynamo.decodeWorkers") for p in err.value.problems)


def test_an_sglang_disaggregated_graph_transfers_kv_over_nixl_on_both_roles():
    sections = serving_sections()
    model_entry(sections, "qwen3-32b-disagg")["dynamo"]["backend"] = "sglang"
    graph = serving_objects("qwen3-32b-disagg", sections)[0]
    roles = {c["type"]: _main(c) for c in graph["spec"]["components"] if c["type"] != "frontend"}
    for role, main in roles.items():
        assert program(main) == ["python3", "-m", "dynamo.sglang"]
        assert main["image"] == "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.4.2"
        args = main["args"]
        assert args[args.index("--disaggregation-mode") + 1] == role
        assert args[args.index("--disaggregation-transfer-backend") + 1] == "nixl"


def test_a_disaggregated_tensorrt_llm_graph_is_refused():
    sections = serving_sections()
    model_entry(sections, "qwen3-32b-disagg")["dynamo"]["backend"] = "trtllm"
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[1].dynamo.backend") for p in err.value.problems)


def test_a_revision_the_tensorrt_llm_worker_would_ignore_is_refused():
    sections = serving_sections()
    model_entry(sections, "qwen3-8b-dynamo")["dynamo"]["backend"] = "trtllm"
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[0].revision") and "ignored" in p.message for p in err.value.problems)


def test_gpu_workers_request_cpu_and_memory_so_they_are_not_best_effort():
    worker = _main(_components(_graph("qwen3-32b-disagg"))["DecodeWorker"])
    requests = worker["resources"]["requests"]
    assert {k: requests[k] for k in ("cpu", "memory", "nvidia.com/gpu")} == {
        "cpu": "8",
        "memory": "32Gi",
        "nvidia.com/gpu": "4",
    }
    assert worker["resources"]["limits"]["memory"] == "32Gi", "memory limit equals the request"


def test_profiling_needs_the_concurrency_it_sizes_for():
    sections = serving_sections()
    block = next(m for m in sections["models"] if m["name"] == "qwen3-32b-disagg")["dynamo"]
    del block["profileConcurrency"]
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any("dynamo" in p.path and "profileConcurrency" in p.message for p in err.value.problems)


@pytest.mark.parametrize(
    ("tag", "refused"), [("1.4.2", False), ("v1.4.3", False), ("latest", True), ("1.4.2-custom", True)]
)
def test_a_dynamo_runtime_tag_must_name_its_version(tag, refused):
    sections = serving_sections()
    index, entry = next((i, m) for i, m in enumerate(sections["models"]) if m["name"] == "qwen3-8b-dynamo")
    entry["image"] = {"tag": tag}
    if not refused:
        config_of(sections)
        return
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert [p.path for p in err.value.problems] == [f"inference-platform:models[{index}].image.tag"]


def test_a_worker_of_a_gated_model_gets_hf_token_from_its_file_not_from_the_pod_spec():
    """Dynamo's own download reads only HF_TOKEN: exported from the mounted file into the worker's
    process by a prelude, never a secretKeyRef or a literal."""
    sections = serving_sections()
    model_entry(sections, "qwen3-8b-dynamo")["secrets"] = {"huggingFaceToken": "hf-token"}
    worker = _main(_components(serving_objects("qwen3-8b-dynamo", sections)[0])["Worker"])
    assert worker["command"][:2] == ["/bin/sh", "-c"]
    assert 'HF_TOKEN="$(cat /var/run/secrets/huggingface/token)" && export HF_TOKEN' in worker["command"][2]
    assert program(worker) == ["python3", "-m", "dynamo.vllm"]
    assert not [e for e in worker["env"] if e["name"] == "HF_TOKEN" or "valueFrom" in e]


# Issue 16 item 4: the Frontend routes by KV and every worker publishes the KV events it routes by.


def _args_flag(main: dict, name: str) -> str | None:
    args = main["args"]
    return args[args.index(name) + 1] if name in args else None


def _workers(graph: dict) -> dict[str, dict]:
    return {c["type"]: _main(c) for c in graph["spec"]["components"] if c["type"] != "frontend"}


def _with_backend(name: str, backend: str) -> dict:
    sections = serving_sections()
    entry = model_entry(sections, name)
    entry["dynamo"]["backend"] = backend
    if backend == "trtllm":
        del entry["revision"]  # the TensorRT-LLM worker would ignore it (refused above)
    return serving_objects(name, sections)[0]


@pytest.mark.parametrize("name", ["qwen3-8b-dynamo", "qwen3-32b-disagg"])
def test_the_frontend_of_an_aggregated_or_disaggregated_graph_routes_by_kv(name):
    frontend = _main(_components(_graph(name))[dynamo.FRONTEND])
    env = {e["name"]: e.get("value") for e in frontend.get("env", [])}
    assert env.get("DYN_ROUTER_MODE") == "kv", "the 1.4 Frontend defaults to round-robin (router_args.py)"


@pytest.mark.parametrize(
    ("name", "roles"), [("qwen3-8b-dynamo", {"worker"}), ("qwen3-32b-disagg", {"prefill", "decode"})]
)
def test_every_vllm_worker_publishes_kv_events_over_zmq_from_its_prefix_cache(name, roles):
    workers = _workers(_graph(name))
    assert set(workers) == roles
    for role, main in workers.items():
        config = json.loads(_args_flag(main, "--kv-events-config") or "{}")
        assert config.get("enable_kv_cache_events") is True and config.get("publisher") == "zmq", (
            f"{role}: dynamo.vllm 1.4 no longer creates an events config; without one the router sees no prefixes"
        )
        assert config.get("endpoint") == "tcp://*:5557", "dynamo.vllm subscribes at 127.0.0.1 on this port"
        assert "--no-enable-prefix-caching" not in main["args"], "KV events come from the prefix cache"


@pytest.mark.parametrize(
    ("name", "roles"), [("qwen3-8b-dynamo", {"worker"}), ("qwen3-32b-disagg", {"prefill", "decode"})]
)
def test_every_sglang_worker_publishes_kv_events_with_sglangs_own_config(name, roles):
    workers = _workers(_with_backend(name, "sglang"))
    assert set(workers) == roles
    for role, main in workers.items():
        config = json.loads(_args_flag(main, "--kv-events-config") or "{}")
        assert config.get("publisher") == "zmq", f"{role}: dynamo.sglang publishes only when publisher is not null"
        assert config.get("endpoint") == "tcp://*:5557", "dynamo.sglang subscribes at the pod's IP: bind all"
        assert "enable_kv_cache_events" not in config, "a vLLM field: SGLang's KVEventsConfig has no such key"
        assert "--disable-radix-cache" not in main["args"], "KV events come from the radix cache"


def test_an_aggregated_tensorrt_llm_worker_publishes_kv_events():
    assert "--publish-kv-events" in _workers(_with_backend("qwen3-8b-dynamo", "trtllm"))["worker"]["args"], (
        "dynamo.trtllm publishes no KV events unless asked (backend_args.py, default off)"
    )


def test_decode_workers_carry_the_same_kv_transfer_connector_as_prefill_so_they_receive_kv():
    workers = _workers(_graph("qwen3-32b-disagg"))
    prefill, decode = (_args_flag(workers[r], "--kv-transfer-config") for r in ("prefill", "decode"))
    assert decode is not None, "a decode worker without a connector receives no KV from prefill"
    assert json.loads(decode) == json.loads(prefill or "{}") == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}


def test_each_pod_of_a_graph_is_labelled_with_its_role_and_the_graph():
    """`kubectl get pods -l app.kubernetes.io/component=decode` lists a graph's decode workers, and
    app.kubernetes.io/name is the graph's on every pod (not the Frontend Service's name on the workers)."""
    graph = _graph("qwen3-32b-disagg")
    for component in graph["spec"]["components"]:
        labels = component["podTemplate"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/component"] == component["type"], component["name"]
        assert labels["app.kubernetes.io/name"] == graph["metadata"]["name"] == "qwen3-32b-disagg"
        assert labels["inference-platform.io/model"] == "qwen3-32b-disagg", "the selector label stays on every pod"


@pytest.mark.parametrize("name", ["qwen3-8b-dynamo", "qwen3-32b-disagg"])
def test_the_scrape_and_the_callers_policies_select_the_frontend_pods_and_never_a_worker(name):
    """The rendered pods of each role against every selector the platform writes: the PodMonitor and the
    NetworkPolicy that admits the gateway's proxies, LiteLLM and Prometheus select the Frontend alone; a
    prefill, decode or aggregated worker is reached by the graph's own pods only."""
    stack = serving_stack()
    served = resolved_model(stack, name)
    callers = isolation.Callers(
        proxies=peers.proxies(stack.route_parent), prometheus=peers.PROMETHEUS, litellm=True, controllers={}
    )
    policies = isolation.namespace_policies([served], callers)
    monitor = pod_monitor(served)
    assert monitor is not None
    front_door = Peer.of(peers.proxies(stack.route_parent))
    for component in _graph(name)["spec"]["components"]:
        labels = component["podTemplate"]["metadata"]["labels"]
        frontend = component["type"] == "frontend"
        scraped = monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert scraped == frontend, f"{component['name']}: the PodMonitor scrapes the Frontend's port 8000 only"
        reached = admitted(policies, served.namespace, labels, served.port)
        assert (front_door in reached) == frontend, f"{component['name']}: {sorted(map(str, reached))}"
        assert (Peer.of(peers.PROMETHEUS) in reached) == frontend, component["name"]
        assert Peer.own(served.namespace, served.selector) in reached, "the graph's own pods reach every role"
    assert served.serving_selector == {**served.selector, "app.kubernetes.io/component": "frontend"}
