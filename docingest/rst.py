"""reStructuredText: headings by adornment, roles and directives rendered to plain text."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from docingest.common import (
    AnchorAllocator,
    DocSection,
    Placeholders,
    code_block,
    indent_of,
    is_blank,
    join_blocks,
    norm_ws,
    slugify_heading,
)

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
    ph = Placeholders()
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


def find_rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """Return (start_line, body_start_line, raw_title) for each heading."""
    out: list[tuple[int, int, str]] = []
    n = len(lines)
    i = 0
    prev_ok = True  # start of file counts as "after a blank line"
    while i < n:
        line = lines[i]
        if is_blank(line):
            prev_ok = True
            i += 1
            continue
        if prev_ok and line[:1] in _ADORNMENT_CHARS and _is_adornment(line):
            # overline + title + underline
            if (
                i + 2 < n
                and not is_blank(lines[i + 1])
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
    while k < len(body) and not is_blank(body[k]) and not _OPTION_LINE_RE.match(body[k].strip()):
        arg_lines.append(body[k].strip())
        k += 1
    while k < len(body) and not is_blank(body[k]) and _OPTION_LINE_RE.match(body[k].strip()):
        k += 1
    content = body[k:]
    if lname in _DROP_DIRECTIVES:
        return []
    if lname in _CODE_DIRECTIVES:
        code = code_block(content)
        if lname == "productionlist":
            # the grammar is given as directive arguments (continuation lines)
            code = "\n".join([a for a in arg_lines if a.strip()] + ([code] if code else []))
        return [code] if code.strip() else []
    argtext = norm_ws(" ".join(arg_lines))
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
        first = _rst_inline(norm_ws(lead + " " + rest)).strip()
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
        out.append("\n".join(norm_ws(a) for a in arg_lines if a.strip()))
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
        txt = _rst_inline(norm_ws(" ".join(rest)))
        return [f"[{label}] {txt}".strip()] if txt else []
    return []  # comment


_LIST_START_RE = re.compile(
    r"^(?:[*+\-\u2022]\s+|(?:\d+|[A-Za-z#]|[ivxlcdmIVXLCDM]+)[.)]\s+|\((?:\d+|[A-Za-z#])\)\s+|:[^:\s][^:]*:(?:\s+|$)|\|\s)"
)


def _list_content_col(line: str) -> int:
    m = _LIST_START_RE.match(line.lstrip(" "))
    return indent_of(line) + (m.end() if m else 0)


def _render_prose(para: list[str]) -> str:
    out: list[str] = []
    prev_indent = None
    prev_was_item = False
    for line in para:
        s = line.strip()
        ind = indent_of(line)
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
    return "\n".join(norm_ws(_rst_inline(o)) for o in out if o.strip())


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
        if is_blank(line):
            i += 1
            continue
        indent = indent_of(line)
        s = line.strip()
        if s == ".." or s.startswith(".. "):
            j = i + 1
            while j < n and (is_blank(lines[j]) or indent_of(lines[j]) > indent):
                j += 1
            body = lines[i + 1 : j]
            while body and is_blank(body[-1]):
                body.pop()
            blocks.extend(_render_explicit(s, body))
            i = j
            continue
        j = i
        while j < n and not is_blank(lines[j]):
            j += 1
        para = lines[i:j]
        i = j
        first = para[0].strip()
        if first.startswith(">>>"):
            blocks.append(code_block(para))
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
                base = indent_of(para[-1])
            else:
                base = _list_content_col(para[0]) if _LIST_START_RE.match(first) else indent
            k = i
            while k < n and is_blank(lines[k]):
                k += 1
            m = k
            while m < n and (is_blank(lines[m]) or indent_of(lines[m]) > base):
                m += 1
            code_lines = lines[k:m]
            while code_lines and is_blank(code_lines[-1]):
                code_lines.pop()
            if code_lines:
                blocks.append(code_block(code_lines))
                i = m
    return [b for b in blocks if b and b.strip()]


def _rst_preamble_lines(lines: list[str]) -> list[str]:
    # Drop file-level field lists such as ":tocdepth: 2" / ":orphan:".
    return [ln for ln in lines if not re.match(r"^:[\w-]+:(\s.*)?$", ln)]


def split_rst(text: str, relpath: str) -> list[DocSection]:
    """Split reStructuredText into one :class:`DocSection` per heading."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "        ")
    lines = text.split("\n")
    heads = find_rst_headings(lines)
    alloc = AnchorAllocator()
    sections: list[DocSection] = []
    first_start = heads[0][0] if heads else len(lines)
    pre_blocks = _rst_blocks(_rst_preamble_lines(lines[:first_start]))
    pre_anchor = None
    if pre_blocks:
        pre_anchor = ""
    for idx, (_start, body_start, raw_title) in enumerate(heads):
        end = heads[idx + 1][0] if idx + 1 < len(heads) else len(lines)
        title = norm_ws(_rst_inline(raw_title))
        anchor = alloc.allocate(slugify_heading(title))
        blocks = [title] + _rst_blocks(lines[body_start:end])
        sections.append(DocSection(id=f"{relpath}#{anchor}", title=title, text=join_blocks(blocks)))
    if pre_anchor is not None:
        title = Path(relpath).name
        sections.insert(0, DocSection(id=f"{relpath}#", title=title, text=join_blocks(pre_blocks)))
    return sections
