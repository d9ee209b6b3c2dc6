"""SLO benchmark Jobs (`models[].benchmark`): the guidellm Job's argv, key, tokenizer, name, await and
verdict, built from a resolved stack (no program render)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from components import benchmark_verdict
from components.benchmark import KEY_ENV, TOKENIZER, guidellm_runs, job, job_name, results_prefix
from stacks import conformance
from stacks.resolved import ResolvedModel, ResolvedStack
from stacks.versions import Image
from tests.builders import resolved_model
from tests.engines_helpers import example, stack_of
from tests.guard_support import has, problems

SCHEMAS = conformance.schema_dir()
HOST = "llm.example.com"
# The real `guidellm run --help` of 0.8.1, saved beside the schemas.
HELP = None if SCHEMAS is None else Path(SCHEMAS) / "cli-scaling" / "guidellm-0.8.1-run-help.txt"


def with_benchmark(slo: dict[str, Any] | None = None, **bench: Any) -> dict[str, Any]:
    """The engines example with qwen3-8b's benchmark replaced by these settings."""
    sections = copy.deepcopy(example())
    model = next(m for m in sections["models"] if m["name"] == "qwen3-8b")
    model["benchmark"] = {"apiKeySecret": "bench-key", **bench}
    if slo is not None:
        model["slo"] = slo
    return sections


def built(sections: dict[str, Any]) -> tuple[ResolvedStack, ResolvedModel, dict[str, Any]]:
    stack = stack_of(sections)
    model = resolved_model(stack, "qwen3-8b")
    return stack, model, job(model, HOST, "models-bucket", stack.images)


@pytest.fixture(scope="module")
def bench() -> tuple[ResolvedStack, ResolvedModel, dict[str, Any]]:
    return built(with_benchmark(concurrency=[1, 8, 32], inputTokens=512, outputTokens=128, requests=200))


def containers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = obj["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*spec["initContainers"], *spec["containers"]]}


def test_each_concurrency_runs_guidellm_against_the_gateway_route_with_the_stack_token_shapes(bench):
    _, model, _ = bench
    runs = guidellm_runs(model, model.config.benchmark, HOST)
    assert [r["concurrency"] for r in runs] == [1, 8, 32], "one benchmark per concurrency of the sweep"
    argv = runs[1]["argv"]
    assert argv[argv.index("--backend") + 1] == (
        f"kind=openai_http,target=https://{HOST}/qwen3-8b,model=qwen3-8b,validate_backend=false"
    )
    assert argv[argv.index("--profile") + 1] == "kind=concurrent,streams=8"
    assert argv[argv.index("--data") + 1] == "kind=synthetic_text,prompt_tokens=512,output_tokens=128"
    assert argv[argv.index("--constraint") + 1] == "kind=max_requests,count=200"
    assert argv[argv.index("--output") + 1] == "kind=json,path=/results/concurrency-8.json"


@pytest.mark.schemas
def test_every_rendered_guidellm_flag_is_in_the_real_help_text(bench):
    _, model, _ = bench
    assert HELP is not None
    helptext = HELP.read_text()
    flags = {a for r in guidellm_runs(model, model.config.benchmark, HOST) for a in r["argv"] if a.startswith("-")}
    assert flags, "the runs render flags"
    for flag in flags:
        assert f"{flag} " in helptext or f"{flag}," in helptext, f"{flag} is not a guidellm 0.8.1 flag"


def test_the_tokenizer_is_local_so_nothing_is_fetched_from_the_hub(bench):
    _, model, obj = bench
    argv = guidellm_runs(model, model.config.benchmark, HOST)[0]["argv"]
    assert argv[argv.index("--tokenizer") + 1] == f"kind=huggingface_auto,model={TOKENIZER}"
    tokenizer = containers(obj)["tokenizer"]
    assert "s3://$BENCH_BUCKET/$MODEL_PREFIX/" in tokenizer["command"][2], "copied from the model's bucket prefix"
    assert {"name": "MODEL_PREFIX", "value": f"platform/qwen3-8b/{model.config.revision}"} in tokenizer["env"], (
        "the platform's model, under the platform's prefix"
    )


def test_the_api_key_is_exported_from_its_mounted_file_never_a_literal_or_secret_env(bench):
    _, _, obj = bench
    runner = containers(obj)["guidellm"]
    script = runner["command"][2]
    assert f'{KEY_ENV}="$(cat /var/run/secrets/benchmark/api-key)" && export {KEY_ENV}' in script
    assert all("valueFrom" not in e for c in containers(obj).values() for e in c.get("env", []))
    volumes = obj["spec"]["template"]["spec"]["volumes"]
    assert {
        "name": "api-key",
        "secret": {"secretName": "bench-key", "items": [{"key": "api-key", "path": "api-key"}]},
    } in volumes


def test_results_go_to_the_bucket_under_the_owners_prefix_the_model_revision_and_time(bench):
    _, model, obj = bench
    assert results_prefix(model) == f"platform/_benchmarks/qwen3-8b/{model.config.revision}", (
        "the owner's own prefix, apart from every model's weights"
    )
    assert not f"{results_prefix(model)}/".startswith(f"{model.cache.bucket_prefix}/")
    upload = containers(obj)["upload"]
    assert "$BENCH_PREFIX/$stamp/" in upload["command"][2] and "date -u" in upload["command"][2]
    assert "exit 1" in upload["command"][2], "a missed SLO fails the Job after the upload"


def test_an_ungated_job_skips_pulumis_await_and_a_gated_one_is_awaited(bench):
    _, _, obj = bench
    assert obj["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    _, _, gated = built(with_benchmark(slo={"ttftSeconds": 1.0}, gate=True))
    assert "pulumi.com/skipAwait" not in gated["metadata"]["annotations"], "pulumi up waits for a gate"


def test_the_name_changes_with_the_revision_the_image_and_the_settings(bench):
    stack, model, obj = bench
    base = obj["metadata"]["name"]
    assert base.startswith("bench-qwen3-8b-")
    sections = with_benchmark(concurrency=[1, 8, 32], inputTokens=512, outputTokens=128, requests=200)
    same = built(sections)[2]["metadata"]["name"]
    assert same == base, "the same inputs keep the same Job"
    revised = copy.deepcopy(sections)
    next(m for m in revised["models"] if m["name"] == "qwen3-8b")["revision"] = "0" * 40
    assert built(revised)[2]["metadata"]["name"] != base
    assert built(with_benchmark(requests=201))[2]["metadata"]["name"] != base
    images = dict(stack.images.images)
    images["guidellm"] = Image("ghcr.io/vllm-project/guidellm", "v0.8.2")
    assert job_name(model, type(stack.images)(images)) != base


SAMPLE = {
    "benchmarks": [
        {
            "metrics": {
                "time_to_first_token_ms": {"successful": {"percentiles": {"p95": 850.0, "p99": 1400.0}}},
                "inter_token_latency_ms": {"successful": {"percentiles": {"p95": 42.0, "p99": 61.0}}},
            }
        }
    ]
}


def test_the_verdict_passes_within_the_slo_and_names_each_miss():
    assert benchmark_verdict.percentile_key(0.95) == "p95" and benchmark_verdict.percentile_key(0.999) == "p999"
    ok = benchmark_verdict.verdict({8: SAMPLE}, {"ttftSeconds": 1.0, "itlSeconds": 0.05}, 0.95)
    assert ok["passed"] and not ok["misses"]
    missed = benchmark_verdict.verdict({8: SAMPLE}, {"ttftSeconds": 1.0, "itlSeconds": 0.05}, 0.99)
    assert not missed["passed"]
    assert missed["misses"] == [
        "time_to_first_token_ms p99 1.400s > ttftSeconds 1.0s at concurrency 8",
        "inter_token_latency_ms p99 0.061s > itlSeconds 0.05s at concurrency 8",
    ]
    empty = benchmark_verdict.verdict({32: {"benchmarks": []}}, {"ttftSeconds": 1.0}, 0.95)
    assert not empty["passed"], "no measurement is never a pass"
    json.dumps(empty)


def test_a_benchmark_on_an_unexposed_model_is_refused():
    sections = with_benchmark()
    next(m for m in sections["models"] if m["name"] == "qwen3-8b")["expose"] = False
    found = problems(sections)
    assert has(found, "models[0].benchmark", "expose: true"), found


def test_a_gate_without_a_ttft_or_itl_objective_is_refused():
    sections = with_benchmark(gate=True)
    next(m for m in sections["models"] if m["name"] == "qwen3-8b").pop("slo", None)
    found = problems(sections)
    assert has(found, "models[0].benchmark.gate", "ttftSeconds"), found


def test_a_benchmark_without_the_front_door_is_refused():
    sections = with_benchmark()
    sections["gateway"] = {**sections.get("gateway", {}), "enabled": False}
    found = problems(sections)
    assert has(found, "models[0].benchmark", "gateway.enabled"), found


def test_the_reader_may_write_benchmark_results_only_under_their_owners_prefix():
    from components.storage.storage_iam import reader_policy

    for prefix in ("platform", "teams/search"):
        (st,) = [s for s in reader_policy("arn:aws:s3:::models", prefix)["Statement"] if "s3:PutObject" in s["Action"]]
        assert st["Action"] == ["s3:PutObject"] and st["Resource"] == [f"arn:aws:s3:::models/{prefix}/_benchmarks/*"]


def test_the_job_pod_is_never_selected_as_a_model_pod(bench):
    _, model, obj = bench
    pod_labels = obj["spec"]["template"]["metadata"]["labels"]
    assert not set(model.selector.items()) <= set(pod_labels.items()), "the model's Service would send it traffic"


def test_a_key_header_guidellm_cannot_send_is_refused():
    sections = with_benchmark()
    sections["gateway"] = {**sections.get("gateway", {}), "auth": "apiKey", "apiKeyHeader": "x-api-key"}
    found = problems(sections)
    assert has(found, "models[0].benchmark", "apiKeyHeader: Authorization"), found


def test_a_team_benchmark_is_held_to_its_platforms_front_door_not_its_own_gateway_section():
    """A workloads stack's gateway section is not its front door: without a platform hostname the
    refusal names the key before any resource (never the wiring's backstop)."""
    from tests.conftest import EXAMPLES, live_platform, rendered_stack, sections_of
    from tests.guard_support import has, problems

    team = next(p for p in EXAMPLES if p.name == "Pulumi.team-search.yaml")
    platform = next(p for p in EXAMPLES if p.name == "Pulumi.platform.yaml")
    live = dict(rendered_stack(platform).outputs)
    parent = dict(live["gatewayParent"])
    parent["hostname"] = None
    sections = sections_of(team)
    sections["models"][0]["benchmark"] = {"apiKeySecret": "bench-key"}
    found = problems(sections, live_platform({**live, "gatewayParent": parent}))
    assert has(found, "models[0].benchmark", "no front door with a hostname", "ask the platform team")


def test_a_hub_model_without_tokenizer_files_in_the_bucket_takes_them_from_the_hub_at_its_revision(bench):
    """The platform fetches a Hub model into its cache, not the bucket: the benchmark's tokenizer comes
    from the Hub at the model's pinned revision when the bucket prefix has none (a gated repo with the
    model's own token file), and guidellm itself stays offline."""
    _, model, obj = bench
    found = containers(obj)
    order = [c["name"] for c in obj["spec"]["template"]["spec"]["initContainers"]]
    assert order == ["tokenizer", "tokenizer-from-hub", "guidellm"], "bucket first, the Hub only for what is missing"
    assert "taking them from the Hub" in found["tokenizer"]["command"][2], "an empty prefix is not a failure here"
    hub = found["tokenizer-from-hub"]
    env = {e["name"]: e.get("value") for e in hub["env"]}
    assert env["BENCH_REPO"] == "Qwen/Qwen3-8B" and env["BENCH_REVISION"] == model.config.revision
    assert "snapshot_download" in hub["command"][2] and "allow_patterns" in hub["command"][2]
    guidellm_env = {e["name"]: e.get("value") for e in found["guidellm"]["env"]}
    assert guidellm_env["HF_HUB_OFFLINE"] == "1", "the benchmark itself never asks the Hub"
    gated = with_benchmark()
    llama = next(m for m in gated["models"] if m["name"] == "qwen3-8b")
    llama["secrets"] = {"huggingFaceToken": "hf-token"}
    hub = containers(built(gated)[2])["tokenizer-from-hub"]
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"} in hub["env"]
    assert any(m["mountPath"] == "/var/run/secrets/huggingface" for m in hub["volumeMounts"])


def test_a_team_models_benchmark_calls_its_team_path_with_a_key_its_route_alone_admits():
    from components.benchmark import target
    from stacks.resolved import BENCHMARK_CALLER, KeySecret
    from tests.builders import resolved_stack, sourced
    from tests.conftest import EXAMPLES_DIR, sections_of

    team = sections_of(EXAMPLES_DIR / "Pulumi.team-search.yaml")
    team["models"][0]["benchmark"] = {"apiKeySecret": "bench-key", "gate": False}
    stack = resolved_stack(sourced(team))
    model, other = resolved_model(stack, "qwen3-8b"), resolved_model(stack, "llama-3-8b-neuron")
    assert target(model, HOST) == f"https://{HOST}/search/qwen3-8b", "a team's model is routed under its namespace"
    bench = KeySecret(BENCHMARK_CALLER, "search", "bench-key")
    assert bench in model.key_secrets, "the route admits the benchmark's own key, from the model's namespace"
    assert bench not in other.key_secrets, "and no other model's route does"
