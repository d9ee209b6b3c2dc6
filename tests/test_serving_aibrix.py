"""AIBrix: ModelAdapters from models[].adapters, the PodAutoscaler of `autoscaling.owner: aibrix`,
and the add-on they need."""

from __future__ import annotations

import pytest

from components.serving import aibrix
from stacks import conformance
from stacks.errors import ConfigError
from stacks.naming import labels
from tests.builders import resolved_model
from tests.serving_support import SCHEMAS, config_of, model_entry, serving_sections, serving_stack

NAME = "qwen3-8b-lora"


def _objects() -> list[dict]:
    """The model's AIBrix objects with the labels the ModelAddons component gives them."""
    return aibrix.model_objects(resolved_model(serving_stack(), NAME), labels(NAME, NAME))


def test_each_adapter_is_a_model_adapter_selecting_the_models_pods():
    adapters = {o["metadata"]["name"]: o for o in _objects() if o["kind"] == "ModelAdapter"}
    assert set(adapters) == {"support-lora", "sql-lora"}
    support = adapters["support-lora"]["spec"]
    assert support["baseModel"] == NAME
    assert support["artifactURL"] == "s3://acme-models/platform/qwen3-8b-lora/adapters/support-lora/"
    assert support["podSelector"]["matchLabels"] == {
        "model.aibrix.ai/name": NAME,
        "adapter.model.aibrix.ai/enabled": "true",
    }, "the adapter controller loads onto pods carrying both labels"


def test_adapter_replicas_are_omitted_to_load_everywhere_or_exactly_one():
    adapters = {o["metadata"]["name"]: o["spec"] for o in _objects() if o["kind"] == "ModelAdapter"}
    assert "replicas" not in adapters["support-lora"], "omitted: loaded on every matching pod"
    assert adapters["sql-lora"]["replicas"] == 1


@pytest.mark.parametrize("replicas", [0, 2, 3])
def test_adapter_replicas_other_than_one_are_refused(replicas):
    sections = serving_sections()
    model_entry(sections, NAME)["adapters"][0]["replicas"] = replicas
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[2].adapters[0].replicas") for p in err.value.problems), err.value


def test_an_https_artifact_url_is_refused_like_the_webhook_does():
    sections = serving_sections()
    model_entry(sections, NAME)["adapters"][0]["artifactURL"] = "https://example.com/lora.tar"
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any("artifactURL" in p.path for p in err.value.problems), err.value


def test_the_pod_autoscaler_targets_the_models_workload_with_exactly_one_metrics_source():
    (pa,) = [o for o in _objects() if o["kind"] == "PodAutoscaler"]
    spec = pa["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME}
    assert spec["scalingStrategy"] == "KPA" and (spec["minReplicas"], spec["maxReplicas"]) == (1, 4)
    (source,) = spec["metricsSources"]
    assert source == {
        "metricSourceType": "pod",
        "protocolType": "http",
        "port": "8000",
        "path": "metrics",
        "targetMetric": "vllm:num_requests_waiting",
        "targetValue": "8",
    }


@pytest.mark.schemas
def test_every_aibrix_object_passes_the_upstream_crd():
    assert SCHEMAS is not None
    for obj in _objects():
        assert conformance.validate_custom(obj, SCHEMAS) == [], obj["metadata"]["name"]


def test_adapters_and_the_aibrix_owner_need_aibrix_enabled():
    sections = serving_sections()
    sections["addons"]["aibrix"] = {"enabled": False}
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    paths = {p.path for p in err.value.problems}
    assert "inference-platform:models[2].adapters" in paths
    assert "inference-platform:models[2].autoscaling.owner" in paths


def test_adapters_on_an_engine_aibrix_cannot_load_them_into_are_refused():
    sections = serving_sections()
    model_entry(sections, "qwen3-8b-dynamo")["adapters"] = [{"name": "x", "artifactURL": "s3://acme-models/x/"}]
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("models[0].adapters") and "vLLM" in p.message for p in err.value.problems)


def test_pods_carry_the_labels_the_aibrix_gateway_routes_by():
    served = resolved_model(serving_stack(), NAME)
    assert aibrix.pod_labels(served, adapters=True) == {
        "model.aibrix.ai/name": NAME,
        "model.aibrix.ai/port": "8000",
        "adapter.model.aibrix.ai/enabled": "true",
    }


def test_vllm_gets_the_runtime_lora_switches_the_adapter_controller_needs():
    args, env = aibrix.lora_runtime()
    assert "--enable-lora" in args
    assert {"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"} in env
