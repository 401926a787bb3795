"""Documentation ingestion: split documentation files into addressable sections, and ingest a
tree as a tenant's sections (``ingest.py``, ``manage.py ingest_docs``).

The splitter (``common``, ``rst``, ``markdown``, ``html``, ``tree``) is standard library plus
docutils (``rst``: the reference reStructuredText parser): no Django, no project imports.
``ingest`` uses the product's services; the product never imports this package.

Every section gets a stable id ``"<relpath>#<anchor>"`` where *relpath* is the
file's path relative to the tree root (forward slashes) and *anchor* is:

* reST and Markdown: :func:`slugify_heading` of the rendered heading text,
  i.e. the id Sphinx/docutils writes for a heading that has no explicit label.
* Sphinx HTML: the ``id`` attribute of the ``<section>`` (or
  ``<div class="section">``) element.

Duplicate anchors inside one file (reST/Markdown): the first occurrence keeps
the plain slug, later ones get ``-2``, ``-3``, ... appended (skipping any value
already used in the file).  docutils itself would write ``id1``, ``id2``, ...
for such headings; we deliberately use a rule that does not depend on the
number of other auto-ids in the document.  A heading whose slug is empty (e.g.
only digits/punctuation) uses the anchor ``section`` (then ``section-2``...).

Text that precedes the first heading of a file is emitted as its own section
with an empty anchor (id ``"<relpath>#"``) only when it contains real text
after markup stripping (usually it is just labels/metadata and is dropped).

Section text is plain text: the heading as the first paragraph, then prose
paragraphs whitespace-normalised to one line each (list items and table rows
on their own lines), code blocks kept verbatim (dedented), blocks separated by
one blank line.  A section's text never includes its sub-sections' text.
"""

from docingest.common import DocSection, slugify_heading
from docingest.html import split_sphinx_html
from docingest.markdown import split_markdown
from docingest.rst import split_rst
from docingest.tree import split_file, split_tree

__all__ = [
    "DocSection",
    "slugify_heading",
    "split_rst",
    "split_markdown",
    "split_sphinx_html",
    "split_file",
    "split_tree",
]
