"""How a serving pod reaches its model's weights: the cache volume, where it is mounted, and what
fills it. Pure functions; the engine modules put the result into their pod specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stacks.config.models import ModelSection
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


def cache_mount(storage: StorageSection, model: ModelSection) -> CacheMount:
    """The cache for this model under this stack's storage choice."""
    return CacheMount(
        model_dir=model_dir(model),
        volumes=[{"name": "model-cache", "emptyDir": {}}],
        volume_mounts=[{"name": "model-cache", "mountPath": CACHE_ROOT}],
    )
