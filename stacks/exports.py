"""A platform's exports as a workloads stack reads them, and which export keys only the cloud knows.

The exports themselves are the platform's resolved view (stacks/resolve `export_platform`, read back
with `read_platform`). They come from one of three places, each passed explicitly to the pipeline
(stacks/pipeline.py), so offline and live cannot disagree:
- `pulumi up` / preview: `__main__.py` reads them from the platform's StackReference
  (components/platform_stack.py);
- `stacks validate` / `render` of a workloads stack: the platform's own stack file in this repository
  (stacks/pipeline.py `repo_platform`), checked and resolved offline;
- the mocks, which answer the StackReference's read with the same file's exports (or a test's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .resolved import EXPORTS_VERSION

__all__ = ["EXPORTS_VERSION", "OUTPUT_KEYS", "SECRET_KEYS", "PlatformSource"]

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


@dataclass(frozen=True)
class PlatformSource:
    """A platform's exports (plain JSON values) and where they were read, for messages: `stack
    org/project/stack` or the platform's stack file."""

    exports: dict[str, Any]
    where: str
