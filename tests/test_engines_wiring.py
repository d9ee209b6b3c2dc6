"""The seams between the engines and the concerns around them: storage (the bucket reader account,
a node-local cache's ephemeral storage, the startup budget, compiled Neuron artifacts), the serving
platforms (CRD installers, AIBrix labels and LoRA runtime, the one scaler), and the front door
(the model selector label on every pod and Service, the real scale target)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.model_servers import model_objects
from components.serving import aibrix
from components.storage.cache import CacheContext
from stacks.coldstart import probe_allowance
from stacks.load import ROOT, parse_sections
from stacks.resolve import resolve
from stacks.resolved import MODEL_LABEL
from stacks.sizing import BASE_EPHEMERAL_MIB, replica_requests, weights
from tests.builders import by_kind, resolved_model, streaming_context
from tests.conftest import ALL_STACKS, DEV, rendered_stack, sections_of
from tests.engines_helpers import engine_container, env_of, example, objects, spec, stack_of

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
READER = "model-reader"
EXAMPLES = ROOT / "stacks" / "examples"
LOCAL = EXAMPLES / "Pulumi.storage-local.yaml"
SERVING = EXAMPLES / "Pulumi.serving.yaml"


def serving_sections() -> dict[str, Any]:
    """The serving-platforms example: Dynamo, KubeRay and AIBrix with their models."""
    return sections_of(SERVING)


def _with_cache(sections: dict[str, Any], **storage: Any) -> dict[str, Any]:
    sections = copy.deepcopy(sections)
    sections["storage"] = storage
    return sections


def objects_of(stack: Any, name: str) -> list[dict[str, Any]]:
    """The model's objects as the Models component would apply them (a list: kinds may repeat)."""
    model = resolved_model(stack, name)
    return model_objects(spec(stack, name), streaming_context(stack, model))


# --- storage -> engines ---------------------------------------------------------------------


def test_a_rendered_dev_pod_runs_as_the_bucket_reader_and_carries_the_model_selector(dev_render):
    deployments = dev_render.mocks.of_type(DEPLOYMENT)
    assert deployments, "the dev stack serves models"
    for d in deployments:
        name = d.inputs["metadata"]["name"]
        template = d.inputs["spec"]["template"]
        assert template["spec"].get("serviceAccountName") == READER, (
            f"{name}: the preparation step reads the model bucket only through the model-reader Pod Identity"
        )
        assert template["metadata"]["labels"][MODEL_LABEL] == name, (
            f"{name}: network policies and PodMonitors select the model's pods by {MODEL_LABEL}"
        )
        assert d.inputs["spec"]["selector"]["matchLabels"][MODEL_LABEL] == name


def test_every_model_service_in_the_dev_stack_carries_and_selects_the_model_label():
    stack = stack_of(sections_of(DEV))
    assert stack.models, "the dev stack serves models"
    for model in stack.models:
        services = by_kind(objects_of(stack, model.name), "Service")
        assert [s["metadata"]["name"] for s in services] == [model.service], "each model has its Service"
        for s in services:
            assert s["metadata"]["labels"][MODEL_LABEL] == model.name, "the Service itself is selectable"
            assert s["spec"]["selector"][MODEL_LABEL] == model.name, "it routes to the model's pods only"


def test_a_node_local_cache_is_requested_as_ephemeral_storage_and_counted_by_the_fit_rule():
    stack = stack_of(sections_of(LOCAL))
    assert stack.platform.storage.model_cache == "local"
    built = spec(stack, "qwen3-8b")
    assert built.cache.ephemeral_storage is not None, "qwen3-8b gives parameters and dtype: its cache is sized"
    cache_gib = int(built.cache.ephemeral_storage.removesuffix("Gi"))
    container = engine_container(objects(stack, "qwen3-8b")["Deployment"])
    requested = container["resources"]["requests"]["ephemeral-storage"]
    expected_mib = BASE_EPHEMERAL_MIB + cache_gib * 1024
    assert requested == f"{expected_mib}Mi", "the pod asks for its logs and home plus the whole local cache"
    fit = replica_requests(built.model, built.pool, stack.platform.storage)
    assert fit.ephemeral_mib == expected_mib, "the fit rule checks the very request the pod makes"


def test_an_existing_claim_keeps_the_weights_off_the_nodes_disk():
    sections = _with_cache(
        example(), modelCache="none", existingClaim={"name": "team-weights", "accessMode": "ReadWriteMany"}
    )
    stack = stack_of(sections)
    built = spec(stack, "qwen3-8b")
    assert built.cache.ephemeral_storage is None
    fit = replica_requests(built.model, built.pool, stack.platform.storage)
    assert fit.ephemeral_mib == BASE_EPHEMERAL_MIB, "weights on a claim need no node disk"


def test_the_startup_probe_allows_a_first_starts_estimate_and_grows_with_the_weights():
    stack = stack_of(example())
    small = spec(stack, "qwen3-8b").served
    probe = engine_container(objects(stack, "qwen3-8b")["Deployment"])["startupProbe"]
    allowed = probe["failureThreshold"] * probe["periodSeconds"]
    assert allowed == small.startup_seconds == probe_allowance(small.first_start_estimate), "the estimate's"
    # A model this size is refused by the memory rule on this pool (so resolved without the rules); the
    # probe arithmetic is what counts.
    sections = example()
    next(m for m in sections["models"] if m["name"] == "qwen3-8b").update(parameters="400B", dtype="fp8")
    large = resolve(parse_sections(sections, "us-west-2"))
    big = next(m for m in large.models if m.name == "qwen3-8b")
    probe = engine_container(objects(large, "qwen3-8b")["Deployment"])["startupProbe"]
    allowed = probe["failureThreshold"] * probe["periodSeconds"]
    assert big.first_start_estimate.weights.seconds > small.first_start_estimate.weights.seconds, "400 GB read longer"
    assert allowed == big.startup_seconds > small.startup_seconds, "the kubelet must not restart it while loading"


def test_neuron_artifacts_live_in_the_shared_caches_compiled_tree_so_a_model_compiles_once():
    stack = stack_of(_with_cache(example(), modelCache="efs"))
    built = spec(stack, "llama-inf2")
    assert built.cache.compiled_dir is not None
    work = objects(stack, "llama-inf2")["Deployment"]
    env = env_of(engine_container(work))
    assert env["NEURON_COMPILED_ARTIFACTS"].startswith(built.cache.compiled_dir + "/"), "on the cache volume"
    volumes = {v["name"] for v in work["spec"]["template"]["spec"]["volumes"]}
    assert "neuron-artifacts" not in volumes, "no per-pod emptyDir that would recompile on every start"


def test_a_node_local_neuron_cache_has_room_for_the_compiled_artifacts():
    # inf2 has no instance store: its node-local cache is an emptyDir on the root volume.
    built = spec(stack_of(_with_cache(example(), modelCache="none")), "llama-inf2")
    assert built.cache.ephemeral_storage is not None
    gib = int(built.cache.ephemeral_storage.removesuffix("Gi"))
    w = weights(built.model)
    assert w is not None
    assert gib >= w.gib + 20, "compiled NEFFs share the node-local cache with the weights; its sizeLimit must hold both"


# --- serving platforms -> engines -------------------------------------------------------------


def test_dgds_and_rayservices_depend_on_their_operator_releases():
    records = list(rendered_stack(SERVING).resources)
    releases = {r.inputs.get("name"): r for r in records if r.type == "kubernetes:helm.sh/v3:Release"}
    dgds = [r for r in records if r.type == "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"]
    rays = [r for r in records if r.type == "kubernetes:ray.io/v1:RayService"]
    assert dgds and rays
    for dgd in dgds:
        assert releases["dynamo"].urn in dgd.depends_on, "a DGD waits for the dynamo-platform release and its CRD"
    for ray in rays:
        assert releases["kuberay"].urn in ray.depends_on, "a RayService waits for the KubeRay operator release"


def test_with_aibrix_on_vllm_pods_carry_its_labels_and_adapter_models_get_the_lora_runtime():
    built = spec(stack_of(serving_sections()), "qwen3-8b-lora")
    objs = {o["kind"]: o for o in model_objects(built)}
    template = objs["Deployment"]["spec"]["template"]
    expected = aibrix.pod_labels(built.served, adapters=True)
    assert expected.items() <= template["metadata"]["labels"].items(), "AIBrix's gateway and adapter controller"
    engine = next(c for c in template["spec"]["containers"] if c["name"] == "engine")
    args, env = aibrix.lora_runtime()
    assert set(args) <= set(engine["args"]), "vLLM must accept LoRA adapters"
    assert all(e in engine["env"] for e in env), "the adapter controller loads adapters at runtime"


def test_without_aibrix_no_aibrix_labels_and_no_lora_runtime():
    sections = serving_sections()
    sections["addons"]["aibrix"] = {"enabled": False}
    for m in sections["models"]:
        if m["name"] == "qwen3-8b-lora":
            m["autoscaling"] = {"owner": "none"}
            m.pop("adapters", None)
    built = spec(stack_of(sections), "qwen3-8b-lora")
    work = by_kind(model_objects(built), "Deployment")[0]
    labels = work["spec"]["template"]["metadata"]["labels"]
    assert not any(k.startswith(("model.aibrix.ai/", "adapter.model.aibrix.ai/")) for k in labels)
    assert "--enable-lora" not in work["spec"]["template"]["spec"]["containers"][0]["args"]


def test_no_hpa_when_another_owner_scales_the_model():
    built = spec(stack_of(serving_sections()), "qwen3-8b-lora")
    assert built.model.autoscaling.owner == "aibrix"
    objs = model_objects(built)
    kinds = [o["kind"] for o in objs]
    assert "HorizontalPodAutoscaler" not in kinds, "AIBrix's PodAutoscaler is the only scaler"
    work = by_kind(objs, "Deployment")[0]
    assert "replicas" not in work["spec"], "the owner sets replicas; a fixed count would fight it"


# --- Dynamo and Ray pod templates ------------------------------------------------------------


def _reader_spec(stack: Any, name: str) -> Any:
    """The model's spec with the cache a platform's storage concern hands over: the bucket and its reader."""
    ctx = CacheContext(storage=stack.platform.storage, bucket="acme-models", reader_service_account=READER)
    return spec(stack, name, cache=ctx)


def _templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "DynamoGraphDeployment":
        return [c["podTemplate"] for c in obj["spec"]["components"]]
    cluster = obj["spec"]["rayClusterConfig"]
    return [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]


@pytest.mark.parametrize("name", ["qwen3-8b-dynamo", "qwen3-32b-disagg", "qwen3-4b-ray"])
def test_dynamo_and_ray_pods_carry_the_selector_and_their_gpu_workers_get_the_cache(name):
    stack = stack_of(serving_sections())
    built = _reader_spec(stack, name)
    obj = model_objects(built)[0]
    assert obj["metadata"]["labels"][MODEL_LABEL] == name
    gpu_pods = 0
    for template in _templates(obj):
        assert template["metadata"]["labels"][MODEL_LABEL] == name, "network policies select every pod"
        pod = template["spec"]
        if not any("nvidia.com/gpu" in c["resources"].get("requests", {}) for c in pod["containers"]):
            continue
        gpu_pods += 1
        assert pod["serviceAccountName"] == READER, "workers may read the model bucket"
        assert "model-cache" in {v["name"] for v in pod["volumes"]}, "the worker mounts the model cache"
        if built.model.engine == "ray-serve":
            assert pod.get("initContainers"), "the preparation steps fill the directory Ray Serve loads"
        else:
            # A Dynamo worker downloads its repo id itself into HF_HOME on the cache: a prepared copy
            # beside it would never be read and would double the disk a local cache is sized for.
            assert not pod.get("initContainers")
            env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
            assert env["HF_HOME"].startswith("/models/"), "downloads land on the shared model cache"
        requests = pod["containers"][0]["resources"]["requests"]
        expected = replica_requests(built.model, built.pool, stack.platform.storage).ephemeral_mib
        assert requests["ephemeral-storage"] == f"{expected}Mi", "the worker reserves the node disk it fills"
    assert gpu_pods, "a GPU worker role exists"


# --- the scale target -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_the_scale_target_is_the_workload_the_engine_builds(path):
    # A team stack resolves against its platform's exports: its models are checked too.
    stack = stack_of(sections_of(path))
    for model in stack.models:
        workloads = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objects_of(stack, model.name)]
        assert model.scale_target in workloads, f"{model.name}: a scaler must target what exists"


def test_with_the_nim_operator_the_scale_target_is_the_nimservice():
    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    model = resolved_model(stack_of(sections), "llama-nim")
    assert model.scale_target == ("apps.nvidia.com/v1alpha1", "NIMService", "llama-nim"), (
        "the operator reconciles the NIMService into the Deployment: scalers target the NIMService"
    )


def test_an_hpa_owned_deployment_leaves_replicas_to_the_hpa():
    objs = objects(stack_of(sections_of(DEV)), "qwen3-8b")
    hpa = objs.get("HorizontalPodAutoscaler")
    assert hpa, "the dev stack's qwen3-8b is scaled by an HPA"
    assert "replicas" not in objs["Deployment"]["spec"], "pulumi up must not reset the HPA's replica count"
    assert hpa["spec"]["minReplicas"] == 2, "the HPA holds the stack file's minimum instead"
