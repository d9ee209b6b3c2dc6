"""Stack-config models (pydantic v2). See shared/design/STACK_CONFIG.md for the contract."""

from .addons import AddonsSection
from .base import PROJECT
from .cluster import ClusterSection
from .gateway import GatewaySection
from .models import ModelSection
from .pools import NodePoolSection
from .root import SECTIONS, StackConfig
from .stack import StackSection
from .storage import StorageSection

__all__ = [
    "PROJECT",
    "SECTIONS",
    "AddonsSection",
    "ClusterSection",
    "GatewaySection",
    "ModelSection",
    "NodePoolSection",
    "StackConfig",
    "StackSection",
    "StorageSection",
]
