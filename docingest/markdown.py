"""Markdown: ATX and setext headings, fenced code, lists and tables as plain text."""

from __future__ import annotations

import re
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

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_MD_TABLE_RULE_RE = re.compile(r"\s*\|?[\s:|-]+\|?\s*")
_MD_LIST_RE = re.compile(r"^\s*(?:[*+\-]|\d+[.)])\s+")


def _md_inline(text: str) -> str:
    ph = Placeholders()
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
    return norm_ws(_md_inline(raw))


def _md_blocks(lines: list[str]) -> list[str]:
    blocks: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if is_blank(line):
            i += 1
            continue
        fm = _FENCE_RE.match(line)
        if fm:
            fence = fm.group(1)
            j = i + 1
            closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            while j < n and not closing.match(lines[j]):
                j += 1
            code = code_block(lines[i + 1 : j])
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
        if indent_of(line) >= 4 and not _last_block_is_list(blocks):
            j = i
            while j < n and (is_blank(lines[j]) or indent_of(lines[j]) >= 4):
                j += 1
            code = code_block(lines[i:j])
            if code.strip():
                blocks.append(code)
            i = j
            continue
        j = i
        while j < n and not is_blank(lines[j]) and not _FENCE_RE.match(lines[j]):
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
        blocks.append("\n".join(norm_ws(_md_inline(o)) for o in out if o.strip()))
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
            and not is_blank(line)
            and indent_of(line) < 4
            and _SETEXT_RE.match(lines[i + 1])
            and not _MD_LIST_RE.match(line)
            and not line.lstrip().startswith(("<", ">", "|"))
        ):
            # setext heading (a one-line paragraph followed by === or ---)
            heads.append((i, i + 2, line.strip()))
            prev_blank = True
            i += 2
            continue
        prev_blank = is_blank(line)
        i += 1
    alloc = AnchorAllocator()
    sections: list[DocSection] = []
    pre = _md_blocks(lines[: heads[0][0]] if heads else lines)
    if pre:
        sections.append(DocSection(id=f"{relpath}#", title=Path(relpath).name, text=join_blocks(pre)))
    for idx, (_start, body_start, raw) in enumerate(heads):
        end = heads[idx + 1][0] if idx + 1 < len(heads) else len(lines)
        title = _md_title(raw)
        anchor = alloc.allocate(slugify_heading(title))
        blocks = [title] + _md_blocks(lines[body_start:end])
        sections.append(DocSection(id=f"{relpath}#{anchor}", title=title, text=join_blocks(blocks)))
    return sections
