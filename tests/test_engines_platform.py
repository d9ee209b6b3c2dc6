"""The Models component in the program: every model of a stack becomes its objects through the
cluster's provider, in the model's namespace; NIMService through the operator, after the release
that installs its CRD."""

from __future__ import annotations

import pytest

from components.engines import nim
from tests.builders import engine_objects, resolved_model
from tests.conftest import stack_manifests
from tests.engines_helpers import ENGINES, example, spec, stack_of

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


def test_the_engines_example_renders_one_workload_per_engine():
    workloads = {o["metadata"]["name"] for o in stack_manifests(ENGINES) if o["kind"] == "Deployment"}
    assert workloads == {
        "qwen3-8b",
        "qwen3-8b-sglang",
        "llama-nim",
        "qwen-awq-tgi",
        "qwen3-ollama",
        "llama-inf2",
        "qwen3-32b-g7e",
    }, "every model of the example becomes a Deployment of its own, through its engine's module"


def test_with_the_nim_operator_nim_is_a_nimservice_with_profile_pull_secret_and_metrics():
    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    objs = engine_objects(stack_of(sections), "llama-nim")
    assert [o["kind"] for o in objs] == ["NIMService"], "the operator builds the Deployment and Service"
    svc = objs[0]
    assert svc["apiVersion"] == "apps.nvidia.com/v1alpha1"
    body = svc["spec"]
    assert {"name": "NIM_MODEL_PROFILE", "value": "vllm-bf16-tp4-pp1"} in body["env"]
    assert body["image"]["pullSecrets"] == ["ngc-registry"]
    assert body["authSecret"] == "ngc-api-key", "the operator's runtime credential, apart from the pull secret"
    assert body["metrics"] == {"enabled": True}
    assert body["readinessProbe"]["probe"]["httpGet"]["path"] == "/v1/health/ready"
    assert body["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in body["tolerations"]


@pytest.mark.schemas
@pytest.mark.parametrize("owner", ["none", "hpa"])
def test_the_nimservice_passes_the_operator_crd(owner):
    from stacks import conformance

    root = conformance.schema_dir()
    assert root is not None
    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    nim_model = next(m for m in sections["models"] if m["name"] == "llama-nim")
    nim_model["autoscaling"] = {"owner": owner, "maxReplicas": 3}
    obj = nim.nim_service(spec(stack_of(sections), "llama-nim"))
    if owner == "hpa":
        hpa = obj["spec"]["scale"]["hpa"]
        assert hpa["metrics"][0]["pods"]["metric"]["name"] == "vllm_num_requests_waiting"
        assert "replicas" not in obj["spec"], "the operator's HPA owns the replica count"
    # validate_custom drops metadata from the CRD schema but not from the object (a shared-helper
    # quirk); the API server validates metadata itself.
    body = {k: v for k, v in obj.items() if k != "metadata"}
    assert conformance.validate_custom(body, root) == []


def test_a_nimservice_waits_for_the_nim_operator_release(mocks):
    import pulumi
    import pulumi_kubernetes as k8s

    from components.model_servers import Models, ModelsArgs

    sections = example()
    sections["addons"]["nimOperator"] = {"enabled": True}
    next(m for m in sections["models"] if m["name"] == "llama-nim")["secrets"] = {
        "ngcApiKey": "ngc-api-key"
    }  # the operator's authSecret
    sections["models"] = [m for m in sections["models"] if m["name"] == "llama-nim"]
    stack = stack_of(sections)

    @pulumi.runtime.test
    def program():
        provider = k8s.Provider("test-k8s", kubeconfig="{}")
        operator = k8s.helm.v3.Release(
            "nim-operator", chart="k8s-nim-operator", opts=pulumi.ResourceOptions(provider=provider)
        )
        Models(
            "test-models",
            ModelsArgs(
                models=list(stack.models),
                storage=stack.platform.storage,
                provider=provider,
                neuron_scheduler=stack.platform.neuron_scheduler,
                images=stack.images,
                operators={"nim-operator": operator},
            ),
        )

    program()
    release = next(r for r in mocks.records if r.type == "kubernetes:helm.sh/v3:Release")
    crs = [r for r in mocks.records if r.type == "kubernetes:apps.nvidia.com/v1alpha1:NIMService"]
    assert len(crs) == 1
    assert release.urn in crs[0].depends_on, "the CR must wait for the release that installs its CRD"
    assert "test-k8s" in crs[0].provider
    target = resolved_model(stack, "llama-nim").workload
    assert target == ("apps.nvidia.com/v1alpha1", "NIMService", "llama-nim"), "scalers target the NIMService"
    built = crs[0].inputs
    assert (built["apiVersion"], built["kind"], built["metadata"]["name"]) == target, (
        "the workload the Models component applies is the one the resolved model names as its scale target"
    )
