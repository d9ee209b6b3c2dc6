"""Offline render: run the real program under recording mocks and write what it would create.

Writes, under the output directory:
- `resources.json`: every registered resource in order (type, name, urn, parent, provider,
  dependsOn, inputs, protect, retainOnDelete);
- `manifests/<kind>-<namespace>-<name>.yaml`: each Kubernetes object as it would be applied
  (cluster-scoped objects use `cluster` as the namespace part);
- `helm/<release>.yaml`: name, namespace, chart, repository, version and values of each release;
- `outputs.json`: the stack outputs.
A stack file that fails validation writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import runpy
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import rpc
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .config import PROJECT
from .errors import ConfigError, Problem
from .load import ROOT, offline_secret_keys, read_stack, sections_to_pulumi_config
from .mocks import Record, RecordingMocks, install

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# libyaml's emitter when PyYAML was built with it (the pure-Python one is a third of a render);
# both write the same document for the plain JSON-like values a render holds.
YAML_DUMPER: type[yaml.CSafeDumper] | type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SECRET = "[secret]"
_MOCKS: RecordingMocks | None = None


@dataclass
class Rendered:
    resources: list[Record]
    outputs: dict[str, Any]
    mocks: RecordingMocks

    def manifests(self) -> list[dict[str, Any]]:
        return [manifest(r) for r in self.mocks.kubernetes_objects()]

    def releases(self) -> list[dict[str, Any]]:
        return [release(r) for r in self.mocks.of_type(HELM_RELEASE)]


def stack_name(path: Path) -> str:
    name = path.name
    return name[len("Pulumi.") : -len(".yaml")] if name.startswith("Pulumi.") and name.endswith(".yaml") else path.stem


def mocks() -> RecordingMocks:
    """One mocks object per process (several set_mocks calls break each other)."""
    global _MOCKS
    if _MOCKS is None:
        _MOCKS = install(PROJECT, "render")
    return _MOCKS


def run_program(
    pulumi_config: dict[str, str], source: str = "", platform_exports: dict[str, dict[str, Any]] | None = None
) -> Rendered:
    """Run __main__.py under the mocks with this Pulumi config; return what it registered. A workloads
    stack's platform outputs are its platform stack file's exports, or those `platform_exports` gives.

    Fails (ConfigError) where `pulumi up` would: the program refusing the stack config, or the
    engine refusing what it registered (two resources with one URN, two Kubernetes objects with one
    identity), which the mocks alone would accept."""
    from components.platform_stack import StackRefused

    recording = mocks()
    recording.reset()
    recording.platform_exports.update(platform_exports or {})
    pulumi.runtime.set_all_config(pulumi_config, offline_secret_keys(pulumi_config))
    root = pulumi.runtime.get_root_resource()
    if root is not None and hasattr(root, "outputs"):
        root.outputs = {}  # type: ignore[attr-defined]

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__pulumi__")
        # Everything the program built so far (its modules, the provider SDKs', every resource
        # object and its outputs) lives until the render ends: full collections need not rescan it.
        frozen.append(_freeze())
        stack = pulumi.runtime.get_root_resource()
        exported = dict(getattr(stack, "outputs", {}) or {})

        async def collect() -> None:
            for key, value in exported.items():
                output = pulumi.Output.from_input(value)
                resolved = await output.future()
                recording.outputs[key] = SECRET if await output.is_secret() else masked(resolved)

        return pulumi.Output.from_input(asyncio.ensure_future(collect()))

    frozen: list[bool] = []
    try:
        with _young_generation(YOUNG_OBJECTS):
            program()
    except StackRefused as exc:
        raise ConfigError(exc.error.problems, source or exc.error.source) from None
    except ConfigError as exc:  # raised by the mocks themselves (a StackReference they cannot answer)
        raise ConfigError(exc.problems, source or exc.source) from None
    finally:
        if any(frozen):
            gc.unfreeze()
    refuse_what_the_engine_would(recording, source)
    return Rendered(list(recording.records), dict(recording.outputs), recording)


def refuse_what_the_engine_would(recording: RecordingMocks, source: str = "") -> None:
    """ConfigError if `pulumi up` would fail on what the program registered (RecordingMocks
    `engine_refusals`), although every registration succeeded under the mocks."""
    refusals = recording.engine_refusals()
    if refusals:
        raise ConfigError([Problem("render", text) for text in refusals], source)


class _NotPlainError(Exception):
    """A value the fast writers (plain_json, the YAML dumper's represent) leave to the standard one."""


def plain_json(value: Any) -> str:
    """json.dumps(plain(value), indent=2, default=str), written directly. The standard encoder
    indents only in Python, through one generator per nesting level for every piece of text; here
    one call per value does it. Anything but str/int/bool/None/float/dict with str keys/list goes
    through json.dumps."""
    chunks: list[str] = []
    try:
        _json(value, "\n", chunks)
    except _NotPlainError:
        return json.dumps(plain(value), indent=2, default=str)
    return "".join(chunks)


_ESCAPE = json.encoder.encode_basestring_ascii  # what json.dumps uses (ensure_ascii)
_SPECIAL_FLOATS = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _json(value: Any, newline: str, chunks: list[str]) -> None:
    kind = type(value)
    if kind is str:
        chunks.append(_ESCAPE(value))
    elif kind is dict:
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            chunks.append(_ESCAPE(SECRET))
        elif not value:
            chunks.append("{}")
        else:
            inner = newline + "  "
            separator = "{" + inner
            for key, item in value.items():
                if type(key) is not str:
                    raise _NotPlainError
                chunks.append(separator)
                chunks.append(_ESCAPE(key))
                chunks.append(": ")
                _json(item, inner, chunks)
                separator = "," + inner
            chunks.append(newline + "}")
    elif kind is list:
        if not value:
            chunks.append("[]")
        else:
            inner = newline + "  "
            separator = "[" + inner
            for item in value:
                chunks.append(separator)
                _json(item, inner, chunks)
                separator = "," + inner
            chunks.append(newline + "]")
    elif kind is bool:
        chunks.append("true" if value else "false")
    elif kind is int:
        chunks.append(int.__repr__(value))
    elif value is None:
        chunks.append("null")
    elif kind is float:
        if value.is_integer():
            chunks.append(int.__repr__(int(value)))
        elif value != value:
            chunks.append("NaN")
        else:
            chunks.append(_SPECIAL_FLOATS.get(value) or float.__repr__(value))
    else:
        raise _NotPlainError


def _freeze() -> bool:
    """gc.freeze() unless something else has frozen objects (then leave the collector to it)."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


@contextlib.contextmanager
def _long_lived() -> Iterator[None]:
    """Keep the cycle collector off the objects alive now, for this step (gc.freeze, undone after).
    They live until the render ends anyway: the modules of the program and of the provider SDKs
    (about 300,000 tracked objects) and, once the program has run, every resource object and its
    outputs. Without this each full collection rescans them all, and a larger stack both has more
    of them and triggers more full collections: they were a fifth of a 200-model render."""
    frozen = _freeze()
    try:
        yield
    finally:
        if frozen:
            gc.unfreeze()


# Objects the collector lets accumulate before a young collection (CPython's default is 700). A
# render allocates thousands of short-lived objects per resource (outputs, futures, tasks, protobuf
# structs); with 700 the survivors of each young collection pile up into the old generation and
# trigger full collections, 5 at 100 models and 10 at 200. With 10,000 most are gone before they
# are looked at, and a 200-model render makes none.
YOUNG_OBJECTS = 10_000


@contextlib.contextmanager
def _young_generation(objects: int) -> Iterator[None]:
    """Raise the young-generation threshold to at least `objects` for this step, then restore it."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], objects), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def render_file(path: Path) -> Rendered:
    """Run the program against the stack file, as `pulumi up` would: it reads, resolves and checks the
    config first (a ConfigError names every problem)."""
    found = read_stack(path)
    return run_program(sections_to_pulumi_config(found.sections, found.region), source=str(path))


def integral(value: Any) -> Any:
    """Numbers come back from the mocked engine as floats (protobuf Struct); 2.0 is applied as 2."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def secret_leaves(value: Any) -> Any:
    """A secret envelope's value with every leaf shown as `[secret]`, keeping its shape: a Secret's
    `stringData` stays a map of its entries (what the schema checks read), none of them a value."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _all_secret(value.get("value"))
        return {k: secret_leaves(v) for k, v in value.items()}
    if isinstance(value, list):
        return [secret_leaves(v) for v in value]
    return value


def _all_secret(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _all_secret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_all_secret(v) for v in value]
    return SECRET


def manifest(record: Record) -> dict[str, Any]:
    inputs = integral(secret_leaves(dict(record.inputs)))
    head = {
        "apiVersion": inputs.pop("apiVersion", None),
        "kind": inputs.pop("kind", None),
        "metadata": inputs.pop("metadata", {}),
    }
    return {**head, **inputs}


def release(record: Record) -> dict[str, Any]:
    i = integral(record.inputs)
    return {
        "name": i.get("name") or record.name,
        "namespace": i.get("namespace"),
        "chart": i.get("chart"),
        "repository": (i.get("repositoryOpts") or {}).get("repo"),
        "version": i.get("version"),
        "values": i.get("values") or {},
        # Said only when set: the CRDs in its crds/ are applied by the program instead (components/crds.py).
        **({"skipCrds": True} if i.get("skipCrds") else {}),
    }


def manifest_filename(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}-{meta.get('namespace') or 'cluster'}-{meta.get('name')}.yaml"


def masked(value: Any) -> Any:
    """Replace Pulumi secret envelopes with a marker, so a render never prints a secret."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """integral(masked(value)) in one walk."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def write(rendered: Rendered, out: Path) -> None:
    with _long_lived(), _young_generation(YOUNG_OBJECTS):
        _write(rendered, out)


def _write(rendered: Rendered, out: Path) -> None:
    for sub in ("manifests", "helm"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    (out / "resources.json").write_text(plain_json([r.as_json() for r in rendered.resources]) + "\n")
    (out / "outputs.json").write_text(json.dumps(masked(rendered.outputs), indent=2, default=str) + "\n")
    for obj in rendered.manifests():
        (out / "manifests" / manifest_filename(obj)).write_text(dump_yaml(obj))
    for rel in rendered.releases():
        (out / "helm" / f"{rel['name']}.yaml").write_text(dump_yaml(rel))


def dump_yaml(value: Any) -> str:
    """yaml.safe_dump(value, sort_keys=False), through the C emitter where available."""
    return yaml.dump(value, Dumper=_RenderDumper, sort_keys=False)


_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _plain_node(dumper: Any, value: Any, seen: set[int]) -> Node:
    """The node SafeRepresenter would build for `value` (same tags, plain style, block collections),
    in one pass; _NotPlainError for anything but str/int/bool/None/float/dict/list, or for a dict or
    list met twice (`seen`: SafeRepresenter would write an alias). `dumper` represents the floats."""
    kind = type(value)
    if kind is str:
        return ScalarNode(_STR, value)
    if kind is dict or kind is list:
        if id(value) in seen:
            raise _NotPlainError
        seen.add(id(value))
        if kind is dict:
            return MappingNode(
                _MAP,
                [(_plain_node(dumper, k, seen), _plain_node(dumper, v, seen)) for k, v in value.items()],
                flow_style=False,
            )
        return SequenceNode(_SEQ, [_plain_node(dumper, v, seen) for v in value], flow_style=False)
    if kind is bool:
        return ScalarNode(_BOOL, "true" if value else "false")
    if kind is int:
        return ScalarNode(_INT, str(value))
    if value is None:
        return ScalarNode(_NULL, "null")
    if kind is float:
        return dumper.represent_float(value)
    raise _NotPlainError


def render_dumper(base: Any) -> Any:
    """`base` (CSafeDumper, or SafeDumper without libyaml), writing the same documents faster."""

    class RenderDumper(base):  # type: ignore[misc,valid-type]
        """The safe dumper, doing its Python-side work faster for the JSON-like values a render holds:
        - `represent` builds the node tree SafeRepresenter would (same tags, plain style, block
          collections) in one pass without its alias bookkeeping. A document holding anything but
          str/int/bool/None/float/dict/list, or the same dict or list twice (SafeRepresenter writes an
          alias), or dumped with sort_keys or another flow style, is represented by SafeRepresenter;
        - the emitter asks for the implicit tag of every scalar twice; with no path resolvers (the safe
          resolver has none) the answer depends only on the value and is remembered."""

        _resolved: dict[tuple[str, tuple[bool, bool]], str] = {}

        def represent(self, data: Any) -> None:
            if self.sort_keys or self.default_flow_style is not False or self.yaml_path_resolvers:
                super().represent(data)
                return
            try:
                node = _plain_node(self, data, set())
            except _NotPlainError:
                super().represent(data)
                return
            self.serialize(node)

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is not ScalarNode or self.yaml_path_resolvers:
                return super().resolve(kind, value, implicit)
            key = (value, tuple(implicit))
            tag = self._resolved.get(key)
            if tag is None:
                if len(self._resolved) > 1 << 16:
                    self._resolved.clear()
                tag = self._resolved[key] = super().resolve(kind, value, implicit)
            return tag

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            if self.yaml_path_resolvers:
                super().descend_resolver(current_node, current_index)

        def ascend_resolver(self) -> None:
            if self.yaml_path_resolvers:
                super().ascend_resolver()

    return RenderDumper


_RenderDumper = render_dumper(YAML_DUMPER)
