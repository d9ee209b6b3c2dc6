"""Property tests of the stack-file guard (issue 13, item 12): any file is refused cleanly or works.

The invariant, for any file at all: `python -m stacks validate FILE` exits 0 or 1 within
VALIDATE_SECONDS, prints no traceback, and a refusal says why (a line per problem, none naming only
the bare `inference-platform:` namespace, none echoing a long value whole, none from the command
line's catch-all for unexpected errors). When it exits 0, `plan` works as well, the render succeeds,
every rendered object conforms to its upstream schema (stacks/conformance.py, as
tests/test_conformance.py checks the shipped stacks), no two resources share a URN and no two objects
share a kind, namespace and name. Beyond the invariant, oracles (`Expect`, `doc_expect`) name what
the issue says must be refused (a control character, `${...}`, a path leaving its directory, a
reserved namespace, an empty string in a list, a duplicate name, a duplicate YAML key, a renamed
key, aws:region missing or unreal, ...) or accepted (an unqualified key of the project's namespace):
getting those wrong fails too.

Inputs:
- single mutations of every shipped stack file (Pulumi.dev.yaml, stacks/examples/Pulumi.*.yaml): a
  value replaced by one of another type, a sibling's or a hostile one; a key the file does not set
  added (from stacks/stack.schema.json); a key deleted or renamed by case and separators; a list entry
  duplicated; a named entry twinned under a similar name; and mutations of the file's text (a
  duplicate key, an explicit YAML tag, another encoding);
- the keys of the last round (LAST_ROUND_KEYS: a pool's imagePull, imageSnapshot, warmNodes and
  terminationGracePeriod, a model's compileCache, acceptDowntime and secrets, stack.intendedReplacements,
  storage.modelBucket.name, the secrets section, the team keys) given plausible, donated, hostile and
  random values, whose refusals must name the key, its section, or what depends on it;
- generated files: random nesting under random keys, non-mapping top levels, tags, aliases, raw bytes;
- the regression cases in tests/guard_cases/, one small file per failure class these tests found,
  each headed by
      # exercises: what it is about
      # expect: refused at inference-platform:models[0].namespace    (or: refused | renders)
- files too big, too deep or too aliased to risk in this process, and the interpreter entry point,
  each in a fresh interpreter.

The checks call `stacks.__main__.main(["validate", FILE])` in this process, the path the command line
takes. CI runs a fixed, derandomized budget and renders only a few accepted files (a render costs a
second or more). Explore locally with a larger budget and random seeds:

    GUARD_PROPS_EXAMPLES=2000 GUARD_PROPS_RENDERS=20 .venv/bin/python -m pytest -n 2 tests/test_guard_properties.py

and keep each failure found as a case in tests/guard_cases/ (the smallest file that still fails).
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import datetime
import functools
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from stacks import conformance
from stacks.__main__ import main
from stacks.load import ROOT

PROJECT = "inference-platform"
SHIPPED = [ROOT / "Pulumi.dev.yaml", *sorted((ROOT / "stacks" / "examples").glob("Pulumi.*.yaml"))]
CASES_DIR = Path(__file__).resolve().parent / "guard_cases"
CASES = sorted(CASES_DIR.glob("*.yaml"))
SCHEMAS = conformance.schema_dir()

VALIDATE_SECONDS = 5.0  # a refusal or an acceptance, not a hang
HANG_SECONDS = 20.0  # interrupt a runaway validate (SIGALRM; a subprocess for the known dangerous inputs)
MAX_LINE = 1000  # a problem echoes at most a short prefix of a bad value
HUGE = 5 * 2**20  # a 5 MB value
EXAMPLES = int(os.environ.get("GUARD_PROPS_EXAMPLES", "0"))  # 0: the fixed CI budget
RENDERS = int(os.environ.get("GUARD_PROPS_RENDERS", "0"))  # accepted files rendered per test; 0: as below
# CI renders one accepted mutation of each of these (a render and its conformance check cost a second or
# more, and the suite's budget is 30 s on 2 cores): an all-in-one stack with the gateway and a workloads
# stack. GUARD_PROPS_RENDERS renders that many of every file's accepted mutations.
RENDERED_IN_CI = {"Pulumi.dev.yaml", "Pulumi.team-search.yaml"}

KeyPath = tuple[str | int, ...]


def budget(ci_examples: int) -> settings:
    """Fixed and derandomized in CI; GUARD_PROPS_EXAMPLES explores with random seeds instead."""
    return settings(
        max_examples=EXAMPLES or ci_examples,
        derandomize=not EXAMPLES,
        database=None,
        deadline=datetime.timedelta(seconds=2 * VALIDATE_SECONDS),
        print_blob=False,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],  # no coverage-traced "explain" phase
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# ---- running the command line in this process ------------------------------------------------------


class Hang(BaseException):
    """Raised by SIGALRM in a validate that runs away (not an Exception, so no `except` swallows it)."""


@contextlib.contextmanager
def interrupt_after(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def where(exc: BaseException) -> str:
    """`KeyError at stacks/load.py:63 in read_stack_file`: the innermost frame of the project's code."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(str(ROOT)) and "/.venv/" not in f.filename]
    frame = (ours or frames)[-1] if frames else None
    at = f" at {Path(frame.filename).relative_to(ROOT) if ours else frame.filename}:{frame.lineno}" if frame else ""
    return f"{type(exc).__name__}{at}{' in ' + frame.name if frame else ''}: {str(exc)[:200]}"


@dataclass
class Run:
    argv: tuple[str, ...]
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    escaped: str = ""  # where an exception escaped main(), and its traceback
    trace: str = ""


def run_cli(*argv: str) -> Run:
    """`python -m stacks ARGV` in this process, with stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    escaped = trace = ""
    start = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            with interrupt_after(HANG_SECONDS):
                code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except (Exception, Hang) as exc:
            escaped, trace = where(exc), "".join(traceback.format_exception(exc))
    return Run(tuple(argv), code, out.getvalue(), err.getvalue(), time.monotonic() - start, escaped, trace)


# The command line's last resort for an exception no check anticipated: a refusal, but of a crash.
SAFETY_NET = re.compile(r"could not be checked \(|this is a bug in the stack checks")


def output_problems(run: Run, path: Path) -> list[str]:
    """What is wrong with how a run ended and what it printed, whatever it decided."""
    if run.escaped:
        return [f"`{' '.join(run.argv[:1])}` raised {run.escaped}"]
    problems = []
    if run.code not in (0, 1):
        problems.append(f"exit code {run.code}, not 0 or 1")
    if "Traceback (most recent call last)" in run.stdout + run.stderr:
        problems.append("printed a traceback")
    if run.code == 1 and not run.stderr.strip():
        problems.append("refused without saying why")
    net = next((line for line in run.stderr.splitlines() if SAFETY_NET.search(line)), None)
    if net:
        problems.append(f"refused only by the catch-all for unexpected errors (a crash): {net[-300:]}")
    for line in run.stderr.splitlines():
        if len(line) > MAX_LINE:
            problems.append(f"a {len(line)}-character line: a bad value echoed whole ({line[:120]!r}...)")
            break
    for line in run.stderr.splitlines():
        said = line.removeprefix(f"{path}: ")
        if said.startswith(f"warning: {PROJECT}: ") or said.startswith(": "):
            problems.append(f"a warning naming no key below the namespace: {said[:160]!r}")
            break
    return problems


def bare_refusals(path: Path) -> list[str]:
    """Problems of a refused file that name no key at all or only the bare namespace (item 11): from
    the ConfigError the validate step raises (a printed line cannot tell `inference-platform: x` the
    key from `inference-platform` the namespace)."""
    from stacks.errors import ConfigError
    from stacks.pipeline import check_file

    try:
        check_file(path)
    except ConfigError as exc:
        return [
            f"a problem naming no key below the namespace: {str(p)[:160]!r}"
            for p in exc.problems
            if p.path in ("", PROJECT, f"{PROJECT}:")
        ][:1]
    except Exception:
        return []  # the run through main() reports what escaped
    return []


def validate_problems(run: Run, path: Path) -> list[str]:
    problems = output_problems(run, path)
    if run.seconds > VALIDATE_SECONDS:
        problems.append(f"validate took {run.seconds:.1f} s (limit {VALIDATE_SECONDS:.0f} s)")
    return problems


def check_file(path: Path) -> tuple[Run, list[str]]:
    """Validate the file (and plan it when accepted); the run and what broke the invariant."""
    run = run_cli("validate", str(path))
    problems = validate_problems(run, path)
    if run.code == 1 and not problems:
        problems = bare_refusals(path)
    if run.code == 0 and not problems:
        planned = run_cli("plan", str(path))
        if planned.escaped or planned.code != 0:
            problems.append(f"validate accepted it but plan failed: {planned.escaped or planned.stderr[:300]}")
    return run, problems


def refusal_names(run: Run, path: Path, key: str) -> bool:
    """Whether some problem line names `key` or a key below it."""
    for line in run.stderr.splitlines():
        said = line.removeprefix(f"{path}: ")
        if said.startswith(key) and said[len(key) : len(key) + 1] in (":", ".", "["):
            return True
    return False


# ---- rendering what validate accepts ---------------------------------------------------------------


def render_problems(path: Path) -> list[str]:
    """Render an accepted file; what the render or its objects got wrong."""
    from stacks.pipeline import check_file
    from stacks.render import render_file

    try:
        with interrupt_after(HANG_SECONDS * 3):
            rendered = render_file(path)
    except (Exception, Hang) as exc:
        settle_the_event_loop()
        return [f"validate accepted it but the render raised {where(exc)}"]
    try:
        config = check_file(path).stack
        version = config.cluster.kubernetes_version if config.cluster else "1.34"
    except Exception as exc:
        return [f"validate accepted it but loading it again raised {where(exc)}"]
    problems = [
        f"two resources with one URN (pulumi up refuses this): {urn}"
        for urn, n in Counter(r.urn for r in rendered.resources).items()
        if n > 1
    ]
    manifests = rendered.manifests()
    identities = Counter(
        (
            str(m.get("apiVersion", "")).rpartition("/")[0],  # the API group ("" for the core group)
            m.get("kind"),
            (m.get("metadata") or {}).get("namespace"),
            (m.get("metadata") or {}).get("name"),
        )
        for m in manifests
    )
    problems += [f"two objects of one kind, namespace and name: {ident}" for ident, n in identities.items() if n > 1]
    for obj in manifests:
        if conformance.is_core(obj):
            errors = conformance.validate_core(obj, version)
        elif SCHEMAS is not None and not conformance.unvalidated(obj, SCHEMAS):
            errors = conformance.validate_object(obj, SCHEMAS, version)
        else:
            continue
        meta = obj.get("metadata") or {}
        problems += [f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}: {e[:300]}" for e in errors]
    if SCHEMAS is not None:
        for rel in rendered.releases():
            chart = str(rel["chart"]).rsplit("/", 1)[-1]
            problems += [
                f"release {rel['name']}: {p}" for p in conformance.validate_values(chart, rel["values"], SCHEMAS) or []
            ]
    return problems


def settle_the_event_loop() -> None:
    """A failed render leaves the program's outputs pending in the event loop, and the next render in
    this process would fail on them (with the first one's exception): cancel them."""
    import asyncio

    from pulumi.runtime.settings import SETTINGS

    loop = asyncio.get_event_loop()
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    SETTINGS.rpc_manager.clear()


# ---- what must be refused or accepted --------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """An oracle: `refuse` or `accept`, and why (the issue's rule)."""

    outcome: str
    why: str


CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
LEAVES_DIR = re.compile(r"(^|/)\.\.(/|$)")
NOT_PATHS = re.compile(r"Arns?$|Uri$|Url$|^issuer$")  # an IAM path or a URL may hold `..` as it is
RESERVED_NAMESPACES = {
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "default",
    # namespaces the platform creates itself
    "inference-gateway",
    "monitoring",
    "envoy-gateway-system",
    "aibrix-system",
    "dynamo-system",
    "kuberay-system",
    "litellm",
}
SHIPPED_REGIONS = {"us-west-2", "us-east-1"}
NAMED_LISTS = {"admins", "logTypes", "privateSubnetIds", "publicSubnetIds"}
OPEN_MAPS = {"fallbacks"}  # keys chosen by the user (model names), not by the contract
VERSION_KEYS = {"version", "adapterVersion", "dcgmExporterVersion", "amiAlias", "kubernetesVersion"}
UNPINNED = re.compile(r"latest|[*^~<>=]|\.x\b")


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from strings_in(v)


def doc_expect(doc: Any) -> Expect | None:
    """Whether a whole stack document must be refused by the issue's rules (every shipped file passes
    these, so after one mutation they judge what the mutation did, wherever its effect lands)."""
    if not isinstance(doc, dict):
        return Expect("refuse", "a top level that is not a mapping (item 1)")
    config = doc.get("config")
    if not isinstance(config, dict):
        return Expect("refuse", "no `config` mapping: nothing is configured (item 1)")
    region = config.get("aws:region")
    if not (isinstance(region, str) and region in SHIPPED_REGIONS):
        return Expect("refuse", "aws:region must be given, as a string naming a real region (item 4)")
    stack = config.get(f"{PROJECT}:stack")
    prod = isinstance(stack, dict) and stack.get("environment") == "prod"
    for path, value in nodes(config, ("config",)):  # the other top-level keys are Pulumi's own
        key = next((p for p in reversed(path) if isinstance(p, str)), "")
        found = node_expect(path, key, value, prod)
        if found:
            return found
    found = engine_args_expect(config)
    if found:
        return found
    cluster = config.get(f"{PROJECT}:cluster")
    endpoint = cluster.get("endpoint") if isinstance(cluster, dict) else None
    public = endpoint.get("publicAccess", True) if isinstance(endpoint, dict) else True
    if prod and isinstance(cluster, dict) and public is True:
        cidrs = endpoint.get("publicAccessCidrs") if isinstance(endpoint, dict) else None
        if not cidrs or (isinstance(cidrs, list) and {"0.0.0.0/0", "::/0"} & set(map(str, cidrs))):
            return Expect("refuse", "a prod EKS public endpoint open to every address (item 8)")
    return None


def node_expect(path: KeyPath, key: str, value: Any, prod: bool) -> Expect | None:
    for text in [value, *(path[-1:] if path else [])]:
        if not isinstance(text, str):
            continue
        if CONTROL.search(text):
            return Expect("refuse", "a control character in a string (item 3)")
        if "${" in text:
            return Expect("refuse", "a `${...}` passed on as a value (item 13)")
        if len(text) > HUGE // 2:
            return Expect("refuse", "a file over any sane size (item 1)")
    if isinstance(value, str):
        if LEAVES_DIR.search(value) and not NOT_PATHS.search(key) and "admins" not in path:
            return Expect("refuse", "a path that leaves its directory (item 6)")
        if (key == "namespace" or path[-2:] == (f"{PROJECT}:stack", "team")) and value in RESERVED_NAMESPACES:
            return Expect("refuse", "a reserved namespace (item 5)")
        if (key.endswith("Arn") or "admins" in path) and not value.isascii():
            return Expect("refuse", "an ARN that is not ASCII (item 3)")
        if prod and key in VERSION_KEYS and UNPINNED.search(value):
            return Expect("refuse", "a version that is not exact in prod (item 8)")
    if isinstance(value, list):
        if "" in value:
            return Expect("refuse", "an empty string in a list (item 3)")
        names = [v.get("name") for v in value if isinstance(v, dict) and isinstance(v.get("name"), str)]
        if len(names) != len(set(names)):
            return Expect("refuse", f"two entries of {key} with one name (item 9)")
        if key in NAMED_LISTS and len(value) != len({repr(v) for v in value}):
            return Expect("refuse", f"{key} lists one entry twice (item 9)")
    return None


def engine_args_expect(config: dict[str, Any]) -> Expect | None:
    """engineArgs that take over what the platform owns (item 7). Flags differ by engine, so only the
    spellings every flag-taking engine shares (a credential, --api-key, --trust-remote-code) and vLLM's
    own (`vllm serve` and vllm-neuron: host, port, model, served name, tensor parallelism) are judged."""
    models = config.get(f"{PROJECT}:models")
    for model in models if isinstance(models, list) else []:
        args = model.get("engineArgs") if isinstance(model, dict) else None
        if not isinstance(args, list):
            continue
        owned = VLLM_OWNED if model.get("engine") in ("vllm", "neuron-vllm") else SHARED_OWNED
        if any(isinstance(a, str) and (owned.match(a) or CREDENTIAL.search(a)) for a in args):
            return Expect("refuse", "engineArgs overriding what the platform owns, or a credential (item 7)")
    return None


SHARED_OWNED = re.compile(r"^--(api-key|trust-remote-code)(=|$)")
VLLM_OWNED = re.compile(
    r"^(--(host|port|model|served-model-name|api-key|hf-token|trust-remote-code|tensor-parallel-size)(=|$)|-tp$)"
)
CREDENTIAL = re.compile(r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_-]{6,}|hf_[A-Za-z0-9]{20,})")


# ---- mutations of a shipped stack file -------------------------------------------------------------


def nodes(value: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, i))


def at(doc: Any, path: KeyPath) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def dotted(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (("." if out else "") + str(part))
    return out or "<top level>"


def short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else f"{text[:n]}... ({len(text)} chars)"


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump(doc: Any) -> bytes:
    return yaml.dump(doc, Dumper=DUMPER, sort_keys=False, allow_unicode=True, width=4096).encode()


@dataclass(frozen=True)
class Mutation:
    """One change to a shipped stack file's document at `path`: a value replaced, a key the file does not
    set added, a key deleted or renamed, a list entry duplicated, or a named entry duplicated under
    another name (a twin: two things whose derived identifiers may collide)."""

    kind: str
    path: KeyPath
    value: Any = None

    def __repr__(self) -> str:
        what = {
            "replace": f" = {short(self.value)}",
            "add": f" = {short(self.value)}",
            "rename": f" -> key {short(self.value)}",
            "twin": f" named {short(self.value)}",
        }.get(self.kind, "")
        return f"{self.kind} {dotted(self.path)}{what}"

    def apply(self, doc: Any) -> Any:
        out = copy.deepcopy(doc)
        if not self.path:
            return None if self.kind == "delete" else copy.deepcopy(self.value)
        parent, last = at(out, self.path[:-1]), self.path[-1]
        if self.kind in ("replace", "add"):
            parent[last] = copy.deepcopy(self.value)
        elif self.kind == "delete":
            del parent[last]
        elif self.kind == "duplicate":
            parent.insert(last + 1, copy.deepcopy(parent[last]))
        elif self.kind == "twin":
            parent.insert(last + 1, {**copy.deepcopy(parent[last]), "name": self.value})
        elif self.kind == "rename":
            items = [(self.value if k == last else k, v) for k, v in parent.items()]
            parent.clear()
            parent.update(items)
        return out

    def expect(self, doc: Any) -> Expect | None:
        if self.kind == "rename" and not any(part in OPEN_MAPS for part in self.path[:-1]):
            old = self.path[-1]
            if self.path[:-1] == ("config",) and isinstance(old, str) and old == f"{PROJECT}:{self.value}":
                if self.value == "region":
                    return Expect("refuse", "`region` unqualified is inference-platform:region, no section")
                return Expect("accept", "an unqualified key belongs to the project's namespace (item 13)")
            return Expect("refuse", "a key that differs from a known one by case or separators (item 13)")
        return doc_expect(self.apply(doc))


ARABIC_DIGITS = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
LOOKALIKES = str.maketrans({"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441"})  # Cyrillic
HOSTILE: list[Any] = [
    None,
    "",
    True,
    0,
    1,
    -1,
    2**31,
    2**63,
    -(2**63),
    10**30,
    0.5,
    -0.0,
    float("inf"),
    float("nan"),
    [],
    {},
    [""],
    [None],
    [[]],
    [{}],
    {"": None},
    {1: "x"},
    {None: "x"},
    {"secure": "v1:AAAABBBB"},
    " ",
    "a\x00b",
    "\x07",
    "x\x1b[31m",
    "a\nb",
    "\u200b",
    "\u202e",
    "\ufeff",
    "ädmins",
    "\u0430dmins",  # a Cyrillic a
    "\uff11\uff12",  # fullwidth digits
    "١١١١٢٢٢٢٣٣٣٣",
    "${foo}",
    "${aws:region}",
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "default",
    "monitoring",
    "inference-gateway",
    "latest",
    "*",
    ">=1.0",
    "0.0.0.0/0",
    "::/0",
    "-1",
    "1e309",
    "0x10",
    "1.5m",
    "a" * 64,
    "a" * 254,
    "x" * 100_000,
    "A_B",
    "a..b",
    "xn--a",
    "192.168.10.20",
    "-a",
    datetime.date(2024, 1, 1),
    datetime.datetime(2024, 1, 1, 12, 0),
    b"\x00\xff",
    {1, 2},
]


def derived(value: Any) -> list[Any]:
    """Values close to a shipped one: what a careless edit or a hostile user would write instead."""
    if isinstance(value, bool):
        return [not value, str(value).lower(), int(value), "yes"]
    if isinstance(value, int):
        return [value + 1, value + 2, value * 2, -value, value * 1000, 0, str(value), value + 0.5, [value]]
    if isinstance(value, float):
        return [-value, value * 1000, str(value), int(value), 0.0]
    if isinstance(value, str):
        out: list[Any] = [
            value.upper(),
            value + "\x00",
            value * 10,
            value.replace("-", "_"),
            value + "/../x",
            "${" + value + "}",
            value.translate(ARABIC_DIGITS),
            value.translate(LOOKALIKES),
            value + "-",
            value + "." + value,
            [value],
            {value: value},
        ]
        if ref := re.fullmatch(r"([\w.-]+)/([\w.-]+)/[\w.-]+", value):  # a stack reference: other stacks
            org, project = ref.groups()
            out += [f"{org}/{project}/{s}" for s in ("dev", "capacity", "serving", "team-search", "missing")]
            out.append(f"{org}/another-project/platform")
        if re.search(r"\d", value):
            out += [re.sub(r"v?\d+(\.\d+)*", "latest", value, count=1), re.sub(r"\d+", "999", value)]
        if len(value) > 1:
            out.append(value[:-1])
        return out
    if isinstance(value, list):
        return [value + value, value * 50, [value], [*value, ""], {"x": value}]
    if isinstance(value, dict):
        return [{**value, "bogus": 1}, [value], {k: None for k in value}]
    return []


# Every character UTF-8 can encode (all but the surrogates), which is st.text()'s default alphabet
# spelled by category: the default's codec="utf-8" makes hypothesis walk all 1.1 million code points
# (3 s in every test process, with no cache on a fresh clone); the category table it ships is read
# in a tenth of that.
utf8 = st.characters(exclude_categories=("Cs",))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(utf8, max_size=20),
    st.sampled_from([h for h in HOSTILE if not isinstance(h, (list, dict, set))]),
)
trees = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(utf8, max_size=12) | st.integers(), kids, max_size=4)
    ),
    max_leaves=12,
)


def hostile_values(original: Any, siblings: list[Any], donated: list[Any]) -> st.SearchStrategy[Any]:
    """Values close to the original, values the same key has elsewhere in the file (another pool for
    `pool`) or in another shipped file, hostile ones, and anything at all."""
    near = derived(original) + [v for v in siblings if v != original]
    near += [v for v in donated if v != original and v not in near]
    return st.one_of(st.sampled_from(near or [None]), st.sampled_from(HOSTILE), scalars, trees)


def siblings_of(every: list[tuple[KeyPath, Any]]) -> dict[str, list[Any]]:
    """Each key's scalar values across the document."""
    found: dict[str, list[Any]] = {}
    for path, value in every:
        if path and isinstance(path[-1], str) and isinstance(value, (str, int, float)):
            found.setdefault(path[-1], []).append(value)
    return {key: list(dict.fromkeys(values)) for key, values in found.items()}


def snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def renamings(path: KeyPath) -> list[Any]:
    key = path[-1]
    assert isinstance(key, str)
    out: list[Any] = [
        key.upper(),
        key.lower(),
        key[:1].swapcase() + key[1:],
        snake(key),
        snake(key).replace("_", "-"),
        snake(key).replace("_", " "),
        key + " ",
        " " + key,
        1,
        None,
    ]
    if path[:-1] == ("config",) and ":" in key:
        ns, _, name = key.partition(":")
        out += [
            name,
            f"{ns[:3]}{ns[4]}{ns[3]}{ns[5:]}:{name}" if len(ns) > 5 else f"{ns}s:{name}",  # transposed letters
            f"{ns[:-1]}:{name}",
            f"{ns.replace('-', '_')}:{name}",
            f"{ns}::{name}",
            f"{ns}: {name}",
            f"{ns.upper()}:{name}",
            f"{ns}:{name[:1].upper()}{name[1:]}",
        ]
    return [k for k in dict.fromkeys(out, None) if k != key]


SCHEMA = json.loads((ROOT / "stacks" / "stack.schema.json").read_text())
ENGINE_ARGS: list[Any] = [
    ["--trust-remote-code"],
    ["--port", "9000"],
    ["--host=0.0.0.0"],
    ["--api-key", "sk-proj-abcdef0123456789"],
    ["--hf-token", "hf_abcdefghijklmnopqrstuvwxyz"],
    ["--served-model-name", "other"],
    ["--model", "/etc"],
    ["-tp", "8"],
    ["--max-num-seqs", "64"],
]


def resolved(node: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema node with its $ref followed and a nullable anyOf reduced to its other member."""
    while True:
        if "$ref" in node:
            node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[-1]]
            continue
        options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
        if options and "properties" not in node and "type" not in node:
            node = options[0]
            continue
        return node


def schema_at(path: KeyPath) -> dict[str, Any] | None:
    """The stack-file schema (stacks/stack.schema.json) at a document path, None where it has none."""
    node: dict[str, Any] | None = resolved(SCHEMA)
    for part in path:
        if node is None:
            return None
        nxt = node.get("items") if isinstance(part, int) else node.get("properties", {}).get(part)
        node = resolved(nxt) if isinstance(nxt, dict) else None
    return node


def plausible(node: dict[str, Any]) -> list[Any]:
    """Values of the schema's own kind for a key the file does not set (hostile ones come on top)."""
    out: list[Any] = list(node.get("enum", []))
    if "default" in node and node["default"] not in (None, [], {}):
        out.append(node["default"])
    kind = node.get("type")
    if kind == "string":
        out += ["guard", "kube-system", "latest", "0.0.0.0/0"]
    elif kind == "integer":
        out += [v for v in (node.get("minimum"), node.get("maximum"), 1) if v is not None]
    elif kind == "number":
        out += [0.5, node.get("maximum", 100.0)]
    elif kind == "boolean":
        out += [True, False]
    elif kind == "array":
        items = resolved(node.get("items") or {})
        out += [[], *([v] for v in plausible(items)[:3])]
        if items.get("type") == "string":
            out += ENGINE_ARGS
    elif kind == "object" or "properties" in node:
        out += [{}]
    return out


@functools.cache
def _shipped_doc(path: Path) -> Any:
    # With libyaml's parser, as stacks/yamlread.py reads stack files (tests/test_yamlread.py holds it
    # to the pure-Python parser's reading of every shipped file): a tenth of the time, in every process.
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def shipped_doc(path: Path) -> Any:
    """A shipped stack file's document as YAML reads it, parsed once per process (a copy to change)."""
    return copy.deepcopy(_shipped_doc(path))


def donors() -> dict[str, list[Any]]:
    """Each key's values across all the shipped files (an `adapters` list from the serving example
    offered to the team stack's model): whole settings moved to where they may not be allowed."""
    found: dict[str, dict[str, Any]] = {}
    for path in SHIPPED:
        for keys, value in nodes(shipped_doc(path)):
            if keys and isinstance(keys[-1], str) and len(keys) > 2:
                found.setdefault(keys[-1], {}).setdefault(repr(value), value)
    return {key: list(values.values())[:6] for key, values in found.items()}


DONORS = donors()


def twin_names(name: str) -> list[str]:
    return [f"{name}-2", name.replace("-", "_"), name.replace("-", ""), f"{name}-frontend", f"{name}-head", name[:-1]]


def kin(path: KeyPath, same_key: dict[str, list[Any]]) -> tuple[list[Any], list[Any]]:
    """The values the key at `path` has elsewhere in this file, and in the other shipped files."""
    key = str(path[-1]) if path else ""
    return same_key.get(key, []), DONORS.get(key, [])


def mutations_of(doc: Any) -> st.SearchStrategy[Mutation]:
    every = list(nodes(doc))
    keyed = [p for p, _ in every if p and isinstance(p[-1], str)]
    items = [p for p, _ in every if p and isinstance(p[-1], int)]
    named = [p for p, v in items_named(every)]
    absent = [
        ((*p, key), sub)
        for p, v in every
        if isinstance(v, dict) and (node := schema_at(p)) is not None
        for key, sub in node.get("properties", {}).items()
        if key not in v
    ]
    same_key = siblings_of(every)
    replace = st.sampled_from(every).flatmap(
        lambda pv: hostile_values(pv[1], *kin(pv[0], same_key)).map(lambda v, p=pv[0]: Mutation("replace", p, v))
    )
    strategies = [
        replace,
        st.sampled_from(keyed).flatmap(
            lambda p: st.sampled_from(renamings(p)).map(lambda k, p=p: Mutation("rename", p, k))
        ),
        st.sampled_from([p for p, _ in every]).map(lambda p: Mutation("delete", p)),
    ]
    if items:
        strategies.append(st.sampled_from(items).map(lambda p: Mutation("duplicate", p)))
    if absent:
        strategies.append(
            st.sampled_from(absent).flatmap(
                lambda ps: st.one_of(
                    st.sampled_from(DONORS.get(str(ps[0][-1]), []) + plausible(resolved(ps[1])) or [None]),
                    st.sampled_from(HOSTILE),
                ).map(lambda v, p=ps[0]: Mutation("add", p, v))
            )
        )
    if named:
        strategies.append(
            st.sampled_from(named).flatmap(
                lambda p: st.sampled_from(twin_names(at(doc, p)["name"])).map(lambda n, p=p: Mutation("twin", p, n))
            )
        )
    return st.one_of(strategies)


def items_named(every: list[tuple[KeyPath, Any]]) -> list[tuple[KeyPath, Any]]:
    return [
        (p, v)
        for p, v in every
        if p and isinstance(p[-1], int) and isinstance(v, dict) and isinstance(v.get("name"), str)
    ]


# ---- mutations of a shipped stack file's text ------------------------------------------------------


INLINE = re.compile(r"^( +)([A-Za-z][\w:.-]*): ([^\s\[{!&*|>#'\"][^#]*?)\s*$")
SECTION = re.compile(r"^  [a-z-]+:[A-Za-z]+:")
NOT_PLAIN_TAGS = [
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!timestamp 2001-12-14",
    "!!omap [{a: 1}]",
    "!!pairs [{a: 1}]",
    "!custom value",
    "!!python/object/apply:os.system [true]",
    "!!python/name:os.system",
]
PLAIN_TAGS = ["!!str {v}", "!!float 1", "!!int 1", "!!null ''", "!!bool true", "!!map {a: 1}", "!!seq [a]", "&x {v}"]


@dataclass(frozen=True)
class TextMutation:
    """One change to a shipped file's bytes: a duplicate key, an explicit tag, another encoding."""

    kind: str
    line: int = 0
    detail: str = ""

    def __repr__(self) -> str:
        return f"{self.kind} at line {self.line + 1}{': ' + self.detail if self.detail else ''}"

    def apply(self, text: str) -> bytes:
        lines = text.splitlines(keepends=True)
        if self.kind == "duplicate-key":
            m = INLINE.match(lines[self.line])
            assert m
            lines.insert(self.line + 1, f"{m.group(1)}{m.group(2)}: {self.detail}\n")
        elif self.kind == "duplicate-section":
            end = self.line + 1
            while end < len(lines) and (lines[end].startswith("   ") or not lines[end].strip()):
                end += 1
            lines[end:end] = lines[self.line : end]
        elif self.kind == "tag":
            m = INLINE.match(lines[self.line])
            assert m
            lines[self.line] = f"{m.group(1)}{m.group(2)}: {self.detail.replace('{v}', m.group(3))}\n"
        elif self.kind == "encoding":
            return encoded(text, self.detail)
        return "".join(lines).encode()

    def expect(self, doc: Any) -> Expect | None:
        if self.kind in ("duplicate-key", "duplicate-section"):
            return Expect("refuse", "a duplicate YAML key (item 2)")
        if self.kind == "tag" and self.detail in NOT_PLAIN_TAGS:
            return Expect("refuse", "an explicit YAML tag that is not a plain value (item 1)")
        if self.kind == "encoding":
            if self.detail == "crlf":
                return Expect("accept", "the same file with CRLF line ends")
            if self.detail != "utf-8-bom":
                return Expect("refuse", "a file that is not UTF-8 text (item 1)")
        return None


ENCODINGS = [
    "utf-16",
    "utf-16-le",
    "utf-32",
    "latin-1",
    "gzip",
    "junk-prefix",
    "cut-in-a-character",
    "crlf",
    "utf-8-bom",
]


def encoded(text: str, how: str) -> bytes:
    marked = text.replace("# ", "# é ", 1) if "# " in text else "# é\n" + text  # one non-ASCII character
    if how in ("utf-16", "utf-16-le", "utf-32", "latin-1"):
        return marked.encode(how)
    if how == "gzip":
        return gzip.compress(text.encode(), mtime=0)
    if how == "junk-prefix":
        return b"\xff\xfe\x00\x89PNG\r\n" + text.encode()
    if how == "cut-in-a-character":
        raw = marked.encode()
        i = raw.index("é".encode())
        return raw[:i] + raw[i + 1 :]
    if how == "crlf":
        return text.replace("\n", "\r\n").encode()
    return codecs.BOM_UTF8 + text.encode()


def text_mutations_of(text: str) -> st.SearchStrategy[TextMutation]:
    lines = text.splitlines()
    inline = [i for i, line in enumerate(lines) if INLINE.match(line)]
    sections = [i for i, line in enumerate(lines) if SECTION.match(line)]
    return st.one_of(
        st.tuples(st.sampled_from(inline), st.sampled_from(["other", "1", "''", "[]"])).map(
            lambda t: TextMutation("duplicate-key", *t)
        ),
        st.sampled_from(sections).map(lambda i: TextMutation("duplicate-section", i)),
        st.tuples(st.sampled_from(inline), st.sampled_from(NOT_PLAIN_TAGS + PLAIN_TAGS)).map(
            lambda t: TextMutation("tag", *t)
        ),
        st.sampled_from(ENCODINGS).map(lambda e: TextMutation("encoding", 0, e)),
    )


# ---- generated files -------------------------------------------------------------------------------


SECTION_KEYS = [f"{PROJECT}:{s}" for s in ("stack", "cluster", "nodePools", "addons", "storage", "gateway", "models")]
KNOWN_KEYS = ["config", "aws:region", *SECTION_KEYS, "role", "name", "models", "engine", "pool", "environment"]


@dataclass(frozen=True)
class Generated:
    label: str
    data: bytes

    def __repr__(self) -> str:
        return f"{self.label}: {short(self.data, 200)}"

    def expect(self) -> Expect | None:
        try:
            doc = yaml.safe_load(self.data.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
            return None
        if not isinstance(doc, dict):
            return Expect("refuse", "a top level that is not a mapping (item 1)")
        if "config" in doc and not isinstance(doc["config"], dict):
            return Expect("refuse", "a `config` that is not a mapping (item 1)")
        return None


keys = st.one_of(st.sampled_from(KNOWN_KEYS), st.text(utf8, max_size=12), st.integers(), st.none(), st.booleans())
random_trees = st.recursive(
    scalars | st.sampled_from([datetime.date(2024, 1, 1), b"\x00\x01", {1, 2}]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(keys, kids, max_size=5),
    max_leaves=25,
)


def nested(depth: int, style: str) -> str:
    """A value nested `depth` deep, to follow `inference-platform:models:` (block style: at most 300)."""
    if style == "flow-list":
        return " " + "[" * depth + "]" * depth
    if style == "flow-map":
        return " " + "{a: " * depth + "1" + "}" * depth
    return "".join(f"\n    {'  ' * i}-" for i in range(min(depth, 300))) + " x"


def alias_bomb(levels: int, width: int) -> str:
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def generated_files() -> st.SearchStrategy[Generated]:
    def tree_doc(t: Any, where_: str) -> Generated:
        placed = {
            "top level": t,
            "config": {"config": t},
            "section": {"config": {"aws:region": "us-west-2", f"{PROJECT}:stack": t}},
        }[where_]
        return Generated(f"tree at the {where_}", dump(placed))

    trees_ = st.tuples(random_trees, st.sampled_from(["top level", "config", "section"])).map(lambda t: tree_doc(*t))
    sections = st.dictionaries(st.sampled_from([*SECTION_KEYS, "aws:region"]), random_trees, max_size=4).map(
        lambda d: Generated("random sections", dump({"config": d}))
    )
    deep = st.tuples(st.sampled_from([20, 100, 400]), st.sampled_from(["flow-list", "flow-map", "block"])).map(
        lambda t: Generated(f"nesting {t[0]} deep ({t[1]})", f"config:\n  {PROJECT}:models:{nested(*t)}\n".encode())
    )
    bombs = st.tuples(st.integers(2, 4), st.integers(2, 8)).map(
        lambda t: Generated(
            f"aliases {t[1]}^{t[0]}",
            (alias_bomb(*t) + f"config:\n  {PROJECT}:models: *a{t[0] - 1}\n").encode(),
        )
    )
    raw = st.binary(max_size=64).map(lambda b: Generated("raw bytes", b))
    bare = st.sampled_from(["", "~\n", "[]\n", "- config\n", "just text\n", "42\n", "---\n---\n", "config: 5\n"]).map(
        lambda s: Generated("a bare document", s.encode())
    )
    return st.one_of(bare, trees_, sections, deep, bombs, raw)


# ---- the tests -------------------------------------------------------------------------------------


def report(what: Any, run: Run, problems: list[str]) -> str:
    lines = [f"{what!r}", *(f"  - {p}" for p in problems), f"  validate exit {run.code} in {run.seconds:.2f} s"]
    lines += [f"  | {line[:200]}" for line in run.stderr.splitlines()[:8]]
    if run.trace:
        lines += ["  traceback:", *(f"  | {line}" for line in run.trace.splitlines()[-12:])]
    return "\n".join(lines)


def judge(run: Run, problems: list[str], expect: Expect | None) -> list[str]:
    if expect is None or problems:
        return problems
    if expect.outcome == "refuse" and run.code == 0:
        return [f"accepted, but must be refused: {expect.why}"]
    if expect.outcome == "accept" and run.code != 0:
        return [f"refused, but must be accepted: {expect.why}"]
    return problems


def render_some(accepted: dict[bytes, Any], work: Path, renders: int) -> None:
    """Render `renders` accepted files, most plausible first (a value replaced by one of its type)."""

    def rank(item: tuple[bytes, Any]) -> int:
        what = item[1]
        return 0 if getattr(what, "kind", "") == "replace" else 1

    for data, what in sorted(accepted.items(), key=rank)[:renders]:
        work.write_bytes(data)
        problems = render_problems(work)
        assert not problems, f"{what!r}\n" + "\n".join(f"  - {p}" for p in problems)


def probe(work: Path, data: bytes, what: Any, expect: Expect | None, accepted: dict[bytes, Any]) -> None:
    work.write_bytes(data)
    run, problems = check_file(work)
    problems = judge(run, problems, expect)
    assert not problems, report(what, run, problems)
    if run.code == 0:
        accepted.setdefault(data, what)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_single_mutations_of_a_shipped_stack_file_are_refused_cleanly_or_render(path: Path, tmp_path: Path) -> None:
    doc = shipped_doc(path)
    work = tmp_path / path.name
    accepted: dict[bytes, Mutation] = {}
    original = load_config_or_none(path)

    @budget(ci_examples=10)
    @given(mutations_of(doc))
    def check(mutation: Mutation) -> None:
        data = dump(mutation.apply(doc))
        expect = mutation.expect(doc)
        probe(work, data, mutation, expect, accepted)
        if expect is not None and expect.outcome == "accept":
            assert load_config_or_none(work) == original, f"{mutation!r}: read differently from the original"

    check()
    render_some(accepted, work, RENDERS or int(path.name in RENDERED_IN_CI))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_no_oracle_refuses_a_shipped_stack_file(path: Path) -> None:
    """The oracles judge a mutation by the whole mutated document: unmutated, every shipped file passes."""
    assert doc_expect(shipped_doc(path)) is None


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_stack_files_still_validate_when_written_back_without_comments(path: Path, tmp_path: Path) -> None:
    """The mutations start from the re-dumped document: unchanged, it must validate as the file does."""
    work = tmp_path / path.name
    work.write_bytes(dump(shipped_doc(path)))
    run, problems = check_file(work)
    assert not problems and run.code == 0, report("the file re-dumped", run, problems)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_mutations_of_a_shipped_stack_files_text_are_refused_cleanly_or_render(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    doc = shipped_doc(path)
    work = tmp_path / path.name
    accepted: dict[bytes, TextMutation] = {}

    @budget(ci_examples=4)
    @given(text_mutations_of(text))
    def check(mutation: TextMutation) -> None:
        probe(work, mutation.apply(text), mutation, mutation.expect(doc), accepted)

    check()


def test_generated_stack_files_are_refused_cleanly(tmp_path: Path) -> None:
    work = tmp_path / "Pulumi.generated.yaml"
    accepted: dict[bytes, Generated] = {}

    @budget(ci_examples=40)
    @given(generated_files())
    def check(generated: Generated) -> None:
        probe(work, generated.data, generated, generated.expect(), accepted)

    check()
    render_some(accepted, work, RENDERS or 1)


# ---- the saved regression cases --------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    path: Path
    exercises: str
    expect: str  # "renders", "refused" or "refused at <key path>"


def read_case(path: Path) -> Case:
    raw = path.read_bytes()
    for encoding in ("utf-8", "utf-16", "latin-1"):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        header = dict(
            (m.group(1), m.group(2).strip()) for m in re.finditer(r"^# (exercises|expect): (.*)$", text, re.M)
        )
        if "expect" in header:
            return Case(path, header.get("exercises", ""), header["expect"])
    raise AssertionError(f"{path.name}: no `# expect: ...` line")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_every_saved_guard_case_holds_the_invariant_and_its_expected_outcome(case: Path) -> None:
    saved = read_case(case)
    run, problems = check_file(case)
    assert not problems, report(f"{case.name} ({saved.exercises})", run, problems)
    if saved.expect == "renders":
        assert run.code == 0, report(f"{case.name}: must validate ({saved.exercises})", run, ["refused"])
        problems = render_problems(case)
        assert not problems, f"{case.name} ({saved.exercises}):\n" + "\n".join(f"  - {p}" for p in problems)
    else:
        assert saved.expect == "refused" or saved.expect.startswith("refused at "), saved.expect
        assert run.code == 1, report(f"{case.name}: must be refused ({saved.exercises})", run, ["accepted"])
        key = saved.expect.removeprefix("refused").removeprefix(" at ")
        assert not key or refusal_names(run, case, key), report(
            f"{case.name}: the refusal must name {key} ({saved.exercises})", run, [f"no problem at {key}"]
        )


def test_every_saved_guard_case_says_what_it_exercises_and_the_right_outcome() -> None:
    assert CASES, f"no regression cases under {CASES_DIR}"
    for case in CASES:
        saved = read_case(case)
        assert saved.exercises, f"{case.name}: no `# exercises: ...` line"
        assert re.fullmatch(r"renders|refused|refused at .+", saved.expect), f"{case.name}: {saved.expect!r}"


# ---- inputs too dangerous for this process, and the interpreter entry point ------------------------


def huge_value(path: KeyPath) -> bytes:
    """Pulumi.dev.yaml with a 5 MB value at `path` (spliced into the dump: PyYAML would take seconds)."""
    doc = shipped_doc(ROOT / "Pulumi.dev.yaml")
    at(doc, path[:-1])[path[-1]] = "HUGE-VALUE-PLACEHOLDER"
    return dump(doc).replace(b"HUGE-VALUE-PLACEHOLDER", b"a" * HUGE)


DANGEROUS: dict[str, Callable[[], bytes]] = {
    "a-5-MB-cluster-name": lambda: huge_value(("config", f"{PROJECT}:cluster", "name")),
    "a-5-MB-model-revision": lambda: huge_value(("config", f"{PROJECT}:models", 0, "revision")),
    "aliases-expanding-to-10^9-models": lambda: (alias_bomb(9, 10) + f"config:\n  {PROJECT}:models: *a8\n").encode(),
    "lists-nested-100000-deep": lambda: f"config:\n  {PROJECT}:models:{nested(100_000, 'flow-list')}\n".encode(),
}
TIMED = """
import contextlib, io, json, sys, time
from stacks.__main__ import main
for path in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", path])
    print(json.dumps({"path": path, "code": code, "seconds": time.monotonic() - start, "stderr": err.getvalue()}))
"""


def fresh_interpreter(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`python {' '.join(args)[:200]}` still running after {timeout:.0f} s")


def test_files_too_big_too_deep_or_too_aliased_are_refused_in_seconds(tmp_path: Path) -> None:
    """In a fresh interpreter that is killed if it runs away: a parser or pydantic-core busy in C code
    cannot be interrupted in this process. Each file is timed from main(), without the interpreter start."""
    paths = []
    for name, build in DANGEROUS.items():
        paths.append(tmp_path / f"Pulumi.{name}.yaml")
        paths[-1].write_bytes(build())
    done = fresh_interpreter(["-c", TIMED, *map(str, paths)], timeout=HANG_SECONDS + len(paths) * VALIDATE_SECONDS)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = {Path(r["path"]).stem.removeprefix("Pulumi."): r for r in map(json.loads, done.stdout.splitlines())}
    assert set(runs) == set(DANGEROUS), done.stdout[-2000:]
    failures = {}
    for name, r in runs.items():
        run = Run(("validate",), r["code"], "", r["stderr"], r["seconds"])
        problems = validate_problems(run, Path(r["path"]))
        if run.code != 1:
            problems.append(f"exit {run.code}: must be refused")
        if len(run.stderr) > 20 * MAX_LINE:
            problems.append(f"{len(run.stderr)} characters on stderr")
        if problems:
            failures[name] = problems
    assert not failures, failures


ENTRY_POINT = {
    "validate": (["validate"], [b"- config\n", "config:\n  x: 1\n".encode("utf-16"), b"config:\n  1: x\n"]),
    "render": (["render"], [b"\x1f\x8b\x08\x00 not a stack file\n"]),
}


@pytest.mark.parametrize("command", ENTRY_POINT)
def test_no_traceback_escapes_the_interpreter_entry_point(command: str, tmp_path: Path) -> None:
    """`python -m stacks validate|render` as a user runs it, on files that once raised in the load step."""
    args, contents = ENTRY_POINT[command]
    paths = []
    for i, data in enumerate(contents):
        paths.append(tmp_path / f"Pulumi.hostile-{i}.yaml")
        paths[-1].write_bytes(data)
    extra = ["--out", str(tmp_path / "out")] if command == "render" else []
    done = fresh_interpreter(["-m", "stacks", *args, *map(str, paths), *extra], timeout=HANG_SECONDS)
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert not SAFETY_NET.search(done.stderr), done.stderr[-3000:]
    assert all(str(p) in done.stderr for p in paths), done.stderr[-3000:]
    assert not (tmp_path / "out").exists(), "a refused render wrote output"


def load_config_or_none(path: Path) -> Any:
    from stacks.pipeline import check_file

    try:
        return check_file(path).stack.model_dump()
    except Exception:
        return None


# ---- the keys of the last round, each given arbitrary values -------------------------------------------

M, NP, T = f"{PROJECT}:models", f"{PROJECT}:nodePools", f"{PROJECT}:teams"
# (file, document path of a key added in the last round): each gets plausible, donated, hostile and random
# values whether or not the file sets it. Issue 28 item 8.
LAST_ROUND_KEYS: list[tuple[str, KeyPath]] = [
    *(("Pulumi.dev.yaml", ("config", NP, 0, k)) for k in ("imagePull", "imageSnapshot", "warmNodes")),
    ("Pulumi.dev.yaml", ("config", NP, 1, "terminationGracePeriod")),
    *(("Pulumi.dev.yaml", ("config", M, 0, k)) for k in ("compileCache", "acceptDowntime", "secrets")),
    ("Pulumi.dev.yaml", ("config", f"{PROJECT}:stack", "intendedReplacements")),
    ("Pulumi.dev.yaml", ("config", f"{PROJECT}:storage", "modelBucket", "name")),
    ("Pulumi.dev.yaml", ("config", f"{PROJECT}:secrets")),
    ("Pulumi.dev.yaml", ("config", f"{PROJECT}:secrets", "hf-token")),
    *(
        ("Pulumi.platform.yaml", ("config", T, 0, k))
        for k in ("name", "namespaces", "deployers", "quota", "litellm", "consumers")
    ),
    ("Pulumi.platform.yaml", ("config", T, 1)),
    ("Pulumi.team-search.yaml", ("config", f"{PROJECT}:stack", "team")),
]


def key_of(path: KeyPath) -> str:
    """`inference-platform:nodePools[0].imagePull` for a document path under `config`."""
    from stacks.errors import key_path

    section = str(path[1])
    head = section.split(":", 1)[1] if section.startswith(f"{PROJECT}:") else section
    return key_path([head, *path[2:]])


def values_for(path: KeyPath) -> st.SearchStrategy[Any]:
    node = schema_at(path) or {}
    offered = [*plausible(node), *DONORS.get(str(path[-1]), [])] or [None]
    return st.one_of(st.sampled_from(offered), st.sampled_from(HOSTILE), random_trees)


@pytest.mark.parametrize("name", sorted({f for f, _ in LAST_ROUND_KEYS}))
def test_arbitrary_values_of_the_last_rounds_keys_are_accepted_or_refused_naming_a_key(
    name: str, tmp_path: Path
) -> None:
    """imagePull, imageSnapshot, warmNodes, terminationGracePeriod, compileCache, acceptDowntime, a model's
    secrets, stack.intendedReplacements, storage.modelBucket.name, the secrets section and the team keys:
    any value never tracebacks, and a refusal names the key it was given at (or one below it), or another
    key of its section (a collision is refused at the second entry), or, for the secrets section, the
    keys that refer to it."""
    path = next(p for p in SHIPPED if p.name == name)
    doc = shipped_doc(path)
    work = tmp_path / name
    paths = [p for f, p in LAST_ROUND_KEYS if f == name]

    @budget(ci_examples=12)
    @given(st.sampled_from(paths).flatmap(lambda p: values_for(p).map(lambda v, p=p: Mutation("add", p, v))))
    def check(mutation: Mutation) -> None:
        if not isinstance(at(doc, mutation.path[:-1]), (dict, list)):
            return
        data = dump(mutation.apply(doc))
        work.write_bytes(data)
        run, problems = check_file(work)
        problems = judge(run, problems, mutation.expect(doc))
        assert not problems, report(mutation, run, problems)
        if run.code == 1 and not any(mutation.path[: len(r)] == r for r in REFERRED):
            # The key, or its section: a collision with a sibling entry is refused at the second one.
            key, section = key_of(mutation.path), key_of(mutation.path[:2])
            named = refusal_names(run, work, key) or refusal_names(run, work, section)
            assert named, report(mutation, run, [f"refused without naming {key} or a key of {section}"])

    check()


# Keys other keys depend on (the Secrets a model's huggingFaceToken or a `fromConfig` names; the team whose
# quota and namespaces a workloads stack's models must fit): another value is refused where it is depended
# on, which the invariant holds to naming a key path.
REFERRED: list[KeyPath] = [("config", f"{PROJECT}:secrets"), ("config", f"{PROJECT}:stack", "team")]
