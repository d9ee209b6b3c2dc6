"""Apply a manifest dict as the matching typed Pulumi Kubernetes resource.

Builders return plain manifests (dicts, exactly what `kubectl apply` would take); this one function
turns each into a resource, so every builder stays pure and every object renders the same way. Core
kinds become typed resources; anything else becomes a CustomResource, which must depend on whatever
installs its CRD (pass it in `opts.depends_on`).
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks.versions import Chart, release_wait

# (apiVersion, kind) -> the typed resource class's path under pulumi_kubernetes, looked up on first
# use: each API group's module is large, and a program (or a test) pays only for the kinds it applies.
TYPED: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "core.v1.Namespace",
    ("v1", "ConfigMap"): "core.v1.ConfigMap",
    ("v1", "Secret"): "core.v1.Secret",
    ("v1", "Service"): "core.v1.Service",
    ("v1", "ServiceAccount"): "core.v1.ServiceAccount",
    ("v1", "PersistentVolume"): "core.v1.PersistentVolume",
    ("v1", "PersistentVolumeClaim"): "core.v1.PersistentVolumeClaim",
    ("v1", "PodTemplate"): "core.v1.PodTemplate",
    ("v1", "ResourceQuota"): "core.v1.ResourceQuota",
    ("v1", "LimitRange"): "core.v1.LimitRange",
    ("apps/v1", "Deployment"): "apps.v1.Deployment",
    ("apps/v1", "StatefulSet"): "apps.v1.StatefulSet",
    ("apps/v1", "DaemonSet"): "apps.v1.DaemonSet",
    ("batch/v1", "Job"): "batch.v1.Job",
    ("policy/v1", "PodDisruptionBudget"): "policy.v1.PodDisruptionBudget",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "autoscaling.v2.HorizontalPodAutoscaler",
    ("networking.k8s.io/v1", "NetworkPolicy"): "networking.v1.NetworkPolicy",
    ("storage.k8s.io/v1", "StorageClass"): "storage.v1.StorageClass",
    ("rbac.authorization.k8s.io/v1", "Role"): "rbac.v1.Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "rbac.v1.RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "rbac.v1.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "rbac.v1.ClusterRoleBinding",
    ("scheduling.k8s.io/v1", "PriorityClass"): "scheduling.v1.PriorityClass",
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
    ): "admissionregistration.v1.ValidatingAdmissionPolicy",
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
    ): "admissionregistration.v1.ValidatingAdmissionPolicyBinding",
}


@functools.cache
def typed_class(api_version: str, kind: str) -> Any:
    """The typed resource class for a core kind, or None for a custom resource."""
    path = TYPED.get((api_version, kind))
    return operator.attrgetter(path)(k8s) if path else None


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def logical_name(obj: dict[str, Any]) -> str:
    """A stable Pulumi name for a manifest: kind, namespace and name."""
    meta = obj.get("metadata") or {}
    parts = [obj["kind"].lower(), meta.get("namespace") or "", meta["name"]]
    return "-".join(p for p in parts if p)


def after(opts: pulumi.ResourceOptions, *resources: pulumi.Resource | None) -> pulumi.ResourceOptions:
    """`opts`, also depending on each resource given (None: not in this stack)."""
    depends = [r for r in resources if r is not None]
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=depends)) if depends else opts


def register(
    obj: dict[str, Any],
    opts: pulumi.ResourceOptions,
    name: str | None = None,
    *,
    service_webhook: pulumi.Resource | None = None,
) -> pulumi.CustomResource:
    """Register `obj` (which must carry metadata.name) with the options given. A Service waits for
    `service_webhook`, the AWS Load Balancer Controller's release: its Service mutating webhook fails
    closed for every Service in the cluster, so a Service created while the controller is not yet
    serving is refused."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    if (api_version, kind) == ("v1", "Service"):
        opts = after(opts, service_webhook)
    resource_name = name or logical_name(obj)
    cls = typed_class(api_version, kind)
    if cls is None:
        return k8s.apiextensions.CustomResource(
            resource_name,
            api_version=api_version,
            kind=kind,
            metadata=obj.get("metadata"),
            spec=obj.get("spec"),
            opts=opts,
        )
    fields = {_snake(k): v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return cls(resource_name, opts=opts, **fields)


# Where scripts/vendor-charts.sh puts charts published only in git (a catalog entry without a
# repository): `<release>-<version>/<chart>` (AIBrix: dist/chart at tag v<version>).
VENDOR_DIR = "charts/vendor"


def chart_source(release_name: str, pinned: Chart) -> tuple[str, str | None]:
    """(chart reference, https repository or None) for a pinned chart: an `oci://` registry path, an
    https chart repository, or a vendored chart directory."""
    if pinned.repo.startswith("oci://"):
        return f"{pinned.repo}/{pinned.chart}", None
    if pinned.repo:
        return pinned.chart, pinned.repo
    return f"{VENDOR_DIR}/{release_name}-{pinned.version}/{pinned.chart}", None


def release(
    resource_name: str,
    pinned: Chart,
    *,
    release_name: str,
    namespace: str,
    opts: pulumi.ResourceOptions,
    values: dict[str, Any] | None = None,
    create_namespace: bool = False,
    skip_crds: bool = False,
    service_webhook: pulumi.Resource | None = None,
    take_ownership: bool = False,
) -> k8s.helm.v3.Release:
    """Install a pinned chart of the catalog (stacks/versions.py) as a Helm release: the one way every
    release of the platform is created, so chart sources, versions and options are handled once. Its
    timeout covers what the release waits for (stacks/versions.py RELEASE_WAITS), not Helm's 5 minutes.
    A chart that creates Services waits for `service_webhook` (the AWS Load Balancer Controller's
    release, whose Service webhook fails closed), as `register` makes a Service do."""
    ref, repo = chart_source(release_name, pinned)
    wait = release_wait(pinned)
    if wait.services:
        opts = after(opts, service_webhook)
    extra: dict[str, Any] = {}
    if create_namespace:
        extra["create_namespace"] = True
    if skip_crds:
        extra["skip_crds"] = True
    if take_ownership:
        extra["take_ownership"] = True
    return k8s.helm.v3.Release(
        resource_name,
        name=release_name,
        chart=ref,
        version=pinned.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo else None,
        namespace=namespace,
        values=values,
        timeout=wait.timeout,
        opts=opts,
        **extra,
    )
