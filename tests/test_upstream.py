"""upstream.lock and `make upstream` (stacks/upstream.py), offline: the lock covers exactly what
stacks/versions.py pins, every locked file is fetched from a public URL or says how it was made, a fetched
file is written only with its locked digest, and the directories beside the checkout match the lock."""

from __future__ import annotations

import copy
import hashlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from stacks import upstream
from stacks.load import ROOT
from stacks.versions import CHARTS, CRD_SOURCES

LOCK = upstream.read_lock()


def test_the_lock_covers_every_chart_and_crd_source_stacks_versions_pins_and_nothing_else():
    assert upstream.uncovered(LOCK) == []
    assert {f"chart {k}" for k in CHARTS} | {f"crds {k}" for k in CRD_SOURCES} == set(LOCK["pins"])


def test_a_pin_without_a_lock_entry_fails_naming_it():
    lock = copy.deepcopy(LOCK)
    del lock["pins"]["chart karpenter"]
    lock["pins"]["chart keda"]["version"] = "2.19.0"
    problems = upstream.uncovered(lock)
    assert any(p.startswith("chart karpenter 1.14.1: pinned in stacks/versions.py, no entry") for p in problems)
    assert any("chart keda: stacks/versions.py pins 2.20.2, upstream.lock has 2.19.0" in p for p in problems)


def test_every_pinned_chart_names_its_folder_or_says_why_it_has_none():
    for key, pin in LOCK["pins"].items():
        if key.startswith("chart "):
            assert pin["folder"] or pin["missing"], key
            if pin["folder"]:
                assert any(f["path"].startswith(pin["folder"] + "/") for f in LOCK["files"]), key
    assert "nearest on file is charts/dynamo-platform-1.4.0" in LOCK["pins"]["chart dynamo"]["missing"]


def test_every_locked_file_has_an_https_url_or_says_how_it_was_made():
    for entry in upstream.entries(LOCK):
        assert len(entry.sha256) == 64, entry.path
        assert entry.path.split("/", 1)[0] in ("schemas", "charts"), entry.path
        if entry.url is None:
            assert entry.origin, f"{entry.path}: no URL and no origin"
        else:
            assert entry.url.startswith("https://"), entry.url
    by_path = {e.path: e for e in upstream.entries(LOCK)}
    nodepools = by_path["schemas/karpenter/v1.14.1/crds/karpenter.sh_nodepools.yaml"].url
    assert nodepools == (
        "https://github.com/aws/karpenter-provider-aws/raw/bde00654cd31/pkg/apis/crds/karpenter.sh_nodepools.yaml"
    )
    assert by_path["charts/karpenter-crd-1.14.1/Chart.yaml"].url is None, "the release bumps its version"
    assert "1.13.0 -> 1.14.1" in by_path["charts/karpenter-crd-1.14.1/Chart.yaml"].origin
    assert by_path["charts/karpenter-1.14.1/Chart.yaml"].url == (
        "https://github.com/aws/karpenter-provider-aws/raw/1d927085dd81/charts/karpenter/Chart.yaml"
    ), "the same bytes as the post-release commit's, whose URL the schema directory records"
    efa = by_path["charts/aws-efa-k8s-device-plugin-v0.5.30/Chart.yaml"].url
    assert efa == (
        "https://aws.github.io/eks-charts/aws-efa-k8s-device-plugin-v0.5.30.tgz#aws-efa-k8s-device-plugin/Chart.yaml"
    ), "a chart unpacked from its published archive is fetched from it"


def _tree(tmp_path: Path) -> dict[str, Path]:
    roots = {"schemas": tmp_path / "schemas", "charts": tmp_path / "charts"}
    for root in roots.values():
        root.mkdir()
    return roots


def _lock(*files: dict[str, str | None]) -> dict[str, object]:
    return {"pins": {}, "files": list(files)}


def test_fetch_writes_a_file_whose_digest_is_the_locked_one_and_reads_an_archive_member(tmp_path):
    roots = _tree(tmp_path)
    crd, values = b"kind: CustomResourceDefinition\n", b"image: x\n"
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        info = tarfile.TarInfo("plugin/values.yaml")
        info.size = len(values)
        tar.addfile(info, io.BytesIO(values))
    served = {"https://x/crd.yaml": crd, "https://x/plugin.tgz": archive.getvalue()}
    lock = _lock(
        {"path": "schemas/a/crd.yaml", "sha256": hashlib.sha256(crd).hexdigest(), "url": "https://x/crd.yaml"},
        {
            "path": "charts/plugin-1/values.yaml",
            "sha256": hashlib.sha256(values).hexdigest(),
            "url": "https://x/plugin.tgz#plugin/values.yaml",
        },
    )
    assert upstream.fetch(lock, roots, served.__getitem__) == []
    assert (roots["schemas"] / "a/crd.yaml").read_bytes() == crd
    assert (roots["charts"] / "plugin-1/values.yaml").read_bytes() == values
    assert upstream.verify(lock, roots) == []


def test_a_fetched_file_with_another_digest_is_not_written_and_fails_naming_the_file_and_both_digests(tmp_path):
    roots = _tree(tmp_path)
    lock = _lock({"path": "schemas/a/crd.yaml", "sha256": "0" * 64, "url": "https://x/crd.yaml"})
    problems = upstream.fetch(lock, roots, lambda url: b"changed upstream\n")
    got = hashlib.sha256(b"changed upstream\n").hexdigest()
    assert problems == [f"schemas/a/crd.yaml: https://x/crd.yaml has sha256 {got}, upstream.lock has {'0' * 64}"]
    assert not (roots["schemas"] / "a/crd.yaml").exists()


def test_a_file_without_a_public_url_is_reported_with_how_it_was_made(tmp_path):
    roots = _tree(tmp_path)
    lock = _lock({"path": "charts/k-1/Chart.yaml", "sha256": "0" * 64, "url": None, "origin": "version edited"})
    assert upstream.fetch(lock, roots, lambda url: b"") == ["charts/k-1/Chart.yaml: no public URL; version edited"]


def test_verify_names_a_changed_a_missing_and_an_unlocked_file(tmp_path):
    roots = _tree(tmp_path)
    (roots["schemas"] / "a.yaml").write_bytes(b"edited\n")
    (roots["charts"] / "extra.yaml").write_bytes(b"x\n")
    lock = _lock(
        {"path": "schemas/a.yaml", "sha256": "1" * 64, "url": "https://x/a"},
        {"path": "schemas/b.yaml", "sha256": "2" * 64, "url": "https://x/b"},
    )
    edited = hashlib.sha256(b"edited\n").hexdigest()
    assert upstream.verify(lock, roots) == [
        f"schemas/a.yaml: sha256 {edited} on disk, upstream.lock has {'1' * 64}",
        "schemas/b.yaml: missing (`make upstream` fetches it)",
        "charts/extra.yaml: not in upstream.lock (`python -m stacks.upstream --update-lock`)",
    ]


@pytest.mark.schemas
@pytest.mark.charts
def test_the_directories_beside_the_checkout_are_the_locked_files():
    roots = upstream.folders()
    assert upstream.verify(LOCK, roots) == []
    assert upstream.build_lock(roots) == LOCK, "upstream.lock is what --update-lock writes from them"


def test_make_upstream_fetches_and_make_upstream_verify_checks_offline():
    makefile = (ROOT / "Makefile").read_text()
    assert "\t$(BIN)/python -m stacks.upstream fetch\n" in makefile
    assert "\t$(BIN)/python -m stacks.upstream verify\n" in makefile
    result = subprocess.run(
        [sys.executable, "-m", "stacks.upstream", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "--update-lock" in result.stdout, result.stderr
