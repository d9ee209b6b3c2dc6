"""CRDs: every chart whose CRDs the program applies (stacks/versions.py CRD_SOURCES) must have a known
CRD source at the version the stack installs, or its CRDs would be left behind or half applied.

A version override moves the CRD source with it: a CRD chart of the same version (Karpenter, Envoy
Gateway), the prometheus-operator-crds release the catalog maps kube-prometheus-stack's version to
(or `addons.monitoring.crdsVersion`), or the chart's crds/ files at the new tag. A crds/ file list is
kept per version because a release may add or drop CRDs: an override the catalog has no list for is
refused rather than applied with another version's list.
"""

from __future__ import annotations

from collections.abc import Iterable

from stacks.versions import CHARTS, CRD_SOURCES, UnknownCrdVersionError, crd_source

from ..checks import rule
from ..errors import Problem
from ..resolved import ResolvedStack

# Catalog chart -> the add-on (its attribute and stack-file key) whose `version` overrides it.
_ADDON_OF = {
    "kuberay": ("kuberay", "kuberay"),
    "lws": ("lws", "lws"),
    "aibrix": ("aibrix", "aibrix"),
    "nim-operator": ("nim_operator", "nimOperator"),
    "aws-load-balancer-controller": ("aws_load_balancer_controller", "awsLoadBalancerController"),
}


@rule
def crds_have_a_source_at_the_installed_version(stack: ResolvedStack) -> Iterable[Problem]:
    """Refuse an add-on version whose CRDs the catalog cannot place."""
    if not stack.owns_platform:
        return
    addons = stack.platform.addons
    for owner, (attr, key) in _ADDON_OF.items():
        addon = getattr(addons, attr)
        if not addon.enabled or addon.version is None:
            continue
        try:
            crd_source(owner, addon.version)
        except UnknownCrdVersionError:
            pinned = CHARTS[owner].version
            yield Problem(
                f"addons.{key}.version",
                f"the program applies {CHARTS[owner].chart}'s CRDs from its crds/ files at the release tag, and "
                f"the catalog lists those files for {', '.join(sorted(CRD_SOURCES[owner].files))} only (a release "
                f"may add or drop CRDs); remove the override to use {pinned}, or add {addon.version}'s crds/ file "
                f"names to CRD_SOURCES[{owner!r}] in stacks/versions.py",
            )
    mon = addons.monitoring
    if mon.enabled and not mon.existing_prometheus:
        try:
            crd_source("kube-prometheus-stack", mon.version, mon.crds_version)
        except UnknownCrdVersionError:
            known = ", ".join(sorted(CRD_SOURCES["kube-prometheus-stack"].chart_versions or {}))
            yield Problem(
                "addons.monitoring.crdsVersion",
                f"kube-prometheus-stack {mon.version} runs a Prometheus Operator whose CRDs the program applies "
                f"from prometheus-operator-crds, and the catalog maps only {known}: set crdsVersion to the "
                f"prometheus-operator-crds release whose appVersion is kube-prometheus-stack {mon.version}'s "
                f"appVersion (`helm show chart` of each), or remove addons.monitoring.version",
            )
