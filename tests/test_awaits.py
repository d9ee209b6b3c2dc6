"""What `pulumi up` waits for, and how long: every workload the program applies waits at least its
whole startup allowance (or is not awaited because something else gates it), and every Helm release's
timeout covers what its release waits for. Read from the rendered objects of every shipped stack, the
prod 70B stack among them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stacks.awaits import (
    IMAGE_PULL_SECONDS,
    NODE_LAUNCH_SECONDS,
    PROVIDER_DEFAULT_SECONDS,
    SKIP_AWAIT,
    TIMEOUT_SECONDS,
    WAIT_FOR,
    pod_window,
    probe_window,
)
from stacks.charts import charts_dir
from stacks.coldstart import probe_allowance, safe
from stacks.golden import stack_files
from stacks.pipeline import check_file
from stacks.resolved import ResolvedModel
from stacks.versions import CHARTS, HELM_DEFAULT_TIMEOUT_SECONDS, RELEASE_WAITS, Chart, release_wait
from tests.conftest import EXAMPLES_DIR, rendered_stack

SHIPPED = stack_files()
PROD_70B = EXAMPLES_DIR / "Pulumi.prod-70b.yaml"
WORKLOADS = {
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:batch/v1:Job",
}
RELEASE = "kubernetes:helm.sh/v3:Release"
ids = {"ids": lambda p: p.stem.removeprefix("Pulumi.")}


def models_of(path: Path) -> dict[tuple[str, str], ResolvedModel]:
    """Each resolved model (and canary) by (namespace, workload name)."""
    stack = check_file(path).stack
    every = [w for m in stack.models for w in (m, m.canary) if w is not None]
    return {(m.namespace, m.workload[2]): m for m in every}


def annotations(inputs: dict[str, Any]) -> dict[str, str]:
    return dict((inputs.get("metadata") or {}).get("annotations") or {})


def pod_spec(inputs: dict[str, Any]) -> dict[str, Any]:
    return dict(inputs["spec"]["template"]["spec"])


# --- the allowance, computed once ----------------------------------------------------------------


def test_a_70b_models_allowance_is_its_first_start_estimate_times_the_safety_factor():
    model = models_of(PROD_70B)[("inference", "llama-70b")]
    allowance, first = model.allowance, model.first_start_estimate
    assert first.first and first.fill > 0, "the preparation fills 140 GB from Hugging Face on a first start"
    assert (allowance.node_launch, allowance.image_pull, allowance.fill) == (
        safe(first.node.seconds),
        safe(first.image.seconds),
        safe(first.fill),
    ), "each term of the first start's estimate times the one safety factor"
    assert allowance.startup == model.startup_seconds == probe_allowance(first), "the startup probe's, not a copy"
    assert allowance.seconds >= safe(first.seconds) - 3, "the whole first start, with the factor"
    # Two replicas, no surge: an update replaces one replica at a time, each a whole allowance.
    assert model.await_seconds == 2 * allowance.seconds


def test_the_prod_70b_deployment_waits_its_whole_rollout_instead_of_the_providers_ten_minutes():
    (record,) = [
        r
        for r in rendered_stack(PROD_70B).resources
        if r.type == "kubernetes:apps/v1:Deployment" and r.name.endswith("-llama-70b")
    ]
    model = models_of(PROD_70B)[("inference", "llama-70b")]
    timeout = int(annotations(record.inputs)[TIMEOUT_SECONDS])
    assert timeout == model.await_seconds > PROVIDER_DEFAULT_SECONDS
    assert record.inputs["spec"]["progressDeadlineSeconds"] == model.allowance.seconds, (
        "the controller calls a rollout stalled only after a new pod's whole allowance"
    )


def test_a_model_woken_from_zero_waits_no_cache_fill():
    model = next(m for m in models_of(EXAMPLES_DIR / "Pulumi.frontdoor.yaml").values() if m.wake is not None)
    assert model.wake is not None and model.wake.cold_start.fill == 0, "its cache was filled on its first start"


def test_a_probe_window_is_its_delay_and_its_failures_in_periods_with_the_kubernetes_defaults():
    assert probe_window({"periodSeconds": 10, "failureThreshold": 180}) == 1800
    assert probe_window({"initialDelaySeconds": 30}) == 60
    assert probe_window(None) == 0


# --- every workload of every shipped stack ---------------------------------------------------------


def await_problems(path: Path) -> list[str]:
    """Every workload whose await is shorter than what it may take to become ready."""
    models = models_of(path)
    found = []
    for record in rendered_stack(path).resources:
        if record.type not in WORKLOADS:
            continue
        notes, inputs = annotations(record.inputs), record.inputs
        meta = inputs["metadata"]
        if notes.get(SKIP_AWAIT) == "true":
            if record.type != "kubernetes:batch/v1:Job":
                found.append(f"{record.name}: only a Job another resource gates may skip its await")
            continue
        if TIMEOUT_SECONDS not in notes:
            found.append(f"{record.name}: no {TIMEOUT_SECONDS}: the provider's {PROVIDER_DEFAULT_SECONDS}s apply")
            continue
        timeout = int(notes[TIMEOUT_SECONDS])
        needed = IMAGE_PULL_SECONDS + pod_window(pod_spec(inputs))
        if record.type == "kubernetes:batch/v1:Job":
            needed = max(needed, int(inputs["spec"].get("activeDeadlineSeconds", 0)))
        model = models.get((meta.get("namespace", ""), meta["name"]))
        if model is not None:
            # A model's pull is its own image's estimate (stacks/coldstart.py), not the platform services' figure.
            needed = 0
            window = pod_window(pod_spec(inputs))
            if model.allowance.startup < window:
                found.append(f"{record.name}: its allowance counts {model.allowance.startup}s of a {window}s probe")
            a = model.allowance
            needed = max(needed, model.await_seconds, a.node_launch + a.image_pull + a.fill + window)
        if timeout < needed:
            found.append(f"{record.name}: waits {timeout}s, may take {needed}s")
    return found


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_no_workload_waits_less_than_its_startup_allowance(path):
    problems = await_problems(path)
    assert not problems, "workloads `pulumi up` would give up on while they still start:\n" + "\n".join(problems)


def test_every_model_workload_of_the_shipped_stacks_is_checked_against_its_resolved_allowance():
    checked = {
        path.stem: sorted(
            r.name
            for r in rendered_stack(path).resources
            if r.type == "kubernetes:apps/v1:Deployment" and TIMEOUT_SECONDS in annotations(r.inputs)
        )
        for path in (PROD_70B, EXAMPLES_DIR / "Pulumi.engines.yaml")
    }
    assert checked["Pulumi.prod-70b"] == [
        "platform-models-deployment-llama-70b",
        "platform-models-deployment-llama-70b-grace",
    ]
    assert len(checked["Pulumi.engines"]) >= 5, checked


def test_the_await_check_sees_a_deployment_without_an_annotation(monkeypatch):
    import tests.test_awaits as me

    record = rendered_stack(PROD_70B).resources
    bare = next(r for r in record if r.type == "kubernetes:apps/v1:Deployment")
    inputs = {**bare.inputs, "metadata": {**bare.inputs["metadata"], "annotations": {}}}
    fake = type(bare)(**{**bare.__dict__, "inputs": inputs})
    monkeypatch.setattr(me, "rendered_stack", lambda _p: type("R", (), {"resources": [fake]})())
    assert me.await_problems(PROD_70B) == [
        f"{bare.name}: no {TIMEOUT_SECONDS}: the provider's {PROVIDER_DEFAULT_SECONDS}s apply"
    ]


# --- Helm releases -------------------------------------------------------------------------------


def test_every_catalog_chart_has_one_release_wait_with_its_reason():
    assert set(RELEASE_WAITS) == set(CHARTS), "a chart without a wait, or a wait without a chart"
    assert all(w.reason for w in RELEASE_WAITS.values())


def test_a_release_whose_pods_may_land_on_a_karpenter_node_waits_for_the_node_too():
    for key, wait in RELEASE_WAITS.items():
        if wait.placement == "none":
            assert wait.timeout >= HELM_DEFAULT_TIMEOUT_SECONDS, f"{key}: no pods, the API calls alone"
            continue
        floor = IMAGE_PULL_SECONDS + (NODE_LAUNCH_SECONDS if wait.placement == "anywhere" else 0)
        assert wait.timeout > floor, f"{key}: {wait.timeout}s does not cover its {wait.placement} pods"


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_every_helm_release_has_a_timeout_covering_its_waits(path):
    for record in rendered_stack(path).resources:
        if record.type != RELEASE:
            continue
        chart = record.inputs["chart"].rsplit("/", 1)[-1]
        wait = release_wait(Chart(chart, "", ""))  # by chart name: the catalog's charts and CRD charts
        assert record.inputs.get("timeout") == wait.timeout, f"{record.name}: Helm's 300s would apply"


CHARTS_DIR = charts_dir()  # $INFERENCE_PLATFORM_CHARTS, else ../shared/charts; None when absent


def chart_dir(key: str) -> Path | None:
    """The pinned chart's directory on file (`<chart>-<version>`, any version of it), or None."""
    if not CHARTS_DIR:
        return None
    name = CHARTS[key].chart
    found = sorted(
        p.parent
        for p in Path(CHARTS_DIR).glob(f"{name}-*/Chart.yaml")
        if re.fullmatch(rf"{re.escape(name)}-v?\d[\w.]*", p.parent.name)
    )
    return found[-1] if found else None


def creates_services(directory: Path) -> bool:
    templates = [p for p in directory.rglob("templates/**/*.yaml") if "/crds/" not in p.as_posix()]
    return any("kind: Service\n" in p.read_text() for p in templates)


@pytest.mark.charts
def test_the_catalog_says_which_charts_create_services_as_the_charts_on_file_do():
    on_file = {key: d for key in CHARTS if (d := chart_dir(key)) is not None}
    assert on_file, "the pinned charts are on file (the charts marker leaves this test out otherwise)"
    wrong = {
        key: creates_services(d) for key, d in on_file.items() if RELEASE_WAITS[key].services != creates_services(d)
    }
    assert not wrong, f"RELEASE_WAITS says otherwise than the chart (key: whether it creates Services): {wrong}"
    assert len(on_file) >= 12, sorted(on_file)


# What "ready" means for the custom resources an operator turns into a model's pods (each looked up in
# the operator's API at the pinned version; see the builders' comments).
OPERATOR_READY = {
    "LeaderWorkerSet": "condition=Available",
    "RayService": "condition=Ready",
    "NIMService": "condition=NIM_SERVICE_READY",
    "DynamoGraphDeployment": "jsonpath={.status.state}=successful",
}


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_every_model_an_operator_runs_is_awaited_until_served_for_its_whole_allowance(path):
    """The provider waits for no custom resource without pulumi.com/waitFor: without it `pulumi up`
    (and a gated benchmark after the model) would go on while a LeaderWorkerSet's group still loads."""
    stack = check_file(path).stack
    allowance = {(m.namespace, m.workload[2]): m.await_seconds for m in stack.models}
    found = 0
    for record in rendered_stack(path).resources:
        kind = record.inputs.get("kind")
        if kind not in OPERATOR_READY:
            continue
        meta = record.inputs["metadata"]
        annotations = meta.get("annotations") or {}
        assert annotations.get(WAIT_FOR) == OPERATOR_READY[kind], f"{kind} {meta['name']}: no readiness to wait for"
        want = allowance.get((meta["namespace"], meta["name"]))
        if want is not None:
            found += 1
            assert int(annotations[TIMEOUT_SECONDS]) == want, f"{kind} {meta['name']}: its await is its allowance"
    assert found or not any(m.workload[1] in OPERATOR_READY for m in stack.models)
