"""The model bucket, owner by owner: the platform's models keep their weights under `platform/`, a
team's under `teams/<team>/`, and each model's benchmark results under its owner's `_benchmarks/`; every
identity a model's pods run as (the readers, the streamed prefixes' writer) is held to its owner's
prefix, as the rendered policy documents evaluate (tests/iam_eval.py), never to the whole bucket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.storage.storage_iam import reader_policy
from stacks.resolved import owner_prefix
from tests.builders import resolved_stack
from tests.conftest import ALL_STACKS, DEV, EXAMPLES_DIR, rendered_stack, sections_of
from tests.iam_eval import allows

SEARCH = EXAMPLES_DIR / "Pulumi.team-search.yaml"
BUCKET = "arn:aws:s3:::acme-models"


def bucket_policies(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(name, document) of every rendered policy of a model identity: the readers and the writer."""
    rec = rendered_stack(path).mocks
    return [
        (r.name, json.loads(r.inputs["policy"]))
        for r in rec.of_type("aws:iam/rolePolicy:RolePolicy")
        if r.name.endswith(("-read", "-write"))
    ]


def bucket_of(doc: dict[str, Any]) -> str:
    (arn,) = {r for st in doc["Statement"] for r in st["Resource"] if r.startswith("arn:aws:s3:::") and "/" not in r}
    return arn


def test_the_platforms_models_and_a_teams_models_live_under_their_owners_prefix():
    platform_model = resolved_stack(sections_of(DEV)).models[0]
    revision = platform_model.config.revision
    assert platform_model.cache.bucket_prefix == f"platform/{platform_model.name}/{revision}"
    assert platform_model.cache.model_dir == f"/models/platform/{platform_model.name}/{revision}"
    assert platform_model.cache.results_prefix == f"platform/_benchmarks/{platform_model.name}/{revision}"
    team_model = resolved_stack(sections_of(SEARCH)).models[0]
    revision = team_model.config.revision
    assert team_model.cache.bucket_prefix == f"teams/search/{team_model.name}/{revision}"
    assert team_model.cache.results_prefix == f"teams/search/_benchmarks/{team_model.name}/{revision}"
    assert owner_prefix("platform") == "platform" and owner_prefix("chat") == "teams/chat"


def test_a_reader_reads_and_lists_its_owners_prefix_and_writes_only_its_benchmark_results():
    doc = reader_policy(BUCKET, "teams/search")
    own = f"{BUCKET}/teams/search/qwen3-8b/abc/model.safetensors"
    assert allows(doc, "s3:GetObject", own)
    assert allows(doc, "s3:ListBucket", BUCKET, s3__prefix="teams/search/qwen3-8b/abc/")
    assert allows(doc, "s3:PutObject", f"{BUCKET}/teams/search/_benchmarks/qwen3-8b/abc/t/run.json")
    assert not allows(doc, "s3:PutObject", own), "the weights are never writable by a reader"
    assert not allows(doc, "s3:GetObject", f"{BUCKET}/teams/searchers/x/abc/model.safetensors"), (
        "a team whose name begins with another's is not that team"
    )
    for other in ("teams/chat/qwen3-8b/abc/model.safetensors", "platform/qwen3-8b/abc/model.safetensors"):
        assert not allows(doc, "s3:GetObject", f"{BUCKET}/{other}")
    for prefix in ("", "teams/", "teams/chat/", "platform/"):
        assert not allows(doc, "s3:ListBucket", BUCKET, s3__prefix=prefix), prefix
    assert not allows(doc, "s3:ListBucket", BUCKET), "a list request without a prefix lists the bucket"
    assert not allows(doc, "s3:DeleteObject", own)


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_no_model_identity_may_read_list_or_write_the_whole_bucket(path):
    found = bucket_policies(path)
    if path.name.startswith("Pulumi.team-"):
        assert not found, "a team stack creates no AWS identity"
        return
    assert any(name.endswith("-read") for name, _ in found), "the walk sees the platform's reader"
    for name, doc in found:
        bucket = bucket_of(doc)
        for key in ("model.safetensors", "x/model.safetensors", "teams/x/model.safetensors", "_benchmarks/a"):
            for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
                assert not allows(doc, action, f"{bucket}/{key}"), f"{name}: {action} on {key} outside its prefix"
        assert not allows(doc, "s3:ListBucket", bucket), f"{name}: lists the whole bucket"
        for prefix in ("", "teams/", "teams/x/"):
            assert not allows(doc, "s3:ListBucket", bucket, s3__prefix=prefix), f"{name}: lists {prefix!r}"
        granted = {r.removeprefix(f"{bucket}/") for st in doc["Statement"] for r in st["Resource"] if r != bucket}
        team = name.removeprefix("platform-team-").removesuffix("-readers-read") if "-team-" in name else None
        own = "platform/" if team is None else f"teams/{team}/"
        assert granted and all(r.startswith(own) for r in granted), (
            f"{name}: a model identity reaches its own owner's prefix ({own}) only: {granted}"
        )
