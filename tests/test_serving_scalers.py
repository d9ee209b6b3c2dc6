"""One scaler owner per workload: a second autoscaler on a workload something already scales is
refused, naming both."""

from __future__ import annotations

import pytest

from stacks.errors import ConfigError
from tests.serving_support import config_of, model_entry, serving_sections


def _refusal(name: str, autoscaling: dict) -> list:
    sections = serving_sections()
    model_entry(sections, name)["autoscaling"] = autoscaling
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    return [p for p in err.value.problems if p.path.endswith("autoscaling.owner")]


@pytest.mark.parametrize("owner", ["hpa", "aibrix"])
def test_an_autoscaler_on_a_dynamo_graph_is_refused_naming_the_operator(owner):
    (problem,) = _refusal("qwen3-8b-dynamo", {"owner": owner})
    assert "two scaler owners" in problem.message and "Dynamo operator" in problem.message
    assert f"autoscaling.owner: {owner}" in problem.message, "both owners are named"


@pytest.mark.parametrize("owner", ["hpa", "aibrix"])
def test_an_autoscaler_on_a_rayservice_is_refused_naming_ray_serve(owner):
    (problem,) = _refusal("qwen3-4b-ray", {"owner": owner})
    assert "Ray Serve's replica autoscaling" in problem.message and f"autoscaling.owner: {owner}" in problem.message


def test_the_dynamo_planner_is_refused_on_other_engines():
    (problem,) = _refusal("qwen3-8b-lora", {"owner": "dynamo-planner"})
    assert "only scales engine: dynamo" in problem.message


def test_the_dynamo_planner_is_not_silently_accepted_on_a_dynamo_graph():
    (problem,) = _refusal("qwen3-8b-dynamo", {"owner": "dynamo-planner"})
    assert "does not deploy the Dynamo planner" in problem.message


def test_a_single_owner_per_model_passes():
    config = config_of(serving_sections())
    owners = {m.name: m.autoscaling.owner for m in config.models}
    assert owners == {
        "qwen3-8b-dynamo": "keda",
        "qwen3-32b-disagg": "keda",
        "qwen3-8b-lora": "aibrix",
        "qwen3-4b-ray": "none",
        "qwen3-8b-native": "none",
    }


def test_a_model_named_litellm_cannot_take_the_litellm_route():
    from stacks.errors import ConfigError
    from stacks.pipeline import check_sections
    from tests.conftest import DEV, sections_of

    sections = sections_of(DEV)
    sections.setdefault("addons", {})["litellm"] = {"enabled": True}
    sections["models"][0]["name"] = "litellm"
    try:
        check_sections(sections, "us-west-2")
    except ConfigError as exc:
        assert any("models[0].name" in str(p) and "/litellm" in str(p) for p in exc.problems), exc.problems
    else:
        raise AssertionError("a model named litellm next to the LiteLLM proxy must be refused")
