"""The CI workflows keep their shape: right triggers, least privilege, every action pinned by SHA,
credentials only by OIDC, `pulumi up` only on main behind an environment approval."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.ci import by_role, touched
from stacks.load import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^\s*-?\s*uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*\s*$")
OIDC = "aws-actions/configure-aws-credentials"
PULUMI = "pulumi/actions"


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if str(s.get("uses", "")).startswith(action + "@")]


def test_there_is_a_pr_workflow_and_a_deploy_workflow():
    assert {p.name for p in WORKFLOWS} >= {"pr.yml", "deploy.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_full_commit_sha_with_its_version(path):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if re.match(r"^\s*-?\s*uses:", line):
            assert PINNED.match(line), f"{path.name}:{number} must be owner/repo@<40-hex sha> # vX.Y.Z: {line.strip()}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_permissions_are_least_privilege(path):
    doc = load(path)
    assert doc["permissions"] == {"contents": "read"}, "the workflow default grants only read"
    for name, job in doc["jobs"].items():
        perms = job.get("permissions")
        assert perms is not None, f"{name} states its permissions"
        assert perms.get("contents") == "read", name
        uses_oidc = bool(steps_using(job, OIDC))
        assert (perms.get("id-token") == "write") == uses_oidc, f"{name}: id-token: write only where OIDC is used"
        comments = any(s.get("with", {}).get("comment-on-pr") is True for s in steps_using(job, PULUMI))
        assert (perms.get("pull-requests") == "write") == comments, f"{name}: pull-requests: write only to comment"
        assert set(perms) <= {"contents", "id-token", "pull-requests"}, f"{name} asks for more than it needs"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_aws_credentials_come_only_from_oidc(path):
    text = path.read_text()
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text, "no long-lived keys"
    for job in load(path)["jobs"].values():
        for step in steps_using(job, OIDC):
            assert step["with"]["role-to-assume"], "credentials come from assuming a role"


def test_pull_requests_are_checked_and_previewed_with_a_comment():
    doc = load(ROOT / ".github" / "workflows" / "pr.yml")
    assert set(doc["on"]) == {"pull_request"}, "the PR workflow runs on pull requests only"
    runs = " ".join(s.get("run", "") for job in doc["jobs"].values() for s in job.get("steps", []))
    for command in ("make lint", "make typecheck", "make test", "stacks validate", "stacks render", "checkov"):
        assert command in runs, f"the PR workflow runs {command}"
    assert "stacks schema --check" in runs, "the editor schema is checked for drift"
    previews = [s for job in doc["jobs"].values() for s in steps_using(job, PULUMI)]
    assert previews and all(s["with"]["command"] == "preview" for s in previews), "a PR never runs pulumi up"
    assert all(s["with"]["comment-on-pr"] is True and s["with"]["policyPacks"] == "policies" for s in previews)


def test_pulumi_up_runs_only_on_main_behind_an_environment_approval():
    doc = load(ROOT / ".github" / "workflows" / "deploy.yml")
    assert doc["on"] == {"push": {"branches": ["main"]}}, "deploy only from main"
    ups = [(name, job) for name, job in doc["jobs"].items() for s in steps_using(job, PULUMI)]
    assert ups, "the deploy workflow runs pulumi up"
    for name, job in ups:
        assert job.get("environment") == "production", f"{name} waits for the production environment's approval"
        assert "checks" in job["needs"], f"{name} runs only after the checks pass"
    for path in WORKFLOWS:
        for job in load(path)["jobs"].values():
            for step in steps_using(job, PULUMI):
                if step["with"]["command"] == "up":
                    assert path.name == "deploy.yml", f"{path.name} must not run pulumi up"


def test_the_checkov_skips_are_each_justified_in_place():
    lines = (ROOT / ".checkov.yaml").read_text().splitlines()
    skips = yaml.safe_load("\n".join(lines))["skip-check"]
    assert skips, "the scan runs with a reviewed skip list"
    for check in skips:
        index = next(i for i, line in enumerate(lines) if line.strip() == f"- {check}")
        assert lines[index - 1].strip().startswith("#") and check in "\n".join(lines[max(0, index - 4) : index]), (
            f"{check} is skipped without a reason above it"
        )


def test_a_program_change_previews_every_stack_and_a_stack_file_change_only_that_stack():
    stacks = ["dev", "platform-prod", "team-search"]
    assert touched(["components/platform.py"], stacks) == stacks
    assert touched(["Pulumi.team-search.yaml"], stacks) == ["team-search"]
    assert touched(["README.md", "stacks/examples/Pulumi.platform.yaml"], stacks) == []


def test_platform_stacks_deploy_before_workloads_stacks(tmp_path):
    (tmp_path / "Pulumi.p.yaml").write_text("config:\n  inference-platform:stack: {role: platform}\n")
    (tmp_path / "Pulumi.w.yaml").write_text("config:\n  inference-platform:stack: {role: workloads}\n")
    assert by_role(["p", "w"], root=tmp_path) == {"platform": ["p"], "workloads": ["w"]}
