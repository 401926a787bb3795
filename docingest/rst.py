"""reStructuredText through docutils (the reference parser): one section per heading, roles and
directives rendered to plain text roughly as Sphinx would.

docutils parses; this module only renders the doctree. Sphinx's roles (``:func:``, ``:pep:``, …)
and directives (``.. function::``, ``.. versionadded::``, …) are unknown to plain docutils: every
role and directive a text names is registered in docutils' registries (for the process, docutils'
own directives of those names included) as a generic one that keeps its name, arguments and
content, and the renderer below decides what each becomes. Nothing is read
from disk (file insertion and ``raw`` are off) and no message is printed."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes, utils
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.readers import standalone
from docutils.transforms import frontmatter, references

from docingest.common import AnchorAllocator, DocSection, code_block, join_blocks, norm_ws, slugify_heading

# --------------------------------------------------------------------------- roles

_EXPLICIT_TITLE_RE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", re.S)
_PAREN_ROLES = {"func", "meth", "py:func", "py:meth", "c:func", "cpp:func"}
_NUMBERED_ROLES = {"pep": "PEP", "rfc": "RFC"}
_VERBATIM_ROLES = {
    "math", "kbd", "file", "envvar", "token", "keyword", "dfn", "term", "command", "program", "option",
    "manpage", "guilabel", "menuselection", "mailheader", "mimetype", "newsgroup", "makevar", "regexp",
    "ref", "doc", "download", "numref", "source", "issue", "gh", "sup", "sub",
}


def render_role(role: str, body: str) -> str:
    """A role's text as Sphinx shows it: ``:func:`len``` → ``len()``, ``:pep:`8``` → ``PEP 8``,
    ``:meth:`~a.b``` → ``b()``, an explicit title ``t <target>`` → ``t``."""
    role_l = role.lower()
    short = role_l.split(":")[-1]
    m = _EXPLICIT_TITLE_RE.match(body)
    if m and short != "abbr":
        return m.group("title")
    if short in _NUMBERED_ROLES:
        return f"{_NUMBERED_ROLES[short]} {body.split('#', 1)[0].strip()}"
    if short == "abbr":
        return re.sub(r"\s*\(.*\)\s*$", "", body, flags=re.S)
    if short == "samp":
        return re.sub(r"(?<!\\)[{}]", "", body)
    if short in _VERBATIM_ROLES:
        return body
    text = body.lstrip("!")  # cross-reference roles (py and c domains, …)
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    if role_l in _PAREN_ROLES or (":" not in role_l and short in _PAREN_ROLES):
        text = text.removesuffix("()") + "()"
    return text


def _generic_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                  options: dict[str, Any] | None = None, content: Sequence[str] = ()) -> tuple[list, list]:
    return [nodes.inline(rawtext, render_role(name, utils.unescape(text)))], []


# --------------------------------------------------------------------------- directives

_DROP_DIRECTIVES = {
    "index", "highlight", "highlightlang", "toctree", "contents", "sectionauthor", "moduleauthor", "module",
    "currentmodule", "py:module", "py:currentmodule", "c:module", "testsetup", "testcleanup", "include",
    "literalinclude", "raw", "tabularcolumns", "image", "program", "miscnews", "limited-api-list",
    "audit-event-table", "default-role", "role", "meta", "default-domain", "codeauthor", "sectnum", "header",
    "footer", "target-notes", "title", "toctree-only",
}
_CODE_DIRECTIVES = {
    "code-block", "sourcecode", "code", "doctest", "testcode", "testoutput", "productionlist", "parsed-literal",
    "literal", "ipython", "highlight-code",
}
_PREFIX_DIRECTIVES = {
    "note": "Note:", "warning": "Warning:", "seealso": "See also:", "impl-detail": "CPython implementation detail:",
    "attention": "Attention:", "caution": "Caution:", "danger": "Danger:", "error": "Error:", "hint": "Hint:",
    "important": "Important:", "tip": "Tip:", "todo": "Todo:",
}
_CONTAINER_DIRECTIVES = {
    "rubric", "topic", "sidebar", "admonition", "centered", "epigraph", "only", "container", "hlist", "table",
    "list-table", "csv-table", "figure", "glossary", "compound", "line-block", "pull-quote", "highlights", "tab",
    "tabs", "versionremoved",
}
_VERSION_DIRECTIVES = {"versionadded", "versionchanged", "deprecated", "deprecated-removed"}


class directive_block(nodes.Element):  # noqa: N801 (docutils names node classes in lower case)
    """A directive as written: ``name``, ``arguments`` (one string) and, for code, ``code``;
    prose content parsed into its children."""


class _AnyOption(dict):
    """Every option is known and kept as written (Sphinx directives have many)."""

    def __bool__(self) -> bool:  # docutils parses options only when a directive has some
        return True

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Any:
        return directives.unchanged


class _GenericDirective(Directive):
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Any]] = _AnyOption()
    has_content = True

    def run(self) -> list[nodes.Node]:
        name = self.name.lower()
        if name in _DROP_DIRECTIVES:
            return []
        node = directive_block(self.block_text, name=name, arguments=self.arguments[0] if self.arguments else "")
        if name in _CODE_DIRECTIVES:
            node["code"] = code_block(list(self.content))
        elif self.content:
            self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


_ROLE_NAME_RE = re.compile(r"(?<![\w`\\]):([A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)?):`")
_DIRECTIVE_NAME_RE = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z][\w:.+-]*?)::", re.M)


def _register(text: str) -> None:
    """Make every role and directive ``text`` names a generic one (docutils' own registries)."""
    for name in set(_ROLE_NAME_RE.findall(text)):
        roles.register_local_role(name.lower(), _generic_role)
    for name in set(_DIRECTIVE_NAME_RE.findall(text)):
        directives.register_directive(name.lower(), _GenericDirective)


class _Reader(standalone.Reader):
    """The standalone reader less the transforms that rewrite the text we render: no document
    title or docinfo promotion, and a reference without a target keeps its text."""

    _SKIPPED = (frontmatter.DocTitle, frontmatter.SectionSubTitle, frontmatter.DocInfo,
                references.DanglingReferences)

    def get_transforms(self) -> list:
        return [t for t in super().get_transforms() if t not in self._SKIPPED]


_SETTINGS = {
    "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(), "file_insertion_enabled": False,
    "raw_enabled": False, "doctitle_xform": False, "sectsubtitle_xform": False, "docinfo_xform": False,
    "syntax_highlight": "none", "pep_references": False, "rfc_references": False, "tab_width": 8,
    "line_length_limit": 10**7, "input_encoding": "unicode",
}


def parse_rst(text: str) -> nodes.document:
    """The doctree of ``text`` (Sphinx roles and directives generic, nothing printed or read)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    _register(text)
    return publish_doctree(text, reader=_Reader(), settings_overrides={**_SETTINGS, "warning_stream": io.StringIO()})


# --------------------------------------------------------------------------- rendering

_SKIP_BLOCKS = (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message, nodes.raw,
                nodes.transition, nodes.pending, nodes.title, nodes.section)


def _inline(node: nodes.Node) -> str:
    parts: list[str] = []

    def walk(n: nodes.Node) -> None:
        if isinstance(n, nodes.Text):
            parts.append(n.astext())
        elif isinstance(n, (nodes.footnote_reference, nodes.citation_reference)):
            if parts:
                parts[-1] = parts[-1].rstrip()
        elif isinstance(n, nodes.problematic):
            parts.append(n.astext().strip("|").rstrip("_"))
        elif isinstance(n, (nodes.system_message, nodes.target, nodes.image)):
            return
        else:
            for child in n.children:
                walk(child)

    walk(node)
    return "".join(parts)


def _line(node: nodes.Node) -> str:
    return norm_ws(_inline(node))


def _item(marker: str, item: nodes.Node) -> str:
    blocks = _blocks(item.children)
    return f"{marker} " + "\n".join(blocks) if blocks else marker


def _table_rows(table: nodes.Node) -> str:
    rows = []
    for row in table.findall(nodes.row):
        cells = [norm_ws(" ".join(_blocks(entry.children))) for entry in row.children]
        cells = [c for c in cells if c]
        if cells:
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _block(n: nodes.Node) -> list[str]:
    if isinstance(n, _SKIP_BLOCKS):
        return []
    if isinstance(n, nodes.paragraph):
        return [_line(n)]
    if isinstance(n, (nodes.literal_block, nodes.doctest_block)):
        return [code_block(n.astext().split("\n"))]
    if isinstance(n, nodes.bullet_list):
        return ["\n".join(_item(n.get("bullet", "*"), item) for item in n.children)]
    if isinstance(n, nodes.enumerated_list):
        start = n.get("start", 1)
        return ["\n".join(_item(f"{n.get('prefix', '')}{start + i}{n.get('suffix', '.')}", item)
                          for i, item in enumerate(n.children))]
    if isinstance(n, nodes.definition_list):
        out = []
        for entry in n.children:
            term = " ".join(_line(t) for t in entry.children if isinstance(t, (nodes.term, nodes.classifier)))
            definition = [b for d in entry.children if isinstance(d, nodes.definition) for b in _blocks(d.children)]
            out.append("\n".join([term, *definition]))
        return out
    if isinstance(n, nodes.field_list):
        return ["\n".join(f":{_line(f[0])}: " + " ".join(_blocks(f[1].children)) for f in n.children)]
    if isinstance(n, nodes.option_list):
        return ["\n".join(" ".join(_line(part) for part in item.children) for item in n.children)]
    if isinstance(n, nodes.line_block):
        return ["\n".join(_line(line) for line in n.findall(nodes.line))]
    if isinstance(n, nodes.table):
        return [_table_rows(n)]
    if isinstance(n, (nodes.footnote, nodes.citation)):
        label = n[0].astext() if n.children and isinstance(n[0], nodes.label) else ""
        text = norm_ws(" ".join(_blocks(n.children[1:] if label else n.children)))
        return [f"[{label}] {text}".strip()] if text else []
    if isinstance(n, directive_block):
        return _directive(n)
    if isinstance(n, nodes.Element) and any(isinstance(c, nodes.Element) for c in n.children):
        return _blocks(n.children)
    text = _line(n)
    return [text] if text else []


def _blocks(children: Iterable[nodes.Node]) -> list[str]:
    return [b for child in children for b in _block(child) if b and b.strip()]


def _version_lead(name: str, argtext: str) -> tuple[str, str]:
    parts = argtext.split(None, 2 if name == "deprecated-removed" else 1)
    if name == "versionadded":
        lead = f"New in version {parts[0]}." if parts else "New."
    elif name == "versionchanged":
        lead = f"Changed in version {parts[0]}." if parts else "Changed."
    elif name == "deprecated":
        lead = f"Deprecated since version {parts[0]}." if parts else "Deprecated."
    else:
        lead = (f"Deprecated since version {parts[0]}, will be removed in version {parts[1]}."
                if len(parts) >= 2 else "Deprecated.")
    n_version_args = 2 if name == "deprecated-removed" else 1
    return lead, parts[n_version_args] if len(parts) > n_version_args else ""


def _inline_text(text: str) -> str:
    """Inline markup of a directive's argument (a signature, a version note) as plain text."""
    if not text.strip():
        return ""
    doc = parse_rst(text)
    return norm_ws(" ".join(_line(p) for p in doc.findall(nodes.paragraph))) or norm_ws(text)


def _directive(n: directive_block) -> list[str]:
    name, args = n["name"], n["arguments"]
    inner = _blocks(n.children)
    if name in _CODE_DIRECTIVES:
        code = n.get("code", "")
        if name == "productionlist":  # the grammar is the directive's argument
            code = "\n".join([a.strip() for a in args.split("\n") if a.strip()] + ([code] if code else []))
        return [code] if code.strip() else []
    argtext = norm_ws(args)
    if name in _VERSION_DIRECTIVES:
        lead, rest = _version_lead(name, argtext)
        if rest or inner:
            lead = lead[:-1] + ":"  # Sphinx: "Changed in version 3.7: ..."
        first = norm_ws(lead + " " + _inline_text(rest)) if rest else lead
        if inner and not inner[0].startswith(("    ", ">>>")) and "\n" not in inner[0] and not rest:
            return [first + " " + inner[0], *inner[1:]]
        return [first, *inner]
    if name == "availability":
        return [f"Availability: {_inline_text(argtext)}.", *inner]
    if name == "audit-event":
        parts = argtext.split(None, 1)
        event, event_args = (parts[0] if parts else ""), (parts[1] if len(parts) > 1 else "")
        if event_args.count(" ") and "://" in event_args:
            event_args = re.sub(r"\s+\S+$", "", event_args)
        return [f"Raises an auditing event {event}" + (f" with arguments {event_args}." if event_args else "."),
                *inner]
    if name in _PREFIX_DIRECTIVES:
        lead = _PREFIX_DIRECTIVES[name]
        if argtext:
            inner = [_inline_text(argtext), *inner]
        if inner and "\n" not in inner[0]:
            return [f"{lead} {inner[0]}", *inner[1:]]
        return [lead, *inner]
    if name in _CONTAINER_DIRECTIVES:
        head = [_inline_text(argtext)] if argtext and name not in ("only", "container", "hlist", "figure",
                                                                      "csv-table") else []
        if name == "list-table":
            return head + _list_table(n)
        return head + inner
    # Object descriptions (function, method, class, c:function, cmdoption, …) and unknown
    # directives: the signature line(s), then the content.
    signature = "\n".join(norm_ws(a) for a in args.split("\n") if a.strip())
    return ([signature] if signature else []) + inner


def _list_table(n: directive_block) -> list[str]:
    """``* - a`` / ``  - b`` rows as ``a | b``."""
    rows = []
    for outer in n.children:
        if not isinstance(outer, nodes.bullet_list):
            return _blocks(n.children)
        for item in outer.children:
            cells = [norm_ws(" ".join(_blocks(c.children))) for inner in item.children
                     if isinstance(inner, nodes.bullet_list) for c in inner.children]
            rows.append(" | ".join(cells))
    return ["\n".join(rows)] if rows else []


# --------------------------------------------------------------------------- sections


def rst_titles(text: str) -> list[str]:
    """The section titles docutils finds in ``text``, in order."""
    return [_line(s[0]) for s in parse_rst(text).findall(nodes.section)]


def split_rst(text: str, relpath: str) -> list[DocSection]:
    """Split reStructuredText into one :class:`DocSection` per heading (in document order, each
    with its own text, not its subsections'); text before the first heading is a section of its
    own, ``relpath#``, titled with the file name."""
    doc = parse_rst(text)
    alloc = AnchorAllocator()
    sections: list[DocSection] = []
    preamble = [c for c in doc.children if not isinstance(c, (nodes.section, nodes.field_list))]
    pre_blocks = _blocks(preamble)
    if pre_blocks:
        sections.append(DocSection(id=f"{relpath}#", title=Path(relpath).name, text=join_blocks(pre_blocks)))
    for section in doc.findall(nodes.section):
        title = _line(section[0])
        anchor = alloc.allocate(slugify_heading(title))
        blocks = [title, *_blocks(section.children)]
        sections.append(DocSection(id=f"{relpath}#{anchor}", title=title, text=join_blocks(blocks)))
    return sections
