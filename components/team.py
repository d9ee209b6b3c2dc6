"""A team's guardrails in its namespace: a ResourceQuota on accelerators, cpu and memory, and a
LimitRange so a container that states no requests still counts against the quota.

Pure builders; Platform._workloads applies them before the team's models, so a model that would
exceed the team's share is refused by the API server instead of starving other teams.
"""

from __future__ import annotations

from typing import Any

from stacks.config.stack import Quota

from .naming import labels

ENV_LABEL = "inference-platform.io/environment"  # read by the policy pack (image digests in prod)


def resource_quota(team: str, namespace: str, quota: Quota, environment: str = "dev") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": f"{team}-quota",
            "namespace": namespace,
            "labels": labels("team-quota", team, **{ENV_LABEL: environment}),
        },
        "spec": {
            "hard": {
                "requests.nvidia.com/gpu": str(quota.gpus),
                "requests.aws.amazon.com/neuron": str(quota.neuron_devices),
                "requests.cpu": quota.cpu,
                "requests.memory": quota.memory,
                "pods": str(quota.pods),
            }
        },
    }


def limit_range(team: str, namespace: str, quota: Quota) -> dict[str, Any]:
    defaults = quota.container_defaults
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": f"{team}-defaults", "namespace": namespace, "labels": labels("team-limits", team)},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": {"cpu": defaults.cpu, "memory": defaults.memory},
                    "default": {"memory": defaults.memory},
                }
            ]
        },
    }


def guardrails(team: str, namespace: str, quota: Quota, environment: str = "dev") -> list[dict[str, Any]]:
    return [resource_quota(team, namespace, quota, environment), limit_range(team, namespace, quota)]
