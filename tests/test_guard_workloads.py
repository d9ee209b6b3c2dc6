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
