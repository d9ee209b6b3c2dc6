"""Where a workloads stack finds its platform's exports, and which export keys only the cloud knows.

The exports themselves are the platform's resolved view (stacks/resolve.py `export_platform`, read
back with `read_platform`). They come from one of three places, so offline and live cannot disagree:
- `pulumi up` / preview: `__main__.py` reads them from the StackReference and `supply` records them
  before anything is registered;
- `stacks validate` / `render` of a workloads stack: the platform's own stack file in this repository
  (`platform_stack_file`), resolved offline;
- the mocks, which answer the workloads stack's StackReference with the same file's exports.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import PROJECT
from .resolve import export_platform, own_platform
from .resolved import EXPORTS_VERSION

__all__ = ["EXPORTS_VERSION", "OUTPUT_KEYS", "SECRET_KEYS", "PlatformSource", "platform_for", "supply"]

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


def platform_stack_file(stack_ref: str, root: Path | None = None) -> Path | None:
    """`org/project/<stack>` -> Pulumi.<stack>.yaml at the project root or in stacks/examples."""
    from .load import ROOT

    base = root or ROOT
    _, project, stack = stack_ref.split("/")
    if project != PROJECT:
        return None
    for candidate in (base / f"Pulumi.{stack}.yaml", base / "stacks" / "examples" / f"Pulumi.{stack}.yaml"):
        if candidate.exists():
            return candidate
    return None


def exports_from_file(path: Path) -> dict[str, Any]:
    """The config-derived exports of a platform stack file (ConfigError if that file is invalid).
    Cached per file version: every rule and model of a workloads stack asks for them."""
    return copy.deepcopy(_exports_cached(str(path), path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _exports_cached(path: str, mtime_ns: int) -> dict[str, Any]:
    from .errors import ConfigError, Problem, key_path
    from .load import load_stack_file

    config = load_stack_file(Path(path))
    if config.cluster is None:
        raise ConfigError(
            [
                Problem(
                    key_path(["stack", "role"]),
                    f"is {config.stack.role}: only a platform or all-in-one stack exports a cluster",
                )
            ],
            path,
        )
    return export_platform(own_platform(config))


def platform_for(stack_ref: str) -> PlatformSource | None:
    """The platform's exports: from the StackReference when the program supplied them, else from the
    platform's stack file when it is in this repository, else None (cannot be checked offline)."""
    if stack_ref in _SUPPLIED:
        return _SUPPLIED[stack_ref]
    path = platform_stack_file(stack_ref)
    if path is None:
        return None
    return PlatformSource(exports_from_file(path), str(path))
