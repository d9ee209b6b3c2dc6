"""Ray Serve on KubeRay: a RayService with a CPU head, a bounded GPU worker group and a
serveConfigV2 that serves the pinned model through Ray Serve's LLM API."""

from __future__ import annotations

import pytest
import yaml

from components.engines import ENGINES
from stacks import conformance
from stacks.errors import ConfigError
from tests.builders import resolved_model
from tests.serving_support import SCHEMAS, config_of, model_entry, serving_objects, serving_sections, serving_stack

NAME = "qwen3-4b-ray"


def _service() -> dict:
    return serving_objects(NAME)[0]


def test_the_head_runs_on_cpu_and_the_gpu_workers_scale_within_the_configured_bounds():
    svc = _service()
    assert svc["apiVersion"] == "ray.io/v1" and svc["kind"] == "RayService"
    cluster = svc["spec"]["rayClusterConfig"]
    head = cluster["headGroupSpec"]
    assert head["rayStartParams"]["num-gpus"] == "0", "the head must not schedule GPU work"
    head_pod = head["template"]["spec"]
    assert "tolerations" not in head_pod and "nvidia.com/gpu" not in str(head_pod), "head stays off GPU nodes"
    (group,) = cluster["workerGroupSpecs"]
    assert (group["minReplicas"], group["maxReplicas"]) == (1, 3), "rayServe.minWorkers/maxWorkers"
    assert group["rayStartParams"]["num-gpus"] == "1"
    worker = group["template"]["spec"]
    assert worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker["tolerations"]
    assert cluster["enableInTreeAutoscaling"] is True, "workers follow Ray Serve's replica demand"


def test_serve_config_is_a_yaml_string_serving_the_pinned_revision_through_the_llm_api():
    serve = _service()["spec"]["serveConfigV2"]
    assert isinstance(serve, str), "serveConfigV2 is a YAML string in the CRD"
    (app,) = yaml.safe_load(serve)["applications"]
    assert app["import_path"] == "ray.serve.llm:build_openai_app"
    (llm,) = app["args"]["llm_configs"]
    worker = _service()["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    (prepared,) = {e["value"] for c in worker["initContainers"] for e in c["env"] if e["name"] == "MODEL_DIR"}
    assert llm["model_loading_config"] == {"model_id": NAME, "model_source": prepared}, (
        "the workers' prepared directory; a repo id would download it again on every worker"
    )
    assert prepared.endswith("/1cfa9a7208912126459214e8b04321603b3df60c") and "revision" not in llm["engine_kwargs"]
    assert llm["deployment_config"]["autoscaling_config"] == {
        "min_replicas": 1,
        "max_replicas": 3,
        "target_ongoing_requests": 64,
    }, "Serve's replica bounds are rayServe.minWorkers/maxWorkers, with an explicit target"


def test_dependencies_reach_the_workers_through_the_image_and_runtime_env():
    sections = serving_sections()
    model_entry(sections, NAME)["rayServe"]["pip"] = ["transformers==4.57.1"]
    svc = serving_objects(NAME, sections)[0]
    cluster = svc["spec"]["rayClusterConfig"]
    images = {cluster["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]}
    images.add(cluster["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"])
    assert images == {"rayproject/ray-llm:2.58.0-py312-cu130"}, "head and workers run the same ray-llm image"
    (llm,) = yaml.safe_load(svc["spec"]["serveConfigV2"])["applications"][0]["args"]["llm_configs"]
    assert llm["runtime_env"]["pip"] == ["transformers==4.57.1"], "runtime_env applies to replicas and engine workers"


@pytest.mark.schemas
def test_the_rayservice_passes_the_upstream_crd():
    assert SCHEMAS is not None
    assert conformance.validate_custom(_service(), SCHEMAS) == []


def test_clients_reach_the_kuberay_serve_service():
    served = resolved_model(serving_stack(), NAME)
    assert (served.service, served.port) == (f"{NAME}-serve-svc", 8000)
    assert ENGINES["ray-serve"].facts.controller == "kuberay", "RayServices wait for the KubeRay operator release"


def test_more_min_workers_than_max_workers_is_refused():
    sections = serving_sections()
    model_entry(sections, NAME)["rayServe"] = {"minWorkers": 4, "maxWorkers": 2}
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[3].rayServe.minWorkers") for p in err.value.problems), err.value


def _autoscaling_config(sections: dict) -> dict:
    (llm,) = yaml.safe_load(serving_objects(NAME, sections)[0]["spec"]["serveConfigV2"])["applications"][0]["args"][
        "llm_configs"
    ]
    return llm["deployment_config"]["autoscaling_config"]


def test_ray_serve_always_gets_an_explicit_target_so_its_autoscaler_scales_up():
    """Ray Serve LLM deep-merges its own defaults under ours, and its target_ongoing_requests is 1e9: a
    deployment without one never scales past min_replicas."""
    sections = serving_sections()
    model_entry(sections, NAME)["rayServe"] = {"minWorkers": 1, "maxWorkers": 3}
    assert _autoscaling_config(sections)["target_ongoing_requests"] == 64, "the default, not Ray Serve LLM's 1e9"
    model_entry(sections, NAME)["rayServe"]["targetOngoingRequests"] = 16
    assert _autoscaling_config(sections)["target_ongoing_requests"] == 16, "rayServe.targetOngoingRequests"
    model_entry(sections, NAME)["rayServe"]["targetOngoingRequests"] = 2.5
    assert _autoscaling_config(sections)["target_ongoing_requests"] == 2.5, "Ray takes a positive float"


def test_a_target_of_zero_ongoing_requests_is_refused():
    sections = serving_sections()
    model_entry(sections, NAME)["rayServe"]["targetOngoingRequests"] = 0
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("rayServe.targetOngoingRequests") for p in err.value.problems), err.value


def test_ray_serve_may_scale_to_zero_replicas_and_zero_gpu_workers():
    sections = serving_sections()
    model_entry(sections, NAME)["rayServe"] = {"minWorkers": 0, "maxWorkers": 2}
    assert _autoscaling_config(sections)["min_replicas"] == 0
    cluster = serving_objects(NAME, sections)[0]["spec"]["rayClusterConfig"]
    (group,) = cluster["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (0, 0, 2), (
        "no GPU worker held while Serve runs no replica; the in-tree autoscaler adds them on demand"
    )
    assert cluster["enableInTreeAutoscaling"] is True


@pytest.mark.parametrize("key", ["minReplicas", "maxReplicas"])
def test_autoscaling_bounds_on_a_rayservice_are_refused_pointing_at_ray_serves_own(key):
    sections = serving_sections()
    model_entry(sections, NAME)["autoscaling"] = {"owner": "none", key: 2}
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    (problem,) = [p for p in err.value.problems if p.path.endswith(f"autoscaling.{key}")]
    own = "rayServe.minWorkers" if key == "minReplicas" else "rayServe.maxWorkers"
    assert own in problem.message and "ignored" in problem.message, "the refusal names the key that works"


def test_the_head_and_the_workers_are_labelled_with_their_role_and_the_model():
    svc = _service()
    cluster = svc["spec"]["rayClusterConfig"]
    pods = {"head": cluster["headGroupSpec"]["template"], "worker": cluster["workerGroupSpecs"][0]["template"]}
    for role, template in pods.items():
        labels = template["metadata"]["labels"]
        assert labels["app.kubernetes.io/component"] == role
        assert labels["app.kubernetes.io/name"] == NAME, "the RayService's name, not its Serve Service's"
        assert labels["inference-platform.io/model"] == NAME
