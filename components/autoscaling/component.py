"""`ModelScalers`: the KEDA objects of each KEDA-scaled model (components/autoscaling/keda.py), applied after
the KEDA release that installs their CRDs (in this stack; a team's stack runs on its platform's) and
the model's namespace. A model that scales to zero first gets its InterceptorRoute (after the HTTP
add-on's release, components/autoscaling/wake.py), and its ScaledObject waits for that route."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from stacks.naming import TOKEN
from stacks.resolved import ResolvedModel

from ..k8s import register
from .keda import scaled_objects
from .wake import interceptor_route


@dataclass(frozen=True, kw_only=True)
class ModelScalersArgs:
    models: list[ResolvedModel]
    provider: k8s.Provider
    # The Prometheus the triggers query (stacks/resolve/platform.py prometheus_url, or the platform's export).
    prometheus: str | None
    # The KEDA release when this stack installs it.
    keda: pulumi.Resource | None = None
    # The KEDA HTTP add-on's release when this stack installs it (the InterceptorRoute CRD).
    keda_http: pulumi.Resource | None = None
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)


class ModelScalers(pulumi.ComponentResource):
    """One ScaledObject per KEDA target of each model."""

    def __init__(self, name: str, args: ModelScalersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ModelScalers", name, None, opts)
        for served in args.models:
            if not served.keda_targets:
                continue
            depends = [r for r in (args.keda, args.namespaces.get(served.namespace)) if r is not None]
            if served.wake is not None:
                installers = [r for r in (args.keda_http, args.namespaces.get(served.namespace)) if r is not None]
                route_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=installers)
                # Before the ScaledObject: its push trigger asks the scaler for this route's metric.
                depends.append(register(interceptor_route(served), route_opts))
            child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends)
            for obj in scaled_objects(served, args.prometheus):
                register(obj, child)
        self.register_outputs({})
