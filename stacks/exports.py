"""Where a workloads stack finds its platform's exports, and which export keys only the cloud knows.

The exports themselves are the platform's resolved view (stacks/resolve.py `export_platform`, read
back with `read_platform`). They come from one of three places, so offline and live cannot disagree:
- `pulumi up` / preview: `__main__.py` reads them from the StackReference and `supply` records them
  before anything is registered;
- `stacks validate` / `render` of a workloads stack: the platform's own stack file in this repository
  (stacks/load.py `platform_stack_file`), resolved offline;
- the mocks, which answer the workloads stack's StackReference with the same file's exports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .resolved import EXPORTS_VERSION

__all__ = ["EXPORTS_VERSION", "OUTPUT_KEYS", "SECRET_KEYS", "PlatformSource", "supply"]

# Keys whose values only exist once the platform is deployed (added by the Platform component).
OUTPUT_KEYS = (
    "clusterEndpoint",
    "kubeconfig",
    "oidcProviderArn",
    "clusterSecurityGroupId",
    "vpcId",
    "privateSubnetIds",
    "modelBucket",
    "modelReaderRoleArn",
)
SECRET_KEYS = ("kubeconfig",)


# ---- where a workloads stack finds its platform's exports -------------------------------------------


@dataclass(frozen=True)
class PlatformSource:
    exports: dict[str, Any]
    where: str  # for messages: "stack reference acme/x/y" or a file path


_SUPPLIED: dict[str, PlatformSource] = {}


def supply(stack_ref: str, exports: dict[str, Any], where: str) -> None:
    """Record the exports read from the platform's StackReference (under `pulumi up`/preview)."""
    _SUPPLIED[stack_ref] = PlatformSource(exports, where)


def forget() -> None:
    _SUPPLIED.clear()


def supplied(stack_ref: str) -> PlatformSource | None:
    """The exports `supply` recorded for this reference, if any."""
    return _SUPPLIED.get(stack_ref)
