"""Names, tags and labels: physical-name rules and length limits in one place.

Transforms do not run under mocks (shared/PULUMI_TESTING.md), so tags and labels are passed
explicitly from these helpers rather than injected by a stack transform.
"""

from __future__ import annotations

import hashlib

PROJECT = "inference-platform"
TOKEN = f"{PROJECT}:components"

# Label put on every Kubernetes object the platform manages.
MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": PROJECT}
SYSTEM_NODE_LABEL = {"inference-platform.io/node-role": "system"}


def scanner_waivers(reasons: dict[str, str]) -> dict[str, str]:
    """Annotations waiving Checkov checks on one object (the PR workflow's scan of the rendered
    manifests, .checkov.yaml), each with its reason: {check id: why}."""
    return {f"checkov.io/skip{i}": f"{check}={why}" for i, (check, why) in enumerate(sorted(reasons.items()), 1)}


def tags(cluster: str, environment: str, **extra: str) -> dict[str, str]:
    """AWS tags for every resource of a stack."""
    return {
        "inference-platform:cluster": cluster,
        "inference-platform:environment": environment,
        "managed-by": "pulumi",
        **extra,
    }


def labels(component: str, instance: str, **extra: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": component,
        "app.kubernetes.io/instance": instance,
        **MANAGED_BY,
        **extra,
    }


def physical(*parts: str, limit: int = 63) -> str:
    """A kebab-case physical name within `limit`, hashed at the end when it has to be cut."""
    name = "-".join(p.strip("-") for p in parts if p).lower()
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9].rstrip('-')}-{digest}"


def iam_role_name(cluster: str, role: str) -> str:
    """IAM role names: at most 64 characters."""
    return physical(cluster, role, limit=64)
