"""Fixtures and helpers for the unit tests, and the work their processes share.

Within a test process:
- one recording-mocks object for the whole session (several set_mocks calls break each other),
  reset before every test (`mocks`);
- each shipped stack file's sections, parsed once (`sections_of` hands out a copy to change);
- helpers that render a stack from a dict of sections (`render_sections`, `frozen_render`).

Between the test processes of a run (the pytest-xdist workers), because each would otherwise
repeat it:
- the renders of the shipped stacks (`rendered_stack`, `stack_manifests`), the costliest work of
  the suite, which most test modules read. The first process to ask for a stack renders it and
  leaves it in build/test-renders for the others (and the next run) to read. The files are keyed
  by a digest of everything that changes a render (`render_inputs`: the program's sources and data
  files, requirements.lock, every shipped stack file; and the Python version), and the files of any
  other key are removed when a run starts;
- the CRD files those renders are validated against: each worker parses its share into
  stacks/conformance.py's JSON cache (build/crd-json), which the others read back in a hundredth of
  the time;
- the project's bytecode, compiled once by the controller for the workers and for the tests that
  start a fresh interpreter (`pytest_configure`).

The project's modules are imported where they are used, not here: pytest-xdist's controller
imports this file too, before it starts the workers, and needs none of them (the Pulumi SDK and the
config models are most of a second of start-up that every worker would wait for)."""

from __future__ import annotations

import compileall
import contextlib
import copy
import gc
import hashlib
import os
import pickle
import sys
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from stacks.paths import ROOT

if TYPE_CHECKING:
    from stacks.mocks import RecordingMocks
    from stacks.pipeline import PlatformLookup
    from stacks.render import Rendered

DEV = ROOT / "Pulumi.dev.yaml"
EXAMPLES_DIR = ROOT / "stacks" / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("Pulumi.*.yaml"))
ALL_STACKS = [DEV, *EXAMPLES]


@cache
def _sections(path: Path) -> dict[str, Any]:
    from stacks.load import read_stack_file

    sections, _ = read_stack_file(path)
    return sections


def sections_of(path: Path) -> dict[str, Any]:
    """A shipped stack file's sections, parsed once per test process (a copy the test may change)."""
    return copy.deepcopy(_sections(path))


def render_sections(
    sections: dict[str, Any], region: str = "us-west-2", platform_exports: dict[str, Any] | None = None
) -> Rendered:
    """Run __main__.py under the mocks, as `pulumi up` would (it checks the config first); a workloads
    stack's platform answers with `platform_exports` when given, else its stack file's exports."""
    from stacks.load import sections_to_pulumi_config
    from stacks.render import run_program

    live = {PLATFORM_REF: platform_exports} if platform_exports is not None else None
    return run_program(sections_to_pulumi_config(sections, region), platform_exports=live)


# Renders of the shipped stacks are shared between the test processes (pytest-xdist workers) of
# one run, and kept for the next, through files keyed by a digest of every render input
# (`render_key`): a change to any of them is a new key, so a stale render is never read, and the
# files of other keys are removed when a run starts (`prune_render_cache`).
RENDER_CACHE = ROOT / "build" / "test-renders"


def render_inputs() -> list[Path]:
    """Every file whose content can change a render of a shipped stack: the program and the modules
    and data files it reads (the policy pack is not among them: no render imports it), the pinned
    Pulumi SDK and providers, and the shipped stack files (a team stack reads its platform's)."""
    program = [ROOT / "__main__.py", ROOT / "Pulumi.yaml", *ROOT.glob("components/**/*"), *ROOT.glob("stacks/**/*")]
    stack_files = [*ROOT.glob("Pulumi.*.yaml"), *EXAMPLES]
    files = {f for f in [*program, ROOT / "requirements.lock", *stack_files] if f.is_file()}
    return sorted(f for f in files if "__pycache__" not in f.parts)


@cache
def render_key() -> str:
    """The digest cached renders are kept under: the render inputs and the Python version (the
    renders are pickles)."""
    h = hashlib.sha256(sys.version.encode() + b"\0")
    for f in render_inputs():
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _cache_file(path: Path) -> Path:
    return RENDER_CACHE / f"{render_key()}-{path.name}.pickle"


def prune_render_cache() -> None:
    """Remove every file in RENDER_CACHE but the current key's renders: renders of other versions
    of the program, and the locks and partial files of a run that crashed. Called once a run, before
    any worker starts; a file another process removed first is simply gone."""
    if not RENDER_CACHE.is_dir():
        return
    current = f"{render_key()}-"
    for f in RENDER_CACHE.iterdir():
        if not (f.name.startswith(current) and f.suffix == ".pickle"):
            f.unlink(missing_ok=True)


def _unclaimed(path: Path) -> bool:
    """Whether no process has rendered this stack file or is rendering it now."""
    cached = _cache_file(path)
    return not cached.exists() and not cached.with_suffix(".lock").exists()


def _read_cached(cached: Path) -> Rendered | None:
    try:
        data = cached.read_bytes()
    except FileNotFoundError:  # removed by another run's pruning
        return None
    result: Rendered = pickle.loads(data)
    return result


@cache
def rendered_stack(path: Path) -> Rendered:
    """A shipped stack file rendered once per test run (a frozen copy: later tests reset the shared
    mocks). The first process to ask renders it and leaves the result for the others."""
    from stacks.render import render_file

    cached = _cache_file(path)
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
            if cached.exists():  # finished between the check and the lock
                break
            rendered = render_file(path)  # with the file's own aws:region
            frozen = frozen_render(rendered.resources, rendered.outputs)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):  # pruned meanwhile by a run of another key
                tmp.write_bytes(pickle.dumps(frozen))
                tmp.replace(cached)
            return frozen
        finally:
            os.close(fd)
            lock.unlink(missing_ok=True)
    found = _read_cached(cached)
    if found is not None:
        return found
    rendered = render_file(path)
    return frozen_render(rendered.resources, rendered.outputs)


def stack_manifests(path: Path) -> list[dict[str, Any]]:
    """The Kubernetes objects a stack file renders to, rendered once per test process."""
    return rendered_stack(path).manifests()


PLATFORM_REF = "acme/inference-platform/platform"


def live_platform(live: dict[str, Any]) -> PlatformLookup:
    """A platform lookup answering the example team stacks' platform with these exports, as `pulumi up`
    does after reading the live platform stack (any other reference from its stack file)."""
    from stacks.exports import PlatformExports
    from stacks.pipeline import repo_platform

    return lambda ref: PlatformExports(live, f"stack {ref}") if ref == PLATFORM_REF else repo_platform(ref)


def team_quota(team: str = "search", **quota: Any) -> PlatformLookup:
    """The example platform's exports with one declared team's quota changed (a team stack cannot set its
    own: the platform declares it)."""
    from stacks.pipeline import exports_from_file

    live = exports_from_file(EXAMPLES_DIR / "Pulumi.platform.yaml")
    next(t for t in live["teams"] if t["name"] == team)["quota"].update(quota)
    return live_platform(live)


def _worker() -> tuple[int, int]:
    """This test process's index among the pytest-xdist workers of the run, and their count (0, 1
    without workers)."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")), count


def pytest_configure(config: pytest.Config) -> None:
    """Prune the render cache, and compile the project's modules to bytecode once, before any test
    process starts: every worker and every command-line test's fresh interpreter would otherwise
    compile them again from source (with PYTHONDONTWRITEBYTECODE, as on CI, none of them writes
    what it compiled). Only the controller (or a run without workers) does both. The compilation
    takes a third of a second; paired against the suite without it, from cold, it saves 8 % of the
    suite's CPU and 9 % of its wall time.

    A process that runs tests collects garbage with a young generation of 10,000 objects instead of
    700, as a render does (stacks/render.py): collecting, the renders' and the tests' short-lived
    objects otherwise set off a young collection every few hundred allocations, and their survivors
    14 full collections a worker from cold instead of 2 or 3, each rescanning every live object
    (3 to 6 s of a worker's time in the collector, against 1 to 3 s). It is the tests' one
    garbage-collector setting: they freeze nothing (gc.freeze)."""
    _upstream_missing()  # a schema or chart directory set to nothing there stops the run here, once
    worker = os.environ.get("PYTEST_XDIST_WORKER") is not None
    if not worker:  # pytest-xdist starts its workers after this hook: none reads the cache yet
        prune_render_cache()
        for package in ("components", "stacks", "policypack"):
            compileall.compile_dir(ROOT / package, quiet=1)
        compileall.compile_file(ROOT / "__main__.py", quiet=1)
    if worker or not getattr(config.option, "numprocesses", None):
        from stacks.render import YOUNG_OBJECTS

        gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])


@pytest.fixture(scope="session", autouse=True)
def _split_the_shared_work() -> None:
    """Under pytest-xdist, the workers first share out the work every one of them would otherwise
    wait for or repeat: each renders the next shipped stack no other has taken, the biggest first,
    until none is left (the others read it from RENDER_CACHE instead of waiting on its lock); then
    worker i of n parses every n-th CRD file those renders need (into conformance's JSON cache, read
    back by the rest in a hundredth of the time)."""
    from stacks import conformance

    index, count = _worker()
    if count < 2:
        return
    for path in sorted(ALL_STACKS, key=lambda p: -p.stat().st_size):  # the biggest (slowest) first
        if _unclaimed(path):
            rendered_stack(path)
    root = conformance.schema_dir()
    if root is None:
        return
    kinds = {
        (conformance.api_group(obj.get("apiVersion", ""))[0], obj.get("kind", ""))
        for path in ALL_STACKS
        for obj in stack_manifests(path)
        if not conformance.is_core(obj)
    }
    files = sorted({f for g, k in kinds for f in conformance.crd_files_of(root, g, k)})
    for file in files[index::count]:
        conformance.crd_documents(file)


@pytest.fixture
def mocks() -> RecordingMocks:
    from stacks.render import mocks as shared_mocks

    recording = shared_mocks()
    recording.reset()
    return recording


@pytest.fixture
def dev() -> dict[str, Any]:
    return sections_of(DEV)


@pytest.fixture(scope="session")
def dev_render() -> Rendered:
    return rendered_stack(DEV)


def frozen_render(resources: list[Any], outputs: dict[str, Any]) -> Rendered:
    """A render of these records and outputs on mocks of its own (the shared mocks are reset by the
    next test), for a test that keeps a render or hands the pack a changed copy of one."""
    from stacks.mocks import RecordingMocks
    from stacks.render import Rendered

    frozen = RecordingMocks()
    frozen.records = list(resources)
    frozen.outputs = dict(outputs)
    return Rendered(list(resources), dict(outputs), frozen)


# ---- checks that need the upstream files --------------------------------------------------------------


# Marker -> (what is missing, or None when it is on file). A fresh clone with nothing beside it has
# neither directory: those checks are left out with one line in the summary, not skipped one by one.
def _upstream_missing() -> dict[str, str]:
    from stacks import charts, conformance

    for env, found in ((conformance.ENV, conformance.schema_dir()), (charts.ENV, charts.charts_dir())):
        if os.environ.get(env) and found is None:  # set on purpose: its absence is an error, not a skip
            raise pytest.UsageError(f"{env} is {os.environ[env]}, which is not a directory")
    missing = {}
    if conformance.schema_dir() is None:
        missing["schemas"] = f"{conformance.ENV} (CI: ../shared/schemas)"
    if charts.charts_dir() is None:
        missing["charts"] = f"{charts.ENV} (CI: ../shared/charts)"
    return missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = _upstream_missing()
    if not missing:
        return
    left_out = [i for i in items if any(i.get_closest_marker(m) for m in missing)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        gone = set(left_out)
        items[:] = [i for i in items if i not in gone]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    missing = _upstream_missing()
    if missing:
        terminalreporter.write_line(
            "upstream files not on file: the checks against the upstream CRDs, chart values and charts were left "
            f"out (deselected); `make upstream` fetches them (or set {' and '.join(missing.values())}) to run them"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run whose every selected test needs the absent upstream files (`make scan`'s waiver tests in a
    fresh clone) left them out on purpose: that is not the failure "no tests collected" means."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and _upstream_missing():
        session.exitstatus = pytest.ExitCode.OK
