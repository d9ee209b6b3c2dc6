"""The shipped stack files work as written (issue 13 item 14)."""

from __future__ import annotations

from typing import Any

import yaml

from .guard_support import ROOT, has, sections, warnings_of

# Every model revision the shipped files pin, and how it was verified: each appears as the commit
# directory of the repository's Hugging Face cache (`models--<org>--<name>/snapshots/<sha>`), or in a
# `huggingface.co/<repo>/resolve/<sha>/` URL, in several independent public repositories.
VERIFIED_REVISIONS = {
    ("Qwen/Qwen3-8B", "b968826d9c46dd6066d109eabc6255188de91218"),
    # Another Qwen3-8B commit, a snapshot directory in several independent public repositories (and
    # named as Qwen/Qwen3-8B's model_commit in one); the frontdoor example's canary.
    ("Qwen/Qwen3-8B", "9c925d64d72725edaf899c6cb9c377fd0709d9c5"),
    ("Qwen/Qwen3-32B", "9216db5781bf21249d130ec9da846c4624c16137"),
    ("Qwen/Qwen3-4B", "1cfa9a7208912126459214e8b04321603b3df60c"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "b25037543e9394b818fdfca67ab2a00ecc7dd641"),
    ("meta-llama/Llama-3.1-8B-Instruct", "0e9e39f249a16976918f6564b8830bc894c89659"),
    # The snapshot directory of meta-llama/Meta-Llama-3.1-405B-Instruct (the repository since renamed
    # Llama-3.1-405B-Instruct) in ROCm/vllm docs and in an independent HPC evaluation script.
    ("meta-llama/Llama-3.1-405B-Instruct", "069992c75aed59df00ec06c17177e76c63296a26"),
    # The snapshot directory of meta-llama/Llama-3.3-70B-Instruct in several independent public
    # repositories (vLLM launch scripts and a model-config note reading its config.json); the prod-70b
    # example.
    ("meta-llama/Llama-3.3-70B-Instruct", "6f6073b423013f6a7d4d9f39144961bfbfbc386b"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "e0bc86c23ce5aae1db576c8cca6f06f1f73af2db"),
}


def shipped_models() -> list[tuple[str, dict[str, Any]]]:
    files = ["Pulumi.dev.yaml", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "stacks/examples").glob("*.yaml"))]
    return [(f, m) for f in files for m in sections(f).get("models") or []]


def test_every_shipped_revision_is_a_verified_commit_and_none_is_a_branch():
    for where, model in shipped_models():
        if model["engine"] == "ollama":
            continue
        repo = model["model"].removeprefix("hf://")
        assert (repo, model.get("revision")) in VERIFIED_REVISIONS, (where, model["name"], model.get("revision"))
        if canary := model.get("canary"):
            assert (repo, canary["revision"]) in VERIFIED_REVISIONS, (where, model["name"], canary)


def test_new_stack_templates_pin_verified_revisions():
    from stacks.newstack import MODELS

    for text in MODELS.values():
        body = (
            text.replace("{{", "{")
            .replace("}}", "}")
            .replace("{pool}", "gpu")
            .replace("{image}", "")
            .replace("{token}", "")
        )
        model = yaml.safe_load(body)[0]
        assert (model["model"], model["revision"]) in VERIFIED_REVISIONS, model


def test_no_shipped_file_holds_a_placeholder():
    for path in [ROOT / "Pulumi.dev.yaml", *(ROOT / "stacks/examples").glob("*.yaml"), *(ROOT / "docs").glob("*.md")]:
        assert "replace-with" not in path.read_text(), path


def test_a_gated_model_without_a_token_warns_naming_the_key(dev):
    dev["models"][1]["secrets"] = {}
    found = warnings_of(dev)
    assert has(found, "models[1].secrets.huggingFaceToken", "meta-llama", "gates"), found
