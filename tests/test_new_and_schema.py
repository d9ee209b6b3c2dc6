"""`stacks new` writes stack files that validate as written; the editor schema matches the models."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from stacks.config import SECTIONS
from stacks.errors import ConfigError
from stacks.newstack import new_stack
from stacks.pipeline import check_file
from stacks.schema import SCHEMA_PATH, render, stack_file_schema
from tests.conftest import ALL_STACKS
from tests.guard_support import cli


@pytest.mark.parametrize(
    ("role", "kwargs"),
    [
        ("workloads", {"platform": "acme/inference-platform/platform", "team": "search"}),
        ("workloads", {"platform": "acme/inference-platform/platform-prod", "team": "ads"}),
        ("platform", {"preset": "gpu-small"}),
        ("platform", {"preset": "inf2"}),
        ("platform", {"preset": "mixed", "environment": "staging"}),
        ("all-in-one", {"preset": "inf2"}),
        (
            "platform",
            {
                "preset": "mixed",
                "environment": "prod",
                "ami_version": "v20261015",
                "image_pins": {"neuron-monitor": "sha256:" + "1" * 64},
            },
        ),
        (
            "workloads",
            {
                "platform": "acme/inference-platform/platform",
                "team": "search",
                "environment": "prod",
                "image_digest": "sha256:" + "0" * 64,
                "image_pins": {
                    "model-prep-s3": "sha256:" + "2" * 64,
                    "model-prep-hub": "sha256:" + "3" * 64,
                    # The team's exposed vLLM model is routed by its endpoint picker by default.
                    "endpoint-picker": "sha256:" + "4" * 64,
                    # And, exposed, it gets the acceptance Job by default (guidellm's image runs the check).
                    "guidellm": "sha256:" + "5" * 64,
                },
            },
        ),
    ],
)
def test_a_new_stack_validates_as_written_and_carries_comments(tmp_path, role, kwargs):
    path = new_stack("fresh", role, out_dir=tmp_path, **kwargs)
    config = check_file(path).stack.config
    assert config.stack.role == role
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema="), "editors find the schema from the modeline"
    assert sum(line.lstrip().startswith("#") or " # " in line for line in text.splitlines()) >= 5, "commented"
    assert not list(jsonschema.Draft202012Validator(stack_file_schema()).iter_errors(yaml.safe_load(text)))


def test_a_new_prod_stack_asks_for_the_digest_of_every_image_it_renders(tmp_path):
    with pytest.raises(ConfigError) as info:
        new_stack("fresh", "platform", out_dir=tmp_path, preset="mixed", environment="prod", ami_version="v20261015")
    assert [p.path for p in info.value.problems] == ["--image-pin"]
    assert "neuron-monitor=sha256:" in info.value.problems[0].message


def test_a_new_workloads_stack_lands_on_a_pool_the_platform_exports(tmp_path):
    path = new_stack("fresh", "workloads", out_dir=tmp_path, platform="acme/inference-platform/platform", team="chat")
    config = check_file(path).stack.config
    assert config.models[0].pool == "gpu" and config.stack.quota is None, "the quota is the platform's"
    assert "quota: {gpus: 2," in path.read_text(), "the quota to ask the platform team for, as a comment"


def test_a_new_workloads_stack_for_a_team_the_platform_does_not_declare_is_refused(tmp_path):
    with pytest.raises(ConfigError) as info:
        new_stack("fresh", "workloads", out_dir=tmp_path, platform="acme/inference-platform/platform", team="ads")
    assert any(p.path == "inference-platform:stack.team" and "declares" in p.message for p in info.value.problems)


def test_a_preset_puts_the_right_accelerator_pools_in_the_platform(tmp_path):
    config = check_file(new_stack("fresh", "platform", out_dir=tmp_path, preset="mixed")).stack.config
    assert {p.accelerator for p in config.node_pools} == {"nvidia", "neuron"}
    assert config.addons.neuron.enabled and config.addons.nvidia_device_plugin.enabled


def test_new_never_overwrites_and_a_workloads_stack_needs_platform_and_team(tmp_path):
    new_stack("fresh", "platform", out_dir=tmp_path, preset="gpu-small")
    with pytest.raises(ConfigError, match="already exists"):
        new_stack("fresh", "platform", out_dir=tmp_path, preset="gpu-small")
    with pytest.raises(ConfigError, match="--platform"):
        new_stack("other", "workloads", out_dir=tmp_path, team="x")


def test_the_committed_schema_matches_the_config_models():
    assert SCHEMA_PATH.read_text() == render(), "run `python -m stacks schema` and commit stacks/stack.schema.json"


def test_the_schema_is_valid_and_every_stack_conforms():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in ALL_STACKS:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not errors, (path.name, errors)


def test_the_schema_catches_an_unknown_key_and_an_unknown_section():
    doc = yaml.safe_load(ALL_STACKS[0].read_text())
    doc["config"]["inference-platform:cluster"]["vpcs"] = {}
    doc["config"]["inference-platform:clusters"] = {}
    errors = list(jsonschema.Draft202012Validator(stack_file_schema()).iter_errors(doc))
    assert len(errors) == 2, [e.message for e in errors]
    keys = set(stack_file_schema()["properties"]["config"]["properties"]) - {"aws:region"}
    assert keys == {f"inference-platform:{section}" for section in SECTIONS}, "one key per stack-file section"


def test_a_prod_stack_needs_its_pins_given_rather_than_guessed(tmp_path):
    with pytest.raises(ConfigError) as info:
        new_stack("fresh", "all-in-one", out_dir=tmp_path, preset="gpu-small", environment="prod")
    # Every missing pin in one round: the AMI, the engine image and the platform images it renders.
    assert {p.path for p in info.value.problems} == {"--ami-version", "--image-digest", "--image-pin"}


def test_the_command_line_writes_a_valid_stack_and_checks_the_schema(tmp_path):
    made = cli(
        "new",
        "team-x",
        "--role",
        "workloads",
        "--platform",
        "acme/inference-platform/platform",
        "--team",
        "chat",
        "--out-dir",
        str(tmp_path),
    )
    assert made.returncode == 0, made.stderr
    checked = cli("validate", str(tmp_path / "Pulumi.team-x.yaml"))
    assert checked.returncode == 0 and "ok" in checked.stdout, checked.stderr
    again = cli("new", "team-x", "--role", "workloads", "--team", "x", "--out-dir", str(tmp_path))
    assert again.returncode == 1 and "already exists" in again.stderr and "Traceback" not in again.stderr
    assert cli("schema", "--check").returncode == 0, "the committed schema is current"


def test_an_image_pin_without_its_digest_is_a_usage_error_not_a_traceback(tmp_path, capsys):
    from stacks.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["new", "fresh", "--role", "platform", "--out-dir", str(tmp_path), "--image-pin", "neuron-monitor"])
    assert info.value.code == 2, "argparse's usage error"
    err = capsys.readouterr().err
    assert "write NAME=DIGEST" in err and "Traceback" not in err, err
