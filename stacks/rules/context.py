"""The platform a stack's models run on, for the rules that check models against it.

An all-in-one stack's models run on its own pools, add-ons, storage and gateway; a workloads stack's
on its platform's, read from the platform's exports (stacks/resolve.py read_pools, read_addons,
read_storage: the same readers the render uses). So a team's model is held to every rule an
all-in-one stack's model is (fit, weights against accelerator memory, cache sizing, an SLO needing
monitoring, adapters needing AIBrix, autoscalers needing the add-ons the platform exports), never
accepted and then dropped or mis-rendered. When the platform cannot be read, `platform_of` is None:
stacks/rules/workloads.py reports why, or warns that the check waits for the preview.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from ..checks import Lookup
from ..config import ModelSection, StackConfig
from ..config.addons import AddonsSection
from ..config.gateway import GatewaySection
from ..config.pools import NodePoolSection
from ..config.storage import StorageSection
from ..errors import ConfigError
from ..exports import EXPORTS_VERSION
from ..resolve import gateway_parent, prometheus_url, read_platform
from ..resolved import GatewayParent


@dataclass(frozen=True)
class Platform:
    pools: tuple[NodePoolSection, ...]
    addons: AddonsSection
    storage: StorageSection
    gateway: GatewaySection
    parent: GatewayParent | None
    own: bool  # the stack's own platform (all-in-one), not a platform stack's exports
    where: str  # how a message names it
    # The Prometheus KEDA's triggers query; None: none (or an older platform that did not say).
    prometheus: str | None = None

    def pool(self, name: str) -> NodePoolSection | None:
        return next((p for p in self.pools if p.name == name), None)

    def addon(self, key: str) -> str:
        """How a message asks for an add-on: in the stack itself, or of the platform team."""
        return (
            f"set addons.{key}.enabled: true"
            if self.own
            else f"ask the platform team ({self.where}) to enable addons.{key}"
        )


def platform_of(config: StackConfig, lookup: Lookup) -> Platform | None:
    if config.stack.role != "workloads":
        return Platform(
            pools=tuple(config.node_pools),
            addons=config.addons,
            storage=config.storage,
            gateway=config.gateway,
            parent=gateway_parent(config.addons, config.gateway),
            own=True,
            where="this stack",
            prometheus=prometheus_url(config.addons),
        )
    ref = config.stack.platform_stack
    if ref is None:
        return None
    try:
        source = lookup(ref)
        if source is None or source.exports.get("exportsVersion") != EXPORTS_VERSION:
            return None
        view = read_platform(source.exports)
        return Platform(
            pools=tuple(p.config for p in view.pools),
            addons=view.addons,
            storage=view.storage,
            gateway=view.gateway,
            parent=view.gateway_parent,
            own=False,
            where=f"the platform {source.where}",
            prometheus=view.prometheus,
        )
    except (ConfigError, ValidationError, KeyError, TypeError, ValueError, AttributeError):
        return None  # stacks/rules/workloads.py reports an unreadable platform


def placed(config: StackConfig, platform: Platform | None) -> Iterable[tuple[int, ModelSection, NodePoolSection]]:
    """Each model with the pool it runs on (the platform's, for a workloads stack)."""
    if platform is None:
        return
    for i, model in enumerate(config.models):
        pool = platform.pool(model.pool)
        if pool is not None:
            yield i, model, pool
