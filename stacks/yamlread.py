"""Read a stack file's YAML safely, and as Pulumi reads it.

Pulumi reads `Pulumi.<stack>.yaml` with Go's gopkg.in/yaml.v3 (YAML 1.2 scalars: `yes`, `on` and
`0:30` are strings, `0x1F` and `0o17` are integers, a duplicate key is an error), after stripping a
UTF-8 byte-order mark. PyYAML alone resolves YAML 1.1 (`on` becomes True, `1:30` becomes 90) and lets
the last of two equal keys win silently, so this module composes the document with PyYAML and builds
the values itself, with yaml.v3's scalar rules, refusing what cannot be read as written:

- a file over MAX_BYTES (before reading it), one that is not UTF-8 text (binary, UTF-16, compressed);
- YAML that does not parse, or holds more than one document;
- an explicit tag (`!!binary`, `!!set`, `!!str`, `!custom`): only plain values are read;
- a duplicate key (both lines named), a key that is not a string (`1:`, `true:`, `? [a]`);
- nesting deeper than MAX_DEPTH, more than MAX_NODES values (aliases expanded), an alias cycle;
- a plain timestamp (`2025-01-01`, which yaml.v3 turns into a time) and NaN or infinite numbers,
  which JSON, and so Pulumi's config, cannot carry.

YAML 1.1's other spellings arrive as yaml.v3 reads them, as strings (`on`, `yes`, `off`, `n`, `1:30`); the
stack-config models refuse such a string where a boolean or a number is expected (stacks/config/base.py)
rather than let pydantic's lax mode turn `on` into true, a meaning the file did not write for Pulumi.

Every refusal is a `YamlProblem` with the document path of the deepest key it concerns.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "Document", "YamlProblem", "YamlReadError", "parse", "read"]

MAX_BYTES = 1024 * 1024  # a stack file is a few KB; the largest shipped one is under 10 KB
MAX_DEPTH = 32  # nested maps and lists; the deepest stack-file key is about 8 levels down
MAX_NODES = 200_000  # values in the document with every alias expanded

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class YamlProblem:
    path: Path_  # in the document: ("config", "inference-platform:models", 2, "engineArgs")
    line: int | None
    message: str


class YamlReadError(Exception):
    def __init__(self, problems: list[YamlProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(p.message for p in problems))


@dataclass
class Document:
    value: Any
    lines: dict[Path_, int] = field(default_factory=dict)  # the line of each key and list item

    def line(self, path: Path_) -> int | None:
        return self.lines.get(path)


# ---- bytes -> text -----------------------------------------------------------------------------------

_SIGNATURES = (
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"PK\x03\x04", "a zip archive"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian) text"),
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian) text"),
    (b"\xfe\xff", "UTF-16 (big-endian) text"),
    (b"\xff\xfe", "UTF-16 (little-endian) text"),
)
_RESAVE = "a stack file is YAML saved as UTF-8 text; save it as UTF-8 (without compression)"


def read(path: Path) -> Document:
    """The stack file at `path`, parsed (YamlReadError when it cannot be read as written)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise _whole(f"is {size} bytes, over the {MAX_BYTES}-byte limit for a stack file; nothing was read")
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _whole(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise _whole(f"is over the {MAX_BYTES}-byte limit for a stack file")
    return parse(decode(data))


def _whole(message: str, line: int | None = None) -> YamlReadError:
    return YamlReadError([YamlProblem((), line, message)])


def decode(data: bytes) -> str:
    """UTF-8 text, with a leading byte-order mark dropped as Pulumi drops it."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for signature, what in _SIGNATURES:
        if data.startswith(signature):
            raise _whole(f"is {what}, not UTF-8 text: {_RESAVE}")
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise _whole(f"holds NUL bytes (line {line}): it is binary or UTF-16/32, not UTF-8 text: {_RESAVE}", line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _whole(
            f"is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line} is not valid UTF-8: {_RESAVE}", line
        ) from None


# ---- text -> nodes -----------------------------------------------------------------------------------


class _TooDeepError(Exception):
    def __init__(self, line: int, path: Path_) -> None:
        self.line = line
        self.path = path


class _PythonEvents(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """The pure-Python parser's events (PyYAML built without libyaml)."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


_LibyamlEvents: Any
try:  # libyaml's scanner and parser, in C: a fifth of the pure-Python parser's time
    from yaml._yaml import CParser as _LibyamlEvents
except ImportError:  # pragma: no cover - a PyYAML wheel without libyaml
    _LibyamlEvents = None


class _ComposerBase(yaml.composer.Composer, yaml.resolver.Resolver):
    """PyYAML's composer over a parser's events, remembering explicit tags, bounding depth and
    tracking the current path. The composer comes before the event source in each subclass, so its
    Python compose_node (and the override below) runs, never libyaml's own composer."""

    EVENTS: Any = None  # the event source class, the subclass's second base
    # Provided by the event source (annotations only: nothing here shadows it).
    check_event: Any
    peek_event: Any
    dispose: Any

    def __init__(self, text: str) -> None:
        self.EVENTS.__init__(self, text)
        yaml.composer.Composer.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.tags: dict[int, str] = {}
        self.path: list[str | int] = []
        self.error_path: Path_ | None = None  # where composing stopped, for a syntax error

    def compose_node(self, parent: Node | None, index: Any) -> Node:  # type: ignore[override]
        pushed = False
        if isinstance(parent, SequenceNode):
            self.path.append(len(parent.value))
            pushed = True
        elif isinstance(parent, MappingNode) and isinstance(index, Node):
            self.path.append(index.value if isinstance(index, ScalarNode) else "?")
            pushed = True
        try:
            if self.check_event(yaml.AliasEvent):
                return super().compose_node(parent, index)  # type: ignore[no-any-return,return-value]
            event = self.peek_event()
            if len(self.path) >= MAX_DEPTH:
                raise _TooDeepError(event.start_mark.line + 1, tuple(self.path))
            node = super().compose_node(parent, index)
            tag = getattr(event, "tag", None)
            if tag not in (None, "!"):
                self.tags[id(node)] = tag
            return node  # type: ignore[no-any-return,return-value]
        except yaml.YAMLError:
            if self.error_path is None:
                self.error_path = tuple(self.path)
            raise
        finally:
            if pushed:
                self.path.pop()


class _PythonComposer(_ComposerBase, _PythonEvents):
    EVENTS = _PythonEvents


COMPOSERS: dict[str, type[_ComposerBase]] = {"python": _PythonComposer}
if _LibyamlEvents is not None:
    COMPOSERS["libyaml"] = type("_LibyamlComposer", (_ComposerBase, _LibyamlEvents), {"EVENTS": _LibyamlEvents})
# Both read a stack file the same way (tests/test_yamlread.py holds them to it); libyaml is faster.
PARSER = "libyaml" if "libyaml" in COMPOSERS else "python"


_UNPRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _unprintable(text: str, exc: yaml.YAMLError) -> YamlProblem:
    found = _UNPRINTABLE.search(text)
    position = found.start() if found else getattr(exc, "position", 0)
    line = text[:position].count("\n") + 1
    shown = f"U+{ord(text[position]):04X}" if position < len(text) else "?"
    # The key it is under: the last key that starts on or before that line, in the text without them.
    path: Path_ = ()
    try:
        lines = parse(_UNPRINTABLE.sub(" ", text)).lines
        before = [(n, len(p), p) for p, n in lines.items() if n <= line]
        if before:
            path = max(before, key=lambda t: (t[0], t[1]))[2]
    except YamlReadError:
        pass
    return YamlProblem(
        path, line, f"holds the control character {shown} on line {line}, which YAML does not allow; remove it"
    )


def parse(text: str, parser: str = PARSER) -> Document:
    """YAML text -> a Document (YamlReadError with every problem found). `parser` picks the event
    source: "libyaml" (C, the default where PyYAML has it) or "python"."""
    try:
        loader = COMPOSERS[parser](text)
    except yaml.YAMLError as exc:  # ReaderError: a character YAML does not allow
        raise YamlReadError([_unprintable(text, exc)]) from None
    try:
        node = loader.get_single_node()
    except yaml.reader.ReaderError as exc:  # libyaml reads as it parses: the same refusal, found later
        raise YamlReadError([_unprintable(text, exc)]) from None
    except _TooDeepError as exc:
        raise YamlReadError(
            [
                YamlProblem(
                    exc.path,
                    exc.line,
                    f"nests maps and lists more than {MAX_DEPTH} levels deep (line {exc.line}); no stack-file "
                    f"key is deeper than about 8",
                )
            ]
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        if "expected a single document" in what:
            what = "holds more than one YAML document (a `---` line); Pulumi reads only the first, so keep one"
        else:
            what = f"is not valid YAML: {what}" + (f" (line {line}, column {mark.column + 1})" if mark else "")
        raise YamlReadError([YamlProblem(loader.error_path or (), line, what)]) from None
    finally:
        loader.dispose()
    builder = _Builder(loader.tags)
    value = builder.build(node, ()) if node is not None else None
    if builder.problems:
        raise YamlReadError(builder.problems)
    return Document(value, builder.lines)


# ---- nodes -> values, with yaml.v3's scalar rules ---------------------------------------------------

_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_SPECIAL_FLOATS = {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}
_SPECIAL_FLOATS |= {"-.inf", "-.Inf", "-.INF"}
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))"
    r"|( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?))?$"
)
_INT_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_MIN_INT, _MAX_UINT = -(2**63), 2**64 - 1


def _go_int(text: str) -> int | None:
    """strconv.ParseInt/ParseUint(text, 0, 64) as yaml.v3 calls them (underscores already removed)."""
    sign, body = ("-", text[1:]) if text[:1] == "-" else ("", text[1:] if text[:1] == "+" else text)
    low = body.lower()
    if low.startswith(("0x", "0o", "0b")):
        base, digits = {"x": 16, "o": 8, "b": 2}[low[1]], body[2:]
    elif len(body) > 1 and body.startswith("0"):
        base, digits = 8, body[1:]
    else:
        base, digits = 10, body
    if not digits or any(c not in _INT_DIGITS[base] for c in digits):
        return None
    value = int(sign + digits, base)
    return value if _MIN_INT <= value <= _MAX_UINT else None


def resolve_plain(text: str) -> tuple[str, Any]:
    """A plain (unquoted) scalar as yaml.v3 resolves it: (tag, value)."""
    if text in _NULLS:
        return "null", None
    if text in _BOOLS:
        return "bool", _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return "float", float(text.replace(".", "", 1))
    if text == "<<":
        return "merge", text
    first = text[0]
    if first == ".":
        if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text):
            return "float", float(text)
    elif first in "+-0123456789":
        if _TIMESTAMP.match(text):
            return "timestamp", text
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return "int", number
        if _YAML_FLOAT.match(plain):
            return "float", float(plain)
    return "str", text


class _Builder:
    def __init__(self, tags: dict[int, str]) -> None:
        self.tags = tags
        self.problems: list[YamlProblem] = []
        self.lines: dict[Path_, int] = {}
        self.count = 0
        self.active: set[int] = set()

    def problem(self, path: Path_, node: Node, message: str) -> None:
        self.problems.append(YamlProblem(path, node.start_mark.line + 1, message))

    def build(self, node: Node, path: Path_) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            if self.count == MAX_NODES + 1:
                self.problem(
                    path, node, f"holds more than {MAX_NODES} values (aliases expanded); a stack file is small"
                )
            return None
        if len(path) > MAX_DEPTH:
            self.problem(path, node, f"nests more than {MAX_DEPTH} levels deep once its aliases are expanded")
            return None
        tag = self.tags.get(id(node))
        if tag is not None:
            plain = "; remove the tag (quote the value to keep it a string)" if isinstance(node, ScalarNode) else ""
            self.problem(
                path,
                node,
                f"has the explicit YAML tag {_tag(tag)}: only plain values are read, a tag is not one{plain}",
            )
            return None
        if id(node) in self.active:
            self.problem(path, node, "is an alias of a value that contains it (a cycle); write the value out")
            return None
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                out = []
                for i, item in enumerate(node.value):
                    self.lines.setdefault((*path, i), item.start_mark.line + 1)
                    out.append(self.build(item, (*path, i)))
                return out
            assert isinstance(node, MappingNode)
            return self.mapping(node, path)
        finally:
            self.active.discard(id(node))

    def scalar(self, node: ScalarNode, path: Path_) -> Any:
        if node.style:  # quoted, literal or folded: always a string (plain is None, or "" from libyaml)
            return node.value
        kind, value = resolve_plain(node.value)
        if kind == "timestamp":
            self.problem(
                path,
                node,
                f"is the YAML timestamp {node.value}, which Pulumi would pass on as a date-time, not as written; "
                f"quote it ('{node.value}') to keep it a string",
            )
            return None
        if kind == "float" and not math.isfinite(value):
            self.problem(path, node, f"is {node.value}, a number JSON (and so Pulumi config) cannot carry")
            return None
        return value

    def key(self, node: Node, path: Path_) -> str | None:
        """A mapping key as a string, or None (reported) when it is not one."""
        if isinstance(node, ScalarNode) and id(node) not in self.tags:
            if node.style:
                return node.value
            kind, value = resolve_plain(node.value)
            if kind in ("str", "merge"):
                return value  # type: ignore[no-any-return]
            what = {"null": "empty (null)", "bool": "a boolean", "int": "a number", "float": "a number"}.get(
                kind, "a timestamp"
            )
            self.problem(
                path,
                node,
                f"has a key {node.value!r} that YAML reads as {what}, not a string; keys are names: quote it "
                f"('{node.value}') or fix it",
            )
            return None
        if isinstance(node, ScalarNode):
            self.problem(
                path, node, f"has a key with the explicit YAML tag {_tag(self.tags[id(node)])}; keys are plain names"
            )
        else:
            self.problem(path, node, "has a key that is a map or a list, not a name")
        return None

    def mapping(self, node: MappingNode, path: Path_) -> dict[str, Any]:
        out: dict[str, Any] = {}
        seen: dict[str, int] = {}
        merges: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            key = self.key(key_node, path)
            if key is None:
                continue
            if key == "<<" and not key_node.style:
                merges.append((key_node, value_node))
                continue
            line = key_node.start_mark.line + 1
            if key in seen:
                self.problem(
                    (*path, key),
                    key_node,
                    f"is given twice, on line {seen[key]} and on line {line}: Pulumi refuses a duplicate key "
                    f"(and PyYAML would keep only the last); keep one",
                )
                continue
            seen[key] = line
            self.lines[(*path, key)] = line
            out[key] = self.build(value_node, (*path, key))
        for key_node, value_node in merges:  # explicit keys win; of merged maps, the first listed wins
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                merged = self.build(source, path)
                if merged is None:
                    continue
                if not isinstance(merged, dict):
                    self.problem(path, key_node, "has a merge key (<<) whose value is not a map")
                    continue
                for k, v in merged.items():
                    out.setdefault(k, v)
        return out


def _tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag
