"""Models: one serving workload per `models[]` entry of the stack file.

For each model it builds the WorkloadSpec (image from the versions catalog overridden by
`models[].image`, placement on its pool, the model cache from the storage concern, the served-model
facts) and applies what the engine module returns (components/engines, and the serving platforms'
dynamo and ray-serve modules). A custom resource (NIMService, DynamoGraphDeployment, RayService)
depends on the release that installs its CRD (`components/serving ENGINE_INSTALLER`). Pods run as
the cache's bucket reader (`model-reader`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks.config import ModelSection, StackConfig
from stacks.versions import IMAGES, Image

from . import engines
from .k8s import apply
from .naming import TOKEN, labels
from .scheduling import placement
from .served import served_model
from .serving import ENGINE_INSTALLER
from .storage.cache import CacheContext, cache_mount
from .storage.manifests import CACHE_CLAIM

# What a scaler can target: the kinds `ServedModel.scale_target` names.
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "NIMService", "DynamoGraphDeployment", "RayService")


@dataclass(frozen=True, kw_only=True)
class ModelsArgs:
    config: StackConfig
    provider: k8s.Provider
    cache: CacheContext | None = None
    neuron_scheduler: pulumi.Input[str] | None = None
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)
    installers: dict[str, pulumi.Resource] = field(default_factory=dict)


def model_image(model: ModelSection) -> Image:
    """The catalog image for the engine, overridden per model by repository, tag and digest."""
    base = IMAGES.get(model.engine, Image("", ""))
    override = model.image
    repository = override.repository or base.repository
    tag = override.tag or base.tag
    # A digest belongs to one repository and tag; keep the catalog's only if neither changed.
    keep = override.repository is None and override.tag is None
    digest = override.digest or (base.digest if keep else None)
    return Image(repository, tag, digest)


def workload_spec(args: ModelsArgs, model: ModelSection) -> engines.WorkloadSpec | None:
    """Everything the engine module needs; None when the pool is unknown (validation refuses that)."""
    config = args.config
    pool = config.pool(model.pool)
    if pool is None:
        return None
    # Without a storage component in this stack (a workloads stack), the shared cache claim has the
    # name the storage component gives it in every model namespace.
    shared = config.storage.model_cache in ("efs", "fsx")
    ctx = args.cache or CacheContext(storage=config.storage, claim_name=CACHE_CLAIM if shared else None)
    served = served_model(config, model)
    return engines.WorkloadSpec(
        config=config,
        model=model,
        pool=pool,
        served=served,
        placement=placement(pool, args.neuron_scheduler),  # type: ignore[arg-type]
        cache=cache_mount(ctx, model, pool),
        image=model_image(model),
        labels=labels(served.service, model.name, **{"inference-platform.io/engine": model.engine}),
    )


def model_manifests(spec: engines.WorkloadSpec) -> list[dict[str, Any]] | None:
    """The engine module's objects, or None when the engine's module has not landed yet."""
    try:
        module = engines.engine_module(spec.model.engine)
    except ImportError:
        return None
    return list(module.manifests(spec))


class Models(pulumi.ComponentResource):
    """The stack's model servers: workload, Service, PodDisruptionBudget and HPA per model."""

    skipped: list[str]
    # model name -> (apiVersion, kind, name) of the workload built for it; equal to
    # ServedModel.scale_target, which scalers (AIBrix PodAutoscaler, HPA) target.
    workloads: dict[str, tuple[str, str, str]]

    def __init__(self, name: str, args: ModelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Models", name, None, opts)
        self.skipped = []
        self.workloads = {}
        for model in args.config.models:
            spec = workload_spec(args, model)
            objs = model_manifests(spec) if spec else None
            if spec is None or objs is None:
                self.skipped.append(model.name)
                continue
            work = next((o for o in objs if o["kind"] in WORKLOAD_KINDS), None)
            if work is not None:
                self.workloads[model.name] = (work["apiVersion"], work["kind"], work["metadata"]["name"])
            deps: list[pulumi.Resource] = []
            if ns := args.namespaces.get(spec.served.namespace):
                deps.append(ns)
            for obj in objs:
                obj_deps = list(deps)
                installer = ENGINE_INSTALLER.get(model.engine)
                if not _is_core(obj) and installer:
                    if installer in args.installers:
                        obj_deps.append(args.installers[installer])
                    else:
                        pulumi.log.warn(
                            f"{obj['kind']} {obj['metadata']['name']}: no installer for the {installer} "
                            f"CRD is wired; the object will fail to apply until it is installed",
                            self,
                        )
                apply(
                    obj,
                    pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=obj_deps),
                    name=f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}",
                )
        self.register_outputs({"skipped": self.skipped})


def _is_core(obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    return group in ("", "apps", "policy", "autoscaling")
