"""`python -m stacks diff BASE NEW`: what an update from one render to another would create, replace,
update and delete, before any `pulumi preview` has credentials.

BASE and NEW are each a stack file in the working tree, or `REV:PATH`, a git revision and a stack file
at it (`origin/main:Pulumi.dev.yaml`). A revision is rendered with its own code: `git archive` writes
the revision into a temporary directory and `python -m stacks render` runs there with this
interpreter, so a change to the program shows as much as a change to the stack file. Both renders run
under the same recording mocks (stack `render`), so their URNs compare.

The two renders are compared by URN and inputs (stacks/render.py `resources.json`):
- a URN only NEW has is created, unless one of its `aliases=` names a URN only BASE has (a rename,
  updated in place); a URN only BASE has is deleted;
- a URN in both whose inputs differ is updated, or replaced when an input the provider replaces on
  changed (stacks/replacements.py, the one table). A URN that changed without an alias is a delete and
  a create: for a resource that holds state it is listed as a replacement too.
Replacing (or deleting) a resource that holds state, the bucket, the file systems, a KMS key or the
cluster, is refused (exit 1) naming the resource, the input that forces it and the stack key that
allows it (`stack.intendedReplacements` of NEW's stack file), unless that key lists it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .load import ROOT, read_stack_file
from .replacements import STATEFUL, replacing_inputs

INTENDED_KEY = "inference-platform:stack.intendedReplacements"


class DiffError(Exception):
    """A side that cannot be rendered: an unknown revision or file, or a stack file the render refuses."""


@dataclass
class Change:
    urn: str
    type: str
    name: str
    # For a replacement: why (each input that forces it, or the URN change).
    why: list[str] = field(default_factory=list)
    stateful: bool = False


@dataclass
class Refusal:
    name: str
    type: str
    what: str
    why: str
    fix: str

    def __str__(self) -> str:
        return (
            f"refused: {self.name} ({self.type}) would be replaced, losing {self.what}: {self.why}. {self.fix}; "
            f"if the replacement is intended, list it in {INTENDED_KEY}: [{self.name}]"
        )


@dataclass
class Diff:
    base: str
    new: str
    created: list[Change] = field(default_factory=list)
    replaced: list[Change] = field(default_factory=list)
    updated: list[Change] = field(default_factory=list)
    deleted: list[Change] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    intended: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


# --- rendering a side ----------------------------------------------------------------------------


def is_revision(arg: str, root: Path = ROOT) -> bool:
    """`REV:PATH` names a revision when it is not a file of the working tree."""
    return ":" in arg and not (root / arg).exists() and not Path(arg).exists()


def render_resources(stack_file: Path, root: Path) -> list[dict[str, Any]]:
    """Render `stack_file` with the program under `root` (this interpreter, a fresh process: the mocks
    are one per process) and return its resources.json."""
    with tempfile.TemporaryDirectory(prefix="stacks-diff-") as out:
        done = subprocess.run(
            [sys.executable, "-m", "stacks", "render", str(stack_file), "--out", out],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise DiffError(f"{stack_file} does not render: {done.stderr.strip() or done.stdout.strip()}")
        resources: list[dict[str, Any]] = json.loads((Path(out) / "resources.json").read_text())
        return resources


def _archive(rev: str, into: Path, root: Path) -> None:
    done = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", rev], capture_output=True)
    if done.returncode != 0:
        raise DiffError(f"{rev}: not a revision of {root} ({done.stderr.decode().strip()})")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(into, filter="data")


@dataclass
class Side:
    """One side of a diff: what it renders to, and its stack file's stack.intendedReplacements."""

    resources: list[dict[str, Any]]
    intended: list[str]
    note: str | None = None


def side(arg: str, root: Path = ROOT) -> Side:
    """Render one side: a stack file of the working tree, or REV:PATH (empty, with a note, when the file
    is not at that revision)."""
    if not is_revision(arg, root):
        path = (root / arg) if (root / arg).exists() else Path(arg)
        if not path.exists():
            raise DiffError(f"{arg}: no such stack file (give a path, or REV:PATH for a git revision)")
        return Side(render_resources(path.resolve(), root), intended_replacements(path))
    rev, _, rel = arg.partition(":")
    with tempfile.TemporaryDirectory(prefix="stacks-diff-rev-") as tmp:
        _archive(rev, Path(tmp), root)
        path = Path(tmp) / rel
        if not path.exists():
            return Side([], [], f"{rel} does not exist at {rev}: every resource of {rel} is new")
        return Side(render_resources(path, Path(tmp)), intended_replacements(path))


def intended_replacements(stack_file: Path) -> list[str]:
    """stack.intendedReplacements of a stack file (validated by its render)."""
    sections, _ = read_stack_file(stack_file)
    return list((sections.get("stack") or {}).get("intendedReplacements") or [])


# --- comparing the renders -----------------------------------------------------------------------


def _change(resource: dict[str, Any], why: list[str] | None = None) -> Change:
    kind = resource["type"]
    return Change(resource["urn"], kind, resource["name"], why or [], kind in STATEFUL)


def compare(base: list[dict[str, Any]], new: list[dict[str, Any]], diff: Diff) -> Diff:
    """Fill `diff` with what turning the `base` render into the `new` one does."""
    before = {r["urn"]: r for r in base}
    after = {r["urn"]: r for r in new}
    renamed = {a: urn for urn, r in after.items() if urn not in before for a in r.get("aliases", []) if a in before}
    for urn, resource in after.items():
        old = before.get(urn) or before.get(next((a for a in resource.get("aliases", []) if a in before), ""))
        if old is None:
            diff.created.append(_change(resource))
            continue
        rows = replacing_inputs(resource["type"], old.get("inputs") or {}, resource.get("inputs") or {})
        if rows:
            why = [f"{row.path} changes" + (f" (set by {row.key})" if row.key else "") for row in rows]
            diff.replaced.append(_change(resource, why))
        elif (old.get("inputs") or {}) != (resource.get("inputs") or {}) or urn != old["urn"]:
            diff.updated.append(_change(resource))
    for urn, resource in before.items():
        if urn not in after and urn not in renamed:
            diff.deleted.append(_change(resource))
    _urn_changes(diff)
    return diff


def _urn_changes(diff: Diff) -> None:
    """A resource that holds state, deleted under one URN and created under another of its type with no
    alias, is replaced: list it as such (the delete and the create stay listed)."""
    for gone in [d for d in diff.deleted if d.stateful]:
        twin = next((c for c in diff.created if c.type == gone.type), None)
        why = f"its URN changes to {twin.urn} with no alias" if twin else "it is deleted"
        diff.replaced.append(Change(gone.urn, gone.type, gone.name, [why], True))


def refusals(diff: Diff) -> list[Refusal]:
    """Every replacement of a resource that holds state that NEW's stack.intendedReplacements does not
    list."""
    found = []
    for change in diff.replaced:
        if not change.stateful or change.name in diff.intended:
            continue
        why = "; ".join(change.why)
        found.append(Refusal(change.name, change.type, STATEFUL[change.type], why, _fix(change)))
    return found


def _fix(change: Change) -> str:
    text = " ".join(change.why)
    if "bucketPrefix" in text:
        return (
            "Its generated name starts with the cluster's name, so renaming cluster.name renames it: to keep it, "
            "set storage.modelBucket.name to the bucket's current name (create: true stays), which the provider "
            "reads as no change"
        )
    if "set by cluster.name" in text:
        return "Renaming cluster.name creates a new cluster: keep the name, or build the new cluster beside the old"
    if "URN" in text or "deleted" in text:
        return "Keep its name in the program, or add aliases= for its old URN so the engine moves it in place"
    return "Keep the input as it is, or move the data to a new resource beside the old one first"


# --- the command ---------------------------------------------------------------------------------


def diff(base_arg: str, new_arg: str, root: Path = ROOT) -> Diff:
    base, new = side(base_arg, root), side(new_arg, root)
    result = Diff(base_arg, new_arg, intended=new.intended)
    result.notes += [n for n in (base.note, new.note) if n]
    compare(base.resources, new.resources, result)
    result.refused = refusals(result)
    known = {c.name for c in result.replaced if c.stateful}
    result.notes += [
        f"{INTENDED_KEY} lists {name}, which this update does not replace: remove it"
        for name in result.intended
        if name not in known
    ]
    return result


def text(result: Diff) -> str:
    lines = [f"stacks diff {result.base} -> {result.new}"]
    for title, changes in (
        ("create", result.created),
        ("replace", result.replaced),
        ("update", result.updated),
        ("delete", result.deleted),
    ):
        lines.append(f"{title}: {len(changes)}")
        for change in changes:
            detail = f" ({'; '.join(change.why)})" if change.why else ""
            mark = " [holds state]" if change.stateful else ""
            lines.append(f"  {title} {change.type} {change.name}{mark}{detail}")
    lines += [f"note: {n}" for n in result.notes]
    lines += [str(r) for r in result.refused]
    return "\n".join(lines)


def main(base_arg: str, new_arg: str, as_json: bool) -> int:
    try:
        result = diff(base_arg, new_arg)
    except DiffError as exc:
        print(f"diff: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result.as_json(), indent=2) if as_json else text(result))
    return 1 if result.refused else 0
