"""No import cycle among the project's own modules. Every import statement of every package at
the top of the repository (``cachecore``, ``api``, ``adminui``, ``tenants``, ``config``,
``research``, …) is read with ``ast``, those inside functions included (a function-level import
hides a cycle from Python until the day the function runs first), and ``import_module("…")``
calls too. A failure names each cycle with the file and line of every import in it.

``from a.b import c`` counts as importing ``a.b`` (its ``__init__`` runs) and, when ``c`` is a
module, ``a.b.c``; so a submodule that imports names from its own package's ``__init__`` (which
re-exports it) is a cycle as well."""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = {"cachecore", "api", "adminui", "ops", "tenants", "config"}

Graph = dict[str, dict[str, str]]  # module → {imported module: "path:line" of the import}


def project_modules(root: Path) -> dict[str, Path]:
    """Module name → file, for every package at the top of ``root`` except the tests."""
    modules: dict[str, Path] = {}
    for package in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"):
        for path in package.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """Absolute names a module imports (relative imports resolved), with their line."""
    names: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names += [(base, node.lineno)] if base else []
            names += [(f"{base}.{alias.name}" if base else alias.name, node.lineno) for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
                "import_module", "__import__"} and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            names.append((node.args[0].value, node.lineno))
    return names


def import_graph(root: Path) -> Graph:
    modules = project_modules(root)
    graph: Graph = {name: {} for name in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, line in _imported_names(tree, module, path.name == "__init__.py"):
            while name and name not in modules:  # ``a.b.func`` → the module ``a.b``
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].setdefault(name, f"{path.relative_to(root)}:{line}")
    return graph


def _strongly_connected(graph: Graph) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep graphs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return groups


def import_cycles(graph: Graph) -> list[str]:
    """One shortest cycle per group of modules that import each other, as readable text."""
    found = []
    for group in _strongly_connected(graph):
        start = min(group)
        came_from: dict[str, str] = {}
        queue = deque([start])
        while start not in came_from:  # breadth first, inside the group, back to ``start``
            node = queue.popleft()
            for child in sorted(graph[node]):
                if child in group and child not in came_from:
                    came_from[child] = node
                    queue.append(child)
        path = [start]
        node = start
        while True:
            node = came_from[node]
            path.append(node)
            if node == start:
                break
        path.reverse()
        steps = [f"{a} → {b} ({graph[a][b]})" for a, b in zip(path, path[1:])]
        found.append(f"cycle among {len(group)} modules: " + "; ".join(steps))
    return found


def test_the_walk_covers_the_project_packages() -> None:
    assert EXPECTED <= {name.partition(".")[0] for name in project_modules(ROOT)}


def test_no_import_cycle_among_the_project_modules() -> None:
    assert import_cycles(import_graph(ROOT)) == []


def test_the_walker_names_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "services").mkdir(parents=True)
    files = {
        "pkg/__init__.py": "",
        "pkg/tasks.py": "from pkg.services import jobs\n",
        "pkg/services/__init__.py": "from .jobs import job_create\n",
        "pkg/services/jobs.py": "def job_publish():\n    from pkg.tasks import job_run\n",
        "pkg/free.py": "import importlib\nimportlib.import_module('pkg.tasks')\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["pkg.services"] == {"pkg.services.jobs": "pkg/services/__init__.py:1"}
    assert graph["pkg.free"] == {"pkg.tasks": "pkg/free.py:2"}
    assert import_cycles(graph) == [
        "cycle among 3 modules: pkg.services → pkg.services.jobs (pkg/services/__init__.py:1); "
        "pkg.services.jobs → pkg.tasks (pkg/services/jobs.py:2); pkg.tasks → pkg.services (pkg/tasks.py:1)"]


def test_a_module_importing_its_own_re_exporting_package_is_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "services").mkdir(parents=True)
    files = {
        "pkg/__init__.py": "",
        "pkg/services/__init__.py": "from .exports import export_request\nfrom .jobs import job_create\n",
        "pkg/services/jobs.py": "",
        "pkg/services/exports.py": "from pkg.services import jobs\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert import_cycles(import_graph(tmp_path)) == [
        "cycle among 2 modules: pkg.services → pkg.services.exports (pkg/services/__init__.py:1); "
        "pkg.services.exports → pkg.services (pkg/services/exports.py:1)"]
    (tmp_path / "pkg/services/exports.py").write_text("from pkg.services.jobs import job_create\n")
    assert import_cycles(import_graph(tmp_path)) == []
