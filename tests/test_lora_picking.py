"""Adapter-aware endpoint picking (issue 29 item 2, remainder): where a vLLM model loads its LoRA adapters
itself (`models[].adapters` with `models[].lora`) and its route is picked, the llm-d router's picker also
runs its `lora-affinity-scorer` (v0.10.0, Beta), which reads vLLM's `vllm:lora_requests_info` through the
metrics extractor's built-in vllm mapping; never for AIBrix's adapters, never for SGLang (which exports no
per-adapter series); and the LiteLLM proxy's virtual keys reach a model's adapters with the model."""

from __future__ import annotations

from typing import Any

import yaml

from components.engines import sglang, vllm
from components.gateway import picker
from components.serving.litellm import router_config
from stacks.config.models import ModelSection
from stacks.plan import plan
from stacks.resolve.access import with_adapters
from stacks.resolve.models import picked_adapter_metric
from stacks.resolved import LITELLM_KEY_SECRET, ResolvedModel, VirtualKey
from stacks.versions import IMAGES
from tests.builders import resolved_model
from tests.serving_support import model_entry, serving_sections, serving_stack, spec_for
from tests.test_gateway_fairness import UPSTREAM_FIELDS

NATIVE = "qwen3-8b-native"
AIBRIX = "qwen3-8b-lora"
ADAPTERS = ["support-native", "sql-native"]


def _native(**routing: Any) -> ResolvedModel:
    sections = serving_sections()
    if routing:
        model_entry(sections, NATIVE)["routing"] = routing
    return resolved_model(serving_stack(sections), NATIVE)


def _epp(served: ResolvedModel) -> dict[str, Any]:
    # The serving example runs LiteLLM, which calls its picked models through the proxy beside the picker.
    return picker.values(served, IMAGES["endpoint-picker"], proxy_image=IMAGES["picker-proxy"])["router"]["epp"]


def _config(served: ResolvedModel) -> dict[str, Any]:
    epp = _epp(served)
    return yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])


def _weights(config: dict[str, Any]) -> dict[str, int]:
    return {p["pluginRef"]: p["weight"] for p in config["schedulingProfiles"][0]["plugins"]}


def test_the_shipped_native_lora_model_is_picked_with_adapter_affinity_beside_the_prefix_profile():
    served = _native()
    assert served.routing is not None and served.routing.strategy == "prefix-cache"
    assert served.routing.adapter_metric == "vllm:lora_requests_info", "the series the scorer's data comes from"
    assert _epp(served)["pluginsConfigFile"] == picker.ADAPTERS_CONFIG, "the chart's default profile has no such scorer"
    config = _config(served)
    assert _weights(config) == {
        "queue-scorer": 2,
        "kv-cache-utilization-scorer": 2,
        "prefix-cache-scorer": 3,
        "lora-affinity-scorer": 2,
    }, "the chart's default profile with the adapter scorer weighed as the load scorers"
    assert {"type": "lora-affinity-scorer"} in config["plugins"], "v0.10.0's scorer takes no parameters"


def test_the_adapter_config_is_one_the_picker_parses_strictly():
    config = _config(_native())
    assert set(config) <= UPSTREAM_FIELDS["config"], set(config) - UPSTREAM_FIELDS["config"]
    assert "featureGates" not in config, "the scorer is Beta at v0.10.0: no experimental gate or flag"
    for plugin in config["plugins"]:
        assert set(plugin) <= UPSTREAM_FIELDS["plugin"], plugin
    refs = {p["pluginRef"] for p in config["schedulingProfiles"][0]["plugins"]}
    assert refs <= {p.get("name", p["type"]) for p in config["plugins"]}, "every weight names a listed plugin"


def test_the_pods_adapters_come_from_the_extractors_built_in_vllm_mapping_without_parameters():
    (extractor,) = [p for p in _config(_native())["plugins"] if p["type"] == "core-metrics-extractor"]
    assert "parameters" not in extractor, "defaultEngine vllm, whose loraSpec is vllm:lora_requests_info"
    assert vllm.FACTS.picker_adapter_metric == vllm.LORA_METRIC == "vllm:lora_requests_info"


def test_vllm_exports_the_series_because_the_native_model_runs_with_lora_enabled():
    args = vllm.native_lora(spec_for(serving_stack(), NATIVE))
    assert "--enable-lora" in args and "--max-loras" in args, "vLLM sets the gauge only with a LoRA config"


def test_load_routing_scores_adapters_without_the_prefix_scorer():
    config = _config(_native(strategy="load"))
    assert _weights(config) == {"queue-scorer": 2, "kv-cache-utilization-scorer": 2, "lora-affinity-scorer": 2}


def test_flow_control_keeps_the_adapter_scorer_in_its_own_config():
    served = _native(strategy="prefix-cache", flowControl={})
    assert _epp(served)["pluginsConfigFile"] == picker.FLOW_CONTROL_CONFIG
    config = _config(served)
    assert config["featureGates"] == ["flowControl"]
    assert _weights(config)["lora-affinity-scorer"] == 2


def test_aibrixs_adapters_keep_the_charts_default_profile():
    served = resolved_model(serving_stack(), AIBRIX)
    assert served.adapter_loader == "aibrix" and served.routing is not None and served.routing.picker
    assert served.routing.adapter_metric is None, "its controller loads each adapter on some pods only"
    assert "pluginsConfigFile" not in _epp(served), "unchanged: no adapter scorer"


def test_sglang_adapters_get_no_adapter_scorer_because_sglang_exports_no_per_adapter_series():
    model = ModelSection.model_validate(
        {**{k: v for k, v in model_entry(serving_sections(), NATIVE).items() if k != "engine"}, "engine": "sglang"}
    )
    assert sglang.FACTS.picker_engine == "sglang" and sglang.FACTS.lora_flags, "picked, and loads its adapters"
    assert picked_adapter_metric(model, sglang.FACTS) is None
    assert picked_adapter_metric(model, vllm.FACTS) == "vllm:lora_requests_info"


def test_a_model_without_adapters_is_picked_as_before():
    served = resolved_model(serving_stack(), "qwen3-8b-dynamo")
    assert served.routing is None or served.routing.adapter_metric is None
    model = ModelSection.model_validate(
        {k: v for k, v in model_entry(serving_sections(), NATIVE).items() if k not in ("adapters", "lora")}
    )
    assert picked_adapter_metric(model, vllm.FACTS) is None


def test_the_platform_clients_litellm_key_reaches_the_native_adapters_with_their_model():
    sections = serving_sections()
    sections["addons"]["litellm"]["databaseUrlSecret"] = "litellm-db"
    stack = serving_stack(sections)
    (key,) = [k for k in stack.access.virtual_keys if k.caller == "platform"]
    assert key == VirtualKey("platform", key.namespace, LITELLM_KEY_SECRET, key.models)
    names = list(key.models)
    assert names[names.index(NATIVE) + 1 : names.index(NATIVE) + 3] == ADAPTERS, "each adapter after its model"
    assert "support-lora" not in names, "AIBrix's adapters are no LiteLLM models"
    listed = {m["model_name"] for m in router_config(stack.config.addons.litellm, stack.models, True)["model_list"]}
    assert set(names) <= listed, "the key names only models the proxy lists"


def test_a_teams_litellm_key_scoped_to_a_model_gets_its_native_adapters():
    models = serving_stack().models
    assert with_adapters(("gpt-4o-mini", NATIVE), models) == ("gpt-4o-mini", NATIVE, *ADAPTERS)
    assert with_adapters((AIBRIX,), models) == (AIBRIX,), "AIBrix's adapters are not listed by the proxy"


def test_stacks_plan_says_which_models_picker_scores_adapter_affinity():
    text = plan(serving_stack())
    native = text[text.index(f"{NATIVE} ") :]
    assert "adapter affinity: lora-affinity-scorer on vllm:lora_requests_info" in native.split("\n\n")[0]
    assert text.count("adapter affinity:") == 1, "only the native vLLM model, not AIBrix's"
