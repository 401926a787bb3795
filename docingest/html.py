"""Sphinx HTML: one section per ``<section>`` (or ``<div class="section">``) element, by its id."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from docingest.common import DocSection, join_blocks, norm_ws

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
            lines = [norm_ws(ln) for ln in raw.split("\x01")]  # \x01 marks <br>
            txt = "\n".join(ln for ln in lines if ln)
            if txt:
                sec.blocks.append(txt)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
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
        self.stack.append((tag, opens, skip))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
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
                    sec.title = norm_ws("".join(self.heading_buf))
                    sec.title_done = True
            if skip:
                self.skip_depth -= 1
            if opens:
                self.open_secs.pop()
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
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
        out.append(DocSection(id=f"{relpath}#{sec.sid}", title=title, text=join_blocks(blocks)))
    return out
