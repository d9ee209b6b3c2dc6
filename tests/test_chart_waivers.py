"""stacks/chart_waivers.py: the Checkov waivers of chart-rendered objects stay true and alive.

Every waiver matches an object some shipped stack's charts render, and Checkov still fails that object
on every check the waiver names (a fixed finding, a renamed object or a bumped chart leaves a dead
waiver, and this fails until it is removed or re-verified). `make scan` is what proves the rest: no
finding left unwaived. The two tests that template the charts and run Checkov (a minute) are marked
`scan`: `make scan` runs them right after the scan, the unit suite leaves them out. Each needs the pinned
helm, the chart directory and Checkov; a missing one skips by name.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks import chart_waivers, charts, conformance
from stacks.pipeline import check_file
from tests.conftest import ALL_STACKS, ROOT, rendered_stack

WAIVERS = chart_waivers.WAIVERS


def checkov() -> Path:
    path = Path(os.environ.get("CHECKOV") or ROOT / ".venv-scan" / "bin" / "checkov")
    if not path.is_file():
        pytest.skip(f"no checkov at {path} (make install-scan, or set CHECKOV)")
    return path


@cache
def chart_objects() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(chart, object) of every distinct object the shipped stacks' releases render (CRDs aside:
    no Checkov check reads one)."""
    root = charts.charts_dir()
    assert root is not None, "the tests that read it carry the charts marker"
    binary = charts.helm()
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in ALL_STACKS:
        rendered = rendered_stack(path)
        config = check_file(path).stack
        kube = config.cluster.kubernetes_version if config.cluster else "1.34"
        apis = charts.BASE_API_VERSIONS | {m["apiVersion"] for m in rendered.manifests() if not conformance.is_core(m)}
        for release in rendered.releases():
            r = charts._templated({**release, "skipCrds": True}, root, kube, apis, binary)
            for obj in r.objects:
                if obj["kind"] != "CustomResourceDefinition":
                    found.setdefault(json.dumps([r.chart, obj], sort_keys=True), (r.chart, obj))
    return tuple(found.values())


def matches(waiver: chart_waivers.Waiver) -> list[dict[str, Any]]:
    return [
        obj
        for chart, obj in chart_objects()
        if (chart, obj["kind"]) == (waiver.chart, waiver.kind)
        and fnmatch.fnmatchcase(obj["metadata"]["name"], waiver.name)
        and waiver.when(obj)
    ]


def test_every_waiver_reason_is_written_out_and_checkov_can_read_it():
    for w in WAIVERS:
        for check, why in w.checks.items():
            assert check.startswith(("CKV_K8S_", "CKV2_K8S_")), f"{w.chart} {w.kind}/{w.name}: {check}"
            assert len(why) >= 40, f"{w.chart} {w.kind}/{w.name} {check}: a reason, not a label: {why!r}"
            assert "=" not in why, f"{w.chart} {w.kind}/{w.name} {check}: Checkov splits the annotation at '='"


def test_the_annotations_number_on_after_those_an_object_already_has():
    obj = {"kind": "Deployment", "metadata": {"name": "karpenter", "annotations": {"checkov.io/skip1": "X=y"}}}
    out = chart_waivers.annotate("karpenter-1.14.1", obj)["metadata"]["annotations"]
    assert out["checkov.io/skip1"] == "X=y" and out["checkov.io/skip2"].startswith("CKV2_K8S_6=")
    assert out["checkov.io/skip3"].startswith("CKV_K8S_38="), out
    assert chart_waivers.annotate("karpenter-9.9.9", {"kind": "Deployment", "metadata": {"name": "karpenter"}}) == {
        "kind": "Deployment",
        "metadata": {"name": "karpenter"},
    }, "a waiver holds for the chart version its reason was checked against, no other"


@pytest.mark.charts
@pytest.mark.scan
@pytest.mark.parametrize("waiver", WAIVERS, ids=lambda w: f"{w.chart}:{w.kind}/{w.name}")
def test_every_waiver_matches_an_object_the_shipped_stacks_render(waiver):
    assert matches(waiver), f"{waiver.chart} renders no {waiver.kind} named {waiver.name!r} in any shipped stack"


@pytest.mark.charts
@pytest.mark.scan
def test_every_waived_check_still_fails_on_every_object_it_is_waived_for(tmp_path):
    binary = checkov()
    waived: dict[tuple[str, str], set[str]] = {}
    for i, (chart, obj) in enumerate(chart_objects()):
        # Every object, not only the waived ones: a graph check (CKV2_*) reads a binding with its role.
        (tmp_path / f"{i}.yaml").write_text(yaml.safe_dump(obj, sort_keys=False))
        if reasons := chart_waivers.waivers_for(chart, obj):
            waived[(f"/{i}.yaml", obj["kind"])] = set(reasons)
    assert waived
    checks = sorted({c for ids in waived.values() for c in ids})
    done = subprocess.run(
        [str(binary), "--framework", "kubernetes", "--skip-download", "-o", "json", "-d", str(tmp_path),
         "--check", ",".join(checks)],
        capture_output=True, text=True, env={**os.environ, "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true"}, check=False,
    )  # fmt: skip
    reports = json.loads(done.stdout)
    failed: dict[str, set[str]] = {}
    for report in reports if isinstance(reports, list) else [reports]:
        for f in report["results"]["failed_checks"]:
            failed.setdefault(f["file_path"], set()).add(f["check_id"])
    for (file, kind), ids in waived.items():
        obj = yaml.safe_load((tmp_path / file.lstrip("/")).read_text())
        dead = ids - failed.get(file, set())
        assert not dead, f"{kind}/{obj['metadata']['name']} passes {sorted(dead)} without its waiver: remove it"
