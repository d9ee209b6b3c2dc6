"""What `stacks render` writes: resources.json carries the resource options the engine honours and is
what json.dumps writes, and the YAML writer writes what PyYAML's safe dumper writes."""

from __future__ import annotations

import datetime
import json

import yaml
from pulumi.runtime import rpc

from stacks.render import YAML_DUMPER, dump_yaml, plain, plain_json, render_dumper, write

SECRET_ENVELOPE = {rpc._special_sig_key: rpc._special_secret_sig}


def test_resources_json_records_protect_and_retain_on_delete_for_every_resource(dev_render, tmp_path):
    write(dev_render, tmp_path)
    resources = json.loads((tmp_path / "resources.json").read_text())
    assert all(isinstance(r["protect"], bool) and isinstance(r["retainOnDelete"], bool) for r in resources)
    kept = {r["name"] for r in resources if r["protect"] and r["retainOnDelete"]}
    assert {"platform-storage-bucket-bucket", "platform-storage-efs-fs"} <= kept


def test_the_fast_yaml_writer_writes_what_the_safe_dumper_writes(dev_render):
    shared = ["x", {"y": 1}]
    documents = [
        *dev_render.manifests(),
        *dev_render.releases(),
        {"float": 2.5, "int": 3, "big": 1e20, "inf": float("inf"), "none": None, "yes": "yes", "on": True},
        {"a": shared, "b": shared},  # the same list twice: an alias
        {"when": datetime.date(2026, 1, 2), "empty": {}, "list": [], "": "", "multi": "a\nb\n" * 40},
    ]
    pure_python = render_dumper(yaml.SafeDumper)  # where PyYAML has no libyaml
    for doc in documents:
        assert dump_yaml(doc) == yaml.dump(doc, Dumper=YAML_DUMPER, sort_keys=False)
        assert yaml.dump(doc, Dumper=pure_python, sort_keys=False) == yaml.safe_dump(doc, sort_keys=False)
    assert yaml.safe_load(dump_yaml({"a": shared, "b": shared})) == {"a": shared, "b": shared}


def test_resources_json_is_what_json_dumps_writes(dev_render):
    resources = [r.as_json() for r in dev_render.resources]
    edge = {"half": 1.5, "two": 2.0, "inf": [float("inf"), -float("inf")], "big": 1e20, "tiny": 1e-7, "none": None}
    edge |= {"t": True, "f": False, "text": 'é\n"', "empty": [[], {}], "secret": {**SECRET_ENVELOPE, "value": "x"}}
    for value in (resources, edge, {"nested": [edge, [edge]]}, {1: "int key"}, (1, 2), datetime.date(2026, 1, 2)):
        assert plain_json(value) == json.dumps(plain(value), indent=2, default=str)


def test_the_offline_render_skips_the_sdks_source_positions_and_still_records_every_resource(dev_render):
    """Under the mocks no registration sends a stack trace (the SDK would walk the whole Python stack
    for each); the hook it replaces must still exist in the pinned SDK, or the skip would be silent."""
    from pulumi.runtime import resource
    from pulumi.runtime.proto import source_pb2

    from stacks.render import mocks

    mocks()  # the render's mocks, installed once per process
    assert resource._get_stack_trace is source_pb2.StackTrace
    assert resource._get_stack_trace().frames == []
    assert len(dev_render.resources) > 100
