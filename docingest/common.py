"""Shared by the splitters: the section, heading slugs (docutils' ``make_id``) and text helpers."""

from __future__ import annotations

import re
import textwrap
import unicodedata
from dataclasses import dataclass


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


class AnchorAllocator:
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


def norm_ws(s: str) -> str:
    return _WS.sub(" ", s).strip()


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def is_blank(line: str) -> bool:
    return not line.strip()


def code_block(lines: list[str]) -> str:
    text = textwrap.dedent("\n".join(ln.rstrip() for ln in lines))
    return text.strip("\n")


def join_blocks(blocks: list[str]) -> str:
    return "\n\n".join(b for b in blocks if b and b.strip())


class Placeholders:
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
