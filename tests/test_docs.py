"""The documentation routes readers and its links hold: a short README, and every relative link and
anchor in README.md and docs/ pointing at something that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stacks.reference import slug

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Linked from here, written as part of the benchmark work: may be absent until that lands.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks (a `# comment` in a shell block is no heading)."""
    lines, fenced = [], False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the file's headings (repeats get -1, -2 ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path):
        match = re.match(r"^#{1,6} (.+)$", line)
        if match:
            base = slug(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_the_readme_routes_readers_in_at_most_300_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail into docs/ and link it"


def test_the_readme_keeps_the_two_quickstart_commands_and_the_real_deployment():
    text = (ROOT / "README.md").read_text()
    assert "make check" in text and "make render STACK=dev" in text, "the offline quickstart"
    for step in ("pulumi login", "pulumi stack select", "pulumi preview", "pulumi up", "kubeconfig", "pulumi destroy"):
        assert step in text, f"deploying for real needs {step!r}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(doc):
    broken = []
    for line in prose(doc):
        # Code spans hold patterns such as `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, which are no links.
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto: ...
            file, _, anchor = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            if not dest.exists():
                broken.append(target)
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: links to nothing: {broken}"
