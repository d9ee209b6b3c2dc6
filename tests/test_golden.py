"""Golden renders: every shipped stack file renders to exactly the committed digests.

A behaviour change regenerates them (`python -m stacks golden`) in the same commit, whose message
names the objects that changed and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from stacks.golden import differences, digests, read_golden, stack_files

from .conftest import rendered_stack


@pytest.mark.parametrize("path", stack_files(), ids=lambda p: p.name)
def test_every_stack_renders_to_its_committed_golden_digests(path: Path) -> None:
    want = read_golden(path)
    assert want, f"no golden digests for {path.name}: run python -m stacks golden"
    diff = differences(want, digests(rendered_stack(path).resources))
    assert not diff, "render differs from tests/golden (python -m stacks golden --check):\n" + "\n".join(diff)


def test_a_changed_input_shows_as_a_changed_urn() -> None:
    path = stack_files()[0]
    records = rendered_stack(path).resources
    have = digests(records)
    record = records[-1]
    tampered = type(record)(**{**record.__dict__, "inputs": {**record.inputs, "extra": 1}})
    assert differences(have, digests([*records[:-1], tampered])) == [f"changed {record.urn}"]
