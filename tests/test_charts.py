"""stacks/charts.py: every Helm release templated with its pinned chart (helm v4.3.1), the objects
checked, and what cannot be checked named. The whole run over every shipped stack is `make charts`
(part of `make check`); these tests hold its parts to their behaviour on small inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.serving.values import aibrix_values
from stacks import charts
from stacks.config.addons import Aibrix
from stacks.config.gateway import GatewaySection
from stacks.versions import IMAGES
from tests.builders import CATALOG


@pytest.fixture(scope="module")
def helm() -> Path:
    return charts.helm()  # make test installs the pinned wheel first (make install-helm)


def test_the_pinned_helm_is_v4_3_1(helm):
    assert charts._version(helm) == charts.HELM_VERSION == "v4.3.1"


def chart(root: Path, name: str, version: str, templates: dict[str, str], deps: str = "") -> Path:
    d = root / f"{name}-{version}"
    (d / "templates").mkdir(parents=True)
    (d / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: {version}\n{deps}")
    (d / "values.yaml").write_text("tag: v1\n")
    for fname, text in templates.items():
        (d / "templates" / fname).write_text(text)
    return d


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: c, image: "example.com/app:{{ .Values.tag }}"}]
{{- if .Capabilities.APIVersions.Has "example.com/v1" }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: seen-the-api}
{{- end }}
"""


def release(name: str, version: str, values: dict | None = None) -> dict:
    return {"name": "rel", "chart": f"oci://example.com/{name}", "version": version, "namespace": "ns",
            "values": values or {}}  # fmt: skip


def test_a_release_is_templated_with_its_values_namespace_and_the_platforms_api_versions(tmp_path, helm):
    chart(tmp_path, "app", "1.0.0", {"d.yaml": DEPLOYMENT})
    out = charts.template(release("app", "1.0.0", {"tag": "v2"}), tmp_path, "1.34", {"example.com/v1"}, helm)
    assert out.skipped is None and not out.problems, out.problems
    kinds = {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in out.objects}
    assert ("Deployment", "rel", "ns") in kinds and ("ConfigMap", "seen-the-api", "ns") in kinds
    (deployment,) = [o for o in out.objects if o["kind"] == "Deployment"]
    assert charts.images(deployment) == ["example.com/app:v2"]
    assert not charts.check(out, "1.34", None, {}), "a valid Deployment with a pinned image passes"


def test_a_chart_not_on_file_is_skipped_by_name_and_a_missing_subchart_is_said(tmp_path, helm):
    missing = charts.template(release("nope", "9.9.9"), tmp_path, "1.34", set(), helm)
    assert missing.skipped == f"chart nope-9.9.9 is not on file under {tmp_path}" and not missing.objects
    deps = "dependencies:\n- {name: extra, version: 1.0.0, repository: https://x, condition: extra.enabled}\n"
    chart(tmp_path, "withdep", "1.0.0", {"d.yaml": DEPLOYMENT}, deps)
    out = charts.template(release("withdep", "1.0.0"), tmp_path, "1.34", set(), helm)
    assert out.skipped is None and out.objects, out.problems
    assert out.notes == ["subchart extra is not on file: templated with extra.enabled: false"]


def test_an_invalid_object_and_a_floating_image_are_problems(tmp_path, helm):
    bad = DEPLOYMENT.replace("selector: {matchLabels: {app: x}}", "selector: 7").replace("{{ .Values.tag }}", "latest")
    chart(tmp_path, "bad", "1.0.0", {"d.yaml": bad})
    out = charts.template(release("bad", "1.0.0"), tmp_path, "1.34", set(), helm)
    problems = charts.check(out, "1.34", None, {})
    assert any("spec.selector" in p for p in problems), problems
    assert any("example.com/app:latest is not pinned" in p for p in problems), problems


@pytest.mark.parametrize(
    ("ref", "floats"),
    [("busybox:stable", True), ("busybox", True), ("redis:latest", True), ("redis:7.4", False),
     ("x/y@sha256:" + "0" * 64, False), ("quay.io/a/b:v1.2.3", False)],
)  # fmt: skip
def test_a_floating_tag_is_one_that_moves(ref, floats):
    assert charts.floating(ref) is floats


def test_an_older_tag_of_a_catalog_image_is_superseded():
    assert charts.superseded("envoyproxy/envoy:v1.33.2") == IMAGES["envoy-proxy"].ref
    assert charts.superseded("envoyproxy/gateway:v1.2.8") == IMAGES["envoy-gateway"].ref
    assert charts.superseded("docker.io/envoyproxy/envoy:distroless-v1.39.0") is None
    assert charts.superseded("quay.io/unknown/thing:v1") is None


def test_images_are_found_in_custom_resources_too():
    proxy = {"kind": "EnvoyProxy", "spec": {"provider": {"kubernetes": {"envoyDeployment": {
        "container": {"image": "envoyproxy/envoy:v1.33.2"}}}}}}  # fmt: skip
    assert charts.images(proxy) == ["envoyproxy/envoy:v1.33.2"]
    crd = {"kind": "CustomResourceDefinition", "spec": {"versions": [{"image": "in-a-schema:latest"}]}}
    assert charts.images(crd) == [], "a CRD's schema is not an image"


def test_aibrix_runs_the_envoy_our_gateway_supports_and_a_pinned_busybox():
    values = aibrix_values(Aibrix(enabled=True), GatewaySection(), CATALOG)
    container = values["gateway"]["envoyProxy"]["container"]
    assert container["envoy"]["image"] == "docker.io/envoyproxy/envoy:distroless-v1.39.0"
    assert container["shutdownManager"]["image"] == "docker.io/envoyproxy/gateway:v1.9.0"
    busybox = {"repository": "docker.io/library/busybox", "tag": "1.37.0"}
    assert values["gatewayPlugin"]["initContainer"]["image"] == busybox
    assert values["metadata"]["service"]["initContainer"]["image"] == busybox
    assert json.dumps(values).count("stable") == 0


def test_without_the_charts_beside_a_fresh_clone_the_check_says_it_is_skipped_in_one_line(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.delenv(charts.ENV, raising=False)
    monkeypatch.setattr(charts, "ROOT", tmp_path / "clone")  # nothing beside it: no ../shared/charts
    assert charts.charts_dir() is None
    assert charts.main([], tmp_path / "render") == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("charts: skipped:") and charts.ENV in out[0], out
    assert "`make upstream`" in out[0], "the one line says the command that fetches the pinned charts"
    marker = tmp_path / "render" / charts.SKIPPED_MARKER
    assert marker.read_text().strip() == out[0], "the scan reads why it has no chart renders"
    (tmp_path / "charts").mkdir()
    monkeypatch.setenv(charts.ENV, str(tmp_path / "charts"))
    monkeypatch.setattr(charts, "helm", lambda: (_ for _ in ()).throw(charts.ChartsError("stop here")))
    with pytest.raises(charts.ChartsError):
        charts.main([], tmp_path / "render")
    assert not marker.exists(), "a run with the charts removes the marker before it templates anything"


def test_a_chart_directory_set_but_missing_fails_the_check(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(charts.ENV, str(tmp_path / "nowhere"))
    assert charts.main([], None) == 1
    assert "not a directory" in capsys.readouterr().err
