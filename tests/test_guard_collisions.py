"""Two keys that derive one identifier are refused (issue 13 item 13)."""

from __future__ import annotations

from typing import Any

from tests.builders import resolved_stack

from .guard_support import has, problems


def litellm(dev: dict[str, Any], *names: str) -> dict[str, Any]:
    providers = [
        {"name": n, "models": [f"m{i}"], "apiKeySecret": f"key-{i}", "egressHosts": ["api.example.com"]}
        for i, n in enumerate(names)
    ]
    dev["addons"]["litellm"] = {"enabled": True, "externalProviders": providers}
    return dev


def test_two_providers_reading_one_key_variable_are_refused(dev):
    found = problems(litellm(dev, "my-prov", "my_prov"))
    assert has(found, "addons.litellm.externalProviders[1].name", "MY_PROV_API_KEY"), found


def test_a_model_named_like_a_dynamo_frontend_service_is_refused(dev):
    dev["addons"]["dynamo"] = {"enabled": True}
    dev["models"][0]["name"] = "qwen-frontend"
    dev["models"].append({"name": "qwen", "engine": "dynamo", "model": "Qwen/Qwen3-8B", "pool": "gpu", "expose": False})
    found = problems(dev)
    assert has(found, "models[2].name", "Service qwen-frontend"), found


def test_an_adapter_named_like_a_model_is_refused(dev):
    dev["addons"]["aibrix"] = {"enabled": True}
    dev["models"][0]["adapters"] = [{"name": "llama-3-8b-neuron", "artifactURL": "s3://bucket/adapter"}]
    assert has(problems(dev), "models[0].adapters[0].name", "models[1]")


def test_a_model_named_like_the_gateway_objects_is_refused_where_its_route_lives_beside_them(dev):
    dev["addons"]["aibrix"] = {"enabled": True}  # AIBrix's Gateway: the routes live in aibrix-system
    dev["models"][0]["name"] = "aibrix-eg"
    assert has(problems(dev), "models[0].name", "SecurityPolicy aibrix-eg-auth")


def test_on_the_front_doors_gateway_a_route_lives_apart_from_the_gateways_objects(dev):
    dev["models"][0]["name"] = "https-redirect"
    dev["models"][1]["name"] = "inference"
    stack = resolved_stack(dev)  # accepted: the routes live in the models' namespace, not the Gateway's
    assert {stack.route_parent.route_namespace(m.namespace) for m in stack.models} == {"inference"}
    assert stack.route_parent.namespace == "inference-gateway"
