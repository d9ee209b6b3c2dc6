"""`python -m stacks diff`: what an update creates, replaces, updates and deletes, and the refusal to
replace what holds state unless the stack says it is intended (stacks/diff.py, stacks/replacements.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from stacks.diff import INTENDED_KEY, Diff, compare, refusals
from stacks.render import Rendered, plain
from stacks.replacements import BUCKET, EKS_CLUSTER, FSX, STATEFUL, replacing_inputs, rows

from .conftest import DEV, EXAMPLES_DIR, ROOT, render_sections, rendered_stack, sections_of

FSX_STACK = EXAMPLES_DIR / "Pulumi.storage-fsx.yaml"


def resources(rendered: Rendered) -> list[dict[str, Any]]:
    """A render's resources as resources.json holds them (what `stacks diff` compares)."""
    return [plain(r.as_json()) for r in rendered.resources]


def diff_of(base: Rendered, new: Rendered, intended: list[str] | None = None) -> Diff:
    result = compare(resources(base), resources(new), Diff("base", "new", intended=intended or []))
    result.refused = refusals(result)
    return result


def named(changes: list[Any], kind: str) -> dict[str, Any]:
    return {c.name: c for c in changes if c.type == kind}


def test_a_diff_of_two_stack_files_lists_what_is_created_replaced_and_deleted():
    new = sections_of(FSX_STACK)
    assert new["storage"]["fsx"]["storageCapacityGiB"] == 2400, "the example's file system"
    new["storage"]["fsx"]["storageCapacityGiB"] = 1200  # FSx grows in place, never shrinks
    gone = new["models"].pop(1)["name"]
    new["nodePools"].append({"name": "cpu", "accelerator": "none", "instanceTypes": ["m7i.xlarge"]})
    result = diff_of(rendered_stack(FSX_STACK), render_sections(new))
    created = named(result.created, "kubernetes:karpenter.sh/v1:NodePool")
    assert "platform-capacity-nodepool-cpu" in created, "the new pool's NodePool is created"
    fs = named(result.replaced, FSX)
    assert list(fs) == ["platform-storage-fsx-fs"] and "storageCapacity" in fs["platform-storage-fsx-fs"].why[0]
    deleted = {c.name for c in result.deleted if c.type == "kubernetes:apps/v1:Deployment"}
    assert any(gone in name for name in deleted), (gone, deleted)


def test_replacing_a_stateful_resource_is_refused_naming_it_the_input_and_the_key_that_allows_it():
    new = sections_of(FSX_STACK)
    new["storage"]["fsx"]["storageCapacityGiB"] = 1200
    result = diff_of(rendered_stack(FSX_STACK), render_sections(new))
    assert [r.name for r in result.refused] == ["platform-storage-fsx-fs"], result.refused
    message = str(result.refused[0])
    for words in ("storageCapacity", "storage.fsx.storageCapacityGiB", INTENDED_KEY, "[platform-storage-fsx-fs]"):
        assert words in message, (words, message)


def test_a_stateful_replacement_the_stack_lists_as_intended_is_allowed():
    new = sections_of(FSX_STACK)
    new["storage"]["fsx"]["storageCapacityGiB"] = 1200
    new["stack"]["intendedReplacements"] = ["platform-storage-fsx-fs"]
    rendered = render_sections(new)  # the key validates, and changes nothing the program renders
    result = diff_of(rendered_stack(FSX_STACK), rendered, intended=["platform-storage-fsx-fs"])
    assert named(result.replaced, FSX) and not result.refused, "listed, so it is reported but not refused"


def test_renaming_the_cluster_is_refused_for_the_bucket_with_the_fix_and_a_pinned_name_keeps_the_bucket():
    base = rendered_stack(DEV)
    renamed = sections_of(DEV)
    renamed["cluster"]["name"] = "inference-dev2"
    result = diff_of(base, render_sections(renamed))
    refused = {r.name: str(r) for r in result.refused}
    bucket = refused.get("platform-storage-bucket-bucket", "")
    assert "bucketPrefix" in bucket and "storage.modelBucket.name" in bucket, refused
    assert "cluster.name" in refused.get("platform-cluster-eks", ""), "the cluster itself is replaced too"
    prefix = next(r for r in resources(base) if r["type"] == BUCKET)["inputs"]["bucketPrefix"]
    renamed["storage"]["modelBucket"] = {"create": True, "name": f"{prefix}abc123"}  # the live name
    kept = diff_of(base, render_sections(renamed))
    assert not named(kept.replaced, BUCKET), "a pinned name equal to the live one keeps the bucket"


def test_an_alias_turns_a_urn_change_into_an_update_and_without_one_a_stateful_urn_change_is_refused():
    bucket = {"urn": "urn:a::old", "type": BUCKET, "name": "old", "inputs": {"bucket": "b"}}
    moved = {"urn": "urn:a::new", "type": BUCKET, "name": "new", "inputs": {"bucket": "b"}}
    aliased = dict(moved, aliases=["urn:a::old"])
    result = compare([bucket], [aliased], Diff("b", "n"))
    assert [c.name for c in result.updated] == ["new"] and not result.created and not result.deleted
    result = compare([bucket], [moved], Diff("b", "n"))
    assert [c.name for c in result.replaced] == ["old"] and "no alias" in result.replaced[0].why[0]
    assert [r.name for r in refusals(result)] == ["old"]


def test_the_table_covers_every_stateful_type_and_the_kubernetes_immutable_fields():
    assert all(rows(kind) for kind in STATEFUL), "every type that holds state has its replace-on-change inputs"
    pvc = "kubernetes:core/v1:PersistentVolumeClaim"
    assert replacing_inputs(pvc, {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}, {"spec": {}})
    sc = "kubernetes:storage.k8s.io/v1:StorageClass"
    assert replacing_inputs(sc, {"parameters": {"a": "1"}}, {"parameters": {"a": "2"}})
    deploy = "kubernetes:apps/v1:Deployment"
    assert replacing_inputs(deploy, {"spec": {"selector": {"a": 1}}}, {"spec": {"selector": {"a": 2}}})
    assert not replacing_inputs(deploy, {"spec": {"replicas": 1}}, {"spec": {"replicas": 2}}), "scaled in place"
    job = "kubernetes:batch/v1:Job"
    assert replacing_inputs(job, {"spec": {"template": {"x": 1}}}, {"spec": {"template": {"x": 2}}})
    moved = {"metadata": {"name": "a", "namespace": "x"}}
    assert replacing_inputs("kubernetes:core/v1:Service", moved, {"metadata": {"name": "a", "namespace": "y"}})
    assert replacing_inputs(EKS_CLUSTER, {"name": "a"}, {"name": "b"})
    assert not replacing_inputs(FSX, {"storageCapacity": 1200}, {"storageCapacity": 2400}), "FSx grows in place"
    assert not replacing_inputs(BUCKET, {"bucketPrefix": "x-"}, {}), "bucketPrefix is Computed: dropping it keeps it"


# --- the command against a git revision ---------------------------------------------------------

PROGRAM = ("__main__.py", "Pulumi.yaml", "Pulumi.dev.yaml", "components", "stacks")


def test_a_git_revision_base_is_rendered_with_its_own_code_and_a_refusal_exits_1(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in PROGRAM:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / name)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    stack = repo / "Pulumi.dev.yaml"
    doc = yaml.safe_load(stack.read_text())
    doc["config"]["inference-platform:models"].pop(1)  # the inferentia model goes
    doc["config"]["inference-platform:cluster"]["name"] = "inference-dev2"
    stack.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = subprocess.run(
        [sys.executable, "-m", "stacks", "diff", "HEAD:Pulumi.dev.yaml", "Pulumi.dev.yaml", "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, f"a cluster rename is refused: {done.stderr}"
    result = json.loads(done.stdout)
    assert any(d["type"] == "kubernetes:apps/v1:Deployment" for d in result["deleted"]), "the removed model's"
    assert {r["name"] for r in result["refused"]} >= {"platform-cluster-eks", "platform-storage-bucket-bucket"}


def test_the_pr_preview_shows_stacks_diff_against_the_base_commit_beside_the_preview():
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "pr.yml").read_text())
    steps = doc["jobs"]["preview"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0, "the base commit is fetched, so diff can render it"
    previews = [i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@")]
    diffs = [i for i, s in enumerate(steps) if "-m stacks diff" in str(s.get("run", ""))]
    assert previews and diffs and diffs[0] > previews[0], "stacks diff runs in the preview job, after the preview"
    step = steps[diffs[0]]
    assert '"$BASE_SHA:Pulumi.$STACK.yaml" "Pulumi.$STACK.yaml"' in step["run"], "the base commit against this one"
    assert step["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert step["env"]["STACK"] == "${{ matrix.stack }}" and "GITHUB_STEP_SUMMARY" in step["run"]
    assert step["if"] == "${{ !cancelled() }}" and 'exit "$status"' in step["run"], "shown even if the preview fails"


def test_the_operator_guide_and_the_readme_document_stacks_diff_and_the_upgrade_rules():
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    section = guide.split("\n## Upgrades\n", 1)[1].split("\n## ", 1)[0]
    for words in (
        "stacks diff",
        "intendedReplacements",
        "acceptDowntime",
        "terminationGracePeriod",
        "modelBucket.name",
    ):
        assert words in section, f"the Upgrades section explains {words}"
    assert "| `diff BASE NEW [--json]` |" in (ROOT / "README.md").read_text(), "the README's command list has diff"
