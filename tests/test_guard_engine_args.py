"""engineArgs cannot override what the platform owns (issue 13 item 7)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stacks.errors import ConfigError
from stacks.pipeline import check_sections

from .guard_support import has, problems
from .serving_support import config_of, serving_sections


def with_args(dev: dict[str, Any], args: list[str], model: int = 0) -> dict[str, Any]:
    dev["models"][model]["engineArgs"] = args
    return dev


def test_an_api_key_in_engine_args_is_refused_naming_the_gateway_secret(dev):
    found = problems(with_args(dev, ["--api-key", "sk-live-0123456789abcdef"]))
    assert has(found, "models[0].engineArgs[0]", "--api-key", "gateway.apiKeysSecret"), found
    assert has(found, "models[0].engineArgs[1]", "credential"), found
    assert not any("0123456789abcdef" in p for p in found), "a credential is never echoed"


def test_trust_remote_code_in_engine_args_is_refused_naming_trust_remote_code(dev):
    assert has(problems(with_args(dev, ["--trust-remote-code"])), "models[0].engineArgs[0]", "trustRemoteCode")


def test_a_port_in_engine_args_is_refused_in_every_spelling(dev):
    for args in (["--port", "9000"], ["--port=9000"], ["--po", "9000"], ["--host=127.0.0.1"], ["--uds", "/tmp/s"]):
        assert has(problems(with_args(copy.deepcopy(dev), args)), "models[0].engineArgs[0]", "listens"), args


def test_vllm_reads_underscores_and_abbreviations_so_they_are_refused_too(dev):
    cases = {
        "--api_key=x": "--api-key",
        "--served_model_name": "--served-model-name",
        "--tensor-parallel": "--tensor-parallel-size",
        "-tp": "acceleratorsPerReplica",
        "-t": "-tp",
        "-n2": "-n",
        "--max_model_len=100": "maxModelLen",
        "--no-trust-remote-code": "trustRemoteCode",
        "--config=/models/x.yaml": "file",
        "--hf-token": "secrets.huggingFaceToken",
    }
    for token, word in cases.items():
        found = problems(with_args(copy.deepcopy(dev), [token]))
        assert has(found, "models[0].engineArgs[0]", word), (token, found)


def test_ordinary_engine_args_still_pass(dev):
    for args in (["--gpu-memory-utilization", "0.85"], ["--enable-prefix-caching"], ["--tokenizer-mode", "auto"]):
        check_sections(with_args(copy.deepcopy(dev), args), "us-west-2")


def sglang_stack(dev: dict[str, Any], args: list[str]) -> dict[str, Any]:
    dev["models"][0] |= {"engine": "sglang", "engineArgs": args}
    return dev


def test_sglang_flags_the_platform_sets_are_refused(dev):
    for token, word in {
        "--tp": "acceleratorsPerReplica",
        "--context-length=4096": "maxModelLen",
        "--grammar-backend": "sglang.grammarBackend",
        "--admin-api-key": "credential",
        "--model": "models[].model",
    }.items():
        found = problems(sglang_stack(copy.deepcopy(dev), [token]))
        assert has(found, "models[0].engineArgs[0]", word), (token, found)
    # SGLang's own flags that merely end like a credential's, or prefix an owned one, pass.
    ok = sglang_stack(copy.deepcopy(dev), ["--ssl-keyfile", "/x", "--bucket-time-to-first-token", "1"])
    check_sections(ok, "us-west-2")


def tgi_stack(dev: dict[str, Any], args: list[str]) -> dict[str, Any]:
    dev["models"][0] |= {"engine": "tgi", "tgi": {"acceptMaintenanceMode": True}, "engineArgs": args}
    return dev


def test_tgi_short_port_and_ngrok_are_refused(dev):
    cases = {"-p9000": "listens", "-ep": "listens", "--ngrok": "tunnel", "--num-shard=2": "acceleratorsPerReplica"}
    for token, word in cases.items():
        found = problems(tgi_stack(copy.deepcopy(dev), [token]))
        assert has(found, "models[0].engineArgs[0]", word), (token, found)


def test_the_trace_export_flags_are_reserved_for_addons_tracing(dev):
    """The platform points vLLM's and TGI's span export at its collector; an own endpoint would split traces."""
    for args in (["--otlp-traces-endpoint", "http://x:4317"], ["--otlp_traces_endpoint=http://x:4317"], ["--otlp-t"]):
        found = problems(with_args(copy.deepcopy(dev), args))
        assert has(found, "models[0].engineArgs[0]", "addons.tracing", "models[].tracing"), (args, found)
    for token in ("--otlp-endpoint=http://x:4317", "--otlp-service-name=svc"):
        found = problems(tgi_stack(copy.deepcopy(dev), [token]))
        assert has(found, "models[0].engineArgs[0]", "addons.tracing", "models[].tracing"), (token, found)


def test_ollama_takes_no_engine_args(dev):
    dev["models"].append({"name": "local", "engine": "ollama", "model": "llama3.1:8b", "pool": "gpu"})
    dev["models"][2]["engineArgs"] = ["--verbose"]
    found = problems(dev)
    assert has(found, "models[2].engineArgs", "ollama serve"), found


def test_a_flag_and_its_value_in_one_item_is_refused(dev):
    assert has(problems(with_args(copy.deepcopy(dev), ["--port 9000"])), "models[0].engineArgs[0]", "listens")
    assert has(problems(with_args(dev, ["--foo bar"])), "models[0].engineArgs[0]", "two items")


@pytest.mark.parametrize(
    ("backend", "token", "word"),
    [
        ("vllm", "--kv-events-config={}", "KV cache events"),
        ("vllm", "--kv_events_config", "KV cache events"),
        ("vllm", "--no-enable-prefix-caching", "prefix cache"),
        ("vllm", "--router-mode=round-robin", "KV routing"),
        ("sglang", "--kv-events-config", "KV cache events"),
        ("sglang", "--disable-radix-cache", "prefix cache"),
        ("vllm", "--kv-transfer-config", "role wiring"),
    ],
)
def test_a_dynamo_workers_engine_args_cannot_undo_the_kv_routing_the_platform_wires(backend, token, word):
    sections = serving_sections()
    index, entry = next((i, m) for i, m in enumerate(sections["models"]) if m["name"] == "qwen3-8b-dynamo")
    entry["dynamo"]["backend"] = backend
    entry["engineArgs"] = [token]
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    assert any(p.path.endswith(f"models[{index}].engineArgs[0]") and word in p.message for p in err.value.problems), (
        err.value
    )
