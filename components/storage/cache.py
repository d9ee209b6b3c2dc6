"""How a serving pod reaches its model's weights: the cache volume, where it is mounted, and what
fills it. Pure functions; the engine modules put the result into their pod specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from stacks.config.models import ModelSection
from stacks.config.pools import NodePoolSection
from stacks.config.storage import StorageSection

CACHE_ROOT = "/models"


@dataclass(frozen=True)
class CacheMount:
    """Volumes, mounts and init containers that give a pod its model under `model_dir`."""

    model_dir: str
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    env: list[dict[str, Any]] = field(default_factory=list)
    # Needs its own volume per replica (StatefulSet volumeClaimTemplates) rather than a shared one.
    per_replica: bool = False


def model_dir(model: ModelSection) -> str:
    """Weights live per model and revision, so a new revision never mixes with an old one."""
    return f"{CACHE_ROOT}/{model.name}/{model.revision or 'latest'}"


@dataclass(frozen=True)
class CacheContext:
    """What the storage component hands the engines: the choice, and the shared pieces it created."""

    storage: StorageSection
    bucket: pulumi.Input[str] | None = None  # model bucket name
    claim_name: str | None = None  # the shared ReadWriteMany PVC (efs, fsx)
    reader_service_account: str | None = None  # has read-only S3 access through Pod Identity


def cache_mount(ctx: CacheContext, model: ModelSection, pool: NodePoolSection) -> CacheMount:
    """The cache for this model under this stack's storage choice."""
    return CacheMount(
        model_dir=model_dir(model),
        volumes=[{"name": "model-cache", "emptyDir": {}}],
        volume_mounts=[{"name": "model-cache", "mountPath": CACHE_ROOT}],
    )
