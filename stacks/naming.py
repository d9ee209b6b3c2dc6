"""Names, tags and labels: physical-name rules and length limits in one place.

Pulumi's unit-test mocks run no transforms, so tags and labels are passed explicitly from these helpers
rather than injected by a stack transform: the render and the tests see them as `pulumi up` sets them.
"""

from __future__ import annotations

import hashlib

from .config.teams import PLATFORM_CLIENTS

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


# A pod's role within its workload (Kubernetes' recommended labels).
COMPONENT_LABEL = "app.kubernetes.io/component"


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


def reader_role_purpose(owner: str) -> str:
    """The bucket reader role of an owner of models: `model-reader` for the platform's own
    (PLATFORM_CLIENTS), `model-reader-<team>` for a team's."""
    return "model-reader" if owner == PLATFORM_CLIENTS else f"model-reader-{owner}"


def deploy_role_purpose(team: str) -> str:
    """The role a team's workloads stack deploys as: `deploy-<team>`."""
    return f"deploy-{team}"


# EventBridge events Karpenter handles through its interruption queue (upstream template rules).
INTERRUPTION_EVENTS: dict[str, dict[str, list[str]]] = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "instance-state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "capacity-reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}


# ---- AWS names (unique per account and region: the cluster name keeps them apart) ----------------


def queue_name(cluster: str) -> str:
    """SQS names: at most 80 characters of letters, digits, - and _."""
    return physical(cluster, "karpenter", limit=80)


def rule_name(cluster: str, event: str) -> str:
    """EventBridge rule names are unique per account and region: the cluster name keeps them apart."""
    return physical(cluster, "karpenter", event, limit=64)


def provider_env(name: str) -> str:
    """The environment variable the LiteLLM proxy reads an external provider's key from: the name
    upper-cased, `-` as `_` (`my-prov` and `my_prov` both give MY_PROV_API_KEY)."""
    return f"{name.upper().replace('-', '_')}_API_KEY"
