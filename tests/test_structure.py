"""The program's structure, read from its source: layers that only point down, one module per engine,
one place for each engine's name, and functions short enough to read.

- Every module imports in a fresh interpreter, and the import graph (tests/imports.py) has no cycle.
- Layers, bottom to top: the floor (the stack file's schema, the catalogs, the resolved types and the
  naming every layer shares), the engines (one module per engine, pure builders), parsing, resolution,
  the rules, the pipeline that runs them, the components (Pulumi wiring), and the commands on top. A
  module imports only from its own layer or below; a new module under stacks/ is on top until placed.
- Components read the resolved stack: from stacks/ they import only floor modules, never the parser,
  the resolver, the rules or the pipeline.
- An engine's name appears as a string in its module and the stack file's schema, and only in the
  listed places outside them, each for a reason: a stray `== "vllm"` is a second copy of an engine fact.
- No function of the program is longer than 60 lines.
- No two classes of the program share a name, and no comment sends the reader to a document outside the
  repository instead of saying what it says.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from components.engines import ENGINES
from stacks.load import ROOT
from tests.imports import NOT_IMPORTED, _imported, _statements, find_cycle, import_graph, project_modules

# --- imports and cycles --------------------------------------------------------------------------

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
    assert "stacks.exports" in graph["components.platform"], "and `from stacks.exports import ...`"
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


# --- layers --------------------------------------------------------------------------------------

# Bottom to top. A pattern ending in `.*` covers a package's submodules; the first layer that names a
# module is its layer. A package __init__ that imports nothing (a docstring) belongs to the floor.
FLOOR = (
    "stacks",
    "stacks.config",
    "stacks.config.*",
    "stacks.architectures",
    "stacks.awaits",
    "stacks.bedrock",
    "stacks.coldstart_facts",
    "stacks.engine_facts",
    "stacks.errors",
    "stacks.exports",
    "stacks.fastpath",
    "stacks.feasibility",
    "stacks.fit",
    "stacks.flags",
    "stacks.groups",
    "stacks.hardware",
    "stacks.helper_pods",
    "stacks.metrics",
    "stacks.naming",
    "stacks.offload",
    "stacks.paths",
    "stacks.pricing",
    "stacks.quantity",
    "stacks.regions",
    "stacks.resolved",
    "stacks.tiers",
    "stacks.sharing",
    "stacks.versions",
    "stacks.yamlread",
)
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("floor", FLOOR),
    (
        "engines",
        (
            "components.engines",
            "components.engines.*",
            "components.scheduling",
            "components.secretfiles",
            "components.serving.aibrix",
            "components.storage.cache",
            "components.storage.kvtier",
            "components.storage.prepare",
        ),
    ),
    ("parse", ("stacks.load",)),
    ("resolve", ("stacks.resolve", "stacks.resolve.*", "stacks.coldstart", "stacks.sizing")),
    ("rules", ("stacks.rules", "stacks.rules.*", "stacks.checks", "stacks.guards", "stacks.names")),
    ("pipeline", ("stacks.pipeline",)),
    ("components", ("components", "components.*")),
    (
        "commands",
        (
            "stacks.lifecycle",
            "stacks.lifecycle_facts",
            "stacks.lifecycle_hazards",
            "stacks.lifecycle_report",
            "stacks.*",
            "policypack",
            "policypack.*",
        ),
    ),
)


def _named(module: str, pattern: str) -> bool:
    return module.startswith(pattern[:-1]) if pattern.endswith(".*") else module == pattern


def layer_of(module: str, graph: dict[str, set[str]]) -> int:
    if not graph.get(module) and module in PACKAGE_INITS:
        return 0
    for index, (_, patterns) in enumerate(LAYERS):
        if any(_named(module, p) for p in patterns):
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_structure.py")


PACKAGE_INITS = {m for m, path in project_modules().items() if path.name == "__init__.py"}


def upward_edges(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer into a higher one, as `module (layer) -> target (layer)`."""
    found = []
    for module, targets in sorted(graph.items()):
        mine = layer_of(module, graph)
        for target in sorted(targets):
            theirs = layer_of(target, graph)
            if theirs > mine:
                found.append(f"{module} ({LAYERS[mine][0]}) -> {target} ({LAYERS[theirs][0]})")
    return found


def test_every_module_imports_only_from_its_own_layer_or_below():
    graph = import_graph()
    placed = {m: LAYERS[layer_of(m, graph)][0] for m in graph}
    assert placed["stacks.resolved"] == "floor" and placed["components.engines.vllm"] == "engines"
    assert placed["stacks.resolve.models"] == "resolve" and placed["components.platform"] == "components"
    assert placed["stacks.render"] == "commands", "a module no layer names is on top"
    edges = upward_edges(graph)
    assert not edges, "imports that point up a layer (move the fact down, or the module up):\n" + "\n".join(edges)


def test_the_layer_check_reports_an_import_that_points_up():
    graph = {"stacks.resolved": {"stacks.resolve.models"}, "stacks.resolve.models": {"stacks.resolved"}}
    assert upward_edges(graph) == ["stacks.resolved (floor) -> stacks.resolve.models (resolve)"]


def test_components_read_only_the_resolved_stack_and_the_floor_under_it():
    graph = import_graph()
    floor = [m for m in graph if layer_of(m, graph) == 0]
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith("components")
        for target in targets
        if target.startswith("stacks") and target not in floor
    )
    assert not wrong, "components that parse, resolve or check a stack themselves:\n" + "\n".join(wrong)


# --- one module per engine -----------------------------------------------------------------------

# Modules of components/engines that are not engines: what every engine shares.
ENGINE_SHARED = {"spec", "workload", "workers", "group", "streamer"}


def test_each_engine_is_one_module_of_components_engines_and_the_package_holds_nothing_else():
    for name, spec in ENGINES.items():
        module = sys.modules[f"components.engines.{name.replace('-', '_')}"]
        assert getattr(module, "SPEC", None) is spec, f"{name}: its spec is its own module's SPEC"
    found = {p.stem for p in (ROOT / "components" / "engines").glob("*.py")} - {"__init__"}
    engines = {n.replace("-", "_") for n in ENGINES}
    assert found - engines == ENGINE_SHARED, "a module that is neither an engine nor what engines share"


# An engine's name as a string outside its module and the stack file's schema, and why it is there.
ENGINE_NAME_PLACES = {
    ("components/gateway/picker.py", "vllm"): "the llm-d picker's default engine, in the picker's vocabulary",
    ("components/serving/platforms.py", "dynamo"): "the Dynamo operator's add-on key (addons.dynamo)",
    ("stacks/resolved.py", "dynamo"): "the Dynamo operator's namespace, by add-on key",
    ("stacks/resolve/secrets.py", "nim"): "the key path models[].nim.imagePullSecret (the model's nim section)",
    ("stacks/versions.py", "dynamo"): "the Dynamo platform chart's catalog key",
    ("stacks/versions.py", "sglang"): "the SGLang image's catalog key (its repository name)",
    ("stacks/versions.py", "ollama"): "the Ollama image's catalog key (its repository name)",
    ("stacks/bench.py", "vllm"): "the render benchmark's synthetic stack names its engines",
    ("stacks/bench.py", "neuron-vllm"): "the render benchmark's synthetic stack names its engines",
}
ENGINE_HOMES = {"components/engines", "stacks/config/models.py"}


def engine_name_places(root: Path) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for path in sorted([*root.glob("components/**/*.py"), *root.glob("stacks/**/*.py"), *root.glob("policypack/*.py")]):
        where = path.relative_to(root).as_posix()
        if any(where.startswith(home) for home in ENGINE_HOMES):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=where)):
            if isinstance(node, ast.Constant) and node.value in ENGINES:
                counts[(where, node.value)] = counts.get((where, node.value), 0) + 1
    return counts


def test_an_engine_name_is_written_only_in_its_module_and_the_listed_places():
    found = engine_name_places(ROOT)
    stray = sorted(
        f"{where}: {name!r} x{n}" for (where, name), n in found.items() if (where, name) not in ENGINE_NAME_PLACES
    )
    assert not stray, "an engine's name outside its module (read the fact from its EngineSpec instead):\n" + "\n".join(
        stray
    )
    gone = sorted(set(ENGINE_NAME_PLACES) - set(found))
    assert not gone, f"listed places that no longer name the engine (drop them from the list): {gone}"


def test_the_engine_name_count_sees_a_stray_comparison(tmp_path):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "x.py").write_text('def f(m):\n    return m.engine == "tgi"\n')
    assert engine_name_places(tmp_path) == {("stacks/x.py", "tgi"): 1}


# --- short functions -----------------------------------------------------------------------------

LONGEST = 60


def long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.glob("*.py")) + sorted(
        p for pkg in ("components", "stacks", "policypack") for p in (root / pkg).rglob("*.py")
    ):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=where)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONGEST:
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_of_the_program_is_longer_than_sixty_lines():
    found = long_functions(ROOT)
    assert not found, f"functions over {LONGEST} lines (split them by what they decide):\n" + "\n".join(found)


@pytest.mark.parametrize(("body", "long"), [(LONGEST - 1, False), (LONGEST, True)])
def test_the_length_check_counts_the_def_line_and_the_body(tmp_path, body, long):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "x.py").write_text("def f():\n" + "    x = 1\n" * body)
    assert bool(long_functions(tmp_path)) is long


# --- names with one meaning, comments that explain -------------------------------------------------


def program_files(root: Path) -> list[Path]:
    return sorted(root.glob("*.py")) + sorted(
        p for pkg in ("components", "stacks", "policypack") for p in (root / pkg).rglob("*.py")
    )


def shared_class_names(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in program_files(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(path.relative_to(root).as_posix())
    return {name: where for name, where in found.items() if len(where) > 1}


def test_no_two_classes_of_the_program_share_a_name():
    """A stack-file section and the component that builds it, or the resolved view and a fit input, are
    different things: `Endpoint`, `Platform` or `Monitoring` naming two of them sends a reader (and an
    import) to the wrong one."""
    shared = shared_class_names(ROOT)
    assert not shared, "classes with one name and two meanings: " + "; ".join(f"{n}: {w}" for n, w in shared.items())


def test_the_class_name_check_sees_two_classes_of_one_name(tmp_path):
    for pkg in ("stacks", "components"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "x.py").write_text("class Endpoint:\n    pass\n")
    assert shared_class_names(tmp_path) == {"Endpoint": ["components/x.py", "stacks/x.py"]}


# Documents a user of the program does not have: design notes and findings kept beside the repository.
ELSEWHERE = re.compile(r"FINDINGS|SOURCES-|shared/(seed|facts|design|PULUMI_TESTING|HOUSE_STYLE)|issue \d+")


def test_comments_explain_the_code_rather_than_point_at_documents_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{n}: {line.strip()}"
        for path in program_files(ROOT)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if ELSEWHERE.search(line)
    ]
    assert not found, "say what the document says (and its upstream source) instead:\n" + "\n".join(found)
