"""The Models component in the program: every model of a stack becomes its objects through the
cluster's provider, in the model's namespace; NIMService through the operator; per-replica caches
become a StatefulSet; engines whose modules have not landed are skipped, not crashed."""

from __future__ import annotations

import dataclasses

import pytest

from components.engines import nim
from components.models import model_manifests
from components.storage.cache import CacheMount
from tests.conftest import render_sections
from tests.engines_helpers import config_of, example, spec

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def test_the_dev_stack_renders_each_model_through_the_cluster_provider(dev_render):
    deployments = dev_render.mocks.of_type(DEPLOYMENT)
    names = {d.inputs["metadata"]["name"] for d in deployments}
    assert names == {"qwen3-8b", "llama-3-8b-neuron"}, names
    for d in deployments:
        assert "pulumi:providers:kubernetes" in d.provider, "never the ambient kubeconfig"
        assert d.inputs["metadata"]["namespace"] == "inference"
        assert any(dep.endswith("inference") for dep in d.depends_on), "the namespace exists first"
    assert dev_render.mocks.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    assert len(dev_render.mocks.of_type("kubernetes:policy/v1:PodDisruptionBudget")) == 2


def test_the_engines_example_renders_one_workload_per_engine(mocks):
    rendered = render_sections(example())
    kinds = [(r.inputs["metadata"]["name"], r.type) for r in rendered.mocks.kubernetes_objects()]
    workloads = {name for name, typ in kinds if typ == DEPLOYMENT}
    assert workloads == {"qwen3-8b", "qwen3-8b-sglang", "llama-nim", "mistral-awq-tgi", "qwen3-ollama", "llama-inf2"}


def test_with_the_nim_operator_nim_is_a_nimservice_with_profile_pull_secret_and_metrics():
    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    objs = model_manifests(spec(config_of(sections), "llama-nim"))
    assert objs is not None and [o["kind"] for o in objs] == ["NIMService"]
    svc = objs[0]
    assert svc["apiVersion"] == "apps.nvidia.com/v1alpha1"
    body = svc["spec"]
    assert {"name": "NIM_MODEL_PROFILE", "value": "replace-with-an-id-from-list-model-profiles"} in body["env"]
    assert body["image"]["pullSecrets"] == ["ngc-registry"]
    assert body["authSecret"] == "ngc-api-key", "the operator's runtime credential, apart from the pull secret"
    assert body["metrics"] == {"enabled": True}
    assert body["readinessProbe"]["probe"]["httpGet"]["path"] == "/v1/health/ready"
    assert body["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in body["tolerations"]


@pytest.mark.parametrize("owner", ["none", "hpa"])
def test_the_nimservice_passes_the_operator_crd(owner):
    from stacks import conformance

    root = conformance.schema_dir()
    if root is None:
        pytest.skip(f"set {conformance.ENV}")
    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    nim_model = next(m for m in sections["models"] if m["name"] == "llama-nim")
    nim_model["autoscaling"] = {"owner": owner, "maxReplicas": 3}
    obj = nim.nim_service(spec(config_of(sections), "llama-nim"))
    if owner == "hpa":
        hpa = obj["spec"]["scale"]["hpa"]
        assert hpa["metrics"][0]["pods"]["metric"]["name"] == "vllm_num_requests_waiting"
        assert "replicas" not in obj["spec"], "the operator's HPA owns the replica count"
    # validate_custom drops metadata from the CRD schema but not from the object (a shared-helper
    # quirk); the API server validates metadata itself.
    body = {k: v for k, v in obj.items() if k != "metadata"}
    assert conformance.validate_custom(body, root) == []


def test_a_per_replica_cache_makes_a_statefulset_with_a_claim_per_replica():
    base = spec(config_of(example()), "qwen3-8b")
    claim = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}}}
    cache = CacheMount(
        model_dir=base.cache.model_dir,
        volumes=[{"name": "model-cache", "ephemeral": {"volumeClaimTemplate": claim}}],
        volume_mounts=[{"name": "model-cache", "mountPath": "/models"}],
        per_replica=True,
    )
    objs = model_manifests(dataclasses.replace(base, cache=cache))
    assert objs is not None
    kinds = {o["kind"]: o for o in objs}
    sts = kinds["StatefulSet"]
    assert sts["spec"]["podManagementPolicy"] == "Parallel", "replicas must not wait for each other"
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "model-cache"
    assert kinds["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["kind"] == "StatefulSet"
    assert "Deployment" not in kinds


def test_an_engine_whose_module_has_not_landed_is_skipped():
    base = spec(config_of(example()), "qwen3-8b")
    dynamo = dataclasses.replace(base, model=base.model.model_copy(update={"engine": "dynamo"}))
    try:
        import components.serving.dynamo  # noqa: F401
    except ImportError:
        assert model_manifests(dynamo) is None


def test_a_nimservice_waits_for_the_nim_operator_release(mocks):
    import pulumi
    import pulumi_kubernetes as k8s

    from components.models import Models, ModelsArgs

    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    sections["models"] = [m for m in sections["models"] if m["name"] == "llama-nim"]
    config = config_of(sections)

    built: list[Models] = []

    @pulumi.runtime.test
    def program():
        provider = k8s.Provider("test-k8s", kubeconfig="{}")
        operator = k8s.helm.v3.Release(
            "nim-operator", chart="k8s-nim-operator", opts=pulumi.ResourceOptions(provider=provider)
        )
        built.append(
            Models(
                "test-models",
                ModelsArgs(config=config, provider=provider, installers={"nim-operator": operator}),
            )
        )

    program()
    release = next(r for r in mocks.records if r.type == "kubernetes:helm.sh/v3:Release")
    crs = [r for r in mocks.records if r.type == "kubernetes:apps.nvidia.com/v1alpha1:NIMService"]
    assert len(crs) == 1
    assert release.urn in crs[0].depends_on, "the CR must wait for the release that installs its CRD"
    assert "test-k8s" in crs[0].provider
    assert built[0].workloads == {"llama-nim": ("apps.nvidia.com/v1alpha1", "NIMService", "llama-nim")}
