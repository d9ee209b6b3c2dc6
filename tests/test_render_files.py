"""What `stacks render` writes: resources.json carries the resource options the engine honours."""

from __future__ import annotations

import json

from stacks.render import write


def test_resources_json_records_protect_and_retain_on_delete_for_every_resource(dev_render, tmp_path):
    write(dev_render, tmp_path)
    resources = json.loads((tmp_path / "resources.json").read_text())
    assert all(isinstance(r["protect"], bool) and isinstance(r["retainOnDelete"], bool) for r in resources)
    kept = {r["name"] for r in resources if r["protect"] and r["retainOnDelete"]}
    assert {"platform-storage-bucket-bucket", "platform-storage-efs-fs"} <= kept
