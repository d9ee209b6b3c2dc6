"""The CI workflows keep their shape: right triggers, least privilege, every action pinned by SHA,
credentials only by OIDC, `pulumi up` only on main behind an environment approval; and the PR
workflow runs exactly what `make check` (the local gate, .ci/run) runs, through make."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.__main__ import all_stack_files
from stacks.ci import PROGRAM, by_role, touched
from stacks.load import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^\s*-?\s*uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*\s*$")
OIDC = "aws-actions/configure-aws-credentials"
PULUMI = "pulumi/actions"
PR = ROOT / ".github" / "workflows" / "pr.yml"
MAKE_STEP = re.compile(r"^make((?:\s+[\w-]+)+)$")
# What the gate must contain (each in some command of `make -n check`), and what no workflow step may
# run except through make (a second definition of a check drifts from the first).
GATE = {
    "format": "ruff format --check .",
    "lint": "ruff check .",
    "types": "bin/mypy",
    "schema drift": "-m stacks schema --check",
    "validation": "-m stacks validate",
    "unit tests": "-m pytest",
    "render of every stack": "scripts/render-all.py",
    "chart render": "-m stacks charts",
    "security scan": "scripts/scan.sh",
}
CHECK_TOOLS = (
    "ruff",
    "mypy",
    "pytest",
    "checkov",
    "stacks validate",
    "stacks render",
    "stacks schema",
    "render-all",
    "scan.sh",
)


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if str(s.get("uses", "")).startswith(action + "@")]


def make_dry_run(*targets: str) -> set[str]:
    """The commands `make TARGETS` would run, as make prints them with -n (nothing is run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", *targets], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"make -n {' '.join(targets)}: {done.stderr}"
    return {line.strip() for line in done.stdout.splitlines() if line.strip() and not line.startswith("make")}


def make_targets_by_job(doc: dict[str, Any]) -> dict[str, list[list[str]]]:
    """Per job, the targets of each `make ...` step; a step that runs a check tool any other way fails."""
    by_job: dict[str, list[list[str]]] = {}
    for name, job in doc["jobs"].items():
        for step in job.get("steps", []):
            run = str(step.get("run", "")).strip()
            if not run:
                continue
            if match := MAKE_STEP.match(run):
                by_job.setdefault(name, []).append(match.group(1).split())
                continue
            for tool in CHECK_TOOLS:
                assert tool not in run, f"pr.yml {name} runs {tool} outside make (make check is its one definition)"
    return by_job


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


def test_make_check_is_the_whole_gate():
    commands = " ".join(make_dry_run("check"))
    for what, command in GATE.items():
        assert command in commands, f"make check runs the {what} ({command})"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert [line for line in ci if line.startswith("make")] == ["make check"], ".ci/run runs make check"


def test_make_check_renders_and_scans_every_stack_file():
    commands = [c.split() for c in make_dry_run("render-all", "scan")]
    render = next(c for c in commands if "scripts/render-all.py" in c)
    scan = next(c for c in commands if "scripts/scan.sh" in c)
    for path in all_stack_files():
        assert str(path.relative_to(ROOT)) in render, f"make render-all renders {path.name}"
        assert path.name.removeprefix("Pulumi.").removesuffix(".yaml") in scan, f"make scan scans {path.name}"


def test_make_scan_scans_the_chart_render_of_every_stack_beside_its_manifests():
    commands = make_dry_run("scan")
    assert any("-m stacks charts" in c for c in commands), "make scan templates the charts before it scans"
    assert any("-m scan" in c and "tests/test_chart_waivers.py" in c for c in commands), (
        "make scan runs the chart waivers' staleness tests, which the unit suite leaves out"
    )
    script = (ROOT / "scripts" / "scan.sh").read_text()
    for part, writer in (("manifests", "make render-all"), ("charts", "make charts")):
        assert f'scan "$stack" "$out/$stack/{part}" "{writer}"' in script, f"scan.sh scans <stack>/{part}"


def test_the_pr_workflow_runs_exactly_what_make_check_runs():
    doc = load(PR)
    gate = {
        name: steps for name, steps in make_targets_by_job(doc).items() if {t for s in steps for t in s} - {"install"}
    }
    assert gate, "the PR workflow runs make check's parts"
    ran = set().union(*(make_dry_run(*targets) for steps in gate.values() for targets in steps))
    check = make_dry_run("check")
    assert not check - ran, f"make check runs what no PR job runs: {sorted(check - ran)}"
    assert not ran - check, f"PR jobs run what make check does not: {sorted(ran - check)}"
    assert set(gate) <= set(doc["jobs"]["preview"]["needs"]), "previews wait for every job of the gate"


def test_pull_requests_are_checked_and_previewed_with_a_comment():
    doc = load(PR)
    assert set(doc["on"]) == {"pull_request"}, "the PR workflow runs on pull requests only"
    previews = [s for job in doc["jobs"].values() for s in steps_using(job, PULUMI)]
    assert previews and all(s["with"]["command"] == "preview" for s in previews), "a PR never runs pulumi up"
    assert all(s["with"]["comment-on-pr"] is True and s["with"]["policyPacks"] == "policypack" for s in previews)


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


@pytest.mark.parametrize(
    "path",
    [
        "components/platform.py",
        "stacks/resolve/models.py",
        "policypack/validators.py",
        "__main__.py",
        "Pulumi.yaml",
        "requirements.lock",
    ],
)
def test_every_part_of_the_program_a_preview_runs_previews_every_stack(path):
    assert (ROOT / path).is_file(), f"{path} is a file of the program (a rename must move the watch too)"
    assert touched([path], ["dev", "team-search"]) == ["dev", "team-search"]


def test_the_watched_paths_are_the_programs_and_the_policy_packs():
    """Every path the watch names exists, and every package the program or the policy pack imports is
    watched: a pack renamed without its watch would leave policy changes unpreviewed."""
    from tests.imports import PACKAGES

    assert all((ROOT / p.rstrip("/")).exists() for p in PROGRAM), PROGRAM
    assert {f"{pkg}/" for pkg in PACKAGES} <= set(PROGRAM), (PACKAGES, PROGRAM)


def test_platform_stacks_deploy_before_workloads_stacks(tmp_path):
    (tmp_path / "Pulumi.p.yaml").write_text("config:\n  inference-platform:stack: {role: platform}\n")
    (tmp_path / "Pulumi.w.yaml").write_text("config:\n  inference-platform:stack: {role: workloads}\n")
    assert by_role(["p", "w"], root=tmp_path) == {"platform": ["p"], "workloads": ["w"]}


def _scan(out: Path, *stacks: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHECKOV": "/bin/false"}  # never reached: no object to scan in these trees
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "scan.sh"), str(out), *stacks], capture_output=True, text=True, env=env
    )


def test_the_scan_fails_for_a_stack_whose_chart_render_is_missing(tmp_path):
    (tmp_path / "dev" / "manifests").mkdir(parents=True)
    result = _scan(tmp_path, "dev")
    assert result.returncode == 1 and "dev/charts does not exist" in result.stderr, result


def test_the_scan_says_once_that_the_charts_were_not_rendered_when_the_chart_check_skipped(tmp_path):
    (tmp_path / "dev" / "manifests").mkdir(parents=True)
    from stacks.charts import SKIPPED_MARKER

    assert f'"$out/{SKIPPED_MARKER}"' in (ROOT / "scripts" / "scan.sh").read_text(), "the marker stacks charts writes"
    (tmp_path / SKIPPED_MARKER).write_text("charts: skipped: no chart directory\n")
    result = _scan(tmp_path, "dev")
    assert result.returncode == 0, result
    assert result.stdout.count("not scanned: charts: skipped: no chart directory") == 1, result.stdout
