"""What a team's workloads stack creates in its namespace besides its models.

- Guardrails: a ResourceQuota on accelerators, cpu and memory, and a LimitRange so a container that
  states no requests still counts against the quota. Pure builders; InferencePlatform._workloads applies
  them before the team's models, so a model that would exceed the team's share is refused by the
  API server instead of starving other teams.
- `TeamStorage`: the team's way to the platform's model storage. The platform's storage component
  creates the cache claim and the bucket reader's ServiceAccount only in the platform's own model
  namespaces, so a team stack creates its own: the `model-reader` ServiceAccount with an EKS Pod
  Identity association to the platform's read-only bucket role, and with `modelCache: efs` a
  ReadWriteMany `model-cache` claim on the platform's EFS StorageClass (an access point of its own,
  so a team's cache directory is not another team's). `modelCache: fsx` is refused for workloads
  stacks before anything exists (stacks/rules/workloads.py; README "Platform team and app teams").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.stack import Quota
from stacks.config.storage import StorageSection
from stacks.naming import TOKEN, labels

from .k8s import register
from .storage.cache import CacheContext
from .storage.claims import CACHE_CLAIM, READER_SERVICE_ACCOUNT, cache_claim, service_account

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


def storage_objects(team: str, storage: StorageSection, storage_class: str | None) -> list[dict[str, Any]]:
    """The reader ServiceAccount and, on a shared EFS cache, the team's `model-cache` claim."""
    objs = [service_account(READER_SERVICE_ACCOUNT, team)]
    if storage.model_cache == "efs":
        if not storage_class:
            raise ValueError("modelCache efs needs the platform's exported storageClasses.modelCache")
        objs.append(cache_claim(team, storage.efs.cache_size_gib, storage_class=storage_class))
    # fsx: no claim; a team stack with models on an fsx platform is refused (stacks/rules/workloads.py).
    return objs


@dataclass(frozen=True, kw_only=True)
class TeamStorageArgs:
    team: str
    storage: StorageSection  # the platform's, from its exports
    storage_class: str | None  # the platform's exported storageClasses.modelCache
    bucket: pulumi.Input[str]  # the platform's modelBucket export
    reader_role_arn: pulumi.Input[str]  # the platform's modelReaderRoleArn export
    cluster_name: pulumi.Input[str]
    region: str
    namespace: pulumi.Resource
    provider: k8s.Provider
    tags: dict[str, str]


class TeamStorage(pulumi.ComponentResource):
    """The team namespace's model-reader account (Pod Identity) and model cache claim."""

    context: CacheContext

    def __init__(self, name: str, args: TeamStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:TeamStorage", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[args.namespace])
        account: pulumi.Resource | None = None
        for obj in storage_objects(args.team, args.storage, args.storage_class):
            applied = register(obj, k8s_opts, name=f"{name}-{obj['kind'].lower()}")
            if obj["kind"] == "ServiceAccount":
                account = applied
        aws.eks.PodIdentityAssociation(
            f"{name}-reader",
            cluster_name=args.cluster_name,
            namespace=args.team,
            service_account=READER_SERVICE_ACCOUNT,
            role_arn=args.reader_role_arn,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[account] if account else []),
        )
        shared = args.storage.model_cache == "efs"
        self.context = CacheContext(
            storage=args.storage,
            bucket=args.bucket,
            claim_name=CACHE_CLAIM if shared else None,
            reader_service_account=READER_SERVICE_ACCOUNT,
            region=args.region,
        )
        self.register_outputs({"serviceAccount": READER_SERVICE_ACCOUNT, "claim": CACHE_CLAIM if shared else None})
