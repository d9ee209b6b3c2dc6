"""The engine registry (the import structure it relies on: tests/test_structure.py).

- Adding an engine is its module (one `EngineSpec`), its line in `components.engines.ENGINES` and its
  image pin: a throwaway engine registered that way is resolved and built end to end; a spec that
  leaves out any fact fails when it is built.
- Every registered engine is one typed spec running a pinned image, and every engine a stack file may
  name (`models[].engine`) has one.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest
from pydantic import ValidationError

from components.engines import ENGINES
from components.engines.spec import EngineSpec, WorkloadSpec, no_problems
from components.engines.workload import EngineContainer, server_pods
from components.engines.workload import manifests as workload_manifests
from components.model_servers import model_objects, workload_spec
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import ONE_NODE, OPENAI_PATHS, Autoscalers, Dialect, EngineFacts, Groups, ModelFacts
from stacks.pipeline import check_sections
from stacks.resolve import resolve
from stacks.resolved import MODEL_LABEL
from stacks.versions import IMAGES, Image, overridden
from tests.builders import by_kind
from tests.engines_helpers import engine_container, example

# --- a throwaway engine, registered and nothing else ---------------------------------------------

TOY = "toy"
TOY_IMAGE = Image("registry.example.com/toy-server", "1.2.3")
TOY_PORT = 9000
TOY_FACTS = EngineFacts(
    title="Toy 1.2",
    port=TOY_PORT,
    health_path="/livez",
    ready_path="/readyz",
    metrics_path="/stats",
    metrics_port=None,
    route_paths=OPENAI_PATHS,
    management_paths=(),
    accelerators=("nvidia",),
    controller=None,
    platform_workload=True,
    picker_engine=None,
    picker_adapter_metric=None,
    metrics={},
    groups=Groups(
        builder=None,
        refused="the toy server runs on one node",
        tensor_spans_nodes=False,
        head_rule=None,
        fixed_sizes=None,
    ),
    autoscalers=Autoscalers(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    lora_from_prefix=False,
    lora_flags=False,
    canary=False,
    revisions=True,
    efa_stack=ONE_NODE,
    compile_cache_env={},
    serving_role=None,
    kv_offload=None,
    gpu_sharing=(),
    json_output=None,
)
TOY_DIALECT = Dialect(engine="Toy 1.2", owned={"--port": "sets the port"}, streamed={}, refused=None)


def toy_engine() -> EngineSpec:
    """An engine as components/engines/<engine>.py declares one: its facts, what it makes of a model
    (a Service not named after the model, to show the registry's names are the ones used) and its
    objects."""

    def model_facts(model: ModelSection, addons: AddonsSection) -> ModelFacts:
        del addons
        # The shared workload builder names the Deployment after the Service (workload.name_of).
        workload = ("apps/v1", "Deployment", f"{model.name}-toy")
        return ModelFacts(
            image=overridden(TOY_IMAGE, model.image),
            service=f"{model.name}-toy",
            port=TOY_PORT,
            workload=workload,
            keda_targets=(workload,),
            dialect=TOY_DIALECT,
            hub_repo=model.model,
            prepared=True,
            platform_images=(),
            names=(),
            addons=(),
            keda_floor=None,
        )

    def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
        container = EngineContainer(command=["toy-serve"], args=[spec.cache.model_dir, "--port", str(TOY_PORT)])
        return workload_manifests(spec, container)

    return EngineSpec(
        facts=TOY_FACTS,
        model_facts=model_facts,
        pods=server_pods,
        manifests=manifests,
        checks=no_problems,
        warnings=no_problems,
        no_traces="a toy engine exports no spans",
    )


def test_a_model_whose_engine_the_config_does_not_list_is_refused_by_validation():
    raw = {"name": "toy-8b", "engine": TOY, "model": "acme/toy", "pool": "gpu"}
    with pytest.raises(ValidationError, match="engine"):
        ModelSection.model_validate(raw)


def test_a_registered_engine_is_resolved_and_built_end_to_end_with_no_other_change(monkeypatch):
    monkeypatch.setitem(ENGINES, TOY, toy_engine())
    config = check_sections(example(), "us-west-2").config
    base = next(m for m in config.models if m.name == "qwen3-8b")
    # models[].engine is a Literal of the shipped engines: the one gate besides the registry and the
    # image pin, so the entry is constructed past validation (its other fields are the validated ones).
    # Scaled by the stack, not an HPA: an HPA scales on the engine's gauges, and the toy exports none.
    fields = {
        **dict(base),
        "name": "toy-8b",
        "engine": TOY,
        "autoscaling": base.autoscaling.model_copy(update={"owner": "none"}),
    }
    toy = ModelSection.model_construct(_fields_set=base.model_fields_set, **fields)
    stack = resolve(config.model_copy(update={"models": [toy]}))

    (model,) = stack.models
    assert model.engine == TOY and model.config is toy
    assert model.facts is TOY_FACTS and model.dialect is TOY_DIALECT, "the facts its spec declares"
    assert (model.service, model.port) == ("toy-8b-toy", TOY_PORT), "the Service the engine module names"
    assert model.image == TOY_IMAGE, "the image its spec pins"
    assert (model.metrics_path, model.metrics_port) == ("/stats", TOY_PORT), "scraped where its facts say"
    assert model.route_paths == OPENAI_PATHS, "routed on the OpenAI paths"
    assert model.workload == ("apps/v1", "Deployment", "toy-8b-toy"), "the workload the engine module names"
    assert model.pool.name == "gpu" and model.namespace == "inference"
    assert TOY not in stack.controller_namespaces, "no operator runs it"
    assert TOY in stack.dashboard_engines and stack.engines[TOY] is TOY_FACTS, "its dashboard is provisioned"

    objs = model_objects(
        workload_spec(model, stack.platform.storage, None, stack.platform.neuron_scheduler, images=stack.images)
    )
    assert [o["kind"] for o in objs] == ["Deployment", "Service", "PodDisruptionBudget"]
    (work,) = by_kind(objs, "Deployment")
    assert (work["apiVersion"], work["kind"], work["metadata"]["name"]) == model.scale_target
    assert work["metadata"]["namespace"] == model.namespace
    template = work["spec"]["template"]
    c = engine_container(work)
    assert c["image"] == TOY_IMAGE.ref and c["command"] == ["toy-serve"]
    assert c["ports"][0]["containerPort"] == TOY_PORT
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1", "sized and placed like any model on its pool"
    assert template["metadata"]["labels"][MODEL_LABEL] == "toy-8b", "the front door and scrapers select it"
    assert template["metadata"]["annotations"]["prometheus.io/path"] == "/stats"
    assert [i["name"] for i in template["spec"].get("initContainers", [])], "the cache prepares its weights"
    (svc,) = by_kind(objs, "Service")
    assert svc["metadata"]["name"] == "toy-8b-toy" and svc["spec"]["ports"][0]["port"] == TOY_PORT
    assert svc["spec"]["selector"] == work["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("fact", [f.name for f in dataclasses.fields(EngineFacts)])
def test_an_engine_spec_missing_any_fact_fails_when_its_module_is_imported(fact):
    """Every fact is required: left out, the engine module fails at import (TypeError), never reads as
    "does not apply" (the type checker refuses it too)."""
    given = {f.name: getattr(TOY_FACTS, f.name) for f in dataclasses.fields(EngineFacts) if f.name != fact}
    with pytest.raises(TypeError, match=fact):
        EngineFacts(**given)


@pytest.mark.parametrize("part", [f.name for f in dataclasses.fields(EngineSpec)])
def test_an_engine_spec_missing_its_facts_model_facts_or_builder_fails(part):
    spec = toy_engine()
    given = {f.name: getattr(spec, f.name) for f in dataclasses.fields(EngineSpec) if f.name != part}
    with pytest.raises(TypeError, match=part):
        EngineSpec(**given)


@pytest.mark.parametrize("fact", [f.name for f in dataclasses.fields(ModelFacts)])
def test_what_an_engine_makes_of_a_model_is_complete_or_it_fails(fact):
    made = toy_engine().model_facts(ModelSection.model_validate(MODEL), AddonsSection())
    given = {f.name: getattr(made, f.name) for f in dataclasses.fields(ModelFacts) if f.name != fact}
    with pytest.raises(TypeError, match=fact):
        ModelFacts(**given)


def test_an_engine_that_neither_builds_groups_nor_says_why_not_fails():
    with pytest.raises(ValueError, match="why it refuses"):
        Groups(builder=None, refused=None, tensor_spans_nodes=False, head_rule=None, fixed_sizes=None)


# --- (c) the registry is complete -----------------------------------------------------------------

CONFIG_ENGINES = typing.get_args(ModelSection.model_fields["engine"].annotation)
MODEL = {"name": "m", "engine": "vllm", "model": "Qwen/Qwen3-8B", "revision": "a" * 40, "pool": "gpu"}
# What the config requires of an entry of these engines besides the common keys.
ENGINE_BLOCKS: dict[str, dict[str, Any]] = {
    "nim": {"nim": {"profile": "a" * 64, "imagePullSecret": "ngc-pull"}},
    "tgi": {"tgi": {"acceptMaintenanceMode": True}},
}


def test_the_config_names_the_engines_it_accepts():
    assert "vllm" in CONFIG_ENGINES and len(CONFIG_ENGINES) >= 8, CONFIG_ENGINES


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_registered_engine_is_one_typed_spec_whose_image_is_pinned(name):
    spec = ENGINES[name]
    assert isinstance(spec, EngineSpec) and isinstance(spec.facts, EngineFacts), f"{name}: one EngineSpec"
    model = ModelSection.model_validate({**MODEL, "engine": name, **ENGINE_BLOCKS.get(name, {})})
    made = spec.model_facts(model, AddonsSection())
    assert isinstance(made, ModelFacts)
    assert made.image.repository and made.image.tag, f"{name}'s image is pinned in stacks/versions.py IMAGES"
    assert any(made.image == image for image in IMAGES.values()), f"{name} runs a catalog image"


@pytest.mark.parametrize("name", CONFIG_ENGINES)
def test_every_engine_a_stack_file_may_name_has_a_spec(name):
    assert name in ENGINES, f"models[].engine accepts {name} but components.engines.ENGINES has no spec for it"


def test_every_registered_engine_is_one_a_stack_file_may_name():
    assert set(ENGINES) == set(CONFIG_ENGINES), "a module no models[].engine value reaches is dead code"
