#!/usr/bin/env python3
"""Offline render of several stack files in one process (`make render-all`): each Pulumi.<stack>.yaml
into OUT/<stack>/, exactly as `python -m stacks render <file> --out OUT/<stack>` would write it.

One process instead of one per stack: the Pulumi SDK and the program import once. A stack file that
does not validate prints its problems and the others still render; the exit status is 1 if any failed.

    scripts/render-all.py --out build/render Pulumi.*.yaml stacks/examples/Pulumi.*.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stacks.__main__ import main as stacks_cli


def stack_of(path: Path) -> str:
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith(".yaml")):
        raise SystemExit(f"{path}: not a Pulumi.<stack>.yaml file")
    return name[len("Pulumi.") : -len(".yaml")]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="each stack is written to OUT/<stack>/")
    p.add_argument("files", nargs="+", type=Path, help="Pulumi.<stack>.yaml files")
    args = p.parse_args(argv)
    seen: dict[str, Path] = {}
    for path in args.files:
        stack = stack_of(path)
        if stack in seen:
            raise SystemExit(f"{path} and {seen[stack]} both render to {args.out}/{stack}")
        seen[stack] = path
    failed = [
        str(path)
        for stack, path in seen.items()
        if stacks_cli(["render", str(path), "--out", str(Path(args.out) / stack)]) != 0
    ]
    if failed:
        print(f"render-all: {len(failed)} of {len(seen)} stacks failed: {' '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
