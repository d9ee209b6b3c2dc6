"""Issue #28 item 4 and item 8's benchmark numbers: a benchmark on a schedule (a CronJob), a canaried
model's benchmark measuring the stable revision (or each) through its own rule and saying which, and the
numbers guidellm or the engine would refuse or could not honour, each refused at its key."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from components import benchmark_verdict
from components.benchmark import (
    HISTORY,
    STARTING_DEADLINE_SECONDS,
    cron_job,
    cron_job_name,
    guidellm_runs,
    job,
    job_name,
    runs_once,
)
from components.gateway.routing import http_route
from stacks import conformance
from stacks.config.benchmark import GUIDELLM_PERCENTILES
from stacks.resolved import ResolvedModel, ResolvedStack
from tests.builders import resolved_model
from tests.conftest import EXAMPLES_DIR, sections_of
from tests.engines_helpers import stack_of
from tests.guard_support import has, problems, problems_of, warnings_of
from tests.test_benchmark import HOST, SAMPLE, built, with_benchmark

SCHEMAS = conformance.schema_dir()
CANARIED = "qwen3-8b-sglang"  # the front door example's model with a canary


def canaried(**bench: Any) -> tuple[ResolvedStack, ResolvedModel]:
    """The front door example with a benchmark on its canaried model."""
    sections = copy.deepcopy(sections_of(EXAMPLES_DIR / "Pulumi.frontdoor.yaml"))
    model = next(m for m in sections["models"] if m["name"] == CANARIED)
    model["benchmark"] = {"apiKeySecret": "bench-key", **bench}
    stack = stack_of(sections)
    return stack, resolved_model(stack, CANARIED)


def pod(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob" else obj["spec"]["template"]


# --- schedule ------------------------------------------------------------------------------------


def test_a_nightly_schedule_runs_the_jobs_own_pod_as_a_cronjob_never_two_at_once():
    stack, model, once = built(with_benchmark(schedule="0 3 * * *", timeZone="Europe/Berlin"))
    cron = cron_job(model, HOST, "models-bucket", stack.images)
    assert cron["apiVersion"] == "batch/v1" and cron["kind"] == "CronJob"
    assert cron["metadata"]["name"] == cron_job_name(model) == "bench-qwen3-8b-scheduled"
    spec = cron["spec"]
    assert spec["schedule"] == "0 3 * * *" and spec["timeZone"] == "Europe/Berlin"
    assert spec["concurrencyPolicy"] == "Forbid", "a run still going skips the next tick"
    assert spec["startingDeadlineSeconds"] == STARTING_DEADLINE_SECONDS
    assert spec["successfulJobsHistoryLimit"] == spec["failedJobsHistoryLimit"] == HISTORY
    assert pod(cron) == pod(once), "the same pod, identity, key, tokenizer and results path as the one-off Job"
    assert spec["jobTemplate"]["spec"]["backoffLimit"] == 0, "a miss is a failed run, not a retried one"
    assert pod(cron)["spec"]["serviceAccountName"] == "model-reader"


def test_each_scheduled_run_uploads_under_its_own_utc_time_so_runs_never_overwrite():
    stack, model, _ = built(with_benchmark(schedule="@daily"))
    upload = next(
        c for c in pod(cron_job(model, HOST, "b", stack.images))["spec"]["containers"] if c["name"] == "upload"
    )
    script = upload["command"][2]
    assert 'stamp="$(date -u +%Y%m%dT%H%M%SZ)"' in script and "$BENCH_PREFIX/$stamp/" in script


def test_a_schedule_alone_is_the_cronjob_only_and_a_gate_keeps_the_one_off_job_for_pulumi_up():
    _, plain, _ = built(with_benchmark())
    _, scheduled, _ = built(with_benchmark(schedule="0 3 * * *"))
    _, gated, _ = built(with_benchmark(schedule="0 3 * * *", gate=True, slo={"ttftSeconds": 1.0}))
    assert runs_once(plain), "no schedule: the one-off Job after pulumi up"
    assert not runs_once(scheduled), "a schedule without a gate: only the CronJob"
    assert runs_once(gated), "a gate needs a Job pulumi up awaits"


def test_a_schedule_does_not_rename_the_one_off_job():
    stack, model, _ = built(with_benchmark())
    _, scheduled, _ = built(with_benchmark(schedule="0 3 * * *", timeZone="UTC"))
    assert job_name(scheduled, stack.images) == job_name(model, stack.images), "the Job's pod is unchanged"


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("0 3 * *", "has 4 fields, not 5"),
        ("61 3 * * *", "minute field: '61' is outside 0-59"),
        ("0 24 * * *", "hour field"),
        ("0 3 0 * *", "day of month field"),
        ("0 3 * 13 *", "month field"),
        ("0 3 * * 7", "day of week field: '7' is outside 0-6"),
        ("*/0 * * * *", "above 0"),
        ("0 5-3 * * *", "starts after it ends"),
        ("CRON_TZ=Europe/Berlin 0 3 * * *", "set timeZone instead"),
        ("@nightly", "@daily"),
        ("nightly", "fields"),
        ("0 3 * * FUN", "day of week field"),
    ],
)
def test_a_schedule_kubernetes_refuses_is_refused_at_its_key_with_a_nightly_example(schedule, why):
    found = problems(with_benchmark(schedule=schedule))
    assert has(found, "models[0].benchmark.schedule", why, '"0 3 * * *"'), found


@pytest.mark.parametrize(
    "schedule",
    ["0 3 * * *", "*/15 * * * *", "0 2 * * MON-FRI", "30 1 1,15 * *", "5/10 * * * ?", "@weekly", "@every 6h"],
)
def test_every_schedule_form_a_cronjob_takes_is_accepted(schedule):
    assert problems_of(with_benchmark(schedule=schedule)) == []


def test_a_time_zone_must_be_an_iana_name_and_needs_a_schedule():
    assert has(problems(with_benchmark(schedule="0 3 * * *", timeZone="Local")), "models[0].benchmark.timeZone", "IANA")
    assert has(
        problems(with_benchmark(schedule="0 3 * * *", timeZone="Europe/Berlln")),
        "models[0].benchmark.timeZone",
        "not in the time zone database",
    )
    assert has(problems(with_benchmark(timeZone="Europe/Berlin")), "models[0].benchmark", "add schedule")


@pytest.mark.schemas
def test_the_cronjob_passes_the_kubernetes_schema_strictly():
    stack, model, _ = built(with_benchmark(schedule="0 3 * * *", timeZone="Europe/Berlin"))
    obj = json.loads(json.dumps(cron_job(model, HOST, "models-bucket", stack.images)))
    assert conformance.validate_core(obj, stack.config.cluster.kubernetes_version) == []


# --- canary ----------------------------------------------------------------------------------------


def test_a_canaried_models_benchmark_measures_the_stable_revision_through_its_own_rule_not_the_blend():
    _, model = canaried()
    runs = guidellm_runs(model, model.config.benchmark, HOST)
    targets = {r["argv"][r["argv"].index("--backend") + 1].split(",")[1] for r in runs}
    assert targets == {f"target=https://{HOST}/{CANARIED}/-/stable"}, "the stable revision's own rule only"
    assert all(r["revision"] == "stable" and r["commit"] == model.config.revision for r in runs)
    assert all(r["output"].startswith("/results/stable-concurrency-") for r in runs), "the files name it"
    argv = runs[0]["argv"]
    assert f"revision={model.config.revision}" in argv and "measured=stable" in argv, "and guidellm's own labels"


def test_the_stable_rule_reaches_the_stable_service_alone_on_the_models_own_route():
    stack, model = canaried()
    gateway = stack.platform.gateway
    parent = stack.platform.gateway_parent
    assert gateway is not None and parent is not None
    route = http_route(gateway, model, parent)
    weighted = [r for r in route["spec"]["rules"] if len(r["backendRefs"]) == 2]
    assert weighted, "the model's clients still get the weighted split"
    (pinned,) = [r for r in route["spec"]["rules"] if "/-/" in r["matches"][0]["path"]["value"]]
    assert pinned["matches"][0]["path"]["value"] == f"/{CANARIED}/-/stable/v1/chat/completions"
    assert pinned["backendRefs"] == [
        {"kind": "Service", "name": CANARIED, "namespace": model.namespace, "port": model.port}
    ], "the stable Service alone, no weight"
    assert pinned["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == "/v1/chat/completions"
    assert route["metadata"]["name"] == model.name, "the same route, so its SecurityPolicy admits the same keys"


def test_revisions_each_measures_stable_then_canary_and_the_verdict_names_each():
    stack, model = canaried(revisions="each")
    assert model.canary is not None
    runs = guidellm_runs(model, model.config.benchmark, HOST)
    assert [r["revision"] for r in runs] == ["stable"] * 3 + ["canary"] * 3
    assert {r["commit"] for r in runs if r["revision"] == "canary"} == {model.canary.config.revision}
    assert f"target=https://{HOST}/{CANARIED}/-/canary" in runs[-1]["argv"][runs[-1]["argv"].index("--backend") + 1]
    gateway, parent = stack.platform.gateway, stack.platform.gateway_parent
    assert gateway is not None and parent is not None
    pinned = [
        r for r in http_route(gateway, model, parent)["spec"]["rules"] if "/-/" in r["matches"][0]["path"]["value"]
    ]
    assert [r["backendRefs"][0]["name"] for r in pinned] == [CANARIED, f"{CANARIED}-canary"]
    slow = copy.deepcopy(SAMPLE)
    slow["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]["p95"] = 3000.0
    decided = benchmark_verdict.overall(
        [("stable", "aaa", {8: SAMPLE}), ("canary", "bbb", {8: slow})], {"ttftSeconds": 1.0}, 0.95
    )
    assert not decided["passed"]
    assert decided["revisions"] == {
        "stable": {"commit": "aaa", "passed": True},
        "canary": {"commit": "bbb", "passed": False},
    }
    assert decided["misses"] == [
        "canary revision: time_to_first_token_ms p95 3.000s > ttftSeconds 1.0s at concurrency 8"
    ]


def test_a_model_without_a_canary_keeps_its_route_files_and_verdict():
    _, model, _ = built(with_benchmark())
    runs = guidellm_runs(model, model.config.benchmark, HOST)
    assert all("revision" not in r and "--label" not in r["argv"] for r in runs)
    assert runs[0]["output"] == "/results/concurrency-1.json"
    assert benchmark_verdict.overall([(None, "", {8: SAMPLE})], {"ttftSeconds": 1.0}, 0.95)["passed"]


def test_the_job_is_renamed_when_the_canary_it_measures_changes():
    stack, model = canaried(revisions="each")
    sections = copy.deepcopy(sections_of(EXAMPLES_DIR / "Pulumi.frontdoor.yaml"))
    entry = next(m for m in sections["models"] if m["name"] == CANARIED)
    entry["benchmark"] = {"apiKeySecret": "bench-key", "revisions": "each"}
    entry["canary"]["revision"] = "1" * 40
    other = resolved_model(stack_of(sections), CANARIED)
    assert job_name(other, stack.images) != job_name(model, stack.images), "a Job's pod is immutable"
    assert job(model, HOST, "b", stack.images)["metadata"]["name"] == job_name(model, stack.images)


def test_revisions_each_without_a_canary_is_said_not_silent():
    found = warnings_of(with_benchmark(revisions="each"))
    assert has(found, "models[0].benchmark.revisions", "no canary"), found


# --- numbers guidellm or the engine cannot honour ----------------------------------------------------


def test_an_slo_percentile_guidellm_does_not_report_is_refused_when_the_benchmark_judges_it():
    found = problems(with_benchmark(slo={"ttftSeconds": 1.0, "p": 0.97}))
    assert has(found, "models[0].slo.p", "0.97", "0.95 or 0.99"), found
    assert problems_of(with_benchmark(slo={"ttftSeconds": 1.0, "p": 0.99})) == []
    assert problems_of(with_benchmark(slo={"e2eSeconds": 30, "p": 0.97})) == [], "the benchmark judges no e2e"


def test_every_percentile_the_verdict_reads_is_a_key_of_guidellms_report():
    keys = [benchmark_verdict.percentile_key(q) for q in GUIDELLM_PERCENTILES]
    assert keys == ["p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999"]


@pytest.mark.schemas
def test_the_percentiles_are_those_guidellms_metrics_guide_lists():
    assert SCHEMAS is not None
    guide = (Path(SCHEMAS) / "guidellm" / "main-ee7a7745" / "docs_guides_metrics.md").read_text()
    for q in GUIDELLM_PERCENTILES:
        key = benchmark_verdict.percentile_key(q)
        # The guide lists the median apart; schemas/statistics.py Percentiles has p50 beside the others.
        assert key == "p50" or f"({key})" in guide, key


def test_a_request_longer_than_the_models_context_is_refused():
    found = problems(with_benchmark(inputTokens=8000, outputTokens=500))
    assert has(found, "models[0].benchmark.inputTokens", "8500", "maxModelLen 8192"), found
    assert problems_of(with_benchmark(inputTokens=7000, outputTokens=1000)) == []


def test_fewer_requests_than_the_highest_concurrency_are_refused():
    found = problems(with_benchmark(concurrency=[1, 8, 32], requests=16))
    assert has(found, "models[0].benchmark.requests", "at least 32"), found


# --- the shipped example ------------------------------------------------------------------------------


def test_the_team_chat_example_runs_its_nightly_benchmark_of_each_revision_as_a_cronjob_only():
    from tests.conftest import stack_manifests

    objs = stack_manifests(EXAMPLES_DIR / "Pulumi.team-chat.yaml")
    crons = [o for o in objs if o["kind"] == "CronJob"]
    assert [c["metadata"]["name"] for c in crons] == ["bench-qwen3-8b-scheduled"]
    assert crons[0]["spec"]["schedule"] == "0 3 * * *" and crons[0]["spec"]["timeZone"] == "Europe/Berlin"
    assert not [o for o in objs if o["kind"] == "Job" and o["metadata"]["name"].startswith("bench-")], (
        "a schedule without a gate: no run after pulumi up"
    )
    guidellm = next(c for c in pod(crons[0])["spec"]["initContainers"] if c["name"] == "guidellm")
    runs = json.loads(next(e["value"] for e in guidellm["env"] if e["name"] == "BENCH_RUNS"))
    assert {r["revision"] for r in runs} == {"stable", "canary"}, "revisions: each"
    route = next(o for o in objs if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "qwen3-8b")
    paths = [r["matches"][0]["path"]["value"] for r in route["spec"]["rules"]]
    assert "/chat/qwen3-8b/-/stable/v1/chat/completions" in paths
    assert "/chat/qwen3-8b/-/canary/v1/chat/completions" in paths
