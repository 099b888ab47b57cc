"""No import cycle in ``e3rg_core``: two modules that import each other, even inside functions, are one idea
split in two (issue 22).

Which imports count: every ``import`` and ``from ... import`` anywhere in a module's source, at the
top or inside a function or class, relative ones resolved, except those under ``if TYPE_CHECKING:``
(never run). ``from package import name`` counts as importing ``package.name`` when that is a module,
else ``package``. An import of a module's own enclosing package does not count: Python runs a
package's ``__init__`` before any of its modules, so a package that re-exports its modules would
otherwise always be a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import e3rg_core

ROOT = Path(e3rg_core.__file__).parent


def _modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``e3rg_core`` modules it imports (see the module docstring for which imports count)."""
    modules = _modules()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        skipped = _type_checking_nodes(tree)
        names: list[str] = []
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                names += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        graph[module] = {t for name in names if name.startswith("e3rg_core") and (t := owner(name))
                         and t != module and not module.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_graph_sees_function_local_imports():
    graph = import_graph()
    assert "e3rg_core.pipeline" in graph and "e3rg_core.stages" in graph["e3rg_core.pipeline"]
    # Stages.understander imports the engine inside a method: it still counts
    assert "e3rg_core.understanding.engine" in graph["e3rg_core.stages"]


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_e3rg_core_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_page_is_small_functions():
    """``e3rg_core/ui`` lays the page out and wires plain handlers: no function there is over 80 lines."""
    long = []
    for path in sorted((ROOT / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_only_the_ui_imports_gradio():
    importers = {name for name, path in _modules().items()
                 if any(isinstance(n, (ast.Import, ast.ImportFrom)) and "gradio" in ast.unparse(n).split()[1]
                        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert importers and all(name.startswith("e3rg_core.ui.") for name in importers), sorted(importers)
    assert "e3rg_core.ui.handlers" not in importers  # the handlers are plain functions of plain values
