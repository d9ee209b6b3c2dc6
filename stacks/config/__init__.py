"""Stack-config models (pydantic v2): the stack file's contract. docs/reference/stack-file.md and
stacks/stack.schema.json are generated from them (`python -m stacks reference`, `python -m stacks schema`)."""

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
