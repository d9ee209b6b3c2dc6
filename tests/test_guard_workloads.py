"""A workloads stack's models are held to every rule an all-in-one stack's are, against the
platform's exports (issue 13 item 13)."""

from __future__ import annotations

from typing import Any

from .guard_support import has, problems, sections


def team(**model: Any) -> dict[str, Any]:
    s = sections("stacks/examples/Pulumi.team-search.yaml")
    s["models"][0] |= model
    return s


def test_a_team_model_whose_weights_exceed_accelerator_memory_is_refused():
    found = problems(team(parameters="70B", dtype="bf16"))
    assert has(found, "models[0].acceleratorsPerReplica", "weights do not fit"), found


def test_a_team_model_with_adapters_on_a_platform_without_aibrix_is_refused():
    found = problems(team(adapters=[{"name": "sql", "artifactURL": "s3://bucket/sql"}]))
    assert has(found, "models[0].adapters", "AIBrix", "platform team"), found


def test_a_team_model_asking_for_aibrix_autoscaling_without_aibrix_is_refused():
    found = problems(team(autoscaling={"owner": "aibrix"}))
    assert has(found, "models[0].autoscaling.owner", "AIBrix"), found


def test_a_team_stack_in_another_region_than_its_platform_is_refused_at_aws_region():
    import pytest

    from stacks.errors import ConfigError
    from stacks.pipeline import check_sections

    with pytest.raises(ConfigError) as info:
        check_sections(team(), "us-east-1")
    found = [str(p) for p in info.value.problems]
    assert any(p.startswith("aws:region: is us-east-1") and "set aws:region: us-west-2" in p for p in found), found
    check_sections(team(), "us-west-2")  # the platform's own region is accepted
