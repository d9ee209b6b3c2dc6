"""Command line: `python -m stacks {render,validate,plan,bench}`.

Every command validates the stack file first; a bad file prints one line per problem on stderr and
exits 1, with no traceback and nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .checks import stack_warnings
from .errors import ConfigError
from .load import ROOT, load_stack_file, resolve_stack


def all_stack_files() -> list[Path]:
    return sorted(ROOT.glob("Pulumi.*.yaml")) + sorted((ROOT / "stacks" / "examples").glob("Pulumi.*.yaml"))


def cmd_validate(args: argparse.Namespace) -> int:
    files = [resolve_stack(f) for f in args.files] if args.files else all_stack_files()
    failed = 0
    for path in files:
        try:
            config = load_stack_file(path)
        except ConfigError as exc:
            failed += 1
            for problem in exc.problems:
                print(f"{path}: {problem}", file=sys.stderr)
            continue
        for warn in stack_warnings(config):
            print(f"{path}: warning: {warn}", file=sys.stderr)
        print(f"{path}: ok")
    return 1 if failed else 0


def cmd_render(args: argparse.Namespace) -> int:
    from .render import render_file, write

    path = resolve_stack(args.stack)
    rendered = render_file(path)
    out = Path(args.out)
    write(rendered, out)
    print(
        f"{path}: {len(rendered.resources)} resources, {len(rendered.manifests())} Kubernetes "
        f"objects, {len(rendered.releases())} Helm releases -> {out}"
    )
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from .plan import plan

    path = resolve_stack(args.stack)
    print(plan(load_stack_file(path)), end="")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import main as bench

    return bench([int(k) for k in args.sizes.split(",")], args.repeat)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m stacks", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check stack files without rendering")
    v.add_argument("files", nargs="*", help="stack names or Pulumi.<stack>.yaml paths (default: all)")
    v.set_defaults(fn=cmd_validate)
    r = sub.add_parser("render", help="run the program under mocks and write what it would create")
    r.add_argument("stack", help="a stack name (dev) or a path to a Pulumi.<stack>.yaml")
    r.add_argument("--out", default="build/render", help="output directory (default: build/render)")
    r.set_defaults(fn=cmd_render)
    pl = sub.add_parser("plan", help="per pool: allowed instance types and allocatable; per model: where it fits")
    pl.add_argument("stack", help="a stack name (dev) or a path to a Pulumi.<stack>.yaml")
    pl.set_defaults(fn=cmd_plan)
    b = sub.add_parser("bench", help="render synthetic stacks of growing size and report wall time")
    b.add_argument("--sizes", default="2,8,32", help="comma-separated pool/model counts")
    b.add_argument("--repeat", type=int, default=3)
    b.set_defaults(fn=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"{exc.source + ': ' if exc.source else ''}{problem}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
