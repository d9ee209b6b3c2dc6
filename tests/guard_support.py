"""Helpers of the issue 13 rule tests (tests/test_guard_*.py) and of the command-line tests."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.__main__ import main
from stacks.errors import ConfigError
from stacks.pipeline import PlatformLookup, check_sections, stack_warnings

ROOT = Path(__file__).resolve().parents[1]


def problems(sections: dict[str, Any], platforms: PlatformLookup | None = None) -> list[str]:
    """Every refusal of the sections (which must be refused), a workloads stack's against the platform
    `platforms` finds (default: its stack file in this repository)."""
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2", platforms=platforms)
    return [str(p) for p in info.value.problems]


def warnings_of(sections: dict[str, Any], platforms: PlatformLookup | None = None) -> list[str]:
    return [str(p) for p in stack_warnings(check_sections(sections, "us-west-2", platforms=platforms))]


def has(found: list[str], path: str, *words: str) -> bool:
    return any(p.startswith(f"inference-platform:{path}: ") and all(w in p for w in words) for p in found)


def sections(name: str) -> dict[str, Any]:
    raw = yaml.safe_load((ROOT / name).read_text())["config"]
    return {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("inference-platform:")}


def problems_of(sections: dict[str, Any]) -> list[str]:
    """Every problem of the sections, or none when they validate."""
    try:
        check_sections(sections, "us-west-2")
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def refused(sections: dict[str, Any], key: str, *words: str) -> str:
    """The problem at exactly `key` that says every one of `words`."""
    found = problems_of(sections)
    at = [p for p in found if p.startswith(f"inference-platform:{key}: ")]
    assert at, f"nothing refused at {key}: {found}"
    saying = [p for p in at if all(word in p for word in words)]
    assert saying, (words, at)
    return saying[0]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> Ran:
    """The same command line in this process (stacks.__main__.main), for tests about what a command
    does rather than about the interpreter entry point: no second interpreter start per test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Ran(code, out.getvalue(), err.getvalue())
