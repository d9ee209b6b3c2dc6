"""What the platform puts into each namespace of a team it declares (`teams[]`), as pure builders; the
Tenancy component (components/tenancy.py) applies them, never the team's own stack, which writes only
its models and its `stack_record`.

- The namespace, labelled with its team (`inference-platform.io/team`), so the platform's other
  objects (network policies, scrapers) can select a team's namespaces by label.
- Guardrails: a ResourceQuota on accelerators, cpu and memory, and a LimitRange so a container that
  states no requests still counts against the quota. A model that would exceed the team's share is
  refused by the API server instead of starving other teams; the team's identity may read both, not
  change them (components/team_access.py).
- With `modelCache: efs`, the ReadWriteMany `model-cache` claim on the platform's EFS StorageClass (an
  access point of its own, so a namespace's cache directory is no other namespace's). The
  `model-reader` ServiceAccount and its Pod Identity association to the team's own reader role come
  with the team's ModelReaders (components/storage/bucket.py). `modelCache: fsx` gives a team no claim:
  a Lustre static volume mounts the whole file system, and a workloads stack with models on an fsx
  platform is refused (stacks/rules/workloads.py).
"""

from __future__ import annotations

from typing import Any

from stacks.config.stack import Quota
from stacks.config.storage import StorageSection
from stacks.naming import MANAGED_BY, labels
from stacks.resolved import TEAM_LABEL
from stacks.sharing import mig_quota_key

from .storage.claims import EFS_STORAGE_CLASS, cache_claim

ENV_LABEL = "inference-platform.io/environment"  # read by the policy pack (image digests in prod)
# Every namespace models run in carries it (the platform's own and its teams').
MODELS_LABEL = "inference-platform.io/models"


def team_namespace(team: str, namespace: str, environment: str) -> dict[str, Any]:
    """One namespace of a team, labelled with the team (and its environment)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace,
            "labels": {**MANAGED_BY, MODELS_LABEL: "true", TEAM_LABEL: team, ENV_LABEL: environment},
        },
    }


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
                "requests.nvidia.com/gpu.shared": str(quota.shared_gpus),
                **{mig_quota_key(profile): str(n) for profile, n in sorted(quota.mig_instances.items())},
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


def stack_record(team: str, namespace: str, environment: str, platform_stack: str) -> dict[str, Any]:
    """What a team's own stack writes besides its models: a ConfigMap in the team's home namespace naming
    the team, its platform stack and its environment, labelled with the environment, so the policy pack
    reads a team stack's environment from the stack's own objects (it creates no tagged AWS resource,
    and the quota that carried the label is the platform's)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{team}-stack",
            "namespace": namespace,
            "labels": labels("team-stack", team, **{ENV_LABEL: environment}),
        },
        "data": {"team": team, "platformStack": platform_stack, "environment": environment},
    }


def cache_claims(namespace: str, storage: StorageSection) -> list[dict[str, Any]]:
    """The namespace's `model-cache` claim on a shared EFS cache; none on any other cache."""
    if storage.model_cache != "efs":
        return []
    return [cache_claim(namespace, storage.efs.cache_size_gib, storage_class=EFS_STORAGE_CLASS)]
