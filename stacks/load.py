"""The one load step: stack file or Pulumi config -> validated StackConfig, before any resource.

Both entry points (the CLI reading a Pulumi.<stack>.yaml, and `__main__.py` reading Pulumi config
under `pulumi up` or the mocks) funnel into `parse_sections`, so they accept and refuse exactly
the same stack files.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from . import rules
from .config import PROJECT, SECTIONS, StackConfig
from .errors import ConfigError, Problem, key_path, problems_from
from .exports import PlatformSource, supplied
from .resolve import export_platform, own_platform

__all__ = ["ROOT", "load_stack_file", "parse_sections", "platform_for", "stack_warnings"]

ROOT = Path(__file__).resolve().parent.parent


def parse_sections(raw: dict[str, Any], region: str | None, source: str = "") -> StackConfig:
    """Validate the `inference-platform:*` sections (keys without the prefix) and cross-check them."""
    problems: list[Problem] = []
    for key in raw:
        if key not in SECTIONS:
            problems.append(Problem(f"{PROJECT}:{key}", f"unknown section; sections are {', '.join(SECTIONS)}"))
        elif isinstance(raw[key], dict) and "secure" in raw[key]:
            problems.append(
                Problem(
                    f"{PROJECT}:{key}",
                    "a secret value here would be echoed into resources; keep secrets in existing "
                    "Kubernetes Secrets and reference them by name",
                )
            )
    if problems:
        raise ConfigError(problems, source)
    data = {k: v for k, v in raw.items() if v is not None}
    if region:
        data["awsRegion"] = region
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems_from(exc, StackConfig), source) from None
    problems = rules.check_stack(config, platform_for)
    if problems:
        raise ConfigError(problems, source)
    return config


def read_stack_file(path: Path) -> tuple[dict[str, Any], str | None]:
    """The namespace's sections and aws:region of a Pulumi.<stack>.yaml."""
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError([Problem(str(path), f"cannot read the stack file: {exc}")]) from None
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([Problem(f"{path}:config", "must be a map of config keys")])
    sections = {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{PROJECT}:")}
    region = config.get("aws:region")
    return sections, region if isinstance(region, str) else None


def stack_warnings(config: StackConfig) -> list[Problem]:
    """The stack's warnings, a workloads stack's checked against its platform as validation does."""
    return rules.stack_warnings(config, platform_for)


def load_stack_file(path: Path) -> StackConfig:
    sections, region = read_stack_file(path)
    return parse_sections(sections, region, source=str(path))


def resolve_stack(arg: str) -> Path:
    """A stack name (`dev`) or a path to a Pulumi.<stack>.yaml -> the file's path."""
    path = Path(arg)
    if path.suffix in (".yaml", ".yml"):
        return path
    for candidate in (ROOT / f"Pulumi.{arg}.yaml", ROOT / "stacks" / "examples" / f"Pulumi.{arg}.yaml"):
        if candidate.exists():
            return candidate
    raise ConfigError(
        [
            Problem(
                arg,
                "no such stack: give a stack name with a Pulumi.<name>.yaml "
                "at the project root or in stacks/examples, or a path",
            )
        ]
    )


def pulumi_config_to_sections() -> tuple[dict[str, Any], str | None]:
    """The namespace's sections as the Pulumi engine (or the mocks) passed them in."""
    from pulumi.runtime import config as runtime_config

    merged: dict[str, Any] = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    sections: dict[str, Any] = {}
    for key, value in merged.items():
        if key.startswith(f"{PROJECT}:"):
            try:
                sections[key.split(":", 1)[1]] = json.loads(value) if isinstance(value, str) else value
            except json.JSONDecodeError:
                sections[key.split(":", 1)[1]] = value
    region = merged.get("aws:region")
    return sections, region


def load_from_pulumi() -> StackConfig:
    sections, region = pulumi_config_to_sections()
    return parse_sections(sections, region, source="stack config")


def sections_to_pulumi_config(sections: dict[str, Any], region: str | None) -> dict[str, str]:
    """The inverse of `pulumi_config_to_sections`: what `pulumi up` would hand the program."""
    out = {f"{PROJECT}:{k}": json.dumps(v) for k, v in sections.items()}
    if region:
        out["aws:region"] = region
    return out


# ---- where a workloads stack finds its platform's exports -------------------------------------------


def platform_stack_file(stack_ref: str, root: Path | None = None) -> Path | None:
    """`org/project/<stack>` -> Pulumi.<stack>.yaml at the project root or in stacks/examples."""
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
    found = supplied(stack_ref)
    if found is not None:
        return found
    path = platform_stack_file(stack_ref)
    if path is None:
        return None
    return PlatformSource(exports_from_file(path), str(path))
