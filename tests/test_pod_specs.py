"""What the schemas cannot see: every pod of every stack file must be one the API server accepts
and that can start (unique volume, container and env names; every mount has its volume). Each
shipped stack is rendered once per test process (tests/conftest.py stack_manifests) and every check
reads that render."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.conftest import ALL_STACKS, EXAMPLES, stack_manifests


def pod_specs(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, pod spec) for every pod template in a manifest, custom resources included."""
    found: list[tuple[str, dict[str, Any]]] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list):
                found.append((path, node))
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(obj.get("spec"), "spec")
    return found


def problems(pod: dict[str, Any]) -> list[str]:
    out = []
    volumes = [v["name"] for v in pod.get("volumes", [])]
    out += [f"volume {n} twice" for n, c in Counter(volumes).items() if c > 1]
    containers = [*pod.get("initContainers", []), *pod["containers"]]
    names = [c["name"] for c in containers]
    out += [f"container {n} twice" for n, c in Counter(names).items() if c > 1]
    for c in containers:
        envs = [e["name"] for e in c.get("env", [])]
        out += [f"{c['name']}: env {n} twice" for n, k in Counter(envs).items() if k > 1]
        for mount in c.get("volumeMounts", []):
            if mount["name"] not in volumes:
                out.append(f"{c['name']}: mount {mount['name']} has no volume")
    return out


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_pod_has_unique_names_and_mounts_only_its_volumes(path):
    failures = {}
    for obj in stack_manifests(path):
        for where, pod in pod_specs(obj):
            if found := problems(pod):
                failures[f"{obj['kind']}/{obj['metadata'].get('name')} {where}"] = found
    assert not failures, failures


def start_problems(pod: dict[str, Any]) -> list[str]:
    """What makes the kubelet refuse a container before it runs: runAsNonRoot with no user id to
    check (these images' own user is root, so the kubelet refuses to start them) or with uid 0."""
    out = []
    pod_ctx = pod.get("securityContext") or {}
    for c in [*pod.get("initContainers", []), *pod["containers"]]:
        ctx = {**pod_ctx, **(c.get("securityContext") or {})}
        if ctx.get("runAsNonRoot") and ctx.get("runAsUser") in (None, 0):
            out.append(f"{c['name']}: runAsNonRoot without a non-root runAsUser")
    return out


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_no_container_is_refused_by_the_kubelets_non_root_check(path):
    failures = {}
    for obj in stack_manifests(path):
        for where, pod in pod_specs(obj):
            if found := start_problems(pod):
                failures[f"{obj['kind']}/{obj['metadata'].get('name')} {where}"] = found
    assert not failures, failures


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_the_platforms_own_workloads_drop_every_capability(path):
    """Model pods (engines and their preparation steps) and the LiteLLM proxy: no capability."""
    failures = []
    for obj in stack_manifests(path):
        if obj["kind"] not in ("Deployment", "StatefulSet") or obj["metadata"]["namespace"] == "monitoring":
            continue
        pod = obj["spec"]["template"]["spec"]
        for c in [*pod.get("initContainers", []), *pod["containers"]]:
            ctx = c.get("securityContext") or {}
            if ctx.get("capabilities", {}).get("drop") != ["ALL"] or ctx.get("allowPrivilegeEscalation") is not False:
                failures.append(f"{obj['metadata']['name']}/{c['name']}")
    assert not failures, failures


def test_on_fsx_the_cache_writers_run_as_root_with_no_capability():
    """The Lustre root directory belongs to root and fsGroup does not apply to it."""
    (fsx,) = [p for p in EXAMPLES if p.name == "Pulumi.storage-fsx.yaml"]
    for obj in stack_manifests(fsx):
        if obj["kind"] != "Deployment":
            continue
        pod = obj["spec"]["template"]["spec"]
        writers = [
            c for c in pod.get("initContainers", []) if any(m["name"] == "model-cache" for m in c["volumeMounts"])
        ]
        for c in writers:
            ctx = c["securityContext"]
            assert ctx["runAsUser"] == 0 and ctx["runAsNonRoot"] is False, c["name"]
            assert ctx["capabilities"] == {"drop": ["ALL"]}
        engine = pod["containers"][0]
        assert {**pod.get("securityContext", {}), **engine["securityContext"]}.get("runAsUser") != 0


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_root_container_says_why_on_its_workload(path):
    """A container that runs as root carries the reason as its scanner waiver; the others carry none."""
    for obj in stack_manifests(path):
        if obj["kind"] not in ("Deployment", "StatefulSet", "DaemonSet"):
            continue
        pod = obj["spec"]["template"]["spec"]
        pod_ctx = pod.get("securityContext") or {}
        root = [
            c["name"]
            for c in [*pod.get("initContainers", []), *pod["containers"]]
            if {**pod_ctx, **(c.get("securityContext") or {})}.get("runAsUser") in (None, 0)
        ]
        waivers = [v for k, v in (obj["metadata"].get("annotations") or {}).items() if k.startswith("checkov.io/skip")]
        root_waivers = [w for w in waivers if w.startswith("CKV_K8S_23=")]
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        if root:
            assert root_waivers and len(root_waivers[0]) > len("CKV_K8S_23=") + 20, (name, root)
        else:
            assert not root_waivers, f"{name} waives a root check it does not need"
