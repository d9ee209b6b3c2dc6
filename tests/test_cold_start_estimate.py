"""The cold-start estimate (stacks/coldstart.py): each term from its documented facts, carried by `stacks plan
--json` for every model of every shipped stack, lowered by the fast path, and the one number every wait of a
model (its startup probe, its wake budget, its Pulumi await) is derived from with one safety factor."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from stacks import coldstart, coldstart_facts
from stacks.bench import LLAMA_GOAL_SECONDS, QWEN_GOAL_SECONDS, REFERENCES, SNAPSHOT_CASE, reference_estimate
from stacks.coldstart import budget, estimate, first_start, probe_allowance, safe
from stacks.coldstart_facts import FSR_URL, SAFETY_FACTOR, WAKE_BUDGET_CAP_SECONDS, Fact
from stacks.errors import ConfigError
from stacks.golden import stack_files
from stacks.load import ROOT
from stacks.pipeline import check_file, check_sections
from stacks.versions import MODEL_IMAGE_SIZES, MODEL_IMAGES

SHIPPED = stack_files()
ids = {"ids": [p.name for p in SHIPPED]}


def served_models(path):
    stack = check_file(path).stack
    return [m for model in stack.models for m in (model, model.canary) if m is not None], stack


def qwen():
    """The all-in-one dev stack's vLLM model and its platform's storage."""
    models, stack = served_models(ROOT / "Pulumi.dev.yaml")
    model = next(m for m in models if m.pool.accelerator == "nvidia" and m.prepared)
    return model, stack.platform.storage


def est(model, storage, **kw):
    args = {"prepared": model.prepared, "compile_cache": model.compile_cache, **kw}
    return estimate(model.config, model.pool, storage, model.cache, model.image, **args)


def test_every_pinned_engine_image_has_a_recorded_size_with_its_source():
    assert set(MODEL_IMAGE_SIZES) == set(MODEL_IMAGES), "a pinned image without a size would be estimated blind"
    for name, size in MODEL_IMAGE_SIZES.items():
        assert size.bytes > 1e9 and size.source, f"{name}: a size in bytes and where it is published"


def test_each_term_moves_with_its_fact(monkeypatch):
    model, storage = qwen()
    model = replace(model, pool=replace(model.pool, image_pull="standard"), compile_cache=False)
    before = est(model, storage)
    monkeypatch.setattr(coldstart, "GPU_NODE_READY", Fact(300, "s", "slower"))
    monkeypatch.setattr(coldstart, "PULL_STANDARD", Fact(10e6, "B/s", "slower"))
    monkeypatch.setattr(coldstart, "HUB", Fact(10e6, "B/s", "slower"))
    monkeypatch.setattr(coldstart, "NODE_DISK", Fact(10e6, "B/s", "slower"))
    monkeypatch.setattr(coldstart, "EFS_PER_CLIENT", Fact(10e6, "B/s", "slower"))
    monkeypatch.setattr(coldstart, "TORCH_COMPILE", Fact(1000, "s", "slower"))
    after = est(model, storage)
    for name in ("node", "image", "weights", "engine"):
        assert after.terms()[name].seconds > before.terms()[name].seconds, f"{name} reads its fact"


def test_the_weights_term_is_their_bytes_over_the_storage_path():
    model, storage = qwen()
    small = model.config.model_copy(update={"parameters": "1B"})
    big = model.config.model_copy(update={"parameters": "30B"})
    terms = [
        estimate(c, model.pool, storage, model.cache, model.image, prepared=True, compile_cache=False).weights
        for c in (small, big)
    ]
    assert terms[1].seconds > terms[0].seconds and "parameters in" in terms[1].source


def test_the_fast_path_lowers_the_estimate():
    model, storage = qwen()
    model = replace(model, pool=replace(model.pool, image_pull="standard"))
    slow = est(model, storage, compile_cache=False)
    soci = est(replace(model, pool=replace(model.pool, image_pull="soci")), storage, compile_cache=False)
    assert soci.image.seconds < slow.image.seconds, "SOCI parallel pull"
    warm = est(model, storage, compile_cache=True)
    assert warm.engine.seconds < slow.engine.seconds, "a warm compile cache skips torch.compile"
    node = est(replace(model, pool=replace(model.pool, warm_nodes=1)), storage)
    assert node.node.seconds == 0 < slow.node.seconds, "a warm node is already there"
    local = est(replace(model, cache=replace(model.cache, claim=None)), storage)
    streamed = est(replace(model, cache=replace(model.cache, streamed=True, claim=None)), storage)
    assert streamed.weights.seconds < local.weights.seconds, "streamed at the network's rate, not refilled per node"


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_plan_json_gives_every_model_its_estimate_and_each_term_its_source(path):
    out = subprocess.run(
        [sys.executable, "-m", "stacks", "plan", str(path), "--json"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    for model in json.loads(out.stdout)["models"]:
        terms = model["coldStartTerms"]
        assert set(terms) == {"node", "image", "weights", "engine"}, model["name"]
        assert model["coldStartSeconds"] == sum(t["seconds"] for t in terms.values()) > 0
        assert all(t["source"] for t in terms.values()), f"{model['name']}: every term names its source"


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_every_wait_of_every_model_is_its_estimate_times_the_safety_factor(path):
    models, _ = served_models(path)
    for m in models:
        first, warm = m.first_start_estimate, m.cold_start_estimate
        assert m.startup_seconds == probe_allowance(first) >= safe(first.in_container), f"{m.name}: the probe"
        assert m.allowance == first_start(first, m.startup_seconds), f"{m.name}: the await's allowance"
        assert m.await_seconds >= m.allowance.seconds >= safe(first.seconds) - 4, f"{m.name}: the await"
        if m.wake is not None:
            assert m.wake.cold_start == budget(warm), f"{m.name}: the wake budget"
            assert m.wake.cold_start.seconds <= min(2 * warm.seconds, WAKE_BUDGET_CAP_SECONDS), m.name


def test_the_safety_factor_keeps_a_wake_budget_within_twice_its_estimate():
    assert 1 < SAFETY_FACTOR < 2, "a margin, and room under twice the estimate for rounding"
    assert coldstart_facts.WAKE_BUDGET_CAP_SECONDS == 15 * 60


def test_a_scale_to_zero_model_whose_wake_would_exceed_fifteen_minutes_is_refused_at_its_key():
    sections = json.loads(
        json.dumps(
            check_file(ROOT / "stacks/examples/Pulumi.frontdoor.yaml").stack.config.model_dump(
                by_alias=True, exclude_none=True, mode="json"
            )
        )
    )
    idle = next(m for m in sections["models"] if m.get("autoscaling", {}).get("minReplicas") == 0)
    idle.pop("loadFormat", None)
    idle.update(parameters="32B", dtype="bf16")
    with pytest.raises(ConfigError) as err:
        check_sections(sections, "us-west-2")
    index = sections["models"].index(idle)
    assert f"models[{index}].autoscaling.minReplicas" in str(err.value) and "wake budget" in str(err.value)


SOCI_CASE = "Qwen3-8B bf16 on g6e.xlarge, FSx"


@pytest.mark.parametrize("label", list(REFERENCES))
def test_the_reference_models_estimates_on_paper_with_the_fast_path(label):
    estimate_, goal = reference_estimate(label)
    assert goal in (QWEN_GOAL_SECONDS, LLAMA_GOAL_SECONDS)
    if "Llama" in label:
        assert estimate_.seconds <= goal, f"{label}: {estimate_.seconds}s against {goal}s"
    elif label == SNAPSHOT_CASE:
        # From a pre-pulled image snapshot with fast snapshot restore the image is read, not pulled: 12.6 GB at
        # the data volume's 600 MiB/s is 21 s, so node 90 s + image 21 s + weights 52 s + engine 59 s = 222 s
        # meets the goal; the term says it comes from the snapshot path and cites AWS's FSR page.
        image = estimate_.image
        assert image.source.startswith("snapshot with fast snapshot restore") and FSR_URL in image.source, image
        assert image.seconds < reference_estimate(SOCI_CASE)[0].image.seconds, "a read, not a pull"
        assert estimate_.seconds <= goal, f"{label}: {estimate_.seconds}s against {goal}s"
    else:
        # Honest figures miss the 4-minute goal by about half a minute (node 90 s + image 71 s + weights 52 s +
        # engine 59 s): docs/performance.md says so; a warm node (nodePools[].warmNodes) meets it.
        assert estimate_.seconds > goal and estimate_.seconds - estimate_.node.seconds <= goal, label


def test_the_plans_text_prints_each_models_estimate_and_waits_beside_its_fit():
    from stacks.plan import plan

    models, stack = served_models(ROOT / "stacks/examples/Pulumi.frontdoor.yaml")
    text = plan(stack)
    for m in models:
        assert f"cold start: {m.cold_start_estimate.seconds}s" in text, m.name
    idle = next(m for m in models if m.wake is not None)
    assert f"wake budget {idle.wake.cold_start.seconds}s" in text
