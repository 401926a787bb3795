"""Tests for docingest's splitter (pure Python, no database)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import docingest
from docingest import (
    DocSection,
    slugify_heading,
    split_markdown,
    split_rst,
    split_sphinx_html,
    split_tree,
)
from tests.pydocs import PY_DOCS_HTML, PY_DOCS_SOURCES, require_python_docs

# --------------------------------------------------------------------------- slugs


@pytest.mark.parametrize(
    "title, slug",
    [
        ("How do I make a Python script executable on Unix?", "how-do-i-make-a-python-script-executable-on-unix"),
        ("Why does -22 // 10 return -3?", "why-does-22-10-return-3"),
        ("Is a *.pyd file the same as a DLL?", "is-a-pyd-file-the-same-as-a-dll"),
        ("__import__('x.y.z') returns <module 'x'>; how do I get z?", "import-x-y-z-returns-module-x-how-do-i-get-z"),
        ("What's up with the comma operator's precedence?", "what-s-up-with-the-comma-operator-s-precedence"),
        ("2to3 --- Automated translation", "to3-automated-translation"),
        ("Ünïcödé Straße Œuvre", "unicode-strasze-oeuvre"),
        ("  lots   of\twhitespace  ", "lots-of-whitespace"),
        ("!!!", ""),
        ("C++", "c"),
    ],
)
def test_slugify_heading_matches_docutils_make_id(title, slug):
    assert slugify_heading(title) == slug


SPLITTER = ("__init__", "common", "rst", "markdown", "html", "tree")


@pytest.mark.parametrize("module", SPLITTER)
def test_the_splitter_is_stdlib_and_docutils(module):
    tree = ast.parse((Path(docingest.__file__).parent / f"{module}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert "django" not in imported
    assert "cachecore" not in imported
    assert imported <= {
        "__future__",
        "os",
        "re",
        "textwrap",
        "unicodedata",
        "dataclasses",
        "collections",
        "html",
        "pathlib",
        "typing",
        "docingest",
    } | ({"io", "docutils"} if module == "rst" else set())


# --------------------------------------------------------------------------- reST

RST_SAMPLE = """\
:tocdepth: 2

.. _faq-top:

===============
Programming FAQ
===============

.. only:: html

   .. contents::

General Questions
=================

.. index:: debugger

Is there a debugger?
--------------------

Yes.  Use :func:`breakpoint` or the :mod:`pdb` module, see
:ref:`the manual <debugger>` and :pep:`553`.  Call ``pdb.set_trace()``
directly if you like.  See `the docs <https://docs.python.org/>`_ and
:meth:`~object.__init__`.

* first item
  continues here
* second item

Example::

   import pdb
   pdb.set_trace()

.. note::

   Works *everywhere*.

.. versionadded:: 3.7

.. highlight:: python

.. code-block:: python

   def f(x):
       return x

Sub heading
^^^^^^^^^^^

Sub body.

Is there a debugger?
--------------------

Same title again.

Why does -22 // 10 return -3?
-----------------------------

>>> -22 // 10
-3
"""


def _by_anchor(sections):
    return {s.id.split("#", 1)[1]: s for s in sections}


def test_split_rst_ids_titles_and_order():
    secs = split_rst(RST_SAMPLE, "faq/programming.rst.txt")
    assert all(isinstance(s, DocSection) for s in secs)
    assert [s.id for s in secs] == [
        "faq/programming.rst.txt#programming-faq",
        "faq/programming.rst.txt#general-questions",
        "faq/programming.rst.txt#is-there-a-debugger",
        "faq/programming.rst.txt#sub-heading",
        "faq/programming.rst.txt#is-there-a-debugger-2",
        "faq/programming.rst.txt#why-does-22-10-return-3",
    ]
    assert secs[2].title == "Is there a debugger?"
    assert secs[5].title == "Why does -22 // 10 return -3?"


def test_split_rst_text_is_plain_and_excludes_subsections():
    secs = _by_anchor(split_rst(RST_SAMPLE, "faq/programming.rst.txt"))
    text = secs["is-there-a-debugger"].text
    assert text.startswith("Is there a debugger?\n\n")
    # roles, literals, links stripped
    assert "Use breakpoint() or the pdb module, see the manual and PEP 553." in text
    assert "Call pdb.set_trace() directly" in text
    assert "See the docs and __init__()." in text
    assert ":func:" not in text and "``" not in text and "`" not in text
    # list items on their own lines, continuation joined
    assert "* first item continues here\n* second item" in text
    # literal block kept verbatim (dedented) and "::" rendered as ":"
    assert "Example:\n\nimport pdb\npdb.set_trace()" in text
    # code-block content kept, directive lines dropped
    assert "def f(x):\n    return x" in text
    assert "Note: Works everywhere." in text
    assert "New in version 3.7." in text
    assert ".. " not in text and "highlight" not in text and "index" not in text
    # sub-section text is not included in the parent section
    assert "Sub body" not in text
    assert "Sub body." in secs["sub-heading"].text
    assert "Same title again." in secs["is-there-a-debugger-2"].text
    # paragraphs separated by exactly one blank line, no trailing spaces
    assert "\n\n\n" not in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_split_rst_keeps_doctest_blocks_and_title_only_sections():
    secs = _by_anchor(split_rst(RST_SAMPLE, "x.rst"))
    assert ">>> -22 // 10\n-3" in secs["why-does-22-10-return-3"].text
    # title-only sections are kept: the caller decides
    assert secs["general-questions"].text == "General Questions"


def test_split_rst_heading_needs_blank_line_before_and_long_underline():
    text = "Title\n=====\n\nline one\nline two\n--------\n\nabc\n--\n\nreal\n----\n"
    secs = split_rst(text, "a.rst")
    assert [s.title for s in secs] == ["Title", "real"]


def test_split_rst_title_markup_is_stripped_before_slugging():
    text = ":mod:`os.path` --- Common pathname manipulations\n" + "=" * 55 + "\n\nBody.\n"
    (sec,) = split_rst(text, "library/os.path.rst.txt")
    assert sec.title == "os.path --- Common pathname manipulations"
    assert sec.id == "library/os.path.rst.txt#os-path-common-pathname-manipulations"


def test_split_rst_is_deterministic():
    a = split_rst(RST_SAMPLE, "p.rst")
    b = split_rst(RST_SAMPLE, "p.rst")
    assert a == b


# --------------------------------------------------------------------------- Markdown

MD_SAMPLE = """\
---
title: front matter is skipped
---

# Getting Started

Intro with **bold**, `code` and a [link](https://example.com).

## Install it

- step one
- step two

```bash
# not a heading
pip install thing
```

Setext Heading
--------------

Body under setext.

## Install it

Again.
"""


def test_split_markdown():
    secs = split_markdown(MD_SAMPLE, "docs/guide.md")
    assert [s.id for s in secs] == [
        "docs/guide.md#getting-started",
        "docs/guide.md#install-it",
        "docs/guide.md#setext-heading",
        "docs/guide.md#install-it-2",
    ]
    by = _by_anchor(secs)
    assert "Intro with bold, code and a link." in by["getting-started"].text
    assert "front matter" not in by["getting-started"].text
    install = by["install-it"].text
    assert "- step one\n- step two" in install
    assert "# not a heading\npip install thing" in install
    assert "Body under setext." in by["setext-heading"].text
    assert "Body under setext." not in install


# --------------------------------------------------------------------------- Sphinx HTML

HTML_SAMPLE = """\
<!DOCTYPE html>
<html><head><title>FAQ</title><script>var x = 1;</script></head>
<body>
<div class="related" role="navigation"><ul><li>previous | next</li></ul></div>
<div class="document"><div class="body" role="main">
<section id="library-faq">
<h1>Library FAQ<a class="headerlink" href="#library-faq">¶</a></h1>
<nav class="contents local" id="contents"><ul><li>TOC entry</li></ul></nav>
<section id="how-do-i-copy-a-file">
<span id="faq-copy"></span><h2>How do I copy a file?<a class="headerlink" href="#x">¶</a></h2>
<p>Use <code class="docutils literal"><span class="pre">shutil.copyfile()</span></code>
   for this.</p>
<div class="highlight"><pre>import shutil
shutil.copyfile(a, b)
</pre></div>
<div class="section" id="nested-old-style">
<h3>Nested</h3><p>Nested body.</p>
</div>
<p>Trailing paragraph of the parent.</p>
</section>
</section>
</div></div>
<div class="sphinxsidebar" role="navigation"><p>Sidebar text</p></div>
<div class="footer">Footer text</div>
</body></html>
"""


def test_split_sphinx_html():
    secs = split_sphinx_html(HTML_SAMPLE, "faq/library.html")
    assert [s.id for s in secs] == [
        "faq/library.html#library-faq",
        "faq/library.html#how-do-i-copy-a-file",
        "faq/library.html#nested-old-style",
    ]
    by = _by_anchor(secs)
    assert by["library-faq"].title == "Library FAQ"
    assert by["library-faq"].text == "Library FAQ"  # TOC skipped, children excluded
    copy = by["how-do-i-copy-a-file"]
    assert copy.title == "How do I copy a file?"
    assert "Use shutil.copyfile() for this." in copy.text
    assert "import shutil\nshutil.copyfile(a, b)" in copy.text
    assert "Trailing paragraph of the parent." in copy.text
    assert "Nested body." not in copy.text
    assert "Nested body." in by["nested-old-style"].text
    everything = "\n".join(s.text for s in secs)
    for junk in ("Sidebar", "Footer", "previous", "var x", "¶", "TOC entry"):
        assert junk not in everything


# --------------------------------------------------------------------------- trees


def test_split_tree_dispatch_and_sorting(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "b" / "page.rst.txt").write_text("Beta\n====\n\nbody\n")
    (tmp_path / "a.md").write_text("# Alpha\n\ntext\n")
    (tmp_path / "c.html").write_text('<section id="gamma"><h1>Gamma</h1><p>g</p></section>')
    (tmp_path / "notes.txt").write_text("just some plain text, not reST at all\n")
    (tmp_path / "_static" / "x.md").write_text("# Ignored\n")
    (tmp_path / "d.rst").write_text("Delta\n-----\n\nd\n")
    ids = [s.id for s in split_tree(tmp_path)]
    assert ids == ["a.md#alpha", "b/page.rst.txt#beta", "c.html#gamma", "d.rst#delta"]
    assert ids == [s.id for s in split_tree(tmp_path)]


# --------------------------------------------------------------------------- real docs

@pytest.fixture
def needs_docs() -> None:
    """The real-docs tests fail (never skip) with an install hint when python3.11-doc is missing."""
    require_python_docs(PY_DOCS_SOURCES / "faq")
    require_python_docs(PY_DOCS_HTML / "faq" / "programming.html")


@pytest.mark.usefixtures("needs_docs")
def test_real_faq_question_has_expected_id():
    secs = {s.id: s for s in split_tree(PY_DOCS_SOURCES / "faq")}
    sid = "library.rst.txt#how-do-i-make-a-python-script-executable-on-unix"
    assert sid in secs
    sec = secs[sid]
    assert sec.title == "How do I make a Python script executable on Unix?"
    assert "chmod +x" in sec.text
    assert "#!/usr/bin/env python" in sec.text
    # the next FAQ entry is not part of this section
    assert "curses" not in sec.text


@pytest.mark.usefixtures("needs_docs")
def test_real_faq_slugs_match_sphinx_html_ids():
    """Every FAQ heading slug equals the id Sphinx wrote into the HTML build.

    Known, documented exception: a heading whose slug repeats an earlier one
    in the same file ("Can I create my own functions in C++?" slugs to the
    same "...-in-c" as the C question); docutils writes "id1", we write "-2".
    """
    import re

    mismatches = []
    for src in sorted((PY_DOCS_SOURCES / "faq").glob("*.rst.txt")):
        html_path = PY_DOCS_HTML / "faq" / (src.name[: -len(".rst.txt")] + ".html")
        if not html_path.exists():
            continue
        html = html_path.read_text(encoding="utf-8")
        html_ids = set(re.findall(r'<section id="([^"]+)"', html))
        for sec in split_rst(src.read_text(encoding="utf-8"), "faq/" + src.name):
            anchor = sec.id.split("#", 1)[1]
            if anchor not in html_ids:
                mismatches.append(anchor)
    assert mismatches == ["can-i-create-my-own-functions-in-c-2"]


@pytest.mark.usefixtures("needs_docs")
def test_real_html_and_rst_agree_on_faq_ids():
    html_path = PY_DOCS_HTML / "faq" / "programming.html"
    html_ids = [s.id.split("#", 1)[1] for s in split_sphinx_html(html_path.read_text(encoding="utf-8"), "x")]
    rst_ids = [
        s.id.split("#", 1)[1]
        for s in split_rst((PY_DOCS_SOURCES / "faq" / "programming.rst.txt").read_text(encoding="utf-8"), "x")
    ]
    assert html_ids == rst_ids
