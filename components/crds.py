"""The CRDs of one chart, applied by the program at the version tied to the chart's own.

Helm installs a chart's crds/ directory once and never upgrades it, so each chart of the catalog whose
CRDs the platform relies on (stacks/versions.py CRD_SOURCES) has its CRDs applied here and its release
skips crds/ (`skip_crds`). `install` registers one source the way the catalog says:

- "release": a CRD chart as a Helm release; `take_ownership` adopts CRDs an earlier crds/ install left
  (they carry no Helm ownership metadata, which Helm otherwise refuses);
- "template": a CRD chart rendered client-side and applied object by object with server-side apply
  (`helm.v4.Chart`): what `helm template | kubectl apply --server-side` does, for CRDs too large for a
  Helm release's record;
- "files": the chart's crds/ files at its release tag, fetched from their URLs at preview and applied
  with server-side apply (`yaml.v2.ConfigGroup`), so a version bump is a server-side patch of each CRD.

The chart's release and every custom resource of those kinds depend on the returned resource.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from stacks.versions import CrdSource

from .k8s import chart_source, release

# CRDs are cluster-scoped; a CRD chart's Helm release record (and a rendered chart's default namespace)
# lives in kube-system, beside nothing it could collide with.
CRD_NAMESPACE = "kube-system"


def install(name: str, source: CrdSource, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """Register the CRDs of `source` as `<name>` (a Helm release, a rendered chart or a ConfigGroup)."""
    if source.apply == "files":
        return k8s.yaml.v2.ConfigGroup(name, files=list(source.urls), opts=opts)
    assert source.chart is not None, f"{source.owner}: a CRD chart source names its chart"
    if source.apply == "release":
        return release(
            name,
            source.chart,
            release_name=source.chart.chart,
            namespace=CRD_NAMESPACE,
            values=dict(source.values) or None,
            take_ownership=True,
            opts=opts,
        )
    ref, repo = chart_source(source.chart.chart, source.chart)
    return k8s.helm.v4.Chart(
        name,
        chart=ref,
        version=source.chart.version,
        repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repo) if repo else None,
        namespace=CRD_NAMESPACE,
        values=dict(source.values),
        opts=opts,
    )
