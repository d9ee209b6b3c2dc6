"""The front door: Envoy Gateway, the authenticated HTTPS Gateway, one route per exposed model and the
model namespaces' network isolation.

Two components, because other concerns sit between them: `GatewayController` installs Envoy Gateway
(its chart carries the Gateway API and Envoy Gateway CRDs, which AIBrix's gateway also needs), and
`FrontDoor` creates the objects that attach to it once the models exist (and, with `addons.litellm`,
the LiteLLM proxy's route and SecurityPolicy under `/litellm/v1/...`; with `models[].routing`, each
model's endpoint picker release and the policy that calls it; with the KEDA HTTP add-on, the grant that
lets routes reach its interceptor and the policy that admits only the front door, LiteLLM and the
add-on's scaler to it). A third, `RouteAdmission`, is the platform stack's admission policies on
teams' HTTPRoutes and InterceptorRoutes (`admission.py`, `interceptor_admission.py`: what a team's
route may claim); the platform creates it before any
team's deploy identity is bound, ahead of the other two. Manifests and values come from the pure
builders in `routing.py`, `picker.py`, `isolation.py`, `admission.py` and `interceptor_admission.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from stacks.config.gateway import GatewaySection
from stacks.naming import MANAGED_BY, TOKEN
from stacks.resolved import (
    EG_NAMESPACE,
    GATEWAY_NAMESPACE,
    Access,
    Endpoint,
    GatewayParent,
    ResolvedModel,
    TraceExport,
)
from stacks.versions import Chart, CrdSource, Image

from .. import crds, peers
from ..k8s import register, release
from ..serving import litellm
from . import admission, interceptor_admission, isolation, picker
from .routing import envoy_gateway_values, gateway_objects, interceptor_grants, key_grant, model_routing

__all__ = ["FrontDoor", "FrontDoorArgs", "GatewayController", "GatewayControllerArgs", "RouteAdmission"]

# FrontDoor's options for an object after the namespaces it names (those this stack creates) and,
# unless `crds=False`, after the installers of the CRDs it needs.
_After = Callable[..., pulumi.ResourceOptions]


@dataclass(frozen=True, kw_only=True)
class GatewayControllerArgs:
    chart: Chart  # gateway-helm, pinned
    crds: CrdSource  # gateway-crds-helm at the same version: the Gateway API and Envoy Gateway CRDs
    prod: bool  # two replicas under a PDB
    aibrix: bool  # AIBrix patches its Gateway through EnvoyPatchPolicy
    provider: k8s.Provider
    # What must run before Envoy Gateway creates a Gateway's LoadBalancer Service (the AWS Load
    # Balancer Controller, whose Service webhook fails closed), and must outlive it on destroy.
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class GatewayController(pulumi.ComponentResource):
    """Envoy Gateway (gateway-helm) in envoy-gateway-system, after its CRDs (gateway-crds-helm, applied
    by the program on every update: the chart's crds/ would never be upgraded)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: GatewayControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:GatewayController", name, None, opts)
        applied = crds.install(f"{name}-crds", args.crds, pulumi.ResourceOptions(parent=self, provider=args.provider))
        self.release = release(
            f"{name}-envoy-gateway",
            args.chart,
            release_name="envoy-gateway",
            namespace=EG_NAMESPACE,
            create_namespace=True,
            skip_crds=True,
            values=envoy_gateway_values(prod=args.prod, aibrix=args.aibrix),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[applied, *args.depends_on]),
        )
        self.register_outputs({"release": self.release.name})


class RouteAdmission(pulumi.ComponentResource):
    """The ValidatingAdmissionPolicies on teams' HTTPRoutes (admission.py) and InterceptorRoutes
    (interceptor_admission.py), cluster-scoped, each binding after its policy: a binding whose policy does
    not exist is ignored, so in the other order objects would be admitted unchecked in between (and, on
    destroy, the bindings go first)."""

    bindings: list[pulumi.Resource]

    def __init__(self, name: str, provider: k8s.Provider, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:RouteAdmission", name, None, opts)
        pairs = [
            (admission.team_routes_policy(), admission.team_routes_binding()),
            (
                interceptor_admission.team_interceptor_routes_policy(),
                interceptor_admission.team_interceptor_routes_binding(),
            ),
        ]
        self.bindings = []
        for policy_obj, binding_obj in pairs:
            policy = register(policy_obj, pulumi.ResourceOptions(parent=self, provider=provider))
            after = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[policy])
            self.bindings.append(register(binding_obj, after))
        self.register_outputs({})


@dataclass(frozen=True, kw_only=True)
class FrontDoorArgs:
    gateway: GatewaySection
    provider: k8s.Provider
    parent_gateway: GatewayParent
    served: list[ResolvedModel]
    # This stack owns the listener (its Gateway, or AIBrix's): it creates the listener's policy. A
    # workloads stack attaches routes to its platform's listener and owns nothing of it.
    owns_listener: bool
    # Who the listener, the LiteLLM route and the platform's grants admit (stacks/resolve/access.py);
    # empty for a workloads stack.
    access: Access = field(default_factory=Access)
    # The LiteLLM proxy runs in this stack: one more authenticated route.
    litellm_route: bool = False
    # Installers whose CRDs the objects need (Envoy Gateway; AIBrix when its gateway is the parent).
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    # The AWS Load Balancer Controller's release, when this stack installs it: the Gateway's namespace
    # (where its proxies' LoadBalancer Service lives) is created after it and deleted before it.
    load_balancer: pulumi.Resource | None = None
    # Namespaces that already exist (created by the platform), by name.
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)
    # The Prometheus pods that scrape the models (components/peers.py prometheus); None: no monitoring.
    scraper: peers.Pods | None = None
    # Serving-platform controller namespaces whose controllers call model pods, by engine.
    platform_namespaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The LiteLLM proxy's installer, when `addons.litellm` is on: its route waits for its namespace.
    litellm: pulumi.Resource | None = None
    # The llm-d router's standalone chart and its picker image, for models routed through a picker
    # (the image is in the stack's table only when one is).
    picker_chart: Chart | None = None
    picker_image: Image | None = None
    # The Envoy beside the picker of a model LiteLLM calls (RoutePicking.litellm_proxy).
    picker_proxy_image: Image | None = None
    # The KEDA HTTP add-on's release, when this stack installs it: the routes' grant to its interceptor
    # and the interceptor's ingress policy go with it (a team's scale-to-zero routes use the platform's).
    interceptor: pulumi.Resource | None = None
    # The AWS Load Balancer Controller's release, when this stack runs it: its Service webhook fails
    # closed, so every Service, and every release creating one, waits for it.
    service_webhook: pulumi.Resource | None = None
    # Where the Gateway's proxies export spans (an EnvoyProxy with an OpenTelemetry provider); None: off.
    tracing: TraceExport | None = None


class FrontDoor(pulumi.ComponentResource):
    """Gateway, routes, SecurityPolicies, rate limits, ReferenceGrants and NetworkPolicies."""

    url: pulumi.Output[str]
    # The namespaces it created (the Gateway's), by name: later objects there wait for them.
    created: dict[str, k8s.core.v1.Namespace]

    def __init__(self, name: str, args: FrontDoorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:FrontDoor", name, None, opts)
        gw, parent = args.gateway, args.parent_gateway
        plain = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespaces = dict(args.namespaces)
        self.created = {}
        if parent.own and parent.namespace not in namespaces:
            # The Gateway's data plane lives here (Envoy Gateway's GatewayNamespace mode). Pulumi deletes a
            # Namespace and waits until it is gone, its contents' finalizers included, so on destroy the
            # proxies' LoadBalancer Service is gone, and its NLB, security groups and ENIs with it, before
            # the load balancer controller that removes them is uninstalled.
            lb = [args.load_balancer] if args.load_balancer is not None else []
            namespaces[parent.namespace] = self.created[parent.namespace] = k8s.core.v1.Namespace(
                f"{name}-ns",
                metadata={"name": GATEWAY_NAMESPACE, "labels": {**MANAGED_BY}},
                opts=pulumi.ResourceOptions.merge(plain, pulumi.ResourceOptions(depends_on=lb)),
            )

        def after(*namespaces_used: str, crds: bool = True) -> pulumi.ResourceOptions:
            deps = [namespaces[n] for n in namespaces_used if n in namespaces]
            return pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[*deps, *(args.depends_on if crds else [])]
            )

        exposed: list[Endpoint] = [s for s in args.served if s.expose]
        if gw.enabled or not parent.own:
            self._create_routes(name, args, exposed, after)
        self._create_namespace_policies(args, exposed, after)

        self.url = pulumi.Output.from_input(f"https://{gw.hostname}")
        self.register_outputs({"url": self.url})

    def _create_routes(self, name: str, args: FrontDoorArgs, exposed: list[Endpoint], after: _After) -> None:
        """The listener's objects when this stack owns it, each exposed model's routing (and picker),
        the way to the KEDA HTTP interceptor, and LiteLLM's route."""
        gw, parent, access = args.gateway, args.parent_gateway, args.access
        if args.owns_listener:
            for obj in gateway_objects(gw, parent, access.platform_keys, args.tracing):
                register(obj, after(parent.namespace))
            # Beside each key Secret, so the policies of routes in other namespaces may name it.
            for obj in (o for grant in access.key_grants for o in key_grant(grant)):
                register(obj, after(obj["metadata"]["namespace"]))
        for served in exposed:
            route_ns = parent.route_namespace(served.namespace)
            for obj in model_routing(gw, served, parent):
                register(obj, after(obj["metadata"].get("namespace", ""), route_ns))
            if served.routing is not None and served.routing.picker:
                self._picker(name, served, args, after(served.namespace, crds=False), after(route_ns))
        if args.interceptor is not None:
            wake_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[args.interceptor])
            # A ReferenceGrant is a Gateway API kind: its CRD comes with the installers (Envoy Gateway).
            grant_opts = pulumi.ResourceOptions.merge(
                wake_opts, pulumi.ResourceOptions(depends_on=list(args.depends_on))
            )
            for grant in interceptor_grants(access.interceptor_routes_from):
                register(grant, grant_opts)
            policy = isolation.interceptor_ingress(proxies=peers.proxies(parent), litellm_proxy=args.litellm_route)
            register(policy, wake_opts)
        if args.litellm_route:
            # LiteLLM is one more authenticated route, like a model's, admitting the platform's clients and
            # the teams with LiteLLM access; it lives in the proxy's namespace, which LiteLLM's release makes.
            proxy_opts = after(parent.namespace)
            if args.litellm is not None:
                proxy_opts = pulumi.ResourceOptions.merge(proxy_opts, pulumi.ResourceOptions(depends_on=[args.litellm]))
            proxy = litellm.proxy_served(access.litellm_callers, access.litellm_key_secrets)
            for obj in model_routing(gw, proxy, parent):
                register(obj, proxy_opts)

    def _create_namespace_policies(self, args: FrontDoorArgs, exposed: list[Endpoint], after: _After) -> None:
        """Each model namespace's NetworkPolicies: the route's proxies in (when some model is exposed),
        the LiteLLM proxy, the scraper and the serving platforms' controllers, pod by pod."""
        by_namespace: dict[str, list[ResolvedModel]] = {}
        for served in args.served:
            by_namespace.setdefault(served.namespace, []).append(served)
        callers = isolation.Callers(
            proxies=peers.proxies(args.parent_gateway) if exposed else None,
            prometheus=args.scraper,
            litellm=args.litellm_route,
            controllers=args.platform_namespaces,
            tracing=args.tracing is not None,
        )
        for ns, models in sorted(by_namespace.items()):
            for obj in isolation.namespace_policies(models, callers):
                register(obj, after(ns, crds=False))

    def _picker(
        self,
        name: str,
        served: Endpoint,
        args: FrontDoorArgs,
        opts: pulumi.ResourceOptions,
        policy_opts: pulumi.ResourceOptions,
    ) -> None:
        """One model's endpoint picker, then the policy that calls it: with failOpen false, a policy
        whose picker is not there yet would fail the route's requests."""
        assert args.picker_chart is not None and args.picker_image is not None, "a picked model needs both"
        picker_release = release(
            f"{name}-{served.name}-picker",
            args.picker_chart,
            release_name=picker.release_name(served),
            namespace=served.namespace,
            # The platform's tracing, not the model's: a picker traces even for an engine that cannot export.
            values=picker.values(served, args.picker_image, args.tracing, args.picker_proxy_image),
            opts=opts,
            service_webhook=args.service_webhook,
        )
        wired = pulumi.ResourceOptions.merge(policy_opts, pulumi.ResourceOptions(depends_on=[picker_release]))
        for obj in picker.picker_objects(served, args.parent_gateway):
            register(obj, wired)
