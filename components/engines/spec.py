"""The one typed spec every engine module declares (`SPEC`), what its builder receives for one model
(`WorkloadSpec`), and the per-model facts most engines share.

An `EngineSpec` holds everything the program knows about an engine: its facts (stacks/engine_facts.py:
server, metrics, argument dialect, what it supports), what it makes of one model entry
(`model_facts`: image, Service, workload, weights source, the names its operator derives) and the
Kubernetes objects it builds (`manifests`).
Every field is required, so a module that forgets one fails at import, never silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.config.pools import NodePoolSection
from stacks.config.storage import StorageSection
from stacks.engine_facts import EngineFacts, ModelFacts
from stacks.errors import Problem
from stacks.fit import Requests
from stacks.groups import ReplicaGroup
from stacks.resolved import ImageTable, ModelEntry, PodShape, ResolvedModel, ResolvedStack
from stacks.versions import Image

from ..scheduling import Placement
from ..storage.cache import CacheMount


def repo_id(model: ModelSection) -> str | None:
    """The Hugging Face repository a model id names, or None for a URL or a local path."""
    return None if "://" in model.model or model.model.startswith("/") else model.model


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """Everything an engine module needs to build one model's objects."""

    served: ResolvedModel
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
    def facts(self) -> EngineFacts:
        return self.served.facts

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


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """One engine, whole."""

    facts: EngineFacts
    # What the engine makes of one model entry on a platform with these add-ons.
    model_facts: Callable[[ModelSection, AddonsSection], ModelFacts]
    # The pods one model runs on a pool, from one pod's sized requests (stacks/sizing.py) and its group:
    # what the builders render, `stacks plan` prints and the fit rule checks.
    pods: Callable[[ModelSection, Requests, ReplicaGroup], tuple[PodShape, ...]]
    # The model's Kubernetes objects.
    manifests: Callable[[WorkloadSpec], list[dict[str, Any]]]
    # The refusals and warnings only this engine has, for one models[] entry of a resolved stack
    # (stacks/rules/engines.py runs them with every other rule).
    checks: Callable[[ModelEntry, ResolvedStack], Iterable[Problem]]
    warnings: Callable[[ModelEntry, ResolvedStack], Iterable[Problem]]
    # Why its pinned image cannot export OpenTelemetry spans (`addons.tracing` refuses the model, quoting
    # this, until `models[].tracing: false`); None: it exports (components/engines/workload.py otel_*).
    no_traces: str | None


def no_problems(entry: ModelEntry, stack: ResolvedStack) -> Iterable[Problem]:
    """For an engine with no refusals (or warnings) of its own."""
    del entry, stack
    return ()
