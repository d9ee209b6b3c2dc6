"""Issue 14, item 5: monitoring keeps its data and tells the truth.

Prometheus and Alertmanager on encrypted gp3 volumes (retentionSize below the volume), Alertmanager's
configuration from the stack's Secret, nothing scraped or alerted on that EKS does not serve (checked
against the pinned chart's own templates when the charts directory is on file), Grafana provisioned.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.monitoring.collection import (
    EKS_UNSERVED,
    MONITORING_STORAGE_CLASS,
    monitoring_storage_class,
    prometheus_stack_values,
)
from stacks.charts import charts_dir
from stacks.config.addons import MonitoringAddon
from stacks.pipeline import check_sections, stack_warnings
from stacks.versions import chart
from tests.builders import sourced
from tests.conftest import DEV, EXAMPLES, rendered_stack

PLATFORM = next(p for p in EXAMPLES if p.name == "Pulumi.platform.yaml")


def values(path: Path) -> dict:
    rel = next(r for r in rendered_stack(path).releases() if r["name"] == "kube-prometheus-stack")
    return rel["values"]


def test_prometheus_and_alertmanager_keep_their_data_on_encrypted_gp3_volumes():
    v = values(DEV)
    spec = v["prometheus"]["prometheusSpec"]
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == MONITORING_STORAGE_CLASS and claim["accessModes"] == ["ReadWriteOnce"]
    assert claim["resources"]["requests"]["storage"] == "50Gi" and spec["retention"] == "15d"
    assert spec["retentionSize"] == "42GB", "Prometheus's GB are GiB: 42 of the 50 GiB volume, room for the WAL"
    am = v["alertmanager"]["alertmanagerSpec"]["storage"]["volumeClaimTemplate"]["spec"]
    assert am["storageClassName"] == MONITORING_STORAGE_CLASS and am["resources"]["requests"]["storage"] == "2Gi"
    sc = next(
        m
        for m in rendered_stack(DEV).manifests()
        if m["kind"] == "StorageClass" and m["metadata"]["name"] == MONITORING_STORAGE_CLASS
    )
    assert sc == monitoring_storage_class()
    assert sc["provisioner"] == "ebs.csi.aws.com" and sc["parameters"]["type"] == "gp3"
    assert sc["parameters"]["encrypted"] == "true" and sc["volumeBindingMode"] == "WaitForFirstConsumer"


def test_the_release_waits_for_its_storage_class():
    rec = rendered_stack(DEV).mocks
    release = next(
        r for r in rec.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack"
    )
    sc = next(
        r
        for r in rec.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        if r.inputs["metadata"]["name"] == MONITORING_STORAGE_CLASS
    )
    assert sc.urn in release.depends_on


def test_size_retention_and_alertmanager_config_come_from_the_stack():
    v = values(PLATFORM)
    spec = v["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "30d" and spec["retentionSize"] == "170GB"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "200Gi"
    am = v["alertmanager"]["alertmanagerSpec"]
    assert am["configSecret"] == "alertmanager-config" and am["useExistingSecret"] is True, (
        "the chart then renders no configuration Secret of its own"
    )
    assert "configSecret" not in values(DEV)["alertmanager"]["alertmanagerSpec"]


@pytest.mark.parametrize("gib", [10, 50, 200, 16384])
def test_retention_size_is_always_below_the_volume(gib):
    spec = prometheus_stack_values(MonitoringAddon(storageGiB=gib))["prometheus"]["prometheusSpec"]
    size = int(spec["retentionSize"].removesuffix("GB"))
    assert 0 < size < gib


def test_nothing_eks_does_not_serve_is_scraped_or_alerted_on():
    v = values(DEV)
    assert set(EKS_UNSERVED) == {"kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy"}
    for component, rules in EKS_UNSERVED.items():
        assert v[component] == {"enabled": False}, component
        assert all(v["defaultRules"]["rules"][r] is False for r in rules), component


def pinned_chart() -> Path:
    found = charts_dir()
    assert found is not None
    return found / f"kube-prometheus-stack-{chart('kube-prometheus-stack').version}"


@pytest.mark.charts
def test_every_chart_template_for_what_eks_does_not_serve_is_gated_by_a_switch_the_values_turn_off():
    """Read from the pinned chart itself: each ServiceMonitor and rule file for the controller manager,
    scheduler, etcd and kube-proxy renders only when `<component>.enabled` holds, which the values
    set false (a chart upgrade that adds an ungated one fails here)."""
    templates = pinned_chart() / "templates"
    exporters = {
        "kube-controller-manager": "kubeControllerManager",
        "kube-scheduler": "kubeScheduler",
        "kube-etcd": "kubeEtcd",
        "kube-proxy": "kubeProxy",
    }
    checked = 0
    for directory, component in exporters.items():
        for f in sorted((templates / "exporters" / directory).glob("*.yaml")):
            assert f".Values.{component}.enabled" in f.read_text().splitlines()[0], f
            checked += 1
    jobs = re.compile(r'job="(kube-controller-manager|kube-scheduler|kube-etcd|kube-proxy)"|etcd_')
    for f in sorted((templates / "prometheus" / "rules-1.14").glob("*.yaml")):
        text = f.read_text()
        if jobs.search(text):
            gate = next(line for line in text.splitlines() if line.startswith("{{- if"))
            assert any(f".Values.{c}.enabled" in gate for c in EKS_UNSERVED), (f.name, gate)
            checked += 1
    assert checked >= 8, "the walk found the exporters and the rule files"


def test_a_prod_platform_without_an_alertmanager_config_is_warned():
    base = {
        "stack": {"environment": "prod"},
        "cluster": {"name": "p", "endpoint": {"publicAccess": False}},
        "gateway": {"enabled": False},
    }
    found = [
        w for w in stack_warnings(check_sections(base, "us-west-2")) if w.path.endswith("alertmanagerConfigSecret")
    ]
    assert found and "sends nothing" in found[0].message
    named = sourced({**base, "addons": {"monitoring": {"alertmanagerConfigSecret": "am"}}})
    assert not [w for w in stack_warnings(check_sections(named, "us-west-2")) if "alertmanager" in w.path]
    dev = {**base, "stack": {"environment": "dev"}}
    assert not [w for w in stack_warnings(check_sections(dev, "us-west-2")) if "alertmanager" in w.path]
