"""The one path from a stack file to a checked, resolved stack: read (stacks/load.py), resolve
(stacks/resolve), check (stacks/rules). The CLI (`stacks validate`, `render`, `plan`), `__main__.py`
under `pulumi preview`/`up` and the tests all go through `check_config`, so they accept and refuse
exactly the same stack files, and the stack they get is the one the rules checked.

A workloads stack resolves against its platform's exports, found by a lookup the caller passes in:
under `pulumi up` the platform stack's outputs (components/platform_stack.py), offline the platform's
own stack file when it is in this repository (`repo_platform`, itself checked through this path).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import rules
from .config import PROJECT, StackConfig
from .errors import ConfigError, Problem, key_path, short
from .exports import EXPORTS_VERSION, SECRET_KEYS, PlatformExports, export_platform
from .load import parse_sections, read_stack
from .paths import ROOT
from .resolve import resolve
from .resolved import ResolvedStack

PlatformLookup = Callable[[str], PlatformExports | None]
PLATFORM_KEY = key_path(["stack", "platformStack"])


@dataclass(frozen=True)
class Checked:
    """A stack file that passed every rule, resolved, with its warnings (about keys, and the rules')."""

    stack: ResolvedStack
    warnings: list[Problem]


def platform_of(config: StackConfig, lookup: PlatformLookup) -> tuple[PlatformExports | None, list[Problem]]:
    """A workloads stack's platform exports, or None when they cannot be read here, with the reason
    when the platform stack itself is at fault (invalid, or of another exports version)."""
    ref = config.stack.platform_stack
    if config.stack.role != "workloads" or ref is None:
        return None, []
    try:
        source = lookup(ref)
    except ConfigError as exc:
        first = exc.problems[0] if exc.problems else "invalid"
        return None, [
            Problem(
                PLATFORM_KEY, f"the platform stack file {exc.source} is invalid ({first}); fix the platform stack first"
            )
        ]
    if source is not None and source.exports.get("exportsVersion") != EXPORTS_VERSION:
        return None, [
            Problem(
                PLATFORM_KEY,
                f"{source.where} exports contract version {source.exports.get('exportsVersion')!r}, this "
                f"program reads version {EXPORTS_VERSION}; update the platform stack or this checkout",
            )
        ]
    return source, []


def check_config(config: StackConfig, source: str = "", platforms: PlatformLookup | None = None) -> ResolvedStack:
    """Resolve a validated stack file once and run every rule over it: the resolved stack, or a
    ConfigError naming every problem at once."""
    platform, problems = platform_of(config, platforms or repo_platform)
    stack = resolve(config, platform)
    problems += [p for p in rules.check_stack(stack) if p not in problems]
    if problems:
        raise ConfigError(problems, source)
    return stack


def check_sections(
    raw: dict[str, Any], region: Any, source: str = "", platforms: PlatformLookup | None = None
) -> ResolvedStack:
    """The `inference-platform:*` sections (keys without the prefix) and `aws:region` (as written),
    validated, resolved and checked."""
    return check_config(parse_sections(raw, region, source), source, platforms)


def stack_warnings(stack: ResolvedStack) -> list[Problem]:
    """The rules' warnings for a checked stack (a workloads stack's against its platform)."""
    return rules.stack_warnings(stack)


def check_file(path: Path, platforms: PlatformLookup | None = None) -> Checked:
    """A Pulumi.<stack>.yaml checked, with every warning: about its keys, and the rules' own."""
    found = read_stack(path)
    with _loading(path):
        try:
            stack = check_sections(found.sections, found.region, str(path), platforms)
        except ConfigError as exc:
            exc.warnings = found.warnings + exc.warnings
            raise
        return Checked(stack, found.warnings + stack_warnings(stack))


# ---- a platform stack in this repository ------------------------------------------------------------


def platform_stack_file(stack_ref: str, root: Path | None = None) -> Path | None:
    """`org/project/<stack>` -> Pulumi.<stack>.yaml at the project root or in stacks/examples."""
    base = root or ROOT
    parts = stack_ref.split("/")
    if len(parts) != 3 or parts[1] != PROJECT or not re.fullmatch(r"[A-Za-z0-9_.-]+", parts[2]):
        return None
    stack = parts[2]
    for candidate in (base / f"Pulumi.{stack}.yaml", base / "stacks" / "examples" / f"Pulumi.{stack}.yaml"):
        if candidate.is_file():
            return candidate
    return None


class _Loading(threading.local):
    """The stack files this thread is reading, outermost first (a reference cycle would never end).
    Per thread: the mocks answer the platform's StackReference on a worker thread while the program's
    thread may be reading the same platform file, which is no cycle."""

    def __init__(self) -> None:
        self.files: list[str] = []


_LOADING = _Loading()


@contextlib.contextmanager
def _loading(path: Path) -> Iterator[None]:
    _LOADING.files.append(_file_key(path))
    try:
        yield
    finally:
        _LOADING.files.pop()


def _file_key(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)


def exports_from_file(path: Path) -> dict[str, Any]:
    """The exports a platform stack file gives (ConfigError if that file is invalid), as `pulumi up` of
    it would export them. Cached per file version: a workloads stack and its mocks ask more than once."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise ConfigError([Problem(str(path), f"cannot be read: {exc.strerror or exc}")], str(path)) from None
    if _file_key(path) in _LOADING.files:
        raise ConfigError(
            [
                Problem(
                    PLATFORM_KEY,
                    f"refers back to {path.name}, which is being read: the platform stacks form a cycle; a "
                    f"workloads stack's platformStack must be a platform or all-in-one stack",
                )
            ],
            str(path),
        )
    with _loading(path):
        return copy.deepcopy(_exports_cached(str(path), mtime))


@functools.lru_cache(maxsize=32)
def _exports_cached(path: str, mtime_ns: int) -> dict[str, Any]:
    del mtime_ns  # part of the cache key only
    stack = check_file(Path(path)).stack
    if not stack.owns_platform:
        raise ConfigError(
            [
                Problem(
                    key_path(["stack", "role"]),
                    f"is {stack.config.stack.role}: only a platform or all-in-one stack exports a cluster",
                )
            ],
            path,
        )
    return export_platform(stack.platform)


def repo_platform(stack_ref: str) -> PlatformExports | None:
    """The platform's exports from its stack file when it is in this repository, else None (checked at
    preview, against the platform's StackReference)."""
    path = platform_stack_file(stack_ref)
    if path is None:
        return None
    try:
        return PlatformExports(exports_from_file(path), str(path))
    except ConfigError:
        raise
    except Exception as exc:  # (any failure to read it is the platform stack's problem)
        raise ConfigError(
            [Problem(PLATFORM_KEY, f"cannot be read: {type(exc).__name__}: {short(str(exc))}")], str(path)
        ) from None


def file_platform(path: Path) -> PlatformLookup:
    """A lookup answering every platform reference with the exports of `path`: a platform stack file
    (Pulumi.<stack>.yaml, checked through this path) or the JSON `pulumi stack output --json --stack
    <ref>` prints (its secret outputs left out, as the program leaves them out). For a workloads stack
    whose platform's stack file is not in this repository (`stacks plan --platform`)."""

    def lookup(stack_ref: str) -> PlatformExports:
        del stack_ref  # the caller named the file for this stack's platform
        if path.suffix != ".json":
            return PlatformExports(exports_from_file(path), str(path))
        try:
            outputs = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(
                [Problem(str(path), f"cannot be read as `pulumi stack output --json`: {short(str(exc))}")], str(path)
            ) from None
        if not isinstance(outputs, dict):
            raise ConfigError(
                [Problem(str(path), "is not a JSON object: write `pulumi stack output --json --stack <ref>` to it")],
                str(path),
            )
        return PlatformExports({k: v for k, v in outputs.items() if k not in SECRET_KEYS}, str(path))

    return lookup
