"""The seams between the engines and the concerns around them: storage (the bucket reader account,
a node-local cache's ephemeral storage, the startup budget, compiled Neuron artifacts), the serving
platforms (CRD installers, AIBrix labels and LoRA runtime, the one scaler), and the front door
(the model selector label on every pod and Service, the real scale target)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from components import served as served_module
from components.engines import manifests as engine_manifests
from components.models import model_manifests
from components.served import MODEL_LABEL, served_model, served_models
from components.serving import aibrix
from components.storage import cache as cache_module
from components.storage.cache import CacheContext, cache_mount
from stacks.load import ROOT
from stacks.sizing import BASE_EPHEMERAL_MIB, replica_requests, weights
from tests.conftest import ALL_STACKS, render_sections, sections_of
from tests.engines_helpers import config_of, engine_container, env_of, example, objects, spec
from tests.serving_support import serving_sections, spec_for

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
READER = "model-reader"
LOCAL = ROOT / "stacks" / "examples" / "Pulumi.storage-local.yaml"


def _pod(objs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    work = objs.get("Deployment") or objs["StatefulSet"]
    return work["spec"]["template"]


def _with_cache(sections: dict[str, Any], **storage: Any) -> dict[str, Any]:
    sections = copy.deepcopy(sections)
    sections["storage"] = storage
    return sections


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


def test_every_model_service_in_the_dev_stack_carries_and_selects_the_model_label(dev_render):
    served = {s.service: s for s in served_models(config_of(sections_of(ALL_STACKS[0])))}
    services = [s for s in dev_render.mocks.of_type(SERVICE) if s.inputs["metadata"]["name"] in served]
    assert services, "each model has a Service"
    for s in services:
        model = served[s.inputs["metadata"]["name"]]
        assert s.inputs["metadata"]["labels"][MODEL_LABEL] == model.name, "the Service itself is selectable"
        assert s.inputs["spec"]["selector"][MODEL_LABEL] == model.name, "it routes to the model's pods only"


def test_a_node_local_cache_is_requested_as_ephemeral_storage_and_counted_by_the_fit_rule():
    config = config_of(sections_of(LOCAL))
    assert config.storage.model_cache == "local"
    built = spec(config, "qwen3-8b")
    assert built.cache.ephemeral_storage is not None, "qwen3-8b gives parameters and dtype: its cache is sized"
    cache_gib = int(built.cache.ephemeral_storage.removesuffix("Gi"))
    container = engine_container(objects(config, "qwen3-8b")["Deployment"])
    requested = container["resources"]["requests"]["ephemeral-storage"]
    expected_mib = BASE_EPHEMERAL_MIB + cache_gib * 1024
    assert requested == f"{expected_mib}Mi", "the pod asks for its logs and home plus the whole local cache"
    fit = replica_requests(built.model, built.pool, config.storage)
    assert fit.ephemeral_mib == expected_mib, "the fit rule checks the very request the pod makes"


def test_an_existing_claim_keeps_the_weights_off_the_nodes_disk():
    sections = _with_cache(
        example(), modelCache="none", existingClaim={"name": "team-weights", "accessMode": "ReadWriteMany"}
    )
    config = config_of(sections)
    built = spec(config, "qwen3-8b")
    assert built.cache.ephemeral_storage is None
    fit = replica_requests(built.model, built.pool, config.storage)
    assert fit.ephemeral_mib == BASE_EPHEMERAL_MIB, "weights on a claim need no node disk"


def test_a_large_model_gets_the_caches_startup_budget_and_a_small_one_the_engines_own():
    config = config_of(example())
    small = spec(config, "qwen3-8b")
    probe = engine_container(objects(config, "qwen3-8b")["Deployment"])["startupProbe"]
    allowed = probe["failureThreshold"] * probe["periodSeconds"]
    assert small.cache.startup_seconds < 1800 and allowed == 1800, "the engine's allowance when larger"
    # A model this size is refused by the memory rule on this pool; the probe arithmetic is what counts.
    model = small.model.model_copy(update={"parameters": "400B", "dtype": "fp8"})
    ctx = CacheContext(storage=config.storage, claim_name="model-cache")
    big = dataclasses.replace(small, model=model, cache=cache_mount(ctx, model, small.pool))
    probe = engine_container(next(o for o in engine_manifests(big) if o["kind"] == "Deployment"))["startupProbe"]
    allowed = probe["failureThreshold"] * probe["periodSeconds"]
    assert big.cache.startup_seconds > 1800, "400 GB of weights take longer than the default to read"
    assert allowed >= big.cache.startup_seconds, "the kubelet must not restart a server still loading"


def test_neuron_artifacts_live_in_the_shared_caches_compiled_tree_so_a_model_compiles_once():
    config = config_of(_with_cache(example(), modelCache="efs"))
    built = spec(config, "llama-inf2")
    assert built.cache.compiled_dir is not None
    work = objects(config, "llama-inf2")["Deployment"]
    env = env_of(engine_container(work))
    assert env["NEURON_COMPILED_ARTIFACTS"].startswith(built.cache.compiled_dir + "/"), "on the cache volume"
    volumes = {v["name"] for v in work["spec"]["template"]["spec"]["volumes"]}
    assert "neuron-artifacts" not in volumes, "no per-pod emptyDir that would recompile on every start"


def test_a_node_local_neuron_cache_has_room_for_the_compiled_artifacts():
    # inf2 has no instance store: its node-local cache is an emptyDir on the root volume.
    config = config_of(_with_cache(example(), modelCache="none"))
    built = spec(config, "llama-inf2")
    assert built.cache.ephemeral_storage is not None
    gib = int(built.cache.ephemeral_storage.removesuffix("Gi"))
    w = weights(built.model)
    assert w is not None
    assert gib >= w.gib + 20, "compiled NEFFs share the node-local cache with the weights; its sizeLimit must hold both"


# --- serving platforms -> engines -------------------------------------------------------------


def test_dgds_and_rayservices_depend_on_their_operator_releases(mocks):
    rendered = render_sections(serving_sections())
    records = list(rendered.resources)
    releases = {r.inputs.get("name"): r for r in records if r.type == "kubernetes:helm.sh/v3:Release"}
    dgds = [r for r in records if r.type == "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"]
    rays = [r for r in records if r.type == "kubernetes:ray.io/v1:RayService"]
    assert dgds and rays
    for dgd in dgds:
        assert releases["dynamo"].urn in dgd.depends_on, "a DGD waits for the dynamo-platform release and its CRD"
    for ray in rays:
        assert releases["kuberay"].urn in ray.depends_on, "a RayService waits for the KubeRay operator release"


def test_with_aibrix_on_vllm_pods_carry_its_labels_and_adapter_models_get_the_lora_runtime():
    config = config_of(serving_sections())
    built = spec_for(config, "qwen3-8b-lora")
    objs = {o["kind"]: o for o in engine_manifests(built)}
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
    built = spec_for(config_of(sections), "qwen3-8b-lora")
    work = next(o for o in engine_manifests(built) if o["kind"] == "Deployment")
    labels = work["spec"]["template"]["metadata"]["labels"]
    assert not any(k.startswith(("model.aibrix.ai/", "adapter.model.aibrix.ai/")) for k in labels)
    assert "--enable-lora" not in work["spec"]["template"]["spec"]["containers"][0]["args"]


def test_no_hpa_when_another_owner_scales_the_model():
    config = config_of(serving_sections())
    built = spec_for(config, "qwen3-8b-lora")
    assert built.model.autoscaling.owner == "aibrix"
    kinds = [o["kind"] for o in engine_manifests(built)]
    assert "HorizontalPodAutoscaler" not in kinds, "AIBrix's PodAutoscaler is the only scaler"
    work = next(o for o in engine_manifests(built) if o["kind"] == "Deployment")
    assert "replicas" not in work["spec"], "the owner sets replicas; a fixed count would fight it"


# --- Dynamo and Ray pod templates ------------------------------------------------------------


def _reader_spec(config: Any, name: str) -> Any:
    base = spec_for(config, name)
    ctx = CacheContext(storage=config.storage, bucket="acme-models", reader_service_account=READER)
    return dataclasses.replace(base, cache=cache_mount(ctx, base.model, base.pool))


def _templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "DynamoGraphDeployment":
        return [c["podTemplate"] for c in obj["spec"]["components"]]
    cluster = obj["spec"]["rayClusterConfig"]
    return [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]


@pytest.mark.parametrize("name", ["qwen3-8b-dynamo", "qwen3-32b-disagg", "qwen3-4b-ray"])
def test_dynamo_and_ray_pods_carry_the_selector_and_their_gpu_workers_get_the_cache(name):
    config = config_of(serving_sections())
    built = _reader_spec(config, name)
    obj = engine_manifests(built)[0]
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
        expected = replica_requests(built.model, built.pool, config.storage).ephemeral_mib
        assert requests["ephemeral-storage"] == f"{expected}Mi", "the worker reserves the node disk it fills"
    assert gpu_pods, "a GPU worker role exists"


# --- the scale target -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_the_scale_target_is_the_workload_the_engine_builds(path):
    config = config_of(sections_of(path))
    for model in config.models:
        if config.pool(model.pool) is None:
            continue  # a team stack's pools are the platform stack's
        built = spec(config, model.name)
        objs = model_manifests(built)
        assert objs is not None
        workloads = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objs]
        assert built.served.scale_target in workloads, f"{model.name}: a scaler must target what exists"


def test_with_the_nim_operator_the_scale_target_is_the_nimservice():
    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    config = config_of(sections)
    model = next(m for m in config.models if m.name == "llama-nim")
    assert served_model(config, model).scale_target == ("apps.nvidia.com/v1alpha1", "NIMService", "llama-nim")


def test_a_podautoscaler_targets_the_statefulset_when_the_cache_is_per_replica(monkeypatch):
    monkeypatch.setattr(cache_module, "per_replica", lambda storage, model: True)
    monkeypatch.setattr(served_module, "per_replica", lambda storage, model: True)
    config = config_of(serving_sections())
    built = spec_for(config, "qwen3-8b-lora")
    assert built.cache.per_replica
    kinds = {o["kind"] for o in engine_manifests(built)}
    assert "StatefulSet" in kinds and "Deployment" not in kinds
    autoscaler = aibrix.pod_autoscaler(built.served, built.model, {})
    ref = autoscaler["spec"]["scaleTargetRef"]
    assert (ref["apiVersion"], ref["kind"], ref["name"]) == ("apps/v1", "StatefulSet", "qwen3-8b-lora")


def test_an_hpa_owned_deployment_leaves_replicas_to_the_hpa(dev_render):
    hpa = [r for r in dev_render.mocks.records if r.type == "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"]
    assert hpa, "the dev stack's qwen3-8b is scaled by an HPA"
    deployment = dev_render.mocks.named("kubernetes:apps/v1:Deployment", "platform-models-deployment-qwen3-8b")
    assert "replicas" not in deployment.inputs["spec"], "pulumi up must not reset the HPA's replica count"
    assert hpa[0].inputs["spec"]["minReplicas"] == 2
