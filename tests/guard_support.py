"""Helpers of the issue 13 rule tests (tests/test_guard_*.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.errors import ConfigError
from stacks.load import parse_sections, stack_warnings

ROOT = Path(__file__).resolve().parents[1]


def problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def warnings_of(sections: dict[str, Any]) -> list[str]:
    return [str(p) for p in stack_warnings(parse_sections(sections, "us-west-2"))]


def has(found: list[str], path: str, *words: str) -> bool:
    return any(p.startswith(f"inference-platform:{path}: ") and all(w in p for w in words) for p in found)


def sections(name: str) -> dict[str, Any]:
    raw = yaml.safe_load((ROOT / name).read_text())["config"]
    return {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("inference-platform:")}
