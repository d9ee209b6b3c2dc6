"""CRDs are the program's: every CRD the platform relies on is applied, and upgraded, by the program at
the version its chart is pinned to (stacks/versions.py CRD_SOURCES, components/crds.py).

Helm installs a chart's crds/ once and never upgrades it; these tests hold the program to: a CRD source
for every chart that ships crds/, at that chart's version, whenever the chart is installed; no release
that installs crds/; a version bump that moves the CRD source with the chart; and every custom resource
ordered after the resource that applies its CRD.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from stacks import versions
from stacks.charts import _LOADER, chart_key, charts_dir
from stacks.mocks import Record
from stacks.render import HELM_RELEASE, Rendered
from stacks.versions import CHARTS, CRD_SOURCES, CrdSource, crd_source
from tests.conftest import ALL_STACKS, DEV, render_sections, rendered_stack, sections_of
from tests.guard_support import problems_of

CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
TEMPLATED_CHART = "kubernetes:helm.sh/v4:Chart"
# Charts that install their CRDs from templates (so `helm upgrade` updates them), or whose operator
# applies them, and are therefore their own CRD source: the API groups each serves.
SELF_INSTALLED = {"keda": {"keda.sh", "eventing.keda.sh"}, "keda-http": {"http.keda.sh"}, "dynamo": {"nvidia.com"}}
# Core API groups with a typed resource: no CRD.
CORE_GROUPS = {"admissionregistration.k8s.io", "networking.k8s.io", "storage.k8s.io", "rbac.authorization.k8s.io"}
# Pinned charts not in $INFERENCE_PLATFORM_CHARTS at their pinned version, so their crds/ cannot be read
# here (what the catalog applies for them is checked against upstream by hand, its `why`).
NOT_ON_FILE = {
    "dynamo-platform-1.4.2",
    "k8s-nim-operator-3.1.2",
    "neuron-helm-chart-1.10.0",
    "prometheus-operator-crds-26.0.1",
}


def owner_of(release: Record) -> str | None:
    """The catalog key of a release's chart (its last path element and version match a pin)."""
    name = str(release.inputs["chart"]).rstrip("/").rsplit("/", 1)[-1]
    return next((k for k, c in CHARTS.items() if c.chart == name), None)


def releases(rendered: Rendered) -> list[Record]:
    return rendered.mocks.of_type(HELM_RELEASE)


def crd_installer(rendered: Rendered, source: CrdSource) -> Record | None:
    """The resource of the render that applies `source`, if any."""
    for r in rendered.resources:
        if source.apply == "files" and r.type == CONFIG_GROUP and tuple(r.inputs.get("files") or ()) == source.urls:
            return r
        if source.chart is not None and r.type in (HELM_RELEASE, TEMPLATED_CHART):
            ref = str(r.inputs.get("chart", "")).rsplit("/", 1)[-1]
            if ref == source.chart.chart and r.inputs.get("version") == source.chart.version:
                return r
    return None


def releases_with_crds(rendered: Rendered) -> Iterator[tuple[Record, str, CrdSource, Record | None]]:
    """Each release of a chart whose CRDs the program applies: (the release, its catalog key, where its
    CRDs come from at its version, the resource that applies them or None)."""
    for release in releases(rendered):
        owner = owner_of(release)
        if owner in CRD_SOURCES:
            source = crd_source(owner, release.inputs["version"], crd_version_of(rendered, owner))
            yield release, owner, source, crd_installer(rendered, source)


def managed_crds(rendered: Rendered) -> dict[str, tuple[str, str, int]]:
    """Per chart the render installs whose CRDs the program applies: (its version, what applies the
    CRDs, how many CRDs), each checked to be in the render."""
    found = {}
    for release, owner, source, installer in releases_with_crds(rendered):
        assert installer is not None, f"{owner} {release.inputs['version']}: nothing applies {source.label}"
        found[owner] = (release.inputs["version"], source.label, len(source.crds))
    return found


def crd_version_of(rendered: Rendered, owner: str) -> str | None:
    """The prometheus-operator-crds version the render applies (addons.monitoring.crdsVersion may set it)."""
    if owner != "kube-prometheus-stack":
        return None
    crd = next((r for r in releases(rendered) if r.inputs.get("name") == "prometheus-operator-crds"), None)
    return crd.inputs["version"] if crd is not None else None


def dependencies(rendered: Rendered, record: Record) -> set[str]:
    """Every URN `record` waits for, directly or through what it waits for."""
    by_urn = {r.urn: r for r in rendered.resources}
    seen: set[str] = set()
    todo = list(record.depends_on)
    while todo:
        urn = todo.pop()
        if urn not in seen:
            seen.add(urn)
            todo += by_urn[urn].depends_on if urn in by_urn else []
    return seen


# ---- what each shipped stack manages ----------------------------------------------------------------

# The platform's charts that apply CRDs in the dev stack (all-in-one): Karpenter, Envoy Gateway, the AWS
# Load Balancer Controller and kube-prometheus-stack; the other stacks add their serving platforms'.
DEV_MANAGED = {
    "karpenter": ("1.14.1", "karpenter-crd 1.14.1", 5),
    "envoy-gateway": ("v1.9.0", "gateway-crds-helm v1.9.0", 21),
    "aws-load-balancer-controller": ("3.5.0", "aws-load-balancer-controller 3.5.0 crds/ (2 files)", 7),
    "kube-prometheus-stack": ("81.6.2", "prometheus-operator-crds 26.0.1", 10),
}


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_each_shipped_stack_applies_the_crds_of_every_chart_it_installs_at_that_charts_version(path: Path) -> None:
    rendered = rendered_stack(path)
    managed = managed_crds(rendered)
    print(f"\n{path.name}: the CRDs the program manages")
    for owner, (version, label, count) in sorted(managed.items()):
        print(f"  {owner} {version}: {count} CRDs from {label}")
    installed = {owner_of(r) for r in releases(rendered)}
    assert set(managed) == installed & set(CRD_SOURCES), "every installed chart with CRDs has them applied"
    if path == DEV:
        assert managed == DEV_MANAGED


def test_the_stacks_that_run_serving_platforms_apply_their_crds_from_the_tags_crds_files() -> None:
    seen: dict[str, str] = {}
    for path in ALL_STACKS:
        for owner, (_, label, _) in managed_crds(rendered_stack(path)).items():
            seen[owner] = label
    assert seen["kuberay"] == "kuberay 1.7.0 crds/ (4 files)" and seen["lws"] == "lws v0.10.0 crds/ (3 files)"
    assert seen["aibrix"] == "aibrix 0.7.0 crds/ (8 files)"
    s = sections_of(DEV)
    s["addons"]["nimOperator"] = {"enabled": True}  # no shipped stack runs it
    nim = managed_crds(render_sections(s))["nim-operator"]
    assert nim == ("3.1.2", "nim-operator 3.1.2 crds/ (9 files)", 9)


def test_the_crd_files_are_the_upstream_repositories_files_at_the_charts_release_tag() -> None:
    assert crd_source("kuberay").urls[0] == (
        "https://raw.githubusercontent.com/ray-project/kuberay/v1.7.0/helm-chart/kuberay-operator/crds/ray.io_rayclusters.yaml"
    )
    assert crd_source("lws").urls[-1] == (
        "https://raw.githubusercontent.com/kubernetes-sigs/lws/v0.10.0/charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
    ), "LWS's chart version carries the v its tag has"
    assert all(
        "/v3.5.0/helm/aws-load-balancer-controller/crds/" in u for u in crd_source("aws-load-balancer-controller").urls
    )
    assert all("/vllm-project/aibrix/v0.7.0/dist/chart/crds/" in u for u in crd_source("aibrix").urls)
    assert all(
        "/NVIDIA/k8s-nim-operator/v3.1.2/deployments/helm/k8s-nim-operator/crds/" in u
        for u in crd_source("nim-operator").urls
    )


# ---- no release installs crds/ ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_release_of_a_chart_whose_crds_the_program_applies_skips_crds_and_waits_for_them(path: Path) -> None:
    rendered = rendered_stack(path)
    for release, _owner, _source, installer in releases_with_crds(rendered):
        assert release.inputs.get("skipCrds") is True, f"{release.name}: Helm would install crds/ once, never again"
        assert installer is not None and installer.urn in release.depends_on, f"{release.name} waits for its CRDs"


def test_a_crd_chart_release_adopts_crds_an_earlier_crds_install_left() -> None:
    rendered = rendered_stack(DEV)
    crd = next(r for r in releases(rendered) if r.inputs.get("name") == "prometheus-operator-crds")
    assert crd.inputs.get("takeOwnership") is True, "Helm refuses CRDs without its ownership metadata otherwise"


def crds_dir(chart: Path) -> set[str]:
    """The CRD names in a chart's crds/ and its subcharts' (what Helm installs once)."""
    names: set[str] = set()
    for f in sorted((chart / "crds").rglob("*.y*ml")):
        names |= {
            d["metadata"]["name"]
            for d in yaml.load_all(f.read_text(), Loader=_LOADER)
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        }
    for sub in sorted((chart / "charts").glob("*/")) if (chart / "charts").is_dir() else []:
        names |= crds_dir(sub)
    return names


@pytest.mark.charts
@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_crd_a_pinned_chart_ships_in_crds_is_applied_by_the_program_at_the_charts_version(path: Path) -> None:
    root = charts_dir()
    assert root is not None
    rendered = rendered_stack(path)
    unread = set()
    for release in releases(rendered):
        key = chart_key(release.inputs)
        chart = root / key
        if not chart.is_dir():
            unread.add(key)
            continue
        shipped = crds_dir(chart)
        owner = owner_of(release)
        if not shipped:
            continue
        assert owner in CRD_SOURCES, f"{key} ships {len(shipped)} CRDs in crds/, which Helm never upgrades"
        source = crd_source(owner, release.inputs["version"], crd_version_of(rendered, owner))
        assert source.version == release.inputs["version"], "the CRDs follow the chart's version"
        missing = shipped - set(source.crds)
        assert not missing, f"{key}: CRDs in crds/ the program does not apply: {sorted(missing)}"
        assert release.inputs.get("skipCrds") is True
    assert unread <= NOT_ON_FILE, f"charts whose crds/ could not be read: {sorted(unread - NOT_ON_FILE)}"


@pytest.mark.charts
def test_the_charts_that_install_their_own_crds_render_them_as_templates() -> None:
    root = charts_dir()
    assert root is not None
    for key in ("keda", "keda-http"):
        chart = root / f"{CHARTS[key].chart}-{CHARTS[key].version}"
        assert not crds_dir(chart), f"{key}: no crds/ (Helm would never upgrade it)"
        templates = sorted((chart / "templates" / "crds").glob("*.yaml"))
        assert templates and all(t.read_text().startswith("{{- if .Values.crds.install }}") for t in templates)


# ---- a version bump moves the CRD source --------------------------------------------------------------


def test_a_catalog_version_bump_moves_the_crd_source_with_the_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CHARTS, "envoy-gateway", CHARTS["envoy-gateway"].with_version("v1.9.1"))
    kuberay = CRD_SOURCES["kuberay"]
    files = {**kuberay.files, "1.8.0": kuberay.files["1.7.0"]}
    monkeypatch.setitem(CRD_SOURCES, "kuberay", dataclasses.replace(kuberay, files=files))
    monkeypatch.setitem(CHARTS, "kuberay", CHARTS["kuberay"].with_version("1.8.0"))
    gateway = crd_source("envoy-gateway")
    assert gateway.chart is not None and gateway.chart.version == "v1.9.1"
    assert all("/ray-project/kuberay/v1.8.0/" in u for u in crd_source("kuberay").urls)
    rendered = render_sections(sections_of(DEV))
    chart = next(r for r in rendered.resources if r.type == TEMPLATED_CHART)
    gateway_release = next(r for r in releases(rendered) if r.inputs.get("name") == "envoy-gateway")
    assert chart.inputs["version"] == gateway_release.inputs["version"] == "v1.9.1", "both move"


def test_a_stacks_version_override_moves_the_crd_source_with_the_chart() -> None:
    s = sections_of(DEV)
    s["addons"]["monitoring"] = {**s["addons"].get("monitoring", {}), "version": "77.0.1"}
    rendered = render_sections(s)
    by_name = {r.inputs.get("name"): r for r in releases(rendered)}
    assert by_name["kube-prometheus-stack"].inputs["version"] == "77.0.1"
    assert by_name["prometheus-operator-crds"].inputs["version"] == "23.0.0", "the release of operator v0.85.0"
    s["addons"]["monitoring"]["crdsVersion"] = "23.0.1"
    assert crd_version_of(render_sections(s), "kube-prometheus-stack") == "23.0.1", "crdsVersion overrides it"


@pytest.mark.parametrize(
    ("addon", "setting", "key"),
    [
        ("kuberay", {"enabled": True, "version": "1.8.0"}, "addons.kuberay.version"),
        ("monitoring", {"enabled": True, "version": "80.0.0"}, "addons.monitoring.crdsVersion"),
    ],
)
def test_a_version_whose_crds_the_catalog_cannot_place_is_refused_at_its_key(addon, setting, key) -> None:
    s = sections_of(DEV)
    s["addons"][addon] = setting
    found = [p for p in problems_of(s) if key in p]
    assert found and ("stacks/versions.py" in found[0] or "crdsVersion" in found[0]), found


# ---- every custom resource after its CRD ----------------------------------------------------------------


def installers(rendered: Rendered) -> dict[str, Record]:
    """API group -> the resource that applies its CRDs in this render."""
    found: dict[str, Record] = {}
    for release in releases(rendered):
        owner = owner_of(release)
        if owner in CRD_SOURCES:
            source = crd_source(owner, release.inputs["version"], crd_version_of(rendered, owner))
            installer = crd_installer(rendered, source)
            assert installer is not None
            for name in source.crds:
                found[name.split(".", 1)[1]] = installer
        for group in SELF_INSTALLED.get(owner or "", set()):
            found[group] = release
    return found


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_custom_resource_waits_for_the_resource_that_applies_its_crd(path: Path) -> None:
    rendered = rendered_stack(path)
    by_group = installers(rendered)
    owns_cluster = any(owner_of(r) == "karpenter" for r in releases(rendered))
    existing_prometheus = not any(r.inputs.get("name") == "kube-prometheus-stack" for r in releases(rendered))
    for record in rendered.mocks.kubernetes_objects():
        api = str(record.inputs.get("apiVersion", ""))
        group = api.split("/", 1)[0] if "/" in api else ""
        if "." not in group or group in CORE_GROUPS:
            continue
        if not owns_cluster or (group == "monitoring.coreos.com" and existing_prometheus):
            assert group not in by_group, "a team's stack applies no CRD: they are the platform's"
            continue
        assert group in by_group, f"{record.name}: nothing in {path.name} applies the CRD of {api}"
        assert by_group[group].urn in dependencies(rendered, record), f"{record.name} waits for its CRD"


def test_the_catalog_says_why_each_chart_gets_its_crds_the_way_it_does() -> None:
    for owner, recipe in CRD_SOURCES.items():
        assert owner in CHARTS and len(recipe.why) > 40, owner
        assert (recipe.chart is None) == (recipe.apply == "files"), owner
        assert recipe.apply != "files" or CHARTS[owner].version in recipe.files, f"{owner}: its pin's files"
    assert versions.crd_source("kube-prometheus-stack").chart == CHARTS["kube-prometheus-stack"].__class__(
        "prometheus-operator-crds", "26.0.1", "https://prometheus-community.github.io/helm-charts"
    )
