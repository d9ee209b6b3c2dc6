"""Command line: `python -m stacks COMMAND`, COMMAND one of render, validate, plan, lifecycle, bench,
new, schema, reference, golden, charts, diff, changed.

Every command validates the stack file first; a bad file prints one line per problem on stderr and
exits 1, with no traceback and nothing written. Anything unexpected is caught at the top too, as one
line naming the file (a safety net: each refusal belongs at its cause, in the load step or a rule).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from .errors import ConfigError, one_line
from .load import ROOT, stack_path
from .pipeline import check_file


def all_stack_files() -> list[Path]:
    return sorted(ROOT.glob("Pulumi.*.yaml")) + sorted((ROOT / "stacks" / "examples").glob("Pulumi.*.yaml"))


def cmd_validate(args: argparse.Namespace) -> int:
    files: list[str | Path] = list(args.files) if args.files else list(all_stack_files())
    failed = 0
    for arg in files:
        path = Path(arg)
        try:
            path = stack_path(str(arg)) if isinstance(arg, str) else arg
            warnings = check_file(path).warnings
        except ConfigError as exc:
            failed += 1
            for problem in exc.problems:
                print(f"{path}: {problem}", file=sys.stderr)
            for warn in exc.warnings:
                print(f"{path}: warning: {warn}", file=sys.stderr)
            continue
        except Exception as exc:  # (the safety net: one line per file, the next file still checked)
            failed += 1
            print(unexpected(str(path), exc), file=sys.stderr)
            continue
        for warn in warnings:
            print(f"{path}: warning: {warn}", file=sys.stderr)
        print(f"{path}: ok")
    return 1 if failed else 0


def cmd_render(args: argparse.Namespace) -> int:
    path = stack_path(args.stack)
    check_file(path)  # a refused file is refused before the Pulumi SDK is even imported
    from .render import render_file, write

    rendered = render_file(path)
    out = Path(args.out)
    write(rendered, out)
    print(
        f"{path}: {len(rendered.resources)} resources, {len(rendered.manifests())} Kubernetes "
        f"objects, {len(rendered.releases())} Helm releases -> {out}"
    )
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from .pipeline import file_platform

    path = stack_path(args.stack)
    stack = check_file(path, file_platform(Path(args.platform)) if args.platform else None).stack
    from .plan import plan, plan_json

    try:
        text = json.dumps(plan_json(stack), indent=2) + "\n" if args.json else plan(stack)
    except ConfigError as exc:
        exc.source = str(path)
        raise
    print(text, end="")
    return 0


def cmd_lifecycle(args: argparse.Namespace) -> int:
    path = stack_path(args.stack)
    check_file(path)  # a refused file is refused before the Pulumi SDK is even imported
    from .lifecycle_report import as_json, as_text, lifecycle
    from .render import render_file, stack_name

    model = lifecycle(render_file(path).resources)
    print(json.dumps(as_json(model), indent=2) if args.json else as_text(model, stack_name(path)), end="")
    if args.json:
        print()
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import main as bench

    return bench([int(k) for k in args.sizes.split(",")], args.repeat)


def cmd_new(args: argparse.Namespace) -> int:
    from .newstack import new_stack

    path = new_stack(
        args.name,
        args.role,
        out_dir=Path(args.out_dir),
        preset=args.preset,
        platform=args.platform,
        team=args.team,
        environment=args.environment,
        ami_version=args.ami_version,
        image_digest=args.image_digest,
        image_pins=dict(args.image_pin or []),
    )
    print(f"{path}: written and valid; next: python -m stacks render {path}")
    return 0


def _image_pin(value: str) -> tuple[str, str]:
    """One --image-pin NAME=DIGEST, or a usage error saying the form (never a traceback)."""
    name, sep, digest = value.partition("=")
    if not sep or not name or not digest:
        raise argparse.ArgumentTypeError(f"{value!r}: write NAME=DIGEST, e.g. model-prep-s3=sha256:<64 hex>")
    return name, digest


def cmd_schema(args: argparse.Namespace) -> int:
    from .schema import SCHEMA_PATH, render, write

    if args.check:
        if not SCHEMA_PATH.exists() or SCHEMA_PATH.read_text() != render():
            print(f"{SCHEMA_PATH} is out of date: run python -m stacks schema", file=sys.stderr)
            return 1
        print(f"{SCHEMA_PATH}: up to date")
        return 0
    print(f"{write()}: written")
    return 0


def cmd_reference(args: argparse.Namespace) -> int:
    from .reference import REFERENCE_PATH, render, write

    if args.check:
        if not REFERENCE_PATH.exists() or REFERENCE_PATH.read_text() != render():
            print(f"{REFERENCE_PATH} is out of date: run python -m stacks reference", file=sys.stderr)
            return 1
        print(f"{REFERENCE_PATH}: up to date")
        return 0
    print(f"{write()}: written")
    return 0


def cmd_golden(args: argparse.Namespace) -> int:
    from .golden import main as golden

    return golden(args.check, [stack_path(f) for f in args.files] or None)


def cmd_charts(args: argparse.Namespace) -> int:
    from .charts import ChartsError
    from .charts import main as charts

    files = [stack_path(f) for f in args.files] if args.files else all_stack_files()
    try:
        return charts(files, Path(args.out) if args.out else None)
    except ChartsError as exc:
        print(f"charts: {exc}", file=sys.stderr)
        return 1


def cmd_diff(args: argparse.Namespace) -> int:
    from .diff import main as diff

    return diff(args.base, args.new, args.json)


def cmd_changed(args: argparse.Namespace) -> int:
    from .ci import main as changed

    return changed(args.base, args.head)


def add_diff(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "diff", help="what an update from BASE to NEW creates, replaces, updates, deletes; refuses losing state"
    )
    d.add_argument("base", help="a stack file, or REV:PATH at a git revision (e.g. origin/main:Pulumi.dev.yaml)")
    d.add_argument("new", help="a stack file, or REV:PATH")
    d.add_argument("--json", action="store_true", help="print the diff as JSON")
    d.set_defaults(fn=cmd_diff)


@functools.cache
def parser() -> argparse.ArgumentParser:
    """The command line, built once a process (parse_args leaves it unchanged)."""
    p = argparse.ArgumentParser(prog="python -m stacks", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check stack files without rendering")
    v.add_argument("files", nargs="*", help="stack names or Pulumi.<stack>.yaml paths (default: all)")
    v.set_defaults(fn=cmd_validate)
    r = sub.add_parser("render", help="run the program under mocks and write what it would create")
    r.add_argument("stack", help="a stack name (dev) or a path to a Pulumi.<stack>.yaml")
    r.add_argument("--out", default="build/render", help="output directory (default: build/render)")
    r.set_defaults(fn=cmd_render)
    _plan_parser(sub)
    _lifecycle_parser(sub)
    b = sub.add_parser("bench", help="render synthetic stacks of growing size and report wall time")
    b.add_argument("--sizes", default="2,8,32", help="comma-separated pool/model counts")
    b.add_argument("--repeat", type=int, default=3)
    b.set_defaults(fn=cmd_bench)
    n = sub.add_parser("new", help="write a commented Pulumi.<name>.yaml that validates as written")
    n.add_argument("name", help="the stack name (file Pulumi.<name>.yaml)")
    n.add_argument("--role", choices=["workloads", "platform", "all-in-one"], required=True)
    n.add_argument("--platform", help="workloads: the platform stack, org/project/stack")
    n.add_argument("--team", help="workloads: the team (namespace and quota owner)")
    n.add_argument("--preset", choices=["gpu-small", "inf2", "mixed"], help="platform/all-in-one pools")
    n.add_argument("--environment", choices=["dev", "staging", "prod"], default="dev")
    n.add_argument("--ami-version", help="prod platforms: the pinned AL2023 AMI release, e.g. v20261015")
    n.add_argument("--image-digest", help="prod models: sha256 digest of the engine image")
    n.add_argument(
        "--image-pin",
        action="append",
        type=_image_pin,
        metavar="NAME=DIGEST",
        help="a platform image's sha256 digest by catalog name, e.g. model-prep-s3=sha256:...; prod needs one "
        "for every image the new stack renders (repeat the flag)",
    )
    n.add_argument("--out-dir", default=str(ROOT), help="where to write (default: the project root)")
    n.set_defaults(fn=cmd_new)
    s = sub.add_parser("schema", help="write stacks/stack.schema.json (JSON Schema of the stack file)")
    s.add_argument("--check", action="store_true", help="exit 1 if the committed schema is out of date")
    s.set_defaults(fn=cmd_schema)
    ref = sub.add_parser("reference", help="write docs/reference/stack-file.md (every stack-file key, generated)")
    ref.add_argument("--check", action="store_true", help="exit 1 if the committed reference is out of date")
    ref.set_defaults(fn=cmd_reference)
    g = sub.add_parser("golden", help="write (or --check) tests/golden/<stack>.json, a digest per rendered resource")
    g.add_argument("files", nargs="*", help="stack names or paths (default: every shipped stack file)")
    g.add_argument("--check", action="store_true", help="exit 1 and list each URN added, removed or changed")
    g.set_defaults(fn=cmd_golden)
    ch = sub.add_parser("charts", help="helm template every release with its pinned chart; validate and write them")
    ch.add_argument("files", nargs="*", help="stack names or paths (default: every shipped stack file)")
    ch.add_argument("--out", help="also write each release's objects to OUT/<stack>/charts/<release>/ (for the scan)")
    ch.set_defaults(fn=cmd_charts)
    add_diff(sub)
    c = sub.add_parser("changed", help="JSON of the deployable stacks a git range touches, by role (CI)")
    c.add_argument("base", help="base commit (e.g. the PR's base sha)")
    c.add_argument("head", nargs="?", default="HEAD")
    c.set_defaults(fn=cmd_changed)
    return p


def _plan_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    pl = sub.add_parser("plan", help="per pool: allowed instance types and allocatable; per model: where it fits")
    pl.add_argument("stack", help="a stack name (dev) or a path to a Pulumi.<stack>.yaml")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON (pools, and every model's pods)")
    pl.add_argument(
        "--platform",
        metavar="FILE",
        help="a workloads stack's platform when its stack file is not in this repository: that stack file, or "
        "the JSON of `pulumi stack output --json --stack <platformStack>`",
    )
    pl.set_defaults(fn=cmd_plan)


def _lifecycle_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    lc = sub.add_parser(
        "lifecycle", help="offline model of the first pulumi up and of destroy: waves, critical path, awaits, hazards"
    )
    lc.add_argument("stack", help="a stack name (dev) or a path to a Pulumi.<stack>.yaml")
    lc.add_argument("--json", action="store_true", help="print the model as JSON")
    lc.set_defaults(fn=cmd_lifecycle)


def unexpected(source: str, exc: BaseException) -> str:
    """One line for an error no check anticipated (a bug: the check belongs at its cause)."""
    return (
        f"{source}: could not be checked ({type(exc).__name__}: {one_line(str(exc))}); this is a bug in "
        f"the stack checks, not necessarily in the file: please report it with the file"
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"{exc.source + ': ' if exc.source else ''}{problem}", file=sys.stderr)
        return 1
    except Exception as exc:  # (the safety net)
        source = getattr(args, "stack", None) or " ".join(getattr(args, "files", None) or []) or args.command
        print(unexpected(str(source), exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
