"""The stack-file reference (docs/reference/stack-file.md) is generated from the config models, and every
config field carries the description the reference and editors show."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from pydantic import BaseModel

import stacks.config
from stacks.__main__ import main
from stacks.reference import REFERENCE_PATH, blocks, render


def config_models() -> list[type[BaseModel]]:
    """Every model defined in stacks/config, reachable from StackConfig or not."""
    found = []
    for info in pkgutil.iter_modules(stacks.config.__path__):
        module = importlib.import_module(f"stacks.config.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseModel) and cls.__module__ == module.__name__:
                found.append(cls)
    return found


def test_the_committed_reference_matches_the_config_models():
    assert REFERENCE_PATH.read_text() == render(), "run `python -m stacks reference` and commit docs/reference"


def test_reference_check_fails_on_a_stale_file_and_passes_on_the_committed_one(tmp_path, monkeypatch, capsys):
    assert main(["reference", "--check"]) == 0, "the committed reference is current"
    stale = tmp_path / "stack-file.md"
    stale.write_text("# Stack file reference\n")
    monkeypatch.setattr("stacks.reference.REFERENCE_PATH", stale)
    assert main(["reference", "--check"]) == 1, "a stale reference must fail the check"
    assert "python -m stacks reference" in capsys.readouterr().err, "the error says how to fix it"


@pytest.mark.parametrize("model", config_models(), ids=lambda m: f"{m.__module__.rsplit('.', 1)[-1]}.{m.__name__}")
def test_every_config_field_has_a_description(model):
    missing = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert not missing, f"{model.__name__}: give Field(description=...) to {', '.join(missing)}"


def test_every_config_model_is_in_the_reference():
    walked = {b.model for b in blocks()}
    # Strict is the fieldless base class; StackConfig is the root the sections hang from.
    unreachable = {m for m in config_models() if m.model_fields and m is not stacks.config.StackConfig} - walked
    assert not unreachable, f"models the reference never reaches: {sorted(m.__name__ for m in unreachable)}"


def test_the_reference_spells_keys_as_stack_files_do():
    text = render()
    for key in ("`inference-platform:nodePools`", "`rootVolumeGiB`", "`throughputPerTiB`", "`artifactURL`"):
        assert key in text, f"{key}: the stack file's spelling, alias included"
    assert "| `for` |" in text and "| `e2eSeconds` |" in text, "explicit aliases, not the Python names"
    assert "for_" not in text and "root_volume_gib" not in text, "no Python attribute names"


def test_nested_defaults_are_the_ones_a_stack_file_gets():
    # A bare add-on is off, but addons.karpenter defaults to an enabled one: the reference must say true.
    karpenter = next(b for b in blocks() if b.path == "addons.karpenter")
    assert karpenter.default is not None and karpenter.default.enabled, "karpenter is on unless turned off"
    section = render().split("### `addons.karpenter`", 1)[1].split("###", 1)[0]
    assert "| `enabled` | boolean | `true` |" in section, "the default shown is the effective one"


def test_the_reference_shows_bounds_allowed_values_and_required_keys():
    text = render()
    assert "| `availabilityZones` | integer, 2 to 6 | `3` |" in text
    assert "one of `efs`, `fsx`, `local`, `none`" in text
    assert "| `name` | string, at least 1 character, at most 82 characters" in text, "cluster.name's bounds"
    assert "**required**" in text.split("## `inference-platform:cluster`", 1)[1].split("###", 1)[0]
