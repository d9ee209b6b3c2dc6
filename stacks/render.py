"""Offline render: run the real program under recording mocks and write what it would create.

Writes, under the output directory:
- `resources.json`: every registered resource in order (type, name, urn, parent, provider,
  dependsOn, inputs);
- `manifests/<kind>-<namespace>-<name>.yaml`: each Kubernetes object as it would be applied
  (cluster-scoped objects use `cluster` as the namespace part);
- `helm/<release>.yaml`: name, namespace, chart, repository, version and values of each release;
- `outputs.json`: the stack outputs.
A stack file that fails validation writes nothing.
"""

from __future__ import annotations

import asyncio
import json
import runpy
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml

from .config import PROJECT
from .errors import ConfigError, Problem
from .load import ROOT, parse_sections, read_stack, sections_to_pulumi_config
from .mocks import Record, RecordingMocks, install

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
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


def run_program(pulumi_config: dict[str, str], source: str = "") -> Rendered:
    """Run __main__.py under the mocks with this Pulumi config; return what it registered.

    Fails (ConfigError) where `pulumi up` would: the program refusing the stack config, or the
    engine refusing what it registered (two resources with one URN, two Kubernetes objects with one
    identity), which the mocks alone would accept."""
    from components.platform_stack import StackRefused

    from .exports import forget

    recording = mocks()
    recording.reset()
    forget()  # platform exports a previous run read from a StackReference
    pulumi.runtime.set_all_config(pulumi_config)
    root = pulumi.runtime.get_root_resource()
    if root is not None and hasattr(root, "outputs"):
        root.outputs = {}  # type: ignore[attr-defined]

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__pulumi__")
        stack = pulumi.runtime.get_root_resource()
        exported = dict(getattr(stack, "outputs", {}) or {})

        async def collect() -> None:
            for key, value in exported.items():
                output = pulumi.Output.from_input(value)
                resolved = await output.future()
                recording.outputs[key] = SECRET if await output.is_secret() else masked(resolved)

        return pulumi.Output.from_input(asyncio.ensure_future(collect()))

    try:
        program()
    except StackRefused as exc:
        raise ConfigError(exc.error.problems, source or exc.error.source) from None
    except ConfigError as exc:  # raised by the mocks themselves (a StackReference they cannot answer)
        raise ConfigError(exc.problems, source or exc.source) from None
    refuse_what_the_engine_would(recording, source)
    return Rendered(list(recording.records), dict(recording.outputs), recording)


def refuse_what_the_engine_would(recording: RecordingMocks, source: str = "") -> None:
    """ConfigError if `pulumi up` would fail on what the program registered (RecordingMocks
    `engine_refusals`), although every registration succeeded under the mocks."""
    refusals = recording.engine_refusals()
    if refusals:
        raise ConfigError([Problem("render", text) for text in refusals], source)


def render_file(path: Path) -> Rendered:
    """Validate the stack file (raising ConfigError), then run the program against it."""
    found = read_stack(path)
    parse_sections(found.sections, found.region, source=str(path))
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


def manifest(record: Record) -> dict[str, Any]:
    inputs = integral(dict(record.inputs))
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
    }


def manifest_filename(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}-{meta.get('namespace') or 'cluster'}-{meta.get('name')}.yaml"


def masked(value: Any) -> Any:
    """Replace Pulumi secret envelopes with a marker, so a render never prints a secret."""
    from pulumi.runtime import rpc

    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def write(rendered: Rendered, out: Path) -> None:
    for sub in ("manifests", "helm"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    (out / "resources.json").write_text(
        json.dumps(integral(masked([r.as_json() for r in rendered.resources])), indent=2, default=str) + "\n"
    )
    (out / "outputs.json").write_text(json.dumps(masked(rendered.outputs), indent=2, default=str) + "\n")
    for obj in rendered.manifests():
        (out / "manifests" / manifest_filename(obj)).write_text(yaml.safe_dump(obj, sort_keys=False))
    for rel in rendered.releases():
        (out / "helm" / f"{rel['name']}.yaml").write_text(yaml.safe_dump(rel, sort_keys=False))
