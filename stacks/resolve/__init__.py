"""The one resolution step: a validated StackConfig (plus, for a workloads stack, its platform's
exports) becomes one frozen `ResolvedStack`, right after parsing and before any rule runs. Pure: no
Pulumi, no I/O, and total: any validated stack file resolves, whatever its rules will refuse.

Every derived fact is computed here and nowhere else (stacks/resolved.py holds the types): the
platform (pools with their instance types, DaemonSet overhead and limits; the add-ons with what the
models need turned on; the storage; the Gateway routes attach to), and per model its engine's facts,
its requests and pods, group, tensor size, cache, startup allowance, routing, scaler targets, way
back from zero and canary (models.py), and the platform images the stack renders (images.py). The
rules, the builders, `stacks plan` and the policy pack's stack checks read this one view.
"""

from __future__ import annotations

from components.engines import ENGINES

from ..config import StackConfig
from ..config.addons import AddonsSection
from ..exports import PlatformExports, read_platform
from ..resolved import Access, PlatformView, ResolvedStack, Team
from .acceptance import with_acceptance
from .access import front_door_access
from .cost import resolve_cost
from .helpers import with_helpers
from .images import image_table, rendered_images
from .models import controller_namespaces, litellm_through_picker, model_entry, place, route_parent, routing_strategy
from .platform import adapter_prometheus, gateway_parent, own_platform, unknown_platform
from .secrets import created_namespaces, managed_secrets, secret_refs

__all__ = ["gateway_parent", "own_platform", "resolve"]


def routed(config: StackConfig) -> bool:
    """The stack's exposed models get routes: on the front door's Gateway or AIBrix's; a team's on its
    platform's."""
    return config.stack.role == "workloads" or config.gateway.enabled or config.addons.aibrix.enabled


def _platform_and_team(config: StackConfig, platform: PlatformExports | None) -> tuple[PlatformView, Team | None]:
    """The platform the stack runs on (its own, its platform's exports, or an unknown one offline) and,
    for a workloads stack, its team."""
    stack = config.stack
    if stack.role != "workloads":
        return own_platform(config), None
    assert stack.team is not None
    if platform is None:
        view = unknown_platform(f"the platform {stack.platform_stack}")
    else:
        view = read_platform(platform.exports, f"the platform {platform.where}")
    # The platform's declaration of the team; undeclared (refused by the rules) or unknown offline: its
    # name alone, in a namespace of that name.
    team = view.team(stack.team) or Team(
        name=stack.team, namespaces=(stack.team,), quota=None, api_keys_secret=view.gateway.api_keys_secret
    )
    return view, team


def resolve(config: StackConfig, platform: PlatformExports | None = None) -> ResolvedStack:
    """The stack, resolved. A workloads stack resolves against its platform's exports, or, when they
    cannot be read here (None), against an unknown platform: then only what needs no platform is
    resolved and checked."""
    stack = config.stack
    view, team = _platform_and_team(config, platform)
    owns = stack.role != "workloads"
    has_routes = routed(config)
    parent = route_parent(view, owns)
    entries = tuple(
        with_acceptance(model_entry(i, m, view.addons, team), view, parent, has_routes)
        for i, m in enumerate(config.models)
    )
    models = tuple(with_helpers(m) for m in (place(e, view, has_routes) for e in entries) if m is not None)
    picked = [routing_strategy(e.config, e.facts, has_routes) not in (None, "round-robin") for e in entries]
    names = rendered_images(
        owns_platform=owns,
        addons=view.addons,
        accelerators=view.accelerators,
        entries=entries,
        picked=picked,
        proxied=[p and litellm_through_picker(e, view) for e, p in zip(entries, picked, strict=True)],
        warm=any(p.warm_nodes for p in view.pools),
    )
    dashboards: set[str] = {e.config.engine for e in entries}
    if stack.role == "platform":
        # Teams deploy later, from their own stacks: a dashboard for every engine the pools can run.
        dashboards |= {name for name, e in ENGINES.items() if view.accelerators & set(e.facts.accelerators)}
    refs = secret_refs(config, view, entries, parent, owns)
    return ResolvedStack(
        tracing=view.tracing,
        config=config,
        environment=stack.environment,
        region=config.aws_region,
        platform=view,
        entries=entries,
        models=models,
        cluster=config.cluster if owns else None,
        team=team,
        platform_stack=stack.platform_stack,
        controller_namespaces=controller_namespaces(view.addons, {m.engine for m in config.models}),
        route_parent=parent,
        engines={name: e.facts for name, e in ENGINES.items()},
        dashboard_engines=frozenset(dashboards),
        images=image_table(names, view.addons, config.images.pins()),
        prometheus_adapter=adapter_prometheus(view.addons.monitoring) if owns else None,
        access=front_door_access(view, parent, models) if owns else Access(),
        secret_refs=refs,
        managed_secrets=managed_secrets(config, refs),
        created_namespaces=created_namespaces(config, view, {m.namespace for m in models}, parent),
        cost=resolve_cost(view.addons.monitoring.cost, view.pools) if owns and _costed(view.addons) else None,
    )


def _costed(addons: AddonsSection) -> bool:
    """Whether this stack records tokens and cost: its monitoring runs and the cost rules are on."""
    return addons.monitoring.enabled and addons.monitoring.cost.enabled
