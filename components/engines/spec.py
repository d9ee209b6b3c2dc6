"""What every engine module's builder receives for one model: the resolved model (stacks/resolved.py)
and the pieces other concerns decided for it (placement on its pool, the model cache)."""

from __future__ import annotations

from dataclasses import dataclass

from stacks.config import ModelSection
from stacks.config.pools import NodePoolSection
from stacks.config.storage import StorageSection
from stacks.resolved import ImageTable, ResolvedModel
from stacks.versions import Image

from ..scheduling import Placement
from ..storage.cache import CacheMount
from .facts import EngineFacts


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """Everything an engine module needs to build one model's objects."""

    served: ResolvedModel
    facts: EngineFacts
    # The platform's cache settings (a team's stack follows its platform's).
    storage: StorageSection
    placement: Placement
    cache: CacheMount
    labels: dict[str, str]
    # The stack's pinned platform images, for the objects an engine renders beside its own (Dynamo's
    # profiling request runs the planner image).
    images: ImageTable

    @property
    def model(self) -> ModelSection:
        return self.served.config

    @property
    def pool(self) -> NodePoolSection:
        return self.served.pool.config

    @property
    def image(self) -> Image:
        return self.served.image

    @property
    def pod_service_account(self) -> str | None:
        """The pods' serviceAccountName: read-only bucket access through Pod Identity (`model-reader`)."""
        return self.cache.service_account
