"""Guardrail checks shared by `stacks validate` (stacks/rules/guards.py, on the stack config) and the
CrossGuard policy pack (policies/, on resource properties at preview). Each takes plain values and
returns a message, or None when the value is fine, so both sides say the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .config.base import SHA256_DIGEST
from .fit import RESOURCES, Requests, Shortfall
from .sharing import mig_quota_key

# ResourceQuota `hard` keys a team quota sets (components/team.py) -> the pod resource they bound.
QUOTA_RESOURCES = {
    "requests.nvidia.com/gpu": "nvidia.com/gpu",
    "requests.aws.amazon.com/neuron": "aws.amazon.com/neuron",
    "requests.nvidia.com/gpu.shared": "nvidia.com/gpu.shared",
    "requests.cpu": "cpu",
    "requests.memory": "memory",
}

# An exact chart version: 1.14.1, v1.9.0, 3.1.2-rc.1. Not a range (^1, ~1.2, >=1, 1.x, *), not latest.
_EXACT_VERSION = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$")


def chart_version_problem(chart: str, version: str | None) -> str | None:
    if not version:
        return f"chart {chart} has no version: Helm would install whatever is newest; pin an exact version"
    if not _EXACT_VERSION.match(version):
        return (
            f"chart {chart} version {version!r} is not an exact version (a range or tag can move under a running "
            f"stack); pin one such as 1.14.1"
        )
    return None


def image_digest_problem(image: str) -> str | None:
    """A container image reference must name its digest (`repo:tag@sha256:<64 hex>`)."""
    _, sep, digest = image.partition("@")
    if not sep or not SHA256_DIGEST.match(digest):
        return f"image {image} has no sha256 digest; a tag can be re-pushed: add @sha256:... (prod requires it)"
    return None


def accelerator_taint_problem(pool: str, accelerator: str, taint_key: str | None, taints: Iterable[dict]) -> str | None:
    """An accelerator pool must carry its NoSchedule taint so pods without a toleration stay off."""
    if taint_key is None:
        return None
    if not any(t.get("key") == taint_key and t.get("effect") == "NoSchedule" for t in taints):
        return (
            f"pool {pool} has {accelerator} accelerators but no {taint_key}:NoSchedule taint: CPU pods would "
            f"land on (and keep alive) expensive accelerator nodes"
        )
    return None


def stateful_protection_problem(what: str, protected: bool, prod: bool) -> str | None:
    """Stateful resources (model bucket, file systems) survive `pulumi destroy` unless a dev stack opts out."""
    if protected:
        return None
    if prod:
        return f"{what} holds state and is not protected; a prod stack keeps storage.protect: true"
    return None


def scaler_owner_problems(owners: dict[str, list[str]]) -> list[str]:
    """`owners`: scale target -> the autoscalers that target it. Two owners fight over replicas."""
    return [
        f"{target} is scaled by {len(by)} autoscalers ({', '.join(sorted(by))}); keep exactly one owner"
        for target, by in sorted(owners.items())
        if len(by) > 1
    ]


def route_auth_problem(route: str, protected: bool, allow_unauthenticated: bool) -> str | None:
    if protected or allow_unauthenticated:
        return None
    return (
        f"route {route} is exposed without authentication: attach a SecurityPolicy (apiKeyAuth, jwt, extAuth or "
        f"oidc) to it or its Gateway, or set gateway.allowUnauthenticated: true to accept an open endpoint"
    )


def quota_shortfalls(need: Requests, quota: Requests) -> list[Shortfall]:
    """What one pod (or all of them) requests beyond a namespace's ResourceQuota, by quota key
    (`requests.cpu`, ...). `stacks validate` passes `stacks/sizing.py replica_requests`; the policy
    pack passes the rendered pod's requests and the rendered ResourceQuota."""
    out = []
    for key, resource in QUOTA_RESOURCES.items():
        attr, show = RESOURCES[resource]
        if getattr(need, attr) > getattr(quota, attr):
            out.append(Shortfall(key, show(getattr(need, attr)), show(getattr(quota, attr))))
    return out


def pod_count_shortfall(pods: int, allowed: int) -> Shortfall | None:
    """More pods than a ResourceQuota's `pods` admits (every pod not yet finished counts, a Job's too)."""
    return Shortfall("pods", str(pods), str(allowed)) if pods > allowed else None


def mig_quota_shortfalls(need: Mapping[str, int], allowed: Mapping[str, int]) -> list[Shortfall]:
    """MIG instances requested beyond a quota, per profile (`need` and `allowed`: profile -> instances), by
    quota key (`requests.nvidia.com/mig-3g.40gb`). A profile `allowed` does not name is not bounded, as a
    ResourceQuota bounds only what it names (the platform refuses a team quota leaving out a MIG profile of
    its pools: stacks/rules/sharing.py). `stacks validate` passes one replica's instances on its pool's
    profile and the team's `quota.migInstances`; the policy pack the rendered pod's and ResourceQuota's."""
    return [
        Shortfall(mig_quota_key(profile), str(n), str(allowed[profile]))
        for profile, n in sorted(need.items())
        if profile in allowed and n > allowed[profile]
    ]
