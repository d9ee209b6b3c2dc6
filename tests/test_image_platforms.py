"""Which engine images run on which hardware (stacks/versions.py IMAGE_PLATFORMS): every pinned engine image
says the CPU architectures it is published for and whether it carries Blackwell kernels, with the upstream
build definition it comes from, and the rules use each fact: an arm64 pool with an amd64-only image is
refused at `models[i].pool` naming what to set instead, a known multi-arch image passes without the
"unknown" warning, and an image whose arm64 build has its own tag is refused naming that tag."""

from __future__ import annotations

import re

import pytest

from stacks import versions
from stacks.errors import ConfigError
from stacks.load import parse_sections
from stacks.pipeline import check_sections
from stacks.resolve import resolve
from stacks.rules import hardware


def at(sections, key: str) -> list[str]:
    """The problems at this key (the stack may be refused elsewhere too: only this key is asserted)."""
    try:
        check_sections(sections, "us-west-2")
    except ConfigError as exc:
        return [str(p) for p in exc.problems if str(p).startswith(f"inference-platform:{key}: ")]
    return []


def unknown_warnings(sections) -> list[str]:
    """The "does the catalog know an arm64 build" warnings for this stack, read from the resolved stack
    directly (the test stack is refused elsewhere: the dev pool's g6 types are amd64)."""
    stack = resolve(parse_sections(sections, "us-west-2"), None)
    return [str(p) for p in hardware.images_not_known_for_the_pool_architecture(stack)]


def on_arm64(dev: dict, engine: str, **keys) -> dict:
    dev["nodePools"][0]["architecture"] = "arm64"
    dev["models"][0].update(engine=engine, **keys)
    return dev


@pytest.mark.parametrize("name", sorted(versions.MODEL_IMAGES))
def test_every_pinned_engine_image_says_which_hardware_it_runs_on_and_where_that_comes_from(name):
    image = versions.MODEL_IMAGES[name]
    facts = versions.image_platforms(image)
    assert facts is not None, f"{image.ref} has no IMAGE_PLATFORMS entry: the rule cannot refuse or pass it"
    assert re.search(r"[\w.-]+/[\w.-]+", facts.source), "the source names the upstream repository or page"
    assert facts.architectures is None or facts.architectures <= {"amd64", "arm64"}
    if facts.arm64_tag:
        assert facts.architectures == {"amd64"}, "an arm64 tag of its own means the pinned tag has no arm64 build"


def test_the_neuron_dlc_is_recorded_as_x86_only_because_neuron_hosts_are():
    facts = versions.image_platforms(versions.MODEL_IMAGES["vllm-neuronx"])
    assert facts is not None and facts.architectures == {"amd64"} and "x86 only" in facts.source


def test_ray_llm_on_an_arm64_pool_is_refused_naming_its_aarch64_tag(dev):
    on_arm64(dev, "ray-serve", rayServe={"minWorkers": 1, "maxWorkers": 1})
    [message] = at(dev, "models[0].pool")
    assert "rayproject/ray-llm:2.58.0-py312-cu130 is published for amd64 only" in message
    assert "Set models[0].image.tag to 2.58.0-py312-cu130-aarch64" in message, "the arm64 build's own tag"


def test_tgi_on_an_arm64_pool_is_refused_naming_an_amd64_pool_as_the_way_out(dev):
    on_arm64(dev, "tgi", tgi={"acceptMaintenanceMode": True})
    [message] = at(dev, "models[0].pool")
    assert "Serve the model on an amd64 pool, or set models[0].image to a build for arm64" in message
    assert "image.tag" not in message, "TGI publishes no arm64 build under any tag"


def test_the_neuron_dlc_on_an_arm64_pool_is_refused_saying_neuron_hosts_are_x86(dev):
    [i] = [i for i, p in enumerate(dev["nodePools"]) if p["name"] == "inferentia"]
    dev["nodePools"][i]["architecture"] = "arm64"
    [m] = [m for m, model in enumerate(dev["models"]) if model["engine"] == "neuron-vllm"]
    [message] = at(dev, f"models[{m}].pool")
    assert "pytorch-inference-vllm-neuronx" in message and "Neuron hosts are x86 only" in message


def test_an_overridden_amd64_only_engine_image_is_refused_at_models_image(dev, monkeypatch):
    old = versions.ImagePlatforms(frozenset({"amd64"}), True, "an x86-only build")
    monkeypatch.setitem(versions.IMAGE_PLATFORMS, ("registry.example.com/vllm", "x86"), old)
    dev["models"][0]["image"] = {"repository": "registry.example.com/vllm", "tag": "x86"}
    on_arm64(dev, "vllm")
    [message] = at(dev, "models[0].image")
    assert "registry.example.com/vllm:x86 is published for amd64 only" in message


@pytest.mark.parametrize(
    ("engine", "keys"),
    [
        ("vllm", {}),
        ("sglang", {}),
        ("ollama", {"ollama": {"pull": ["qwen3:8b"]}}),
        ("dynamo", {"dynamo": {"mode": "aggregated", "backend": "vllm"}}),
        ("dynamo", {"dynamo": {"mode": "aggregated", "backend": "sglang"}}),
        ("dynamo", {"dynamo": {"mode": "aggregated", "backend": "trtllm"}}),
    ],
    ids=["vllm", "sglang", "ollama", "dynamo-vllm", "dynamo-sglang", "dynamo-trtllm"],
)
def test_a_multi_arch_engine_on_an_arm64_pool_passes_without_the_unknown_image_warning(dev, engine, keys):
    on_arm64(dev, engine, **keys)
    assert not at(dev, "models[0].pool"), f"{engine}'s pinned image is a manifest list with an arm64 build"
    assert not [w for w in unknown_warnings(dev) if "models[0]" in w], "the catalog knows its arm64 build"


def test_nim_on_an_arm64_pool_is_still_a_warning_because_its_architectures_are_not_published(dev):
    on_arm64(dev, "nim", nim={"profile": "vllm-bf16-tp1-pp1", "imagePullSecret": "ngc-registry"})
    [warning] = [w for w in unknown_warnings(dev) if w.startswith("inference-platform:models[0].pool: ")]
    assert "model-free-nim:2.0.12" in warning and "docker buildx imagetools inspect" in warning


def test_a_preparation_image_without_an_arm64_build_is_refused_naming_its_images_key(dev, monkeypatch):
    old = versions.ImagePlatforms(frozenset({"amd64"}), None, "an x86-only AWS CLI build")
    monkeypatch.setitem(versions.IMAGE_PLATFORMS, ("registry.example.com/aws-cli", "x86"), old)
    dev.setdefault("images", {})["model-prep-s3"] = {"repository": "registry.example.com/aws-cli", "tag": "x86"}
    on_arm64(dev, "vllm")
    [message] = at(dev, "models[0].pool")
    assert "qwen3-8b's pods also pull model-prep-s3: registry.example.com/aws-cli:x86" in message
    assert "set images.model-prep-s3 to a build for arm64" in message


def test_aibrix_runtime_sidecar_is_recorded_as_multi_arch_from_its_release_workflow():
    facts = versions.image_platforms(versions.PLATFORM_IMAGES["aibrix-runtime"])
    assert facts is not None and facts.architectures == {"amd64", "arm64"}
    assert "release-build.yaml" in facts.source


def test_the_operator_guide_lists_every_engine_images_hardware_with_the_arm64_tag_to_set():
    from stacks.paths import ROOT

    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    section = guide.split("- **Engine images per hardware**", 1)[1].split("\n\nWith `limits.accelerators`", 1)[0]
    for name, image in versions.MODEL_IMAGES.items():
        facts = versions.image_platforms(image)
        assert facts is not None
        assert image.tag in section, f"{name} ({image.ref}) is missing from the guide's engine-image table"
        if facts.arm64_tag:
            assert facts.arm64_tag in section, f"the guide names {name}'s arm64 tag"


def on_b200(dev: dict, engine: str, **keys) -> dict:
    dev["nodePools"][0]["instanceTypes"] = ["p6-b200.48xlarge"]
    dev["models"][0].update(engine=engine, **keys)
    return dev


def blackwell_warnings(sections) -> list[str]:
    stack = resolve(parse_sections(sections, "us-west-2"), None)
    return [str(p) for p in hardware.blackwell_kernels_not_known(stack) if "models[0]" in str(p)]


@pytest.mark.parametrize(
    ("engine", "keys"),
    [
        ("sglang", {}),
        ("ollama", {"ollama": {"pull": ["qwen3:8b"]}}),
        ("nim", {"nim": {"profile": "vllm-bf16-tp1-pp1", "imagePullSecret": "ngc-registry"}}),
        ("dynamo", {"dynamo": {"mode": "aggregated", "backend": "trtllm"}}),
        ("ray-serve", {"rayServe": {"minWorkers": 1, "maxWorkers": 1}}),
    ],
    ids=["sglang", "ollama", "nim", "dynamo-trtllm", "ray-serve"],
)
def test_an_engine_image_with_blackwell_kernels_on_p6_b200_is_not_warned(dev, engine, keys):
    assert not blackwell_warnings(on_b200(dev, engine, **keys)), f"{engine}'s pinned image has sm_100 kernels"


def test_tgi_on_p6_b200_is_warned_because_its_blackwell_kernels_are_not_stated(dev):
    [warning] = blackwell_warnings(on_b200(dev, "tgi", tgi={"acceptMaintenanceMode": True}))
    assert "text-generation-inference:3.3.7" in warning and "CUDA 12.8" in warning
