"""The product never imports research or document ingestion: research (benchmark, evaluation,
studies) and docingest (the documentation splitter, ``ingest_docs``) import the product, not the
other way round. Every import statement of the product's packages is read, those inside
functions included. (``config.settings`` names both apps in INSTALLED_APPS as strings: Django
loads their management commands; no product module imports them.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("cachecore", "api", "adminui", "ops", "tenants", "config")
FORBIDDEN = ("research", "docingest")
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
# runtime requirements do not carry them, so the product may not import them.
RESEARCH_ONLY_PACKAGES = ("matplotlib", "psutil", "torch", "safetensors", "onnx")


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


def test_the_walker_sees_imports_inside_functions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from research.bench import runner\n    import docingest.html\n")
    assert [n for n in _imports(probe) if _forbidden(n)] == ["research.bench", "research.bench.runner",
                                                               "docingest.html"]
