"""The stack-file reference, `docs/reference/stack-file.md`, generated from the config models.

`python -m stacks reference` writes it and `--check` exits 1 when the committed file is stale (a test
does the same), so the reference cannot drift from what `stacks validate` accepts. It walks
`StackConfig` and every model nested in it and lists each key as a stack file spells it (aliases,
`inference-platform:<section>`), with its type, allowed values, bounds, default and the field's own
description. Defaults are the effective ones: a nested block's keys show what its parent's default
holds (`addons.karpenter.enabled` is true although a bare add-on is off). Pure: reads the models,
writes one file. Cross-field rules are not expressible here; the guides explain them and
`stacks validate` enforces them.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
import yaml
from pydantic import BaseModel, HttpUrl, StringConstraints
from pydantic.fields import FieldInfo

from .config import PROJECT, StackConfig
from .config.base import Cidr
from .paths import ROOT

REFERENCE_PATH = ROOT / "docs" / "reference" / "stack-file.md"

# Type aliases whose validator says more than their base type.
NAMED_TYPES: dict[Any, str] = {Cidr: "CIDR block"}
PLURALS = {"CIDR block": "CIDR blocks", "string": "strings", "integer": "integers", "number": "numbers", "URL": "URLs"}


@dataclass(frozen=True)
class Block:
    """One object of the stack file: where it sits, its model and, when known, its default value."""

    path: str  # as a user writes it: cluster.vpc, nodePools[], models[].dynamo
    heading: str
    model: type[BaseModel]
    default: BaseModel | None
    field_doc: str  # the description of the field that holds this object


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _models_in(tp: Any) -> tuple[type[BaseModel], str] | None:
    """The model a field holds (directly, optionally, as list items or as a map's values) and how its key
    path goes on: `""`, `"[]"` (a list) or `".<name>"` (a map keyed by name)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _models_in(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        found = [m for m in (_models_in(a) for a in get_args(tp) if a is not type(None)) if m]
        return found[0] if found else None
    if origin is list:
        inner = _models_in(get_args(tp)[0])
        return (inner[0], "[]") if inner else None
    if origin is dict:
        inner = _models_in(get_args(tp)[1])
        return (inner[0], ".<name>") if inner else None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp, ""
    return None


def _yaml(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False).strip()
    return text.removesuffix("...").strip()


def _code(text: str) -> str:
    return f"`{text}`"


def _bounds(metadata: list[Any]) -> list[str]:
    out = []
    ge = next((m.ge for m in metadata if isinstance(m, at.Ge)), None)
    le = next((m.le for m in metadata if isinstance(m, at.Le)), None)
    gt = next((m.gt for m in metadata if isinstance(m, at.Gt)), None)
    lt = next((m.lt for m in metadata if isinstance(m, at.Lt)), None)
    if ge is not None and le is not None:
        out.append(f"{ge} to {le}")
    else:
        lower = f"at least {ge}" if ge is not None else f"greater than {gt}" if gt is not None else None
        upper = f"at most {le}" if le is not None else f"less than {lt}" if lt is not None else None
        if lower or upper:
            out.append(" and ".join(b for b in (lower, upper) if b))
    for m in metadata:
        if isinstance(m, StringConstraints):
            if m.min_length:
                out.append(f"at least {m.min_length} character{'s' if m.min_length > 1 else ''}")
            if m.max_length:
                out.append(f"at most {m.max_length} characters")
            if m.pattern:
                out.append(f"matching {_code(str(getattr(m.pattern, 'pattern', m.pattern)))}")
    return out


def type_text(tp: Any, metadata: list[Any] | None = None, link: str = "") -> str:
    """A field's type in words: allowed values, bounds and, for an object, a link to its keys."""
    metadata = list(metadata or [])
    if tp in NAMED_TYPES:
        return NAMED_TYPES[tp]
    origin = get_origin(tp)
    if origin is Annotated:
        base, *extra = get_args(tp)
        return type_text(base, [*extra, *metadata], link)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return type_text(options[0], metadata, link)
        return " or ".join(type_text(a, None, link) for a in options)
    if origin is Literal:
        values = [_code(_yaml(v)) for v in get_args(tp)]
        return values[0] if len(values) == 1 else "one of " + ", ".join(values)
    if origin is list:
        items = [m.min_length for m in metadata if isinstance(m, at.MinLen)]
        inner = type_text(get_args(tp)[0], None, link)
        if _models_in(tp):
            inner = f"objects {link}"
        elif inner.startswith("one of "):
            inner = "values, each " + inner
        else:
            word = next((w for w in PLURALS if inner == w or inner.startswith(w + ",")), None)
            inner = PLURALS[word] + inner[len(word) :] if word else inner
        text = f"list of {inner}"
        return text + (f", at least {items[0]} item{'s' if items[0] > 1 else ''}" if items else "")
    if origin is dict:
        key, value = get_args(tp)
        return f"map of {type_text(key)} to {type_text(value)}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return f"object {link}"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", HttpUrl: "URL"}
    word = names.get(tp, getattr(tp, "__name__", str(tp)))
    extras = _bounds(metadata)
    return word + (", " + ", ".join(extras) if extras else "")


def _default(field: FieldInfo, holder: BaseModel | None, attr: str) -> str:
    if holder is not None:
        value = getattr(holder, attr)
    elif field.is_required():
        return "**required**"
    else:
        value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    return _code(_yaml(value))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _intro(block: Block, shared: bool) -> str:
    """What the object is: its model's docstring (less a leading restatement of the heading), or, for a
    model several keys share (a plain add-on), the description of the key that holds it."""
    if shared:
        return block.field_doc
    text = " ".join((block.model.__doc__ or "").split())
    prefix = f"{block.heading}: "
    if text.startswith(prefix):
        text = text[len(prefix) :]
        text = text[:1].upper() + text[1:]
    return text


def blocks() -> list[Block]:
    """Every object of the stack file, depth first in field order, sections first."""
    out: list[Block] = []

    def walk(path: str, heading: str, model: type[BaseModel], default: BaseModel | None, doc: str) -> None:
        out.append(Block(path, heading, model, default, doc))
        for attr, field in model.model_fields.items():
            found = _models_in(field.annotation)
            if found is None:
                continue
            child, suffix = found
            key = f"{path}.{field.alias or attr}{suffix}"
            value = None
            if not suffix:
                value = getattr(default, attr) if default is not None else field.get_default(call_default_factory=True)
            walk(key, _code(key), child, value if isinstance(value, BaseModel) else None, field.description or "")

    for attr, field in StackConfig.model_fields.items():
        if field.exclude:  # aws:region, the AWS provider's key, not a section
            continue
        found = _models_in(field.annotation)
        assert found is not None, f"section {attr} is not an object"
        model, suffix = found
        alias = field.alias or attr
        value = None if suffix else field.get_default(call_default_factory=True)
        walk(f"{alias}{suffix}", _code(f"{PROJECT}:{alias}"), model, value, field.description or "")
    return out


def _table(block: Block, headings: dict[str, str]) -> list[str]:
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for attr, field in block.model.model_fields.items():
        if field.exclude:
            continue
        key = field.alias or attr
        found = _models_in(field.annotation)
        link = ""
        if found:
            child = f"{block.path}.{key}{found[1]}"
            link = f"([{_code(child)}](#{slug(headings[child])}))"
        kind = type_text(field.annotation, list(field.metadata), link)
        rows.append(
            f"| {_code(key)} | {_cell(kind)} | {_cell(_default(field, block.default, attr))} "
            f"| {_cell(field.description or '')} |"
        )
    return rows


def render() -> str:
    """The whole reference as Markdown."""
    all_blocks = blocks()
    headings = {b.path: b.heading for b in all_blocks}
    anchors = [slug(h) for h in headings.values()]
    assert len(set(anchors)) == len(anchors), "two headings would share an anchor"
    region = StackConfig.model_fields["aws_region"]
    lines = [
        "# Stack file reference",
        "",
        "<!-- Generated by `python -m stacks reference` from the models in stacks/config/; do not edit by hand. -->",
        "",
        f"Every key a `Pulumi.<stack>.yaml` may set under `config:`: `aws:region` and the sections "
        f"`{PROJECT}:<section>` below, spelled as the stack file spells them. Anything else under "
        f"`{PROJECT}:` is an error, never ignored. A key's *default* is what leaving it out means; *unset* means "
        "no value, with the behaviour its description gives. Rules that span keys (pools, fit, quotas, pins) are "
        "checked by `python -m stacks validate` and explained in the "
        "[operator guide](../operator-guide.md) and the [app-team guide](../app-team-guide.md); editors get the "
        "same descriptions from `stacks/stack.schema.json`.",
        "",
        "## Sections",
        "",
        f"- [`aws:region`](#{slug('`aws:region`')})",
    ]
    lines += [f"- [{b.heading}](#{slug(b.heading)}): {_cell(b.field_doc)}" for b in all_blocks if "." not in b.path]
    lines += [
        "",
        "## `aws:region`",
        "",
        "| key | type | default | description |",
        "|---|---|---|---|",
        f"| `aws:region` | string | {_default(region, None, 'aws_region')} | {_cell(region.description or '')} |",
    ]
    for block in all_blocks:
        top = "." not in block.path
        lines += ["", f"{'##' if top else '###'} {block.heading}", ""]
        if block.path.endswith("[]"):
            lines += ["A list; each entry takes the keys below.", ""]
        intro = _intro(block, sum(b.model is block.model for b in all_blocks) > 1)
        if intro:
            lines += [intro, ""]
        lines += _table(block, headings)
    return "\n".join(lines) + "\n"


def write(path: Path = REFERENCE_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render())
    return path
