"""Issue 14, item 2: waivers that tell the truth.

.checkov.yaml skips a check for every object only where its reason holds for every object the platform
renders; anything whose reason depends on the workload is waived on that object
(`checkov.io/skipN: CHECK=reason`), and the reason matches what the object does: a container that runs
privileged, as root, below uid 10000 or with a writable root carries the waiver for it, saying so; a
container that does not, carries none. (Pods inside custom resources, a DynamoGraphDeployment or a
RayService, are outside Checkov's Kubernetes checks and so outside this test.)
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.conftest import ALL_STACKS, ROOT, rendered_stack

WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "LeaderWorkerSet"}
# The global skips and what each reason rests on (true of every object the platform renders).
GLOBAL = {"CKV_K8S_15", "CKV_K8S_43", "CKV_K8S_11"}


def waivers(obj: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in (obj["metadata"].get("annotations") or {}).items():
        if key.startswith("checkov.io/skip"):
            check, _, why = value.partition("=")
            out[check] = why
    return out


def containers(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, effective securityContext) of every container and init container of the pod template
    (a LeaderWorkerSet's two: the leader's and the workers')."""
    spec = obj["spec"]
    group = spec.get("leaderWorkerTemplate")
    templates = [group["leaderTemplate"], group["workerTemplate"]] if group else [spec["template"]]
    found = []
    for template in templates:
        pod = template["spec"]
        base = pod.get("securityContext") or {}
        found += [
            (c["name"], {**base, **(c.get("securityContext") or {})})
            for c in [*pod.get("initContainers", []), *pod["containers"]]
        ]
    return found


def test_the_global_skips_are_only_those_whose_reason_holds_for_every_object():
    config = yaml.safe_load((ROOT / ".checkov.yaml").read_text())
    assert set(config["skip-check"]) == GLOBAL
    text = (ROOT / ".checkov.yaml").read_text()
    for check in GLOBAL:
        assert f"# {check} " in text, f"{check} is skipped without its reason"


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_privileged_root_low_uid_or_writable_container_carries_its_own_truthful_waiver(path):
    seen = 0
    for obj in rendered_stack(path).manifests():
        if obj["kind"] not in WORKLOADS:
            continue
        name = f"{obj['kind']}/{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        given = waivers(obj)
        ctxs = containers(obj)
        privileged = any(c.get("privileged") for _, c in ctxs)
        root = any(c.get("runAsUser") in (None, 0) or c.get("runAsNonRoot") is not True for _, c in ctxs)
        low_uid = any((c.get("runAsUser") or 0) < 10000 for _, c in ctxs)
        writable = any(c.get("readOnlyRootFilesystem") is not True for _, c in ctxs)
        needed = {
            "CKV_K8S_16": privileged,
            "CKV_K8S_23": root,
            "CKV_K8S_40": low_uid,
            "CKV_K8S_22": writable,
        }
        for check, needs in needed.items():
            if needs:
                assert len(given.get(check, "")) >= 40, f"{name}: {check} is needed and not waived with a reason"
            else:
                assert check not in given, f"{name} waives {check}, which it does not need"
        if low_uid:
            why = given["CKV_K8S_40"]
            if root:
                assert "root" in why, f"{name}: runs as root, but its waiver says {why!r}"
            else:
                uids = {c.get("runAsUser") for _, c in ctxs}
                assert all(f"uid {u}" in why for u in uids), f"{name}: runs as {uids}, its waiver says {why!r}"
        if privileged:
            assert "privileged" in given["CKV_K8S_22"] and "privileged" in given["CKV_K8S_16"], name
        seen += 1
    assert seen or path.name in {"Pulumi.capacity.yaml", "Pulumi.platform.yaml"}, "the walk saw the workloads"
