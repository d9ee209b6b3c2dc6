"""Which deployable stacks a change touches, for the PR preview and the deploy workflow.

A deployable stack is a `Pulumi.<stack>.yaml` beside `Pulumi.yaml` (stacks/examples are rendered and
scanned, never deployed). A change to a stack file touches that stack; a change to the program
(components/, stacks/ outside examples, __main__.py, Pulumi.yaml, requirements.lock, and policypack/,
the CrossGuard pack every preview and update runs) touches every stack. Platform and all-in-one stacks
are listed apart from workloads stacks so the deploy workflow updates platforms first.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .load import ROOT, read_stack_file

PROGRAM = ("components/", "stacks/", "policypack/", "__main__.py", "Pulumi.yaml", "requirements.lock")


def deployable(root: Path = ROOT) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def touched(paths: list[str], stacks: list[str]) -> list[str]:
    program = any(p.startswith(PROGRAM) and not p.startswith("stacks/examples/") for p in paths)
    if program:
        return list(stacks)
    return [s for s in stacks if f"Pulumi.{s}.yaml" in paths]


def by_role(stacks: list[str], root: Path = ROOT) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"platform": [], "workloads": []}
    for stack in stacks:
        sections, _ = read_stack_file(root / f"Pulumi.{stack}.yaml")
        role = (sections.get("stack") or {}).get("role", "all-in-one")
        out["workloads" if role == "workloads" else "platform"].append(stack)
    return out


def changed(base: str, head: str = "HEAD") -> dict[str, list[str]]:
    diff = subprocess.run(
        ["git", "diff", "--name-only", f"{base}...{head}"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return by_role(touched(diff.stdout.split(), deployable()))


def main(base: str, head: str) -> int:
    result = changed(base, head)
    print(json.dumps({**result, "any": bool(result["platform"] or result["workloads"])}))
    return 0
