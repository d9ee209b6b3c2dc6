"""stacks/yamlread.py reads a stack file the same way on either event source: libyaml's C parser
(the default: a fifth of the time) and PyYAML's pure-Python one (PyYAML built without libyaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stacks import yamlread
from stacks.yamlread import YamlReadError, parse
from tests.conftest import ALL_STACKS

HOSTILE = sorted((Path(__file__).resolve().parent / "hostile").glob("Pulumi.*.yaml"))
CASES = sorted((Path(__file__).resolve().parent / "guard_cases").glob("*.yaml"))
MINIMAL = "config:\n  aws:region: us-west-2\n  inference-platform:cluster:\n    name: x\n"
SNIPPETS = {
    "plain scalars": "a: 250\nb: on\nc: 0x1F\nd: 0o17\ne: 1:30\nf: '250'\ng: \"x\"\nh: |\n  text\ni: ~\n",
    "explicit tags": "a: !!str 1\nb: !custom x\nc: ! 3\nd: !!binary aGk=\n",
    "timestamp and infinity": "a: 2025-01-01\nb: .inf\nc: -.INF\nd: .nan\n",
    "keys that are not names": "1: a\ntrue: b\n? [a]\n: c\n~: d\n",
    "duplicate keys": "a: 1\nb:\n  c: 1\n  c: 2\na: 3\n",
    "merge keys": "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nn:\n  <<: [*b, {z: 4}]\n",
    "an alias cycle": "a: &x [1, *x]\n",
    "aliases expanded": "a: &x [1, 2, 3]\nb: [*x, *x, *x]\n",
    "too deep": "a: " + "[" * 40 + "]" * 40 + "\n",
    "very deep": "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "a control character": MINIMAL + "  inference-platform:stack:\n    environment: a\x07b\n",
    "a syntax error": "a: [b\nc: d\n",
    "a bad indent": "a:\n  b: 1\n c: 2\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "a tab": "a:\n\tb: 1\n",
    "empty": "",
    "a list at the top": "- a\n- b\n",
}


def outcome(text: str, parser: str) -> tuple[str, object, object]:
    """What a parse gives: the value and the line of every key, or where each problem is."""
    try:
        doc = parse(text, parser)
    except YamlReadError as exc:
        return "refused", [(p.path, p.line) for p in exc.problems], None
    return "read", doc.value, doc.lines


def test_both_event_sources_are_there_and_libyaml_is_the_default():
    assert set(yamlread.COMPOSERS) == {"libyaml", "python"}, "the pinned PyYAML wheel carries libyaml"
    assert yamlread.PARSER == "libyaml"


@pytest.mark.parametrize("path", [*ALL_STACKS, *HOSTILE, *CASES], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stack_file_reads_the_same_on_either_parser(path: Path):
    text = path.read_text(errors="replace")
    assert outcome(text, "libyaml") == outcome(text, "python")


@pytest.mark.parametrize("text", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_every_yaml_feature_reads_or_is_refused_the_same_on_either_parser(text: str):
    assert outcome(text, "libyaml") == outcome(text, "python")


def test_a_shipped_stack_is_read_rather_than_refused():
    kind, value, lines = outcome(ALL_STACKS[0].read_text(), "libyaml")
    assert kind == "read" and isinstance(value, dict) and value["config"] and lines
