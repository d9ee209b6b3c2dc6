"""Every rendered object of every example stack against upstream schemas.

Core objects: kubernetes-validate (strict) at the stack's Kubernetes version. Custom resources: the
upstream CRD's openAPIV3Schema, closed to unknown fields. Helm values: keys the pinned chart has.
The schema directory comes from INFERENCE_PLATFORM_SCHEMAS (CI: ../shared/schemas); without it
the custom-resource and Helm checks skip with a message.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from stacks import conformance
from stacks.pipeline import check_file
from tests.conftest import ALL_STACKS, rendered_stack

SCHEMAS = conformance.schema_dir()
needs_schemas = pytest.mark.schemas


@cache
def rendered(path: Path) -> tuple[str, list[dict], list[dict]]:
    """The stack's Kubernetes version, objects and releases, from the session's one render of it."""
    config = check_file(path).stack
    result = rendered_stack(path)
    version = config.cluster.kubernetes_version if config.cluster else "1.34"
    return version, result.manifests(), result.releases()


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_core_object_passes_the_kubernetes_schema(path):
    version, manifests, _ = rendered(path)
    failures = {
        f"{m['kind']}/{m['metadata'].get('name')}": errs
        for m in manifests
        if conformance.is_core(m) and (errs := conformance.validate_core(m, version))
    }
    assert not failures, failures


@needs_schemas
@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_custom_resource_passes_its_upstream_crd(path):
    assert SCHEMAS is not None
    _, manifests, _ = rendered(path)
    failures = {
        f"{m['apiVersion']} {m['kind']}/{m['metadata'].get('name')}": errs
        for m in manifests
        if not conformance.is_core(m)
        and not conformance.unvalidated(m, SCHEMAS)
        and (errs := conformance.validate_custom(m, SCHEMAS))
    }
    assert not failures, failures


@needs_schemas
@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_custom_resources_whose_crd_is_not_on_file_are_reported_not_passed(path):
    """Kinds in conformance.CRDS_NOT_ON_FILE cannot be checked until their CRD is fetched: name them."""
    assert SCHEMAS is not None
    _, manifests, _ = rendered(path)
    missing = sorted(
        f"{m['apiVersion']} {m['kind']}/{m['metadata'].get('namespace', '')}/{m['metadata'].get('name')}"
        for m in manifests
        if not conformance.is_core(m) and conformance.unvalidated(m, SCHEMAS)
    )
    if missing:
        pytest.skip(f"no CRD on file, not schema-checked (see docs/design.md 'Schemas'): {', '.join(missing)}")


@needs_schemas
def test_only_the_listed_kinds_may_go_unvalidated():
    assert SCHEMAS is not None
    pod = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor", "metadata": {"name": "x"}}
    assert conformance.unvalidated(pod, SCHEMAS) != conformance.crd_on_file(
        SCHEMAS, "monitoring.coreos.com", "PodMonitor"
    )
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}}
    assert not conformance.unvalidated(unknown, SCHEMAS), "an unlisted kind without a CRD must fail, not skip"
    assert conformance.validate_custom(unknown, SCHEMAS), "an unlisted kind without a CRD is an error"


def chart_name(rel: dict) -> str:
    return rel["chart"].rsplit("/", 1)[-1]


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_released_chart_has_a_values_check(path):
    """A chart the platform installs without an entry in CHART_VALUES would go unchecked: refuse it."""
    _, _, releases = rendered(path)
    unchecked = sorted({chart_name(r) for r in releases} - set(conformance.CHART_VALUES) - conformance.VALUELESS_CHARTS)
    assert not unchecked, f"add these charts' values files to conformance.CHART_VALUES: {unchecked}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_charts_installed_with_defaults_get_no_values(path):
    _, _, releases = rendered(path)
    given = {r["name"]: r["values"] for r in releases if chart_name(r) in conformance.VALUELESS_CHARTS}
    assert not any(given.values()), given


def test_values_files_not_on_file_say_where_upstream_keeps_them():
    listed = {rel for files, _ in conformance.CHART_VALUES.values() for _, rel in files}
    assert set(conformance.VALUES_NOT_ON_FILE) <= listed


@needs_schemas
@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_helm_value_key_exists_in_the_pinned_chart(path):
    assert SCHEMAS is not None
    _, _, releases = rendered(path)
    failures = {}
    for rel in releases:
        problems = conformance.validate_values(chart_name(rel), rel["values"], SCHEMAS)
        if problems:
            failures[rel["name"]] = problems
    assert not failures, failures


@needs_schemas
@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_releases_whose_chart_values_are_not_on_file_are_reported_not_passed(path):
    """Only the files listed in VALUES_NOT_ON_FILE may be absent; their releases are named as skipped."""
    assert SCHEMAS is not None
    _, _, releases = rendered(path)
    missing = {rel["name"]: conformance.values_missing(SCHEMAS, chart_name(rel)) for rel in releases}
    unexplained = {n: [f for f in files if f not in conformance.VALUES_NOT_ON_FILE] for n, files in missing.items()}
    assert not any(unexplained.values()), f"values files missing from {SCHEMAS}: {unexplained}"
    skipped = sorted(n for n, files in missing.items() if files)
    if skipped:
        pytest.skip(f"chart values not on file, keys not checked (see docs/design.md 'Schemas'): {', '.join(skipped)}")


@needs_schemas
def test_the_strict_crd_check_catches_a_misspelled_field():
    assert SCHEMAS is not None
    bad = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "kubelet": {"maxPods": 10},
                }
            }
        },
    }
    errors = conformance.validate_custom(bad, SCHEMAS)
    assert any("kubelet" in e for e in errors), errors


@needs_schemas
def test_the_values_check_catches_a_key_the_chart_does_not_have():
    assert SCHEMAS is not None
    problems = conformance.validate_values("karpenter", {"settings": {"clusterNmae": "x"}}, SCHEMAS)
    assert problems == ["unknown values key 'settings.clusterNmae' (not in the chart's values.yaml)"]


def test_the_core_check_catches_a_misspelled_field():
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dta": {}}
    assert conformance.validate_core(bad, "1.34")


def test_parsed_crds_are_cached_as_json_and_an_edited_file_is_parsed_anew(tmp_path, monkeypatch):
    monkeypatch.setattr(conformance, "CRD_CACHE", tmp_path / "cache")
    crd = tmp_path / "crd.yaml"
    crd.write_text("kind: CustomResourceDefinition\nspec:\n  versions:\n  - name: v1\n    served: true\n")
    first = conformance.crd_documents(crd)
    assert first == [{"kind": "CustomResourceDefinition", "spec": {"versions": [{"name": "v1", "served": True}]}}]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    assert conformance.crd_documents(crd) == first, "read back from the cache"
    crd.write_text("kind: CustomResourceDefinition\nspec:\n  versions:\n  - name: v2\n    served: false\n")
    assert conformance.crd_documents(crd)[0]["spec"]["versions"] == [{"name": "v2", "served": False}]


@needs_schemas
def test_dynamo_objects_are_held_to_the_crds_of_the_pinned_release_only():
    """shared/schemas holds three Dynamo releases; an object one of the older ones would take is no
    proof it works under the operator dynamo-platform 1.4.2 runs."""
    assert SCHEMAS is not None
    for kind in ("DynamoGraphDeployment", "DynamoGraphDeploymentRequest"):
        files = conformance.crd_files_of(SCHEMAS, "nvidia.com", kind)
        assert files, kind
        assert all(f.is_relative_to(SCHEMAS / "dynamo" / "main-e147ceea") for f in files), files
    assert len(conformance.crd_files(SCHEMAS)[("nvidia.com", "DynamoGraphDeployment")]) > 1, "the others are on file"
    # A group without a pinned release keeps every file that serves the kind.
    files = conformance.crd_files_of(SCHEMAS, "karpenter.sh", "NodePool")
    assert files == conformance.crd_files(SCHEMAS)[("karpenter.sh", "NodePool")]


@needs_schemas
@pytest.mark.charts
def test_an_envoy_proxy_is_held_to_the_crd_of_the_gateway_chart_the_platform_installs():
    """The kept schemas lack Envoy Gateway's EnvoyProxy CRD; the pinned gateway-helm chart ships it, so a
    shipped EnvoyProxy is validated against that release's CRD (and a misspelt field fails it)."""
    from stacks import charts
    from stacks.versions import CHARTS

    assert SCHEMAS is not None and charts.charts_dir() is not None
    group, kind = "gateway.envoyproxy.io", "EnvoyProxy"
    assert (group, kind) in conformance.CRDS_IN_CHARTS and not conformance.crd_files(SCHEMAS).get((group, kind))
    pinned = CHARTS[conformance.CRDS_IN_CHARTS[(group, kind)]]
    files = conformance.crd_files_of(SCHEMAS, group, kind)
    assert files and all(f.is_relative_to(charts.charts_dir() / f"{pinned.chart}-{pinned.version}") for f in files)
    proxies = [m for p in ALL_STACKS for m in rendered(p)[1] if m["kind"] == kind]
    assert proxies, "a shipped stack renders an EnvoyProxy (the frontdoor example traces)"
    for proxy in proxies:
        assert not conformance.unvalidated(proxy, SCHEMAS)
        assert conformance.validate_custom(proxy, SCHEMAS) == [], proxy["metadata"]["name"]
    bad = {**proxies[0], "spec": {**proxies[0]["spec"], "telemetery": {}}}
    assert any("telemetery" in e for e in conformance.validate_custom(bad, SCHEMAS))


@needs_schemas
def test_without_the_charts_folder_an_envoy_proxy_is_reported_unvalidated_not_failed(monkeypatch, tmp_path):
    from stacks import charts

    proxy = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyProxy", "metadata": {"name": "x"}}
    monkeypatch.setenv(charts.ENV, str(tmp_path / "absent"))
    conformance.chart_crd_files.cache_clear()
    try:
        assert SCHEMAS is not None and charts.charts_dir() is None
        assert conformance.unvalidated(proxy, SCHEMAS), "a listed kind whose chart is not on file is skipped"
        assert not conformance.crd_on_file(SCHEMAS, "gateway.envoyproxy.io", "EnvoyProxy")
    finally:
        monkeypatch.undo()
        conformance.chart_crd_files.cache_clear()
