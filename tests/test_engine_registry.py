"""The engine registry and the import structure it relies on.

- Every module under components/, stacks/ and policypack/ (the CrossGuard pack) imports in a fresh interpreter, and the
  import graph read from the source (every `import` and `from ... import`, those inside functions
  included) has no cycle: with an acyclic graph no module depends on the order others were imported
  in, so importing them one after another in one interpreter stands for importing each on its own.
- Adding an engine is one module in `components.engines.ENGINES` plus its image pin in
  `stacks.versions.IMAGES`: a throwaway engine registered that way is resolved and built end to end.
- Every registered engine declares what the registry requires, and every engine a stack file may
  name (`models[].engine`) has a module and an image pin.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from components.engines import ENGINES
from components.engines.facts import OPENAI_PATHS, EngineFacts
from components.engines.spec import WorkloadSpec
from components.engines.workload import EngineContainer
from components.engines.workload import manifests as workload_manifests
from components.model_servers import model_objects, workload_spec
from stacks.config import ModelSection
from stacks.config.addons import AddonsSection
from stacks.load import ROOT, parse_sections
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


def toy_engine() -> types.ModuleType:
    """An engine module as components/engines/<engine>.py would be: FACTS, service, workload, manifests."""
    module = types.ModuleType("components.engines.toy")
    module.FACTS = EngineFacts(port=TOY_PORT, health_path="/livez", ready_path="/readyz", metrics_path="/stats")

    def service(model: ModelSection) -> tuple[str, int]:
        return f"{model.name}-toy", TOY_PORT

    def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
        # The shared workload builder names the Deployment after the Service (workload.name_of), so an
        # engine whose Service is not named after the model names its scale target the same way:
        # workload.deployment(model) would say model.name and miss it.
        del addons
        return "apps/v1", "Deployment", service(model)[0]

    def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
        container = EngineContainer(command=["toy-serve"], args=[spec.cache.model_dir, "--port", str(TOY_PORT)])
        return workload_manifests(spec, container)

    module.service, module.workload, module.manifests = service, workload, manifests
    return module


def test_a_model_whose_engine_the_config_does_not_list_is_refused_by_validation():
    raw = {"name": "toy-8b", "engine": TOY, "model": "acme/toy", "pool": "gpu"}
    with pytest.raises(ValidationError, match="engine"):
        ModelSection.model_validate(raw)


def test_a_registered_engine_is_resolved_and_built_end_to_end_with_no_other_change(monkeypatch):
    monkeypatch.setitem(ENGINES, TOY, toy_engine())
    monkeypatch.setitem(IMAGES, TOY, TOY_IMAGE)
    config = parse_sections(example(), "us-west-2")
    base = next(m for m in config.models if m.name == "qwen3-8b")
    # models[].engine is a Literal of the shipped engines: the one gate besides the registry and the
    # image pin, so the entry is constructed past validation (its other fields are the validated ones).
    # Scaled by the stack, not an HPA: an HPA scales on the engine's gauges, which stacks/metrics.py
    # ENGINE_METRICS would have to list for it.
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
    assert (model.service, model.port) == ("toy-8b-toy", TOY_PORT), "the Service the engine module names"
    assert model.image == TOY_IMAGE, "the image pin keyed by the engine's name"
    assert (model.metrics_path, model.metrics_port) == ("/stats", TOY_PORT), "scraped where its facts say"
    assert model.route_paths == OPENAI_PATHS, "routed on the OpenAI paths by default"
    assert model.workload == ("apps/v1", "Deployment", "toy-8b-toy"), "the workload the engine module names"
    assert model.pool.name == "gpu" and model.namespace == "inference"
    assert TOY not in stack.controller_namespaces, "no operator runs it"
    assert TOY in stack.dashboard_engines, "its dashboard is provisioned like any engine's"

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


# --- (c) the registry is complete -----------------------------------------------------------------

CONFIG_ENGINES = typing.get_args(ModelSection.model_fields["engine"].annotation)
# The functions every engine module must define, with the parameters components.engines.EngineModule names.
REQUIRED = {"service": ["model"], "workload": ["model", "addons"], "manifests": ["spec"]}


def test_the_config_names_the_engines_it_accepts():
    assert "vllm" in CONFIG_ENGINES and len(CONFIG_ENGINES) >= 8, CONFIG_ENGINES


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_registered_engine_declares_facts_service_workload_and_manifests(name):
    module = ENGINES[name]
    assert isinstance(getattr(module, "FACTS", None), EngineFacts), f"{name}: FACTS is its EngineFacts"
    for function, params in REQUIRED.items():
        fn = getattr(module, function, None)
        assert callable(fn), f"{name} has no {function}()"
        assert list(inspect.signature(fn).parameters) == params, f"{name}.{function} takes {params}"


@pytest.mark.parametrize("name", CONFIG_ENGINES)
def test_every_engine_a_stack_file_may_name_has_a_module_and_an_image_pin(name):
    assert name in ENGINES, f"models[].engine accepts {name} but components.engines.ENGINES has no module for it"
    assert name in IMAGES, f"models[].engine accepts {name} but stacks/versions.py IMAGES pins no image for it"
    assert IMAGES[name].repository and IMAGES[name].tag, f"{name}'s pin names a repository and a tag"


def test_every_registered_engine_is_one_a_stack_file_may_name():
    assert set(ENGINES) == set(CONFIG_ENGINES), "a module no models[].engine value reaches is dead code"
