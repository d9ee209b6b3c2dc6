"""The engine registry and the import structure it relies on.

- Every module under components/, stacks/ and policypack/ (the CrossGuard pack) imports in a fresh interpreter, and the
  import graph read from the source (every `import` and `from ... import`, those inside functions
  included) has no cycle: with an acyclic graph no module depends on the order others were imported
  in, so importing them one after another in one interpreter stands for importing each on its own.
- Adding an engine is its module (one `EngineSpec`), its line in `components.engines.ENGINES` and its
  image pin: a throwaway engine registered that way is resolved and built end to end; a spec that
  leaves out any fact fails when it is built.
- Every registered engine is one typed spec running a pinned image, and every engine a stack file may
  name (`models[].engine`) has one.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from components.engines import ENGINES
from components.engines.spec import EngineSpec, WorkloadSpec, no_problems, overridden
from components.engines.workload import EngineContainer, server_pods
from components.engines.workload import manifests as workload_manifests
from components.model_servers import model_objects, workload_spec
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.engine_facts import ONE_NODE, OPENAI_PATHS, Dialect, EngineFacts, Groups, ModelFacts, Scaling
from stacks.load import ROOT
from stacks.pipeline import check_sections
from stacks.resolve import resolve
from stacks.resolved import MODEL_LABEL
from stacks.versions import IMAGES, Image
from tests.builders import by_kind
from tests.engines_helpers import engine_container, example

PACKAGES = ("components", "stacks", "policypack")
# Assembling the policy pack starts its gRPC server (policypack/__init__.py): run by the CLI, never imported.
NOT_IMPORTED = {"policypack.__main__"}


# --- (a) imports ---------------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Module name -> source file, for every module of the project's packages."""
    return {
        _module_name(p): p
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The project modules one import statement names (a name imported from a package is its
    submodule when there is one, else the package itself)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        parts = (module if is_package else module.rpartition(".")[0]).split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        source = ".".join([*parts, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a module, at any depth (in functions, classes, branches, handlers and
    match cases): an import is a statement, so the expressions, nine nodes in ten, are not walked."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, field, None) or [])
        for holder in [*getattr(node, "handlers", []), *getattr(node, "cases", [])]:
            yield from _statements(holder.body)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports. Importing `a.b.c` first runs the packages `a` and
    `a.b`, so they count too, except the importer's own enclosing packages (already being imported
    when it runs)."""
    modules = project_modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges: set[str] = set()
        for node in _statements(ast.parse(path.read_text(), filename=str(path)).body):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, module, path.name == "__init__.py", known):
                while target and target not in known:  # `import a.b.name` of a non-module name
                    target = target.rpartition(".")[0]
                if not target or target == module:
                    continue
                edges.add(target)
                parent = target.rpartition(".")[0]
                while parent:
                    if module != parent and not module.startswith(parent + "."):
                        edges.add(parent)
                    parent = parent.rpartition(".")[0]
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (first module repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done and (found := visit(nxt)):
                return found
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (found := visit(start)):
            return found
    return None


IMPORT_EACH = """
import importlib, json, sys, traceback
failed = {}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except BaseException:
        failed[name] = traceback.format_exc(limit=-3)
print(json.dumps(failed))
"""


def test_every_module_imports_in_a_fresh_interpreter():
    names = [m for m in project_modules() if m not in NOT_IMPORTED]
    assert len(names) > 50, f"the walk found the project's modules: {names}"
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, json.dumps(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    failed = json.loads(result.stdout.splitlines()[-1])
    assert not failed, "modules that do not import:\n" + "\n".join(f"{n}:\n{tb}" for n, tb in failed.items())


def test_the_import_graph_read_from_the_source_has_no_cycle():
    graph = import_graph()
    assert "components.engines.vllm" in graph["components.engines"], "the graph sees `from . import vllm`"
    assert "stacks.resolve" in graph["components.platform"], "and `from stacks.resolve import ...`"
    cycle = find_cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle_and_the_parser_sees_imports_inside_functions():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    nested = (
        "class C:\n    def f(self):\n        with x:\n            import a\n"
        "try:\n    pass\nexcept E:\n    import b\nelse:\n    import c\nfinally:\n    import d\n"
        "match v:\n    case 1:\n        if y:\n            pass\n        else:\n            import e\n"
        "for i in z:\n    pass\nelse:\n    async def g():\n        import f\n"
    )
    seen = {a.name for n in _statements(ast.parse(nested).body) if isinstance(n, ast.Import) for a in n.names}
    assert seen == set("abcdef"), f"imports at every depth of a statement: {seen}"
    tree = ast.parse("def f():\n    from ..serving import aibrix\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    known = {"components.serving", "components.serving.aibrix"}
    assert _imported(node, "components.engines.vllm", False, known) == ["components.serving.aibrix"]


# --- (b) a throwaway engine, registered and nothing else ------------------------------------------

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
    startup_seconds=1800,
    metrics={},
    groups=Groups(builder=None, refused="the toy server runs on one node", tensor_spans_nodes=False, head_rule=None),
    scaling=Scaling(built_in=None, keda=None, to_zero=None),
    streams=False,
    lora=False,
    canary=False,
    revisions=True,
    efa_stack=ONE_NODE,
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
        Groups(builder=None, refused=None, tensor_spans_nodes=False, head_rule=None)


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
