"""Split documentation files into addressable sections.

Pure standard library: no Django, no project imports.

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

from __future__ import annotations

import os
import re
import textwrap
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

__all__ = [
    "DocSection",
    "slugify_heading",
    "split_rst",
    "split_markdown",
    "split_sphinx_html",
    "split_file",
    "split_tree",
]


@dataclass(frozen=True)
class DocSection:
    id: str
    title: str
    text: str


# ---------------------------------------------------------------------------
# Slugs (docutils.nodes.make_id)
# ---------------------------------------------------------------------------

_NON_ID_CHARS = re.compile(r"[^a-z0-9]+")
_NON_ID_AT_ENDS = re.compile(r"^[-0-9]+|-+$")
_NON_ID_TRANSLATE = {
    0x00F8: "o",
    0x0111: "d",
    0x0127: "h",
    0x0131: "i",
    0x0142: "l",
    0x0167: "t",
    0x0180: "b",
    0x0183: "b",
    0x0188: "c",
    0x018C: "d",
    0x0192: "f",
    0x0199: "k",
    0x019A: "l",
    0x019E: "n",
    0x01A5: "p",
    0x01AB: "t",
    0x01AD: "t",
    0x01B4: "y",
    0x01B6: "z",
    0x01E5: "g",
    0x0225: "z",
    0x0234: "l",
    0x0235: "n",
    0x0236: "t",
    0x0237: "j",
    0x023C: "c",
    0x023F: "s",
    0x0240: "z",
    0x0247: "e",
    0x0249: "j",
    0x024B: "q",
    0x024D: "r",
    0x024F: "y",
}
_NON_ID_TRANSLATE_DIGRAPHS = {
    0x00DF: "sz",
    0x00E6: "ae",
    0x0153: "oe",
    0x0238: "db",
    0x0239: "qp",
}


def slugify_heading(title: str) -> str:
    """Return the docutils ``make_id`` identifier for *title*.

    Lowercase, a few stroke/digraph letters transliterated, NFKD folded to
    ASCII, every run of characters outside ``[a-z0-9]`` replaced by ``-``,
    then leading digits/hyphens and trailing hyphens stripped.
    """
    s = title.lower()
    s = s.translate(_NON_ID_TRANSLATE_DIGRAPHS)
    s = s.translate(_NON_ID_TRANSLATE)
    s = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii")
    s = _NON_ID_CHARS.sub("-", " ".join(s.split()))
    return _NON_ID_AT_ENDS.sub("", s)


class _AnchorAllocator:
    """Deterministic per-file de-duplication of anchors."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def allocate(self, slug: str) -> str:
        base = slug or "section"
        anchor = base
        n = 1
        while anchor in self.used:
            n += 1
            anchor = f"{base}-{n}"
        self.used.add(anchor)
        return anchor


# ---------------------------------------------------------------------------
# Shared text helpers
# ---------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def _norm_ws(s: str) -> str:
    return _WS.sub(" ", s).strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_blank(line: str) -> bool:
    return not line.strip()


def _code_block(lines: list[str]) -> str:
    text = textwrap.dedent("\n".join(ln.rstrip() for ln in lines))
    return text.strip("\n")


def _join_blocks(blocks: list[str]) -> str:
    return "\n\n".join(b for b in blocks if b and b.strip())


class _Placeholders:
    """Protect already-rendered inline spans from later regex passes."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def put(self, s: str) -> str:
        self.items.append(s)
        return f"\x00{len(self.items) - 1}\x00"

    def restore(self, s: str) -> str:
        for _ in range(3):  # nested placeholders are possible but shallow
            if "\x00" not in s:
                break
            s = re.sub(r"\x00(\d+)\x00", lambda m: self.items[int(m.group(1))], s)
        return s.replace("\x00", "")


# ---------------------------------------------------------------------------
# reStructuredText
# ---------------------------------------------------------------------------

_ADORNMENT_CHARS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ADORNMENT_RE = re.compile("(" + "|".join(re.escape(c) for c in _ADORNMENT_CHARS) + r")\1*[ \t]*$")


def _is_adornment(line: str) -> bool:
    s = line.rstrip()
    return len(s) >= 2 and bool(_ADORNMENT_RE.match(s))


_ROLE_RE = re.compile(
    r"(?<![\w`\\]):(?P<role>[A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)?):"
    r"`(?P<body>(?:[^`\\]|\\.)+?)`(?!`)"
)
_LITERAL_RE = re.compile(r"(?<![\w\\])``(?P<body>\S(?:.*?\S)??)``(?![\w`])")
_EXPLICIT_TITLE_RE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", re.S)
_PAREN_ROLES = {
    "func",
    "meth",
    "py:func",
    "py:meth",
    "c:func",
    "cpp:func",
}
_NUMBERED_ROLES = {"pep": "PEP", "rfc": "RFC"}


def _render_role(role: str, body: str) -> str:
    body = re.sub(r"\\(.)", r"\1", body)
    role_l = role.lower()
    short = role_l.split(":")[-1]
    m = _EXPLICIT_TITLE_RE.match(body)
    if m and short not in ("abbr",):
        title = m.group("title")
        if short in _NUMBERED_ROLES:
            return title
        return title
    if short in _NUMBERED_ROLES:
        num = body.split("#", 1)[0].strip()
        return f"{_NUMBERED_ROLES[short]} {num}"
    if short == "abbr":
        return re.sub(r"\s*\(.*\)\s*$", "", body, flags=re.S)
    if short == "samp":
        return re.sub(r"(?<!\\)[{}]", "", body)
    if short in (
        "math",
        "kbd",
        "file",
        "envvar",
        "token",
        "keyword",
        "dfn",
        "term",
        "command",
        "program",
        "option",
        "manpage",
        "guilabel",
        "menuselection",
        "mailheader",
        "mimetype",
        "newsgroup",
        "makevar",
        "regexp",
        "ref",
        "doc",
        "download",
        "numref",
        "source",
        "issue",
        "gh",
        "sup",
        "sub",
    ):
        return body
    # cross-reference roles (py/c domains, ...)
    text = body.lstrip("!")
    if text.startswith("~"):
        text = text[1:]
        text = text.rsplit(".", 1)[-1]
    if role_l in _PAREN_ROLES or (":" not in role_l and short in _PAREN_ROLES):
        if text.endswith("()"):
            text = text[:-2]
        text += "()"
    return text


def _rst_inline(text: str) -> str:
    """Strip reST inline markup, rendering roughly as Sphinx would."""
    ph = _Placeholders()
    text = _LITERAL_RE.sub(lambda m: ph.put(m.group("body")), text)
    text = _ROLE_RE.sub(lambda m: ph.put(_render_role(m.group("role"), m.group("body"))), text)
    # phrase references / embedded URIs / interpreted text
    text = re.sub(
        r"(?<![\w`])`(?P<body>[^`]+?)`(?:__?)?(?![\w`])",
        lambda m: ph.put(_link_text(m.group("body"))),
        text,
    )
    # footnote / citation references
    text = re.sub(r"\s?\[(?:#[\w-]*|\d+|\*|[A-Za-z][\w.-]*)\]_", "", text)
    # substitution references
    text = re.sub(r"\|(?P<name>[^|\s](?:[^|]*[^|\s])?)\|(?:__?)?", r"\g<name>", text)
    # strong / emphasis
    text = re.sub(r"(?<![\w*\\])\*\*(?=\S)(.+?)(?<=\S)\*\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<![\w*\\])\*(?=[^\s*])(.+?)(?<=[^\s*\\])\*(?![\w*])", r"\1", text)
    # simple named references: word_ / word__
    text = re.sub(r"\b([A-Za-z0-9]+)__?(?=[\s.,;:!?)\]'\"]|$)", r"\1", text)
    # escapes
    text = text.replace("\\ ", "")
    text = re.sub(r"\\(.)", r"\1", text)
    return ph.restore(text)


def _link_text(body: str) -> str:
    m = _EXPLICIT_TITLE_RE.match(body)
    if m:
        return m.group("title")
    return body


def _find_rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """Return (start_line, body_start_line, raw_title) for each heading."""
    out: list[tuple[int, int, str]] = []
    n = len(lines)
    i = 0
    prev_ok = True  # start of file counts as "after a blank line"
    while i < n:
        line = lines[i]
        if _is_blank(line):
            prev_ok = True
            i += 1
            continue
        if prev_ok and line[:1] in _ADORNMENT_CHARS and _is_adornment(line):
            # overline + title + underline
            if (
                i + 2 < n
                and not _is_blank(lines[i + 1])
                and not _is_adornment(lines[i + 1])
                and lines[i + 2].rstrip() == line.rstrip()
            ):
                out.append((i, i + 3, lines[i + 1].strip()))
                i += 3
                prev_ok = True
                continue
        if prev_ok and not line[:1].isspace() and i + 1 < n and _is_adornment(lines[i + 1]) and not _is_adornment(line):
            title = line.rstrip()
            under = lines[i + 1].rstrip()
            # docutils: a too-short underline still makes a title if it has
            # at least 4 characters; shorter ones are ordinary text.
            if len(under) >= len(title) or len(under) >= 4:
                out.append((i, i + 2, title.strip()))
                i += 2
                prev_ok = True
                continue
        prev_ok = False
        i += 1
    return out


# directive handling ---------------------------------------------------------

_DIRECTIVE_RE = re.compile(r"^\.\.\s+(?P<name>[A-Za-z][\w:.+-]*)::(?:\s+(?P<args>.*))?$")
_DROP_DIRECTIVES = {
    "index",
    "highlight",
    "highlightlang",
    "toctree",
    "contents",
    "sectionauthor",
    "moduleauthor",
    "module",
    "currentmodule",
    "py:module",
    "py:currentmodule",
    "c:module",
    "testsetup",
    "testcleanup",
    "include",
    "literalinclude",
    "raw",
    "tabularcolumns",
    "image",
    "program",
    "miscnews",
    "limited-api-list",
    "audit-event-table",
    "default-role",
    "role",
    "meta",
    "default-domain",
    "codeauthor",
    "sectnum",
    "header",
    "footer",
    "target-notes",
    "title",
    "toctree-only",
}
_CODE_DIRECTIVES = {
    "code-block",
    "sourcecode",
    "code",
    "doctest",
    "testcode",
    "testoutput",
    "productionlist",
    "parsed-literal",
    "literal",
    "ipython",
    "highlight-code",
}
_PREFIX_DIRECTIVES = {
    "note": "Note:",
    "warning": "Warning:",
    "seealso": "See also:",
    "impl-detail": "CPython implementation detail:",
    "attention": "Attention:",
    "caution": "Caution:",
    "danger": "Danger:",
    "error": "Error:",
    "hint": "Hint:",
    "important": "Important:",
    "tip": "Tip:",
    "todo": "Todo:",
}
_OPTION_LINE_RE = re.compile(r"^:[\w][\w .-]*:(\s.*)?$")


def _render_directive(name: str, args: str, body: list[str]) -> list[str]:
    """Render one directive block (body lines already dedented)."""
    lname = name.lower()
    # split off argument continuation lines and option lines
    k = 0
    arg_lines = [args] if args else []
    while k < len(body) and not _is_blank(body[k]) and not _OPTION_LINE_RE.match(body[k].strip()):
        arg_lines.append(body[k].strip())
        k += 1
    while k < len(body) and not _is_blank(body[k]) and _OPTION_LINE_RE.match(body[k].strip()):
        k += 1
    content = body[k:]
    if lname in _DROP_DIRECTIVES:
        return []
    if lname in _CODE_DIRECTIVES:
        code = _code_block(content)
        if lname == "productionlist":
            # the grammar is given as directive arguments (continuation lines)
            code = "\n".join([a for a in arg_lines if a.strip()] + ([code] if code else []))
        return [code] if code.strip() else []
    argtext = _norm_ws(" ".join(arg_lines))
    if lname in ("versionadded", "versionchanged", "deprecated", "deprecated-removed"):
        parts = argtext.split(None, 2 if lname == "deprecated-removed" else 1)
        if lname == "versionadded":
            lead = f"New in version {parts[0]}." if parts else "New."
        elif lname == "versionchanged":
            lead = f"Changed in version {parts[0]}." if parts else "Changed."
        elif lname == "deprecated":
            lead = f"Deprecated since version {parts[0]}." if parts else "Deprecated."
        else:
            lead = (
                f"Deprecated since version {parts[0]}, will be removed in version {parts[1]}."
                if len(parts) >= 2
                else "Deprecated."
            )
        n_version_args = 2 if lname == "deprecated-removed" else 1
        rest = parts[n_version_args] if len(parts) > n_version_args else ""
        inner = _rst_blocks(content)
        if rest or inner:
            lead = lead[:-1] + ":"  # Sphinx: "Changed in version 3.7: ..."
        first = _rst_inline(_norm_ws(lead + " " + rest)).strip()
        if inner and not inner[0].startswith(("    ", ">>>")) and "\n" not in inner[0] and not rest:
            inner[0] = first + " " + inner[0]
            return inner
        return [first] + inner
    if lname == "availability":
        return [f"Availability: {_rst_inline(argtext)}."] + _rst_blocks(content)
    if lname == "audit-event":
        parts = argtext.split(None, 1)
        ev = parts[0] if parts else ""
        eargs = parts[1] if len(parts) > 1 else ""
        eargs = re.sub(r"\s+\S+$", "", eargs) if eargs.count(" ") and "://" in eargs else eargs
        txt = f"Raises an auditing event {ev}" + (f" with arguments {eargs}." if eargs else ".")
        return [txt] + _rst_blocks(content)
    if lname in _PREFIX_DIRECTIVES:
        inner = _rst_blocks(content)
        lead = _PREFIX_DIRECTIVES[lname]
        if argtext:
            inner = [_rst_inline(argtext)] + inner
        if inner and "\n" not in inner[0]:
            inner[0] = f"{lead} {inner[0]}"
            return inner
        return [lead] + inner
    if lname in (
        "rubric",
        "topic",
        "sidebar",
        "admonition",
        "centered",
        "epigraph",
        "only",
        "container",
        "hlist",
        "table",
        "list-table",
        "csv-table",
        "figure",
        "glossary",
        "compound",
        "line-block",
        "pull-quote",
        "highlights",
        "tab",
        "tabs",
        "versionremoved",
    ):
        out = []
        if argtext and lname not in ("only", "container", "hlist", "figure", "csv-table"):
            out.append(_rst_inline(argtext))
        if lname == "list-table":
            # render "* - a\n  - b" rows as "a | b"
            out.extend(_render_list_table(content))
            return out
        return out + _rst_blocks(content)
    # object descriptions (function, method, class, c:function, cmdoption, ...)
    # and unknown directives: signature/argument line(s) then the content.
    out = []
    if arg_lines:
        out.append("\n".join(_norm_ws(a) for a in arg_lines if a.strip()))
    return out + _rst_blocks(content)


def _render_list_table(content: list[str]) -> list[str]:
    rows: list[list[str]] = []
    for line in content:
        s = line.strip()
        if not s:
            continue
        if s.startswith("* -"):
            rows.append([s[3:].strip()])
        elif s.startswith("- ") and rows:
            rows[-1].append(s[2:].strip())
        elif rows:
            rows[-1][-1] = (rows[-1][-1] + " " + s).strip()
    if not rows:
        return _rst_blocks(content)
    return ["\n".join(" | ".join(_rst_inline(c) for c in r) for r in rows)]


def _render_explicit(first: str, body: list[str]) -> list[str]:
    """An explicit markup block starting with '.. ' (directive, comment...)."""
    s = first.strip()
    m = _DIRECTIVE_RE.match(s)
    if m:
        if m.group("name").startswith("|"):
            return []
        return _render_directive(
            m.group("name"),
            (m.group("args") or "").strip(),
            textwrap.dedent("\n".join(body)).split("\n") if body else [],
        )
    if re.match(r"^\.\.\s+\|[^|]+\|\s+\S+::", s):  # substitution definition
        return []
    if re.match(r"^\.\.\s+_", s):  # hyperlink target
        return []
    fm = re.match(r"^\.\.\s+\[(#?[\w-]*|\*|\d+)\]\s*(.*)$", s)
    if fm:  # footnote / citation
        label = fm.group(1)
        rest = [fm.group(2)] + [b.strip() for b in body]
        txt = _rst_inline(_norm_ws(" ".join(rest)))
        return [f"[{label}] {txt}".strip()] if txt else []
    return []  # comment


_LIST_START_RE = re.compile(
    r"^(?:[*+\-\u2022]\s+|(?:\d+|[A-Za-z#]|[ivxlcdmIVXLCDM]+)[.)]\s+|\((?:\d+|[A-Za-z#])\)\s+|:[^:\s][^:]*:(?:\s+|$)|\|\s)"
)


def _list_content_col(line: str) -> int:
    m = _LIST_START_RE.match(line.lstrip(" "))
    return _indent(line) + (m.end() if m else 0)


def _render_prose(para: list[str]) -> str:
    out: list[str] = []
    prev_indent = None
    prev_was_item = False
    for line in para:
        s = line.strip()
        ind = _indent(line)
        is_item = bool(_LIST_START_RE.match(s))
        if s.startswith("| "):
            s = s[2:]
        if not out or is_item:
            out.append(s)
        elif prev_indent is not None and ind > prev_indent and not prev_was_item:
            # definition list: term line followed by an indented definition
            out.append(s)
        else:
            out[-1] = out[-1] + " " + s
        if is_item or ind != prev_indent:
            prev_was_item = is_item
        prev_indent = ind
    return "\n".join(_norm_ws(_rst_inline(o)) for o in out if o.strip())


def _render_table(para: list[str]) -> str:
    rows = []
    for line in para:
        s = line.strip()
        if re.fullmatch(r"[+=\-\s|:]+", s):
            continue  # border
        if s.startswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
        else:
            cells = [c.strip() for c in re.split(r"\s{2,}", s)]
        cells = [_rst_inline(c) for c in cells if c]
        if cells:
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _rst_blocks(lines: list[str]) -> list[str]:
    """Render a run of body lines (no section headings) to text blocks."""
    blocks: list[str] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        if _is_blank(line):
            i += 1
            continue
        indent = _indent(line)
        s = line.strip()
        if s == ".." or s.startswith(".. "):
            j = i + 1
            while j < n and (_is_blank(lines[j]) or _indent(lines[j]) > indent):
                j += 1
            body = lines[i + 1 : j]
            while body and _is_blank(body[-1]):
                body.pop()
            blocks.extend(_render_explicit(s, body))
            i = j
            continue
        j = i
        while j < n and not _is_blank(lines[j]):
            j += 1
        para = lines[i:j]
        i = j
        first = para[0].strip()
        if first.startswith(">>>"):
            blocks.append(_code_block(para))
            continue
        if re.fullmatch(r"\+[-=+]+\+", first) or re.fullmatch(r"=+(\s+=+)+|=+", first) and len(para) > 1:
            blocks.append(_render_table(para))
            continue
        if _is_adornment(first) and len(para) == 1 and len(first) >= 4:
            continue  # transition
        literal_follows = para[-1].rstrip().endswith("::")
        if literal_follows:
            last = para[-1].rstrip()
            if last.strip() == "::":
                para = para[:-1]
            elif last.endswith(" ::"):
                para = para[:-1] + [last[:-3]]
            else:
                para = para[:-1] + [last[:-1]]
        if para:
            blocks.append(_render_prose(para))
        if literal_follows:
            # the literal block must be indented relative to the paragraph
            if not para:
                base = indent
            elif len(para) > 1:
                base = _indent(para[-1])
            else:
                base = _list_content_col(para[0]) if _LIST_START_RE.match(first) else indent
            k = i
            while k < n and _is_blank(lines[k]):
                k += 1
            m = k
            while m < n and (_is_blank(lines[m]) or _indent(lines[m]) > base):
                m += 1
            code_lines = lines[k:m]
            while code_lines and _is_blank(code_lines[-1]):
                code_lines.pop()
            if code_lines:
                blocks.append(_code_block(code_lines))
                i = m
    return [b for b in blocks if b and b.strip()]


def _rst_preamble_lines(lines: list[str]) -> list[str]:
    # Drop file-level field lists such as ":tocdepth: 2" / ":orphan:".
    return [ln for ln in lines if not re.match(r"^:[\w-]+:(\s.*)?$", ln)]


def split_rst(text: str, relpath: str) -> list[DocSection]:
    """Split reStructuredText into one :class:`DocSection` per heading."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "        ")
    lines = text.split("\n")
    heads = _find_rst_headings(lines)
    alloc = _AnchorAllocator()
    sections: list[DocSection] = []
    first_start = heads[0][0] if heads else len(lines)
    pre_blocks = _rst_blocks(_rst_preamble_lines(lines[:first_start]))
    pre_anchor = None
    if pre_blocks:
        pre_anchor = ""
    for idx, (_start, body_start, raw_title) in enumerate(heads):
        end = heads[idx + 1][0] if idx + 1 < len(heads) else len(lines)
        title = _norm_ws(_rst_inline(raw_title))
        anchor = alloc.allocate(slugify_heading(title))
        blocks = [title] + _rst_blocks(lines[body_start:end])
        sections.append(DocSection(id=f"{relpath}#{anchor}", title=title, text=_join_blocks(blocks)))
    if pre_anchor is not None:
        title = Path(relpath).name
        sections.insert(0, DocSection(id=f"{relpath}#", title=title, text=_join_blocks(pre_blocks)))
    return sections


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_MD_TABLE_RULE_RE = re.compile(r"\s*\|?[\s:|-]+\|?\s*")
_MD_LIST_RE = re.compile(r"^\s*(?:[*+\-]|\d+[.)])\s+")


def _md_inline(text: str) -> str:
    ph = _Placeholders()
    text = re.sub(r"(`+)(.+?)\1", lambda m: ph.put(m.group(2).strip()), text)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)  # images
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # inline links
    text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", text)  # reference links
    text = re.sub(r"<(https?://[^>]+)>", r"\1", text)  # autolinks
    text = re.sub(r"</?[A-Za-z][^>]*>", "", text)  # inline html
    text = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])", r"\1", text)
    text = re.sub(r"~~(.+?)~~", r"\1", text)
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|~<>])", r"\1", text)
    return ph.restore(text)


def _md_title(raw: str) -> str:
    raw = re.sub(r"\s*\{#[^}]*\}\s*$", "", raw)  # {#custom-id} attribute
    return _norm_ws(_md_inline(raw))


def _md_blocks(lines: list[str]) -> list[str]:
    blocks: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if _is_blank(line):
            i += 1
            continue
        fm = _FENCE_RE.match(line)
        if fm:
            fence = fm.group(1)
            j = i + 1
            closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            while j < n and not closing.match(lines[j]):
                j += 1
            code = _code_block(lines[i + 1 : j])
            if code.strip():
                blocks.append(code)
            i = j + 1
            continue
        if line.lstrip().startswith("<!--"):
            j = i
            while j < n and "-->" not in lines[j]:
                j += 1
            i = j + 1
            continue
        if _indent(line) >= 4 and not _last_block_is_list(blocks):
            j = i
            while j < n and (_is_blank(lines[j]) or _indent(lines[j]) >= 4):
                j += 1
            code = _code_block(lines[i:j])
            if code.strip():
                blocks.append(code)
            i = j
            continue
        j = i
        while j < n and not _is_blank(lines[j]) and not _FENCE_RE.match(lines[j]):
            j += 1
        para = lines[i:j]
        i = j
        if len(para) > 1 and "|" in para[0] and all("|" in ln for ln in para):
            # pipe table
            rows = []
            for ln in para:
                if _MD_TABLE_RULE_RE.fullmatch(ln):
                    continue
                cells = [c.strip() for c in ln.strip().strip("|").split("|")]
                rows.append(" | ".join(_md_inline(c) for c in cells if c))
            blocks.append("\n".join(rows))
            continue
        if re.fullmatch(r" {0,3}([-*_])(\s*\1){2,}\s*", para[0]) and len(para) == 1:
            continue  # thematic break
        out: list[str] = []
        for ln in para:
            s = ln.strip()
            s = re.sub(r"^>\s?", "", s)
            if not out or _MD_LIST_RE.match(ln):
                out.append(s)
            else:
                out[-1] += " " + s
        blocks.append("\n".join(_norm_ws(_md_inline(o)) for o in out if o.strip()))
    return [b for b in blocks if b.strip()]


def _last_block_is_list(blocks: list[str]) -> bool:
    """An indented line right after a list item continues it; it is not code."""
    return bool(blocks) and bool(_MD_LIST_RE.match(blocks[-1].split("\n")[-1]))


def split_markdown(text: str, relpath: str) -> list[DocSection]:
    """Split Markdown on ATX (``#``) and setext headings."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    lines = text.split("\n")
    # YAML front matter
    if lines and lines[0].strip() == "---":
        for k in range(1, len(lines)):
            if lines[k].strip() in ("---", "..."):
                lines = [""] * (k + 1) + lines[k + 1 :]
                break
    heads: list[tuple[int, int, str]] = []  # (start line, body start line, raw title)
    in_fence: str | None = None
    prev_blank = True  # start of file / after blank line or heading
    i = 0
    while i < len(lines):
        line = lines[i]
        fm = _FENCE_RE.match(line)
        if in_fence:
            if fm and fm.group(1)[0] == in_fence[0] and len(fm.group(1)) >= len(in_fence) and not fm.group(2).strip():
                in_fence = None
            prev_blank = False
            i += 1
            continue
        if fm:
            in_fence = fm.group(1)
            prev_blank = False
            i += 1
            continue
        m = _ATX_RE.match(line)
        if m:
            heads.append((i, i + 1, m.group(2) or ""))
            prev_blank = True
            i += 1
            continue
        if (
            prev_blank
            and i + 1 < len(lines)
            and not _is_blank(line)
            and _indent(line) < 4
            and _SETEXT_RE.match(lines[i + 1])
            and not _MD_LIST_RE.match(line)
            and not line.lstrip().startswith(("<", ">", "|"))
        ):
            # setext heading (a one-line paragraph followed by === or ---)
            heads.append((i, i + 2, line.strip()))
            prev_blank = True
            i += 2
            continue
        prev_blank = _is_blank(line)
        i += 1
    alloc = _AnchorAllocator()
    sections: list[DocSection] = []
    pre = _md_blocks(lines[: heads[0][0]] if heads else lines)
    if pre:
        sections.append(DocSection(id=f"{relpath}#", title=Path(relpath).name, text=_join_blocks(pre)))
    for idx, (_start, body_start, raw) in enumerate(heads):
        end = heads[idx + 1][0] if idx + 1 < len(heads) else len(lines)
        title = _md_title(raw)
        anchor = alloc.allocate(slugify_heading(title))
        blocks = [title] + _md_blocks(lines[body_start:end])
        sections.append(DocSection(id=f"{relpath}#{anchor}", title=title, text=_join_blocks(blocks)))
    return sections


# ---------------------------------------------------------------------------
# Sphinx HTML
# ---------------------------------------------------------------------------

_VOID_TAGS = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
}
_BLOCK_TAGS = {
    "p",
    "div",
    "section",
    "article",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "thead",
    "tbody",
    "blockquote",
    "pre",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "figure",
    "figcaption",
    "aside",
    "main",
    "body",
    "caption",
}
_HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_SKIP_TAGS = {
    "script",
    "style",
    "nav",
    "header",
    "footer",
    "form",
    "button",
    "noscript",
    "template",
    "svg",
    "head",
    "title",
    "iframe",
}
_SKIP_CLASSES = {
    "sphinxsidebar",
    "sphinxsidebarwrapper",
    "related",
    "footer",
    "headerlink",
    "mobile-nav",
    "menu-wrapper",
    "inline-search",
    "clearer",
    "contents",
    "searchbox",
    "navigation",
    "sidebar-tree",
    "toc-drawer",
    "breadcrumbs",
    "wy-nav-side",
    "rst-footer-buttons",
    "prev-next-area",
    "bd-sidebar",
}


class _Sec:
    __slots__ = ("sid", "title", "blocks", "buf", "pre", "title_done")

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.title: str | None = None
        self.blocks: list[str] = []
        self.buf: list[str] = []
        self.title_done = False


class _SphinxHTMLParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, opens_section, skip)
        self.sections: list[_Sec] = []
        self.open_secs: list[_Sec] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.heading_depth = 0
        self.heading_buf: list[str] = []

    # helpers
    def _cur(self) -> _Sec | None:
        return self.open_secs[-1] if self.open_secs else None

    def _flush(self) -> None:
        sec = self._cur()
        if sec is None or not sec.buf:
            if sec is not None:
                sec.buf = []
            return
        raw = "".join(sec.buf)
        sec.buf = []
        if self.pre_depth:
            txt = raw.strip("\n")
            if txt.strip():
                sec.blocks.append(txt.rstrip())
        else:
            lines = [_norm_ws(ln) for ln in raw.split("\x01")]  # \x01 marks <br>
            txt = "\n".join(ln for ln in lines if ln)
            if txt:
                sec.blocks.append(txt)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        skip = (
            tag in _SKIP_TAGS
            or bool(classes & _SKIP_CLASSES)
            or a.get("role") in ("navigation", "search")
            or a.get("aria-label") == "source link"
        )
        opens = False
        if (
            not skip
            and not self.skip_depth
            and a.get("id")
            and (tag == "section" or (tag == "div" and "section" in classes))
        ):
            opens = True
        if tag in _BLOCK_TAGS or tag == "br" or opens:
            self._flush()
        if tag == "br" and not self.skip_depth and self._cur() is not None:
            self._cur().buf.append("\x01")
        if tag in _VOID_TAGS:
            return
        if skip:
            self.skip_depth += 1
        if opens:
            sec = _Sec(a["id"])
            self.sections.append(sec)
            self.open_secs.append(sec)
        if tag == "pre" and not self.skip_depth:
            self.pre_depth += 1
        if tag in _HEADING_TAGS and not self.skip_depth:
            sec = self._cur()
            if sec is not None and not sec.title_done:
                self.heading_depth += 1
                self.heading_buf = []
        if tag in ("li", "dt", "tr") and not self.skip_depth and self._cur() is not None:
            pass
        self.stack.append((tag, opens, skip))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in _VOID_TAGS:
            return
        if not any(t == tag for t, _, _ in self.stack):
            return
        while self.stack:
            t, opens, skip = self.stack.pop()
            if t in _BLOCK_TAGS or opens:
                self._flush()
            if t in ("td", "th") and self._cur() is not None and not self.skip_depth:
                self._cur().buf.append(" | ")
            if t == "pre" and self.pre_depth and not self.skip_depth:
                self.pre_depth -= 1
            if t in _HEADING_TAGS and self.heading_depth and not self.skip_depth:
                self.heading_depth -= 1
                sec = self._cur()
                if sec is not None and not sec.title_done:
                    sec.title = _norm_ws("".join(self.heading_buf))
                    sec.title_done = True
            if skip:
                self.skip_depth -= 1
            if opens:
                self.open_secs.pop()
            if t == tag:
                break

    def handle_data(self, data):
        if self.skip_depth:
            return
        sec = self._cur()
        if sec is None:
            return
        sec.buf.append(data)
        if self.heading_depth:
            self.heading_buf.append(data)


def split_sphinx_html(html: str, relpath: str) -> list[DocSection]:
    """One section per ``<section id>``/``<div class="section" id>`` element.

    Text of nested sections is excluded; navigation, sidebars, footers,
    local tables of contents and permalink markers are skipped.
    """
    parser = _SphinxHTMLParser()
    parser.feed(html)
    parser.close()
    while parser.open_secs:
        parser._flush()
        parser.open_secs.pop()
    out: list[DocSection] = []
    seen: set[str] = set()
    for sec in parser.sections:
        if sec.sid in seen:
            continue
        seen.add(sec.sid)
        title = sec.title or sec.sid
        blocks = [b.replace("\u00b6", "").rstrip() for b in sec.blocks]
        blocks = [b for b in blocks if b.strip()]
        # collapse stray " | " leftovers from table cells
        blocks = [re.sub(r"(\s*\|\s*)+$", "", re.sub(r"^(\s*\|\s*)+", "", b)) if "|" in b else b for b in blocks]
        out.append(DocSection(id=f"{relpath}#{sec.sid}", title=title, text=_join_blocks(blocks)))
    return out


# ---------------------------------------------------------------------------
# Trees
# ---------------------------------------------------------------------------

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
    lines = text.replace("\r\n", "\n").split("\n")
    return bool(_find_rst_headings(lines))


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
