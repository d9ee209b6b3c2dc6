"""The one load step: stack file or Pulumi config -> validated StackConfig, before any resource.

Both entry points (the CLI reading a Pulumi.<stack>.yaml, and `__main__.py` reading Pulumi config
under `pulumi up` or the mocks) funnel into `parse_sections`, so they accept and refuse exactly
the same stack files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .checks import check_stack
from .config import PROJECT, SECTIONS, StackConfig
from .errors import ConfigError, Problem, problems_from

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
    problems = check_stack(config)
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
