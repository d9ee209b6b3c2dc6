"""Models: one serving workload per `models[]` entry of the stack file.

For each resolved model (stacks/resolve) it builds the WorkloadSpec (placement on its pool, the
model cache from the storage concern, the engine's facts) and applies what the engine module in
components/engines returns. A custom resource (NIMService, DynamoGraphDeployment, RayService)
depends on the release that installs its CRD (the engine's `FACTS.controller`). Pods run as the
cache's bucket reader (`model-reader`); a model streamed from the bucket also gets the Job that fills its
prefix, as the bucket writer (`model-writer`). A model with a canary also gets the canary's objects, from
the canary's resolved model (stacks/resolve/models.py `canary_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks.config.storage import StorageSection
from stacks.groups import leader_worker_set
from stacks.naming import TOKEN, labels
from stacks.resolved import CACHE_CLAIM, ImageTable, ResolvedModel

from .engines import ENGINES, WorkloadSpec
from .k8s import register
from .scheduling import placement
from .storage.cache import CacheContext, cache_mount, stream_fill_job


@dataclass(frozen=True, kw_only=True)
class ModelsArgs:
    models: list[ResolvedModel]
    # The platform's cache settings (a team's stack follows its platform's).
    storage: StorageSection
    provider: k8s.Provider
    # The stack's pinned platform images (the preparation steps, Dynamo's planner).
    images: ImageTable
    cache: CacheContext | None = None
    neuron_scheduler: str | None = None
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)
    # The serving platforms' releases by add-on name: a custom resource waits for its CRD's.
    operators: dict[str, pulumi.Resource] = field(default_factory=dict)
    # Each pool's NodePools (one per capacity tier) by pool name (components/capacity): a model's objects
    # wait for every one of its pool's, which wait for the pool's EC2NodeClass; empty in a team's stack
    # (the platform's pools exist).
    node_pools: dict[str, list[pulumi.Resource]] = field(default_factory=dict)
    # The AWS Load Balancer Controller's release, when this stack runs it: its Service webhook fails
    # closed, so every Service, and every release creating one, waits for it.
    service_webhook: pulumi.Resource | None = None
    # The Secrets the program created from Pulumi secrets, by namespace: a model's objects wait for those
    # of its namespace (its pods mount them).
    secrets: dict[str, list[pulumi.Resource]] = field(default_factory=dict)


def workload_spec(
    model: ResolvedModel,
    storage: StorageSection,
    cache: CacheContext | None = None,
    neuron_scheduler: str | None = None,
    *,
    images: ImageTable,
) -> WorkloadSpec:
    """Everything the engine module needs for one model."""
    # Without a storage component in this stack, the shared cache claim has the name the storage
    # component gives it in every model namespace.
    shared = storage.model_cache in ("efs", "fsx")
    ctx = cache or CacheContext(storage=storage, claim_name=CACHE_CLAIM if shared else None)
    pool = model.pool.config
    return WorkloadSpec(
        served=model,
        storage=storage,
        placement=placement(pool, neuron_scheduler),
        cache=cache_mount(ctx, model, images),
        # app.kubernetes.io/name is the workload's (a Deployment's selector keeps it); a platform's
        # pods add their role as app.kubernetes.io/component.
        labels=labels(model.workload[2], model.name, **{"inference-platform.io/engine": model.engine}),
        images=images,
    )


class Models(pulumi.ComponentResource):
    """The stack's model servers: workload, Service, PodDisruptionBudget and HPA per model."""

    def __init__(self, name: str, args: ModelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Models", name, None, opts)
        # A canary (`models[].canary`) is built like its model, beside it: its own workload and Service.
        for model in [w for m in args.models for w in (m, m.canary) if w is not None]:
            spec = workload_spec(model, args.storage, args.cache, args.neuron_scheduler, images=args.images)
            objs = model_objects(spec, args.cache)
            deps: list[pulumi.Resource] = []
            if ns := args.namespaces.get(model.namespace):
                deps.append(ns)
            # Scheduled on the pool's nodes: pods created before Karpenter knows the pool wait Pending,
            # and on destroy the pool (and its nodes) outlives them.
            deps += args.node_pools.get(model.pool.name, [])
            deps += args.secrets.get(model.namespace, [])
            # A group across nodes is a LeaderWorkerSet, whose CRD the LWS release installs.
            installer = "lws" if leader_worker_set(model.config, model.facts.groups) else model.facts.controller
            # A Job the engine returns first (a Neuron compile) runs before the serving objects: they wait
            # for its completion, which the provider awaits (its timeout annotation). model_objects puts a
            # streamed model's fill Job last, so nothing waits for that one (its pods wait for its marker).
            before: list[pulumi.Resource] = []
            for obj in objs:
                obj_deps = list(deps) + (before if obj["kind"] != "Job" else [])
                if not _is_core(obj) and installer:
                    if installer in args.operators:
                        obj_deps.append(args.operators[installer])
                    else:
                        pulumi.log.warn(
                            f"{obj['kind']} {obj['metadata']['name']}: no installer for the {installer} "
                            f"CRD is wired; the object will fail to apply until it is installed",
                            self,
                        )
                made = register(
                    obj,
                    pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=obj_deps),
                    name=f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}",
                    service_webhook=args.service_webhook,
                )
                if obj["kind"] == "Job":
                    before.append(made)
        self.register_outputs({})


def model_objects(spec: WorkloadSpec, cache: CacheContext | None = None) -> list[dict[str, Any]]:
    """The engine module's objects for one model, and, for a model streamed from the bucket
    (`models[].loadFormat`), the one-time Job that fills its bucket prefix."""
    objs = list(ENGINES[spec.served.engine].manifests(spec))
    if spec.cache.stream_uri is not None:
        if cache is None:
            raise ValueError(
                f"model {spec.model.name} streams from the bucket: its fill Job needs the storage's context"
            )
        objs.append(stream_fill_job(cache, spec.served, spec.images, spec.placement))
    return objs


def _is_core(obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    return group in ("", "apps", "policy", "autoscaling")
