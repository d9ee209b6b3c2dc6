"""The command line as a user meets it: exit codes, one line per problem, nothing written on error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stacks.load import ROOT
from tests.guard_support import cli


def bad_stack(tmp_path: Path) -> Path:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["inference-platform:cluster"]["vpc"]["cidr"] = "10.42.0.0/33"
    doc["config"]["inference-platform:cluster"]["bogus"] = 1
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def dev_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m stacks render dev --out ...`, run once for the tests that read what it wrote."""
    out = tmp_path_factory.mktemp("render") / "out"
    result = cli("render", "dev", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_render_writes_resources_manifests_helm_and_outputs(dev_out):
    out: Path = dev_out
    resources = json.loads((out / "resources.json").read_text())
    assert {"type", "name", "parent", "provider", "dependsOn", "inputs"} <= set(resources[0])
    assert any(r["type"] == "eks:index:Cluster" for r in resources)
    assert (out / "manifests").is_dir() and (out / "helm").is_dir()
    assert "[secret]" in (out / "outputs.json").read_text(), "the kubeconfig is never written in clear"


def test_render_of_a_bad_stack_exits_1_with_key_paths_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = cli("render", str(bad_stack(tmp_path)), "--out", str(out))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "inference-platform:cluster.vpc.cidr" in result.stderr
    assert "inference-platform:cluster.bogus: unknown key" in result.stderr
    assert not out.exists(), "nothing is written for an invalid stack"


def test_validate_checks_every_stack_by_default_without_loading_the_pulumi_sdk():
    """A PR check or an editor runs validate often: it reads the stack file and the rules, and none of
    the Pulumi SDK (about 1.5 s of imports) that only a render or `pulumi up` needs."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "stacks", "validate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Pulumi.dev.yaml: ok" in result.stdout
    imported = {
        line.rpartition("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    assert "stacks.rules" in imported and "components.engines" in imported, "the import log is read"
    sdk = sorted(m for m in imported if m.split(".")[0] in {"pulumi", "pulumi_aws", "pulumi_kubernetes"})
    assert not sdk, f"validate imported the Pulumi SDK: {sdk[:5]}"


def test_validate_prints_one_line_per_problem(tmp_path):
    result = cli("validate", str(bad_stack(tmp_path)))
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if "inference-platform:" in line]
    assert len(lines) == 2, result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_stack_name_is_a_clear_error():
    result = cli("render", "no-such-stack")
    assert result.returncode == 1 and "no such stack" in result.stderr and "Traceback" not in result.stderr


def test_rendered_manifests_keep_integers_integers(dev_out):
    deployment = yaml.safe_load((dev_out / "manifests" / "Deployment-inference-qwen3-8b.yaml").read_text())
    port = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert port == 8000 and isinstance(port, int), "a manifest is applied with 8000, not 8000.0"
