"""The product never imports research, document ingestion or the development tools: research
(benchmark, evaluation, studies), docingest (the documentation splitter, ``ingest_docs``) and
devtools (the demo) import the product, not the other way round. Within the product, imports
point down the layers only: ``tenants`` ↛ ``cachecore`` ↛ ``api``/``adminui``/``ops`` ↛ ``config``.
Every import statement of the product's packages is read, those inside
functions included. (``config.settings`` names the optional apps in INSTALLED_APPS as strings: Django
loads their management commands; no product module imports them.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("cachecore", "api", "adminui", "ops", "tenants", "config")
FORBIDDEN = ("research", "docingest", "devtools")
# (importing module, imported module) → why it is allowed. Empty: there is no exception.
ALLOWED: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module", "__import__"
        } and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.append(node.args[0].value)
    return names


def _forbidden(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in FORBIDDEN)


@pytest.mark.parametrize("package", PRODUCT)
def test_the_product_never_imports_research_or_docingest(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, package
    found = [
        (_module_name(path), name)
        for path in files if "migrations" not in path.parts
        for name in _imports(path) if _forbidden(name)
    ]
    assert [f for f in found if f not in ALLOWED] == []


# What only research installs (requirements-research.txt, requirements-pairmodel.txt): the product's
# runtime requirements do not carry them, so the product may not import them. (onnx is a runtime
# requirement: setup builds the shipped dynamic-int8 model with it, cachecore.embedding.)
RESEARCH_ONLY_PACKAGES = ("matplotlib", "psutil", "torch", "safetensors", "docutils")


@pytest.mark.parametrize("package", PRODUCT)
def test_the_product_imports_nothing_only_research_installs(package: str) -> None:
    found = [
        (_module_name(path), name)
        for path in sorted((ROOT / package).rglob("*.py")) if "migrations" not in path.parts
        for name in _imports(path) if name.split(".")[0] in RESEARCH_ONLY_PACKAGES
    ]
    assert found == []


def _pinned(name: str) -> set[str]:
    return {line.split("==")[0].split("[")[0].strip().lower()
            for line in (ROOT / name).read_text().splitlines()
            if line.strip() and not line.startswith(("#", "-"))}


def test_runtime_requirements_leave_research_only_packages_out() -> None:
    assert _pinned("requirements.txt").isdisjoint(RESEARCH_ONLY_PACKAGES)
    # What make installs (dev, research) never pulls torch: only requirements-pairmodel.txt does.
    for name in ("requirements-dev.txt", "requirements-research.txt"):
        assert "torch" not in _pinned(name) and "-r requirements-pairmodel.txt" not in (ROOT / name).read_text()


# Lowest first: a package imports its own layer and those below, never one above.
LAYERS: tuple[tuple[str, ...], ...] = (("tenants",), ("cachecore",), ("api", "adminui", "ops"), ("config",))
LAYER_OF = {package: level for level, packages in enumerate(LAYERS) for package in packages}
# (importing module, imported module) → why an upward import is allowed. Empty: there is none.
LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {}


def upward_imports(root: Path) -> list[tuple[str, str]]:
    """(module, imported name) for every import of a higher layer's package, migrations included
    (they run in the product's processes too)."""
    found = []
    for package, level in LAYER_OF.items():
        for path in sorted((root / package).rglob("*.py")):
            for name in _imports(path):
                top = name.split(".")[0]
                if LAYER_OF.get(top, -1) > level:
                    found.append((_module_name_under(path, root), name))
    return found


def _module_name_under(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_layers_import_downwards_only() -> None:
    assert set(LAYER_OF) == set(PRODUCT)
    assert [f for f in upward_imports(ROOT) if f not in LAYER_EXCEPTIONS] == []


def test_the_layer_walker_finds_an_upward_import(tmp_path: Path) -> None:
    for package, text in {"tenants": "def f():\n    from cachecore.models import Trail\n",
                          "cachecore": "import api.views\n", "api": "from tenants.models import Tenant\n",
                          "adminui": "", "ops": "from config import settings\n",
                          "config": "import ops.views\n"}.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "mod.py").write_text(text)
    assert upward_imports(tmp_path) == [("tenants.mod", "cachecore.models"), ("tenants.mod", "cachecore.models.Trail"),
                                        ("cachecore.mod", "api.views"), ("ops.mod", "config"),
                                        ("ops.mod", "config.settings")]


def test_the_walker_sees_imports_inside_functions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from research.bench import runner\n    import docingest.html\n")
    assert [n for n in _imports(probe) if _forbidden(n)] == ["research.bench", "research.bench.runner",
                                                               "docingest.html"]
