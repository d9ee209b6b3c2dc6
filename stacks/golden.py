"""Golden renders: one digest per rendered resource of every shipped stack file.

`python -m stacks golden` renders each stack file (the root's `Pulumi.*.yaml` and
`stacks/examples/`) under the mocks and writes `tests/golden/<stack>.json`: for each resource, keyed
by its URN, a digest of everything `pulumi up` would send for it (type, parent, provider,
dependencies, inputs, protect, retainOnDelete). `--check` compares instead and lists every URN that
was added, removed or changed. A behaviour change updates the digests in the same commit and says
which objects changed and why; an unexplained change is a bug.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .load import ROOT
from .mocks import Record
from .render import integral, masked, render_file, stack_name

GOLDEN_DIR = ROOT / "tests" / "golden"


def stack_files() -> list[Path]:
    return sorted(ROOT.glob("Pulumi.*.yaml")) + sorted((ROOT / "stacks" / "examples").glob("Pulumi.*.yaml"))


def digest(record: Record) -> str:
    body = {
        "type": record.type,
        "parent": record.parent or None,
        "provider": record.provider or None,
        "dependsOn": sorted(record.depends_on),
        "inputs": integral(masked(record.inputs)),
        "protect": record.protect,
        "retainOnDelete": record.retain_on_delete,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def digests(records: list[Record]) -> dict[str, str]:
    return {r.urn: digest(r) for r in records}


def golden_path(path: Path) -> Path:
    return GOLDEN_DIR / f"{stack_name(path)}.json"


def read_golden(path: Path) -> dict[str, str]:
    target = golden_path(path)
    return json.loads(target.read_text()) if target.exists() else {}


def differences(want: dict[str, str], have: dict[str, str]) -> list[str]:
    """One line per URN whose digest is new, gone or different."""
    lines = [f"added   {u}" for u in sorted(have.keys() - want.keys())]
    lines += [f"removed {u}" for u in sorted(want.keys() - have.keys())]
    lines += [f"changed {u}" for u in sorted(want.keys() & have.keys()) if want[u] != have[u]]
    return lines


def main(check: bool, files: list[Path] | None = None) -> int:
    failed = 0
    for path in files or stack_files():
        have = digests(render_file(path).resources)
        if check:
            diff = differences(read_golden(path), have)
            for line in diff:
                print(f"{path.name}: {line}")
            failed += bool(diff)
            continue
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        golden_path(path).write_text(json.dumps(have, indent=1, sort_keys=True) + "\n")
        print(f"{golden_path(path).relative_to(ROOT)}: {len(have)} digests")
    return 1 if failed else 0
