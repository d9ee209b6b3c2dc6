"""One recording-mocks object for the whole session (several set_mocks calls break each other),
reset before every test, plus helpers that render a stack from a dict of sections."""

from __future__ import annotations

import copy
import hashlib
import os
import pickle
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from stacks import exports
from stacks.load import ROOT, parse_sections, read_stack_file, sections_to_pulumi_config
from stacks.mocks import RecordingMocks
from stacks.render import Rendered, render_file, run_program
from stacks.render import mocks as shared_mocks

DEV = ROOT / "Pulumi.dev.yaml"
EXAMPLES = sorted((ROOT / "stacks" / "examples").glob("Pulumi.*.yaml"))
ALL_STACKS = [DEV, *EXAMPLES]


def sections_of(path: Path) -> dict[str, Any]:
    sections, _ = read_stack_file(path)
    return copy.deepcopy(sections)


def render_sections(sections: dict[str, Any], region: str = "us-west-2") -> Rendered:
    """Validate like `pulumi up` would, then run __main__.py under the mocks."""
    parse_sections(sections, region)
    return run_program(sections_to_pulumi_config(sections, region))


# Renders of the shipped stacks are shared between the test processes (pytest-xdist workers) of
# one run through files keyed by a digest of the program and every stack file: a change to any of
# them is a new key, so a stale render is never read.
RENDER_CACHE = ROOT / "build" / "test-renders"


@cache
def _program_digest() -> str:
    h = hashlib.sha256()
    program = [*ROOT.glob("components/**/*.py"), *ROOT.glob("stacks/**/*"), ROOT / "__main__.py", ROOT / "Pulumi.yaml"]
    sources = sorted(f for f in program if f.is_file() and "__pycache__" not in f.parts)
    for f in [*sources, *sorted(ROOT.glob("Pulumi*.yaml")), *EXAMPLES]:
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@cache
def rendered_stack(path: Path) -> Rendered:
    """A shipped stack file rendered once per test run (a frozen copy: later tests reset the shared
    mocks). The first process to ask renders it and leaves the result for the others."""
    cached = RENDER_CACHE / f"{_program_digest()}-{path.name}.pickle"
    lock = cached.with_suffix(".lock")
    RENDER_CACHE.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + 120
    while not cached.exists():
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if time.monotonic() > deadline:  # a crashed renderer: render here instead
                break
            time.sleep(0.05)
            continue
        try:
            rendered = render_file(path)  # with the file's own aws:region
            frozen = Rendered(list(rendered.resources), dict(rendered.outputs), _frozen(rendered))
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(frozen))
            tmp.replace(cached)
            return frozen
        finally:
            os.close(fd)
            lock.unlink(missing_ok=True)
    if cached.exists():
        result: Rendered = pickle.loads(cached.read_bytes())
        return result
    rendered = render_file(path)
    return Rendered(list(rendered.resources), dict(rendered.outputs), _frozen(rendered))


def stack_manifests(path: Path) -> list[dict[str, Any]]:
    """The Kubernetes objects a stack file renders to, rendered once per test process."""
    return rendered_stack(path).manifests()


PLATFORM_REF = "acme/inference-platform/platform"


def supply_platform(live: dict[str, Any]) -> None:
    """Answer the example team stacks' StackReference with these exports, as `pulumi up` would after
    reading the live platform stack (forgotten again after the test, below)."""
    exports.supply(PLATFORM_REF, live, f"stack {PLATFORM_REF}")


@pytest.fixture(autouse=True)
def _no_supplied_platform_exports():
    """A render supplies the platform's exports it read from the StackReference (stacks/exports.py
    `supply`), and a test may answer that reference differently: forget them around every test so
    no test validates against another test's platform."""
    exports.forget()
    yield
    exports.forget()


@pytest.fixture
def mocks() -> RecordingMocks:
    recording = shared_mocks()
    recording.reset()
    return recording


@pytest.fixture
def dev() -> dict[str, Any]:
    return sections_of(DEV)


@pytest.fixture(scope="session")
def dev_render() -> Rendered:
    return rendered_stack(DEV)


def _frozen(rendered: Rendered) -> RecordingMocks:
    frozen = RecordingMocks()
    frozen.records = list(rendered.resources)
    frozen.outputs = dict(rendered.outputs)
    return frozen
