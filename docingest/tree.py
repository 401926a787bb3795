"""Trees: each file by its kind (reST, Markdown, Sphinx HTML), ids relative to the root."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from docingest.common import DocSection
from docingest.html import split_sphinx_html
from docingest.markdown import split_markdown
from docingest.rst import rst_titles, split_rst

DEFAULT_SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        "_static",
        "_images",
        "_downloads",
        ".tox",
        ".mypy_cache",
    }
)

_RST_HINT_RE = re.compile(r"^\.\. [\w:-]+::|^\.\. _[^:]+:|:[\w:]+:`[^`]+`|``[^`]+``|::\s*$", re.M)


def _looks_like_rst(text: str) -> bool:
    if _RST_HINT_RE.search(text):
        return True
    return bool(rst_titles(text))


def _kind(name: str) -> str | None:
    n = name.lower()
    if n.endswith((".rst", ".rest", ".rst.txt")):
        return "rst"
    if n.endswith((".md", ".markdown", ".md.txt")):
        return "md"
    if n.endswith((".html", ".htm")):
        return "html"
    if n.endswith(".txt"):
        return "txt"
    return None


def split_file(path: Path, relpath: str) -> list[DocSection]:
    """Split one file, choosing the parser from its extension."""
    kind = _kind(path.name)
    if kind is None:
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if kind == "rst":
        return split_rst(text, relpath)
    if kind == "md":
        return split_markdown(text, relpath)
    if kind == "html":
        return split_sphinx_html(text, relpath)
    if _looks_like_rst(text):
        return split_rst(text, relpath)
    return []


def split_tree(root: Path, skip_dirs: frozenset[str] = DEFAULT_SKIP_DIRS) -> Iterator[DocSection]:
    """Walk *root* and yield sections of every supported file.

    Files are processed in sorted order of their root-relative POSIX path so
    the output is deterministic.  Directories named in *skip_dirs* or
    starting with ``.`` are not entered.  ``.txt`` files are only used when
    they look like reStructuredText (Sphinx ``_sources`` ship ``.rst.txt``).
    """
    root = Path(root)
    if root.is_file():
        yield from split_file(root, root.name)
        return
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip_dirs and not d.startswith(".")]
        for fn in filenames:
            if _kind(fn) is None:
                continue
            p = Path(dirpath) / fn
            found.append((p.relative_to(root).as_posix(), p))
    found.sort(key=lambda t: t[0])
    for rel, p in found:
        yield from split_file(p, rel)
