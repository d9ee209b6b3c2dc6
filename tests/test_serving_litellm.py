"""LiteLLM: a router config generated from the stack's exposed models, keys from existing Secrets,
and external providers (and fallbacks to them) only when listed."""

from __future__ import annotations

import json

import pytest
import yaml

from components import peers
from components.serving import litellm
from stacks.errors import ConfigError
from tests.serving_support import config_of, serving_sections, serving_stack


def _objects(sections: dict | None = None) -> dict[str, dict]:
    """The proxy's objects as the ServingPlatforms component builds them: the add-on, the stack's
    models, and whether monitoring is on."""
    stack = serving_stack(sections)
    addons = stack.platform.addons
    objects = litellm.manifests(
        addons.litellm,
        stack.models,
        addons.monitoring.enabled,
        stack.images,
        proxies=peers.proxies(stack.route_parent),
        scraper=peers.PROMETHEUS if addons.monitoring.enabled else None,
    )
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objects}


def _router(objects: dict[str, dict]) -> dict:
    return yaml.safe_load(objects["ConfigMap/litellm-config"]["data"]["config.yaml"])


def test_the_model_list_points_at_each_exposed_models_in_cluster_service_by_its_real_name():
    models = {m["model_name"]: m["litellm_params"] for m in _router(_objects())["model_list"]}
    # Picked (models[].routing): through the Envoy beside its picker, on the picker's Service
    # (tests/test_litellm_picker.py); the others at their own Service.
    assert models["qwen3-8b-lora"] == {
        "model": "hosted_vllm/qwen3-8b-lora",
        "api_base": "http://qwen3-8b-lora-picker-epp.inference.svc.cluster.local:8081/v1",
    }
    assert (
        models["qwen3-8b-dynamo"]["api_base"] == "http://qwen3-8b-dynamo-frontend.inference.svc.cluster.local:8000/v1"
    )
    assert models["qwen3-4b-ray"]["api_base"] == "http://qwen3-4b-ray-serve-svc.inference.svc.cluster.local:8000/v1"
    assert models["gpt-4o-mini"] == {"model": "openai/gpt-4o-mini", "api_key": "os.environ/OPENAI_API_KEY"}


def test_an_unexposed_model_is_not_in_the_router():
    sections = serving_sections()
    sections["models"][1]["expose"] = False
    sections["addons"]["litellm"]["fallbacks"] = {}
    names = {m["model_name"] for m in _router(_objects(sections))["model_list"]}
    assert "qwen3-32b-disagg" not in names


def test_every_key_comes_from_an_existing_secret_and_none_is_literal():
    objects = _objects()
    router = _router(objects)
    assert router["general_settings"]["master_key"] == "os.environ/LITELLM_MASTER_KEY"
    pod = objects["Deployment/litellm"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert not [e for e in container["env"] if "valueFrom" in e or e["name"].endswith("KEY")], (
        "no key in the pod spec's env: each is mounted from its Secret and exported only into the process"
    )
    secrets = {v["secret"]["secretName"]: v["secret"]["items"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {
        "litellm-master-key": [{"key": "master-key", "path": "master-key"}],
        "openai-api-key": [{"key": "api-key", "path": "api-key"}],
    }
    mounts = {m["mountPath"]: m for m in container["volumeMounts"] if m["name"] != "config"}
    assert all(m["readOnly"] for m in mounts.values())
    script = container["command"][2]
    assert container["command"][:2] == ["/bin/sh", "-c"] and container["command"][3] == "litellm"
    assert 'LITELLM_MASTER_KEY="$(cat /var/run/secrets/litellm/master/master-key)"' in script
    assert 'OPENAI_API_KEY="$(cat /var/run/secrets/litellm/provider-0/api-key)"' in script
    assert script.endswith('exec litellm "$@"'), "the image's own program, with the flags below as $@"
    assert container["args"] == ["--config", "/etc/litellm/config.yaml", "--port", "4000"], "the config is wired in"
    assert "sk-" not in json.dumps(objects)


def test_no_database_or_redis_unless_asked():
    objects = _objects()
    router = _router(objects)
    assert "database_url" not in router["general_settings"]
    assert not any("redis" in name for name in objects)
    sections = serving_sections()
    sections["addons"]["litellm"].update({"databaseUrlSecret": "litellm-db", "redis": True})
    asked = _objects(sections)
    router = _router(asked)
    assert router["general_settings"]["database_url"] == "os.environ/DATABASE_URL"
    assert router["router_settings"]["redis_host"] == "os.environ/REDIS_HOST"
    assert "Deployment/litellm-redis" in asked and "Service/litellm-redis" in asked


def test_fallbacks_are_passed_as_configured():
    router = _router(_objects())
    assert router["router_settings"]["fallbacks"] == [
        {"qwen3-8b-lora": ["qwen3-8b-dynamo", "gpt-4o-mini"]},
        {"qwen3-4b-ray": ["us.anthropic.claude-3-5-haiku-20241022-v1:0"]},
    ]
    assert router["litellm_settings"]["drop_params"] is False, "dropping params silently changes requests"


def test_a_fallback_to_an_unlisted_provider_is_refused():
    sections = serving_sections()
    sections["addons"]["litellm"]["fallbacks"] = {"qwen3-8b-lora": ["claude-sonnet-4"]}
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    (problem,) = err.value.problems
    assert problem.path == "inference-platform:addons.litellm.fallbacks.qwen3-8b-lora"
    assert "'claude-sonnet-4'" in problem.message and "externalProviders" in problem.message


def test_only_the_routes_proxies_and_prometheus_pods_reach_the_proxy_on_its_port():
    policy = _objects()["NetworkPolicy/litellm-egress"]
    (rule,) = policy["spec"]["ingress"]
    stack = serving_stack()
    assert rule == {
        "from": [peers.proxies(stack.route_parent).peer(), peers.PROMETHEUS.peer()],
        "ports": [{"protocol": "TCP", "port": litellm.PORT}],
    }, "the front door (its SecurityPolicy authenticates first) and the scraper (with the master key): pods only"
    assert "Ingress" in policy["spec"]["policyTypes"]
    alone = litellm.network_policy(stack.platform.addons.litellm, stack.models, proxies=None, scraper=None)
    assert alone["spec"]["ingress"] == [], "no route and no scraper: nothing may call it"


def test_egress_reaches_the_internet_only_when_an_external_provider_is_listed():
    policy = _objects()["NetworkPolicy/litellm-egress"]
    rules = policy["spec"]["egress"]
    https = [r for r in rules if r.get("ports") == [{"protocol": "TCP", "port": 443}]]
    assert https and https[0]["to"][0]["ipBlock"]["cidr"] == "0.0.0.0/0"
    assert "10.0.0.0/8" in https[0]["to"][0]["ipBlock"]["except"]
    assert (
        policy["metadata"]["annotations"]["inference-platform.io/allowed-egress-hosts"]
        == "api.openai.com,bedrock-runtime.us-west-2.amazonaws.com"
    )
    models = [
        r for r in rules if "namespaceSelector" in r["to"][0] and "matchExpressions" in r["to"][0]["namespaceSelector"]
    ]
    assert models[0]["to"][0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["inference"]

    sections = serving_sections()
    sections["addons"]["litellm"]["externalProviders"] = []
    sections["addons"]["litellm"]["fallbacks"] = {}
    closed = _objects(sections)["NetworkPolicy/litellm-egress"]
    assert not any("ipBlock" in str(r) for r in closed["spec"]["egress"]), "no provider listed: no internet egress"
    names = {m["model_name"] for m in _router(_objects(sections))["model_list"]}
    assert "gpt-4o-mini" not in names


def test_a_model_name_served_twice_is_refused():
    sections = serving_sections()
    sections["addons"]["litellm"]["externalProviders"][0]["models"] = ["qwen3-4b-ray"]
    sections["addons"]["litellm"]["fallbacks"] = {}
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith("externalProviders[0].models[0]") for p in err.value.problems)


@pytest.mark.parametrize(("version", "tag"), [(None, "v1.100.1"), ("1.101.2", "v1.101.2"), ("v1.101.2", "v1.101.2")])
def test_the_proxy_image_is_the_release_tag_litellm_publishes(version, tag):
    """Since 1.84 LiteLLM publishes v<version>; the old main-v<version> tags no longer appear."""
    from stacks.config.addons import LiteLLM
    from stacks.resolve.images import litellm_image
    from stacks.versions import IMAGES

    image = litellm_image(LiteLLM.model_validate({"enabled": True, "version": version}), IMAGES["litellm"])
    assert image.ref == f"ghcr.io/berriai/litellm:{tag}"
