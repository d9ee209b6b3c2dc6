"""`python -m stacks plan` on a workloads (team) stack: it plans on its platform's pools, read from the
platform's exports (its stack file in this repository, or the one `--platform` names); a model on a
pool the platform does not have, or a platform that cannot be read, is refused (exit 1) by key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from stacks.__main__ import main
from stacks.load import ROOT
from stacks.pipeline import exports_from_file

EXAMPLES = ROOT / "stacks" / "examples"
PLATFORM = EXAMPLES / "Pulumi.platform.yaml"


def _models(name: str) -> dict[str, str]:
    doc = yaml.safe_load((EXAMPLES / f"Pulumi.{name}.yaml").read_text())
    return {m["name"]: m["pool"] for m in doc["config"]["inference-platform:models"]}


def _moved(tmp_path: Path, name: str, **edits: str) -> Path:
    """The team stack written elsewhere, its platform reference or a model's pool changed."""
    doc = yaml.safe_load((EXAMPLES / f"Pulumi.{name}.yaml").read_text())
    config = doc["config"]
    if "platformStack" in edits:
        config["inference-platform:stack"]["platformStack"] = edits["platformStack"]
    if "pool" in edits:
        config["inference-platform:models"][0]["pool"] = edits["pool"]
    path = tmp_path / f"Pulumi.{name}-edited.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("name", ["team-search", "team-chat"])
def test_plan_of_a_team_stack_lists_its_platforms_pools_and_where_each_model_fits(name, capsys):
    assert main(["plan", str(EXAMPLES / f"Pulumi.{name}.yaml")]) == 0
    out = capsys.readouterr().out
    assert "pool gpu: accelerator nvidia" in out and "pool inferentia: accelerator neuron" in out
    for model, pool in _models(name).items():
        head = next(line for line in out.splitlines() if line.startswith(f"model {model} on pool {pool}"))
        assert "fits " in head and "NOTHING" not in head, head
    assert "is not one of" not in out


@pytest.mark.parametrize("name", ["team-search", "team-chat"])
def test_plan_json_of_a_team_stack_gives_the_platforms_pools_and_each_models_fit(name, capsys):
    assert main(["plan", "--json", str(EXAMPLES / f"Pulumi.{name}.yaml")]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert str(PLATFORM) in plan["stack"]
    assert {p["name"] for p in plan["pools"]} == {"gpu", "inferentia"}
    placed = {m["name"]: m["pool"] for m in plan["models"] if m["workload"]["name"] == m["name"]}
    assert placed == _models(name)
    for model in plan["models"]:
        assert all(pod["fits"] for pod in model["pods"] if pod["onPool"]), model["name"]


def test_plan_refuses_a_team_model_on_a_pool_its_platform_does_not_have(tmp_path, capsys):
    path = _moved(tmp_path, "team-search", pool="trn2")
    for argv in (["plan", str(path)], ["plan", "--json", str(path)]):
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "inference-platform:models[0].pool" in captured.err
        assert "'trn2'" in captured.err and "its pools: gpu, inferentia" in captured.err


def test_plan_refuses_a_team_stack_whose_platform_cannot_be_read_naming_how_to_give_it(tmp_path, capsys):
    path = _moved(tmp_path, "team-search", platformStack="acme/inference-platform/elsewhere")
    for argv in (["plan", str(path)], ["plan", "--json", str(path)]):
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"{path}: inference-platform:stack.platformStack")
        assert "pools are unknown" in captured.err and "--platform" in captured.err
        assert "pulumi stack output --json --stack acme/inference-platform/elsewhere" in captured.err


def test_plan_reads_the_platform_from_the_stack_file_given_with_platform(tmp_path, capsys):
    path = _moved(tmp_path, "team-search", platformStack="acme/inference-platform/elsewhere")
    assert main(["plan", str(path), "--platform", str(PLATFORM)]) == 0
    out = capsys.readouterr().out
    assert "model qwen3-8b on pool gpu: fits g6.xlarge" in out


def test_plan_reads_the_platform_from_pulumi_stack_output_json_given_with_platform(tmp_path, capsys):
    outputs = tmp_path / "platform-outputs.json"
    # `pulumi stack output --json` shows a secret output as "[secret]": it is left out, never read.
    outputs.write_text(json.dumps({**exports_from_file(PLATFORM), "kubeconfig": "[secret]"}))
    path = _moved(tmp_path, "team-search", platformStack="acme/inference-platform/elsewhere")
    assert main(["plan", "--json", str(path), "--platform", str(outputs)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert {p["name"] for p in plan["pools"]} == {"gpu", "inferentia"}
    assert {m["name"] for m in plan["models"]} >= {"qwen3-8b", "llama-3-8b-neuron"}


def test_plan_refuses_a_platform_file_that_is_not_stack_outputs(tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text("[1, 2]")
    path = _moved(tmp_path, "team-search", platformStack="acme/inference-platform/elsewhere")
    assert main(["plan", str(path), "--platform", str(outputs)]) == 1
    assert "is not a JSON object" in capsys.readouterr().err
