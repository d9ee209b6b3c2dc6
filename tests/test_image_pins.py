"""The stack's `images` section pins the platform's own images, and the product's own policy pack
passes on its own prod stacks (issue 14 item 4): every image a prod stack renders carries a digest,
refused by the stack rule before any resource and by the pack's `image-digests-in-prod` at preview."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from stacks.errors import ConfigError
from stacks.pipeline import check_sections, stack_warnings
from stacks.versions import IMAGES, PLATFORM_IMAGES
from tests.builders import resolved_stack, sourced
from tests.conftest import DEV, EXAMPLES, frozen_render, render_sections, sections_of
from tests.test_policies import pack_violations


def digest(n: int) -> str:
    """A well-formed digest for the test's own stack (no registry is reachable from the suite)."""
    return "sha256:" + f"{n:02x}" * 32


# Every platform image a stack may render, pinned through the new key.
PINS = {name: {"digest": digest(i)} for i, name in enumerate(PLATFORM_IMAGES, start=1)}
for tag_only in ("envoy-proxy", "envoy-gateway", "busybox"):
    PINS.pop(tag_only)  # AIBrix's chart takes these by tag only; this stack does not run AIBrix


def prod_stack() -> dict[str, Any]:
    """A hidden-style prod stack: all-in-one, models on GPU and Neuron pools, FSx linked to the model
    bucket (both preparation steps), LiteLLM with Redis, monitoring (neuron-monitor), every pin set."""
    s = sections_of(DEV)
    s["stack"]["environment"] = "prod"
    s["cluster"]["endpoint"] = {"publicAccess": False}
    for pool in s["nodePools"]:
        pool["amiAlias"] = "al2023@v20261015"
    s["storage"] = {
        "modelCache": "fsx",
        "fsx": {"storageCapacityGiB": 2400, "throughputPerTiB": 250, "importPath": "s3://acme-models/llm/"},
        "modelBucket": {"create": False, "name": "acme-models"},
        "protect": True,
    }
    s["addons"]["litellm"] = {"enabled": True, "masterKeySecret": "litellm-master-key", "redis": True}
    s["addons"]["monitoring"] = {"enabled": True, "alertmanagerConfigSecret": "alertmanager-config"}
    for i, model in enumerate(s["models"], start=100):
        model["image"] = {"digest": digest(i)}
    # The Neuron model runs one replica: prod takes that only with the downtime accepted.
    s["models"][1]["acceptDowntime"] = True
    s["images"] = copy.deepcopy(PINS)
    return sourced(s)  # the proxy's master key and Alertmanager's config, from Pulumi secrets


def problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def images_in(manifests: list[dict[str, Any]]) -> set[str]:
    from policypack.validators import containers

    return {c["image"] for m in manifests for c in containers(m)}


def picker_images(releases: list[dict[str, Any]]) -> set[str]:
    """The endpoint pickers' images, as their chart composes them from the values, and the image of the
    Envoy beside a picker LiteLLM calls through (one string, `router.proxy.image`)."""
    found = set()
    for rel in releases:
        router = (rel.get("values") or {}).get("router") or {}
        image = router.get("epp", {}).get("image")
        if image:
            found.add(f"{image['registry']}/{image['repository']}:{image['tag']}")
        proxy = router.get("proxy") or {}
        if proxy.get("enabled"):
            found.add(proxy["image"])
    return found


@pytest.fixture(scope="module")
def prod_render():
    return render_sections(prod_stack())


# ---- the key ---------------------------------------------------------------------------------------


def test_an_unknown_image_name_is_refused_with_the_names_there_are(dev):
    dev["images"] = {"aws-cli": {"digest": digest(1)}}
    (found,) = problems(dev)
    assert found.startswith("inference-platform:images.aws-cli: unknown key"), found
    assert all(name in found for name in PLATFORM_IMAGES), "the refusal lists every image a stack can pin"


def test_an_engine_image_is_refused_with_where_it_is_pinned_instead(dev):
    dev["images"] = {"vllm": {"digest": digest(1)}, "litellm": {"digest": "sha256:abc"}}
    found = problems(dev)
    assert any(p.startswith("inference-platform:images.vllm:") and "models[].image" in p for p in found), found
    assert any(p.startswith("inference-platform:images.litellm.digest:") and "{64}" in p for p in found), (
        "the section's other problems are reported beside it, the pattern as written"
    )


def test_every_platform_image_of_the_catalog_has_a_key_and_no_engine_image_has_one():
    from components.engines import ENGINES
    from stacks.config.images import MODEL_IMAGE_KEYS, ImagesSection
    from stacks.versions import MODEL_IMAGES

    assert set(ImagesSection.names()) == set(PLATFORM_IMAGES) == set(IMAGES) - set(MODEL_IMAGES)
    assert set(ENGINES) <= MODEL_IMAGE_KEYS, "an engine's name is refused here and pointed at models[].image"


def test_a_pin_changes_the_rendered_prep_litellm_and_neuron_monitor_images(prod_render):
    rendered = images_in(prod_render.manifests())
    for name in ("model-prep-s3", "model-prep-hub", "litellm", "redis", "neuron-monitor"):
        base = IMAGES[name]
        ref = f"{base.repository}:{base.tag}@{PINS[name]['digest']}"
        assert ref in rendered, f"{name}: the pinned reference is what the pods run"
    mirror = prod_stack()
    mirror["images"]["model-prep-s3"] = {
        "repository": "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror/aws-cli",
        "tag": "2.32.9",
        "digest": digest(77),
    }
    stack = resolved_stack(mirror)
    assert stack.images["model-prep-s3"].ref == (
        f"111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror/aws-cli:2.32.9@{digest(77)}"
    ), "a mirror repository and tag replace the catalog's"


def test_a_litellm_digest_pins_the_release_addons_litellm_version_names():
    s = prod_stack()
    s["addons"]["litellm"]["version"] = "1.101.2"
    assert resolved_stack(s).images["litellm"].ref == f"ghcr.io/berriai/litellm:v1.101.2@{PINS['litellm']['digest']}"
    s["images"]["litellm"]["tag"] = "v1.101.3"
    assert any(p.startswith("inference-platform:images.litellm.tag:") for p in problems(s)), "two answers"


# ---- prod requires it; only for images the stack renders ---------------------------------------------


def test_the_table_holds_exactly_the_platform_images_the_prod_stack_renders(prod_render):
    """`rendered_images` says what the builders render: nothing it lists is missing from the render
    (a builder asking for an unlisted one fails the render)."""
    stack = resolved_stack(prod_stack())
    # guidellm: the acceptance Job every exposed model gets by default; picker-proxy: LiteLLM calls the
    # picked model through the Envoy beside its picker.
    assert set(stack.images) == {
        "model-prep-s3", "model-prep-hub", "litellm", "redis", "neuron-monitor", "endpoint-picker", "guidellm",
        "picker-proxy",
    }  # fmt: skip
    rendered = images_in(prod_render.manifests()) | picker_images(prod_render.releases())
    assert {stack.images[n].ref for n in stack.images} <= rendered


@pytest.mark.parametrize(
    "name",
    [
        "model-prep-s3", "model-prep-hub", "litellm", "redis", "neuron-monitor", "endpoint-picker", "guidellm",
        "picker-proxy",
    ],
)  # fmt: skip
def test_prod_refuses_each_rendered_image_without_a_digest_at_its_key(name):
    s = prod_stack()
    del s["images"][name]
    found = problems(s)
    assert any(p.startswith(f"inference-platform:images.{name}.digest:") and "sha256:" in p for p in found), found
    s["stack"]["environment"] = "staging"
    warned = [str(p) for p in stack_warnings(check_sections(s, "us-west-2"))]
    assert any(p.startswith(f"images.{name}.digest") or f"images.{name}.digest:" in p for p in warned), warned


def test_prod_asks_only_for_images_the_stack_renders():
    s = prod_stack()
    s["nodePools"] = [p for p in s["nodePools"] if p["accelerator"] != "neuron"]
    s["models"] = [m for m in s["models"] if m["engine"] != "neuron-vllm"]
    s["addons"]["litellm"]["redis"] = False
    for unused in ("neuron-monitor", "redis", "dynamo-planner"):
        del s["images"][unused]
    stack = check_sections(s, "us-west-2")  # no Neuron pool, no Redis, no profiling: nothing to pin
    assert "neuron-monitor" not in stack.images


def test_a_digest_aibrixs_chart_cannot_take_is_refused(dev):
    dev["addons"]["aibrix"] = {"enabled": True}
    dev["images"] = {"busybox": {"digest": digest(3)}}
    found = problems(dev)
    assert any(p.startswith("inference-platform:images.busybox.digest:") and "mirror" in p for p in found), found


# ---- the policy pack over every example and the prod stack -------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_image_digests_in_prod_passes_on_every_example_as_a_prod_preview_would_run_it(path):
    """Every example's render, the pack told it is prod, only when the example is prod; the capacity
    example is, and renders no unpinned image."""
    from tests.conftest import rendered_stack

    environment = sections_of(path)["stack"].get("environment", "dev")
    found = pack_violations(rendered_stack(path), {"environment": environment})
    assert not [f for f in found if f.startswith("image-digests-in-prod")], found


def test_the_whole_pack_passes_on_the_hidden_style_prod_stack(prod_render):
    found = pack_violations(prod_render)
    assert not found, found
    assert not pack_violations(prod_render, {"environment": "prod"}), "told prod by its config as well"


def test_the_pack_rejects_the_prod_render_when_one_image_lacks_its_digest(prod_render):
    """The control: the same render with LiteLLM's digest taken off every object that runs it (what a
    staging stack without its pin renders; the stack rule's refusal in prod is tested above) is
    rejected by the pack when previewed as prod, at that one image."""
    pinned = f"{IMAGES['litellm'].ref}@{PINS['litellm']['digest']}"
    bare = pinned.split("@")[0]
    assert pinned in json.dumps([r.inputs for r in prod_render.resources]), "the pinned render runs it"
    records = [replace(r, inputs=json.loads(json.dumps(r.inputs).replace(pinned, bare))) for r in prod_render.resources]
    found = pack_violations(frozen_render(records, prod_render.outputs))
    digests = [f for f in found if f.startswith("image-digests-in-prod")]
    assert len(digests) == 1 and "ghcr.io/berriai/litellm:v1.100.1" in digests[0], found
