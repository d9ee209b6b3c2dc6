"""The project's import graph, read from the source: every module of its packages and the project
modules each imports (those inside functions included). tests/test_structure.py checks it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from stacks.load import ROOT

PACKAGES = ("components", "stacks", "policypack")
# Assembling the policy pack starts its gRPC server (policypack/__init__.py): run by the CLI, never imported.
NOT_IMPORTED = {"policypack.__main__"}


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
