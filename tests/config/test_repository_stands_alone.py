"""The repository stands alone: no tracked file points outside the checkout, the README stays a
first read (at most 15,000 characters), and every relative link of the documentation names a
file that exists in the repository. Needs no database."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 15_000

# Spellings of "the folder beside the checkout": a relative path up and into it, the repository
# root's parent joined with it, or the absolute paths of the machine it was written on.
OUTSIDE = (
    re.compile(r"\.\./shared\b"),
    re.compile(r"""\.parent\s*/\s*["']shared["']"""),
    re.compile(r"/work/(shared|main|wt)\b"),
)
# A Markdown link or image: [text](target) — the target up to a space or the closing bracket.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode("utf-8").split("\0") if name]


def text_of(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:  # deleted in the work tree, not yet committed
        return None
    if b"\0" in data[:8192]:
        return None  # binary (images, the gzipped data set, model weights)
    return data.decode("utf-8", errors="replace")


def documentation() -> list[tuple[Path, Path]]:
    """Each Markdown page with the folder its links are relative to. The result pages under
    docs/results/ are read inside docs/results.md (research/results_doc.py): relative to docs/."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "clients" / "python" / "README.md",
             *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "tests" / "data").rglob("*.md"))]
    results = sorted((ROOT / "docs" / "results").glob("*.md"))
    return [(page, page.parent) for page in pages] + [(page, ROOT / "docs") for page in results]


def relative_links(markdown: str) -> list[str]:
    """Link targets that name a file of this repository (no scheme, no mail, not a bare anchor)."""
    prose = FENCE.sub("", markdown)
    targets = []
    for target in LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def test_the_scanner_sees_what_it_must() -> None:
    """The patterns themselves, on a sample: a link is found, a URL and an anchor are not."""
    sample = "[a](docs/a.md#x) ![p](results/p.png) [u](https://x.org/a.md) [h](#top)\n```\n[c](nope.md)\n```"
    assert relative_links(sample) == ["docs/a.md", "results/p.png"]
    assert any(p.search('QQP = REPO_ROOT.parent / "shared" / "data"') for p in OUTSIDE)
    assert any(p.search("see " + "/".join(["..", "shared", "DESIGN.md"])) for p in OUTSIDE)
    assert not any(p.search("shared_buffers = 256MB; a shared secret") for p in OUTSIDE)


def test_no_tracked_file_points_outside_the_repository() -> None:
    me = Path(__file__).resolve()
    found = []
    for path in tracked_files():
        if path.resolve() == me:
            continue  # its patterns name what they look for
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "points outside the checkout:\n" + "\n".join(found)


def test_the_readme_is_a_first_read() -> None:
    size = len((ROOT / "README.md").read_text(encoding="utf-8"))
    assert size <= README_LIMIT, f"README.md has {size:,} characters (at most {README_LIMIT:,}): move details to docs/"


def test_every_relative_link_of_the_documentation_exists() -> None:
    tracked = {p.resolve() for p in tracked_files()}
    broken = []
    checked = 0
    for doc, base in documentation():
        for target in relative_links(doc.read_text(encoding="utf-8")):
            resolved = (base / target).resolve()
            checked += 1
            if not resolved.is_relative_to(ROOT):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (outside the repository)")
            elif not resolved.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif resolved.is_file() and resolved not in tracked:
                broken.append(f"{doc.relative_to(ROOT)}: {target} (not tracked by git)")
    assert checked > 50  # the README and docs do link to each other
    assert not broken, "broken links:\n" + "\n".join(broken)
