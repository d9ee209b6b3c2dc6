"""`stacks new` as a platform engineer meets it in the first week: a prod stack's missing pins come in one
answer, each naming the image to take its digest from and the command that prints it; the header's
commands name the written file wherever it is and point at the stack-file reference; an `hf-token`
Secret only for a model the program knows is gated."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stacks.errors import ConfigError
from stacks.newstack import new_stack
from stacks.pipeline import check_file
from stacks.rules.models import gated_repo
from stacks.versions import IMAGES
from tests.guard_support import cli

DIGEST = "sha256:" + "0" * 64


def _refused(tmp_path: Path, role: str, **kwargs: object) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        new_stack("fresh", role, out_dir=tmp_path, environment="prod", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "Pulumi.fresh.yaml").exists(), "nothing is written"
    return [(p.path, p.message) for p in info.value.problems]


def test_a_prod_all_in_one_stack_reports_every_missing_pin_in_one_round(tmp_path):
    problems = _refused(tmp_path, "all-in-one", preset="mixed")
    paths = [path for path, _ in problems]
    assert paths.count("--ami-version") == 1 and paths.count("--image-digest") == 1
    pins = [message for path, message in problems if path == "--image-pin"]
    # Every platform image the stack renders, not the first one only: with the pins given, it is written.
    named = [m.split("--image-pin ", 1)[1].split("=", 1)[0] for m in pins]
    assert {"model-prep-s3", "model-prep-hub", "neuron-monitor"} <= set(named), named
    given = dict.fromkeys(named, DIGEST)
    path = new_stack(
        "fresh",
        "all-in-one",
        out_dir=tmp_path,
        preset="mixed",
        environment="prod",
        ami_version="v20261015",
        image_digest=DIGEST,
        image_pins=given,
    )
    assert check_file(path).stack.prod


def test_each_missing_digest_names_its_image_and_the_command_that_prints_the_digest(tmp_path):
    problems = _refused(tmp_path, "all-in-one", preset="gpu-small", ami_version="v20261015")
    engine = next(message for path, message in problems if path == "--image-digest")
    vllm = f"{IMAGES['vllm-openai'].repository}:{IMAGES['vllm-openai'].tag}"
    assert "model qwen3-8b" in engine and f"`docker buildx imagetools inspect {vllm}`" in engine, engine
    for path, message in problems:
        if path != "--image-pin":
            continue
        name = message.split("--image-pin ", 1)[1].split("=", 1)[0]
        image = f"{IMAGES[name].repository}:{IMAGES[name].tag}"
        assert f"the digest of {image}" in message and f"`docker buildx imagetools inspect {image}`" in message


def test_a_prod_workloads_stack_names_its_engine_image_and_every_platform_image_at_once(tmp_path):
    problems = _refused(tmp_path, "workloads", platform="acme/inference-platform/platform", team="search")
    paths = [path for path, _ in problems]
    assert "--ami-version" not in paths, "a team stack runs on the platform's nodes"
    assert paths.count("--image-digest") == 1 and paths.count("--image-pin") >= 2, problems


@pytest.mark.parametrize("out_dir", ["elsewhere", None])
def test_the_header_validate_command_names_the_written_file_and_works(tmp_path, out_dir):
    where = tmp_path / out_dir if out_dir else tmp_path
    where.mkdir(exist_ok=True)
    path = new_stack("fresh", "platform", out_dir=where, preset="gpu-small")
    header = path.read_text().split("config:", 1)[0]
    command = header.split("`python -m stacks validate ", 1)[1].split("`", 1)[0]
    assert Path(command).resolve() == path.resolve(), command
    checked = cli("validate", command)
    assert checked.returncode == 0 and "ok" in checked.stdout, checked.stderr
    assert f"`python -m stacks render {command}`" in header


@pytest.mark.parametrize(
    ("role", "kwargs"),
    [
        ("platform", {"preset": "mixed"}),
        ("all-in-one", {"preset": "inf2"}),
        ("workloads", {"platform": "acme/inference-platform/platform", "team": "search"}),
    ],
)
def test_the_header_points_at_the_stack_file_reference_for_the_keys(tmp_path, role, kwargs):
    header = new_stack("fresh", role, out_dir=tmp_path, **kwargs).read_text().split("config:", 1)[0]
    assert "docs/reference/stack-file.md" in header and "README.md" not in header


def _token_and_secret(path: Path) -> tuple[list[object], dict[str, object]]:
    config = yaml.safe_load(path.read_text())["config"]
    tokens = [m.get("secrets", {}).get("huggingFaceToken") for m in config.get("inference-platform:models", [])]
    return tokens, config.get("inference-platform:secrets", {})


def test_an_ungated_starter_model_gets_no_hf_token_but_a_comment_saying_why(tmp_path):
    assert not gated_repo("Qwen/Qwen3-8B")
    path = new_stack("fresh", "workloads", out_dir=tmp_path, platform="acme/inference-platform/platform", team="chat")
    tokens, secrets = _token_and_secret(path)
    assert tokens == [None] and "hf-token" not in secrets
    text = path.read_text()
    assert "hfToken" not in text.replace("{huggingFaceToken: hf-token}", "")
    assert "No Hugging Face token" in text and "GATED_ORGS" in text, "says it cannot know, and what to add"
    all_in_one = new_stack("aio", "all-in-one", out_dir=tmp_path, preset="gpu-small")
    tokens, secrets = _token_and_secret(all_in_one)
    assert tokens == [None] and "hf-token" not in secrets and "inference-api-keys" in secrets


def test_a_gated_starter_model_gets_the_hf_token_secret_and_its_pulumi_secret(tmp_path):
    assert gated_repo("meta-llama/Llama-3.1-8B-Instruct")
    path = new_stack("fresh", "all-in-one", out_dir=tmp_path, preset="inf2")
    tokens, secrets = _token_and_secret(path)
    assert tokens == ["hf-token"] and secrets["hf-token"] == {"fromConfig": {"token": "hfToken"}}
    assert "pulumi config set --secret hfToken" in path.read_text()
    assert check_file(path).stack.models[0].config.secrets.hugging_face_token == "hf-token"
