"""`models[].neuron.compile: ahead`: a Job compiles a Neuron model's graphs into the shared cache, with exactly
the serving flags, image and devices, before the serving pods start; they load instead of compiling."""

from __future__ import annotations

import copy
import os
import stat
import subprocess
from pathlib import Path

import pytest

from components.engines.neuron_vllm import COMPILED_MARKER, compile_command
from stacks.awaits import ESTIMATED_SECONDS, TIMEOUT_SECONDS
from stacks.coldstart_facts import NEURON_CACHED, NEURON_COMPILE
from stacks.errors import ConfigError
from stacks.lifecycle_report import as_json, lifecycle
from stacks.load import ROOT
from stacks.plan import plan, plan_json
from tests.builders import by_kind, engine_objects, resolved_model, resolved_stack, sourced
from tests.conftest import rendered_stack, sections_of

FSX = ROOT / "stacks" / "examples" / "Pulumi.storage-fsx.yaml"
EFS = ROOT / "stacks" / "examples" / "Pulumi.storage-efs.yaml"
MODEL = "llama-3-8b-neuron"


def neuron_index(sections: dict) -> int:
    return next(i for i, m in enumerate(sections["models"]) if m["name"] == MODEL)


def objects(sections: dict) -> list[dict]:
    return engine_objects(resolved_stack(sourced(sections)), MODEL)


def pod_of(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


def refusals(sections: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        resolved_stack(sourced(sections))
    return [str(p) for p in caught.value.problems]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container["env"]}


# ---- the Job ---------------------------------------------------------------------------------------------


def test_the_compile_job_runs_exactly_the_serving_flags_image_env_devices_and_placement():
    found = objects(sections_of(FSX))
    [job], [deploy] = by_kind(found, "Job"), by_kind(found, "Deployment")
    compiler, server = pod_of(job)["containers"][0], pod_of(deploy)["containers"][0]
    assert compiler["args"] == server["args"], "one list of flags: the artifact is compiled for what is served"
    assert compiler["image"] == server["image"], "the same Neuron SDK image"
    assert env_of(compiler) == env_of(server), "the same NEURON_COMPILED_ARTIFACTS and compile cache"
    assert compiler["resources"] == server["resources"], (
        "the replica's Neuron devices: vllm-neuron loads after compiling"
    )
    for key in ("nodeSelector", "tolerations", "schedulerName", "volumes", "serviceAccountName", "initContainers"):
        assert pod_of(job).get(key) == pod_of(deploy).get(key), f"{key}: the serving pod's own"
    assert compiler["command"][:2] == ["/bin/sh", "-c"] and 'vllm serve "$@"' in compiler["command"][2]


def test_the_compile_job_is_no_endpoint_of_the_model_and_is_not_restarted_in_place():
    found = objects(sections_of(FSX))
    [job], [service] = by_kind(found, "Job"), by_kind(found, "Service")
    labels = job["spec"]["template"]["metadata"]["labels"]
    selector = service["spec"]["selector"]
    assert not all(labels.get(k) == v for k, v in selector.items()), "the Service never sends traffic to the Job"
    pod = pod_of(job)
    assert pod["restartPolicy"] == "Never" and "topologySpreadConstraints" not in pod
    assert not {"startupProbe", "readinessProbe", "livenessProbe"} & set(pod["containers"][0]), (
        "a Job is done, not ready"
    )


def test_the_compile_jobs_deadline_and_await_come_from_its_compile_estimate():
    stack = resolved_stack(sourced(sections_of(FSX)))
    model = resolved_model(stack, MODEL)
    ahead = model.ahead_compile
    assert ahead is not None and ahead.estimate.engine.seconds == int(NEURON_COMPILE.value)
    assert ahead.deadline_seconds > ahead.estimate.seconds, "the estimate times the safety factor"
    [job] = by_kind(engine_objects(stack, MODEL), "Job")
    assert job["spec"]["activeDeadlineSeconds"] == ahead.deadline_seconds
    annotations = job["metadata"]["annotations"]
    assert int(annotations[TIMEOUT_SECONDS]) > ahead.deadline_seconds, "pulumi up reports the Job's own failure"
    assert annotations[ESTIMATED_SECONDS] == str(ahead.estimate.seconds)


# ---- the Job's script, run with stand-ins for vllm and python3 --------------------------------------------------


def run_script(
    tmp_path: Path, vllm_body: str, marker: bool = False, healthy: bool = True
) -> subprocess.CompletedProcess[str]:
    bin_dir, artifacts = tmp_path / "bin", tmp_path / "artifacts"
    bin_dir.mkdir()
    artifacts.mkdir()
    if marker:
        (artifacts / COMPILED_MARKER).touch()
    scripts = {
        "vllm": f'#!/bin/sh\necho "$@" > "{tmp_path}/called"\n{vllm_body}\n',
        # The health check answers once the server recorded its args (no poll interval, no race); an
        # unhealthy one fails after the server had time to exit.
        "python3": f'#!/bin/sh\nwhile [ ! -f "{tmp_path}/called" ]; do sleep 0.05; done\n'
        + ("" if healthy else "sleep 0.3\nexit 1\n"),
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(stat.S_IRWXU)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NEURON_COMPILED_ARTIFACTS": str(artifacts)}
    command = [*compile_command(), "/models/m", "--max-num-seqs", "8"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=20)


def test_the_job_compiles_with_the_serving_args_then_marks_the_key_compiled(tmp_path: Path):
    done = run_script(tmp_path, 'trap "exit 0" TERM\nwhile :; do sleep 0.05; done')
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "called").read_text().split() == ["serve", "/models/m", "--max-num-seqs", "8"]
    assert (tmp_path / "artifacts" / COMPILED_MARKER).exists(), "the next Job of this key skips"


def test_the_job_exits_at_once_when_its_key_is_already_compiled(tmp_path: Path):
    done = run_script(tmp_path, "exit 3", marker=True)
    assert done.returncode == 0 and not (tmp_path / "called").exists(), "idempotent: no second compile"


def test_a_server_that_dies_before_serving_fails_the_job_and_marks_nothing(tmp_path: Path):
    done = run_script(tmp_path, "exit 3", healthy=False)
    assert done.returncode == 1 and "nothing compiled" in done.stdout
    assert not (tmp_path / "artifacts" / COMPILED_MARKER).exists()


# ---- keys -------------------------------------------------------------------------------------------------


def artifacts(sections: dict) -> str:
    [deploy] = by_kind(objects(sections), "Deployment")
    return env_of(pod_of(deploy)["containers"][0])["NEURON_COMPILED_ARTIFACTS"]


@pytest.mark.parametrize(
    "change",
    [
        {"revision": "1" * 40},
        {"maxModelLen": 2048},
        {"engineArgs": ["--max-num-seqs", "4"]},
        {"image": {"tag": "0.16.0-neuronx-py312-sdk2.31.0-ubuntu24.04"}},
    ],
    ids=["revision", "max-model-len", "engine-args", "image"],
)
def test_a_new_revision_length_flag_or_image_compiles_under_a_new_key(change: dict):
    sections = sections_of(FSX)
    before = artifacts(sections)
    changed = copy.deepcopy(sections)
    changed["models"][neuron_index(changed)].update(change)
    assert artifacts(changed) != before, "vllm-neuron would load the old graphs and ignore the new flags"


# ---- when it is on ---------------------------------------------------------------------------------------------


def test_ahead_is_the_default_on_prod_with_a_shared_cache_and_on_start_elsewhere():
    sections = sections_of(EFS)
    assert resolved_model(resolved_stack(sourced(sections)), MODEL).ahead_compile is None, "dev compiles on start"
    prod = copy.deepcopy(sections)
    prod["stack"]["environment"] = "prod"
    from stacks.load import parse_sections
    from stacks.pipeline import platform_of, repo_platform
    from stacks.resolve import resolve

    config = parse_sections(sourced(prod), "us-west-2")
    stack = resolve(config, platform_of(config, repo_platform)[0])
    assert resolved_model(stack, MODEL).ahead_compile is not None, "prod with efs compiles ahead"
    off = copy.deepcopy(prod)
    off["models"][neuron_index(off)]["neuron"] = {"compile": "on-start"}
    config = parse_sections(sourced(off), "us-west-2")
    stack = resolve(config, platform_of(config, repo_platform)[0])
    assert resolved_model(stack, MODEL).ahead_compile is None, "on-start as written"


# ---- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache", ["local", "none"])
def test_ahead_compile_without_a_shared_cache_is_refused_at_its_key(cache: str):
    sections = sections_of(FSX)
    sections["storage"] = {"modelCache": cache, **({"local": {}} if cache == "local" else {})}
    found = [p for p in refusals(sections) if f"models[{neuron_index(sections)}].neuron.compile" in p]
    assert found and cache in found[0] and "efs or fsx" in found[0] and "on-start" in found[0], found


@pytest.mark.parametrize("revision", [None, "main"])
def test_ahead_compile_without_a_pinned_revision_is_refused_at_the_revision(revision: str | None):
    sections = sections_of(FSX)
    model = sections["models"][neuron_index(sections)]
    model.pop("revision")
    if revision:
        model["revision"] = revision
    key = f"models[{neuron_index(sections)}].revision"
    found = [p for p in refusals(sections) if key in p and "neuron.compile" in p]
    assert found and "40-hex" in found[0], found


def test_a_neuron_block_on_another_engine_is_refused():
    sections = sections_of(FSX)
    other = next(m for m in sections["models"] if m["engine"] != "neuron-vllm")
    other["neuron"] = {"compile": "ahead"}
    found = refusals(sections)
    assert any("neuron block only applies to engine: neuron-vllm" in p for p in found), found


# ---- what the serving pod, plan and lifecycle make of it ---------------------------------------------------------


def test_the_serving_pods_first_start_loads_instead_of_compiling_and_its_probe_follows():
    sections = sections_of(FSX)
    ahead = resolved_model(resolved_stack(sourced(sections)), MODEL)
    on_start = copy.deepcopy(sections)
    on_start["models"][neuron_index(on_start)]["neuron"] = {"compile": "on-start"}
    compiling = resolved_model(resolved_stack(sourced(on_start)), MODEL)
    assert ahead.first_start_estimate.engine.seconds == int(NEURON_CACHED.value)
    assert "compile Job" in ahead.first_start_estimate.engine.source
    assert compiling.first_start_estimate.engine.seconds == int(NEURON_COMPILE.value)
    assert ahead.startup_seconds < compiling.startup_seconds, "the startup probe no longer allows a compile"
    assert not any(o["kind"] == "Job" for o in engine_objects(resolved_stack(sourced(on_start)), MODEL))


def test_the_plan_reports_the_compile_job_apart_from_the_serving_pods_start():
    stack = resolved_stack(sourced(sections_of(FSX)))
    text = plan(stack)
    assert "neuron compile Job, before the serving pods" in text and "engine 3600s" in text
    model = next(m for m in plan_json(stack)["models"] if m["name"] == MODEL)
    assert model["aheadCompile"]["terms"]["engine"]["seconds"] == int(NEURON_COMPILE.value)
    assert model["aheadCompile"]["deadlineSeconds"] > model["aheadCompile"]["seconds"]


def test_the_serving_workload_waits_for_the_compile_job_in_the_program_and_in_lifecycle():
    rendered = rendered_stack(FSX)
    job = next(r for r in rendered.resources if r.type == "kubernetes:batch/v1:Job" and "neuron-compile" in r.name)
    deploy = next(r for r in rendered.resources if r.type == "kubernetes:apps/v1:Deployment" and r.name.endswith(MODEL))
    assert job.urn in deploy.depends_on, "pulumi up creates the Deployment after the Job completes"
    report = as_json(lifecycle(rendered.resources))
    waves = {urn: i for i, wave in enumerate(report["waves"]) for urn in wave}
    assert waves[job.urn] < waves[deploy.urn]
    row = next(r for r in report["resources"] if r["urn"] == job.urn)
    assert row["seconds"] >= int(NEURON_COMPILE.value), "the compile counts on the first pulumi up's critical path"
