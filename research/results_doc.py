"""docs/results.md, assembled from the committed result pages under docs/results/ and refreshed
from the reports the measuring commands write under reports/ (git-ignored).

    make results          # .venv/bin/python -m research.results_doc [--reports DIR] [--docs DIR]

Each topic is one Markdown page in ``docs/results/`` (``TOPICS``, in order), written by hand
from the runs it quotes; its links are relative to ``docs/`` because it is read inside
``results.md``. A page may hold a block that a report fills::

    <!-- latest: bench/growth/growth.md -->
    ...replaced by reports/bench/growth/growth.md when that file exists...
    <!-- /latest -->

When the report exists, the block's content is replaced by it (in the page itself, so the
refreshed figures are committed with it) and the report's plots are copied over the committed
ones (``PLOTS``). When it does not exist — a fresh clone, or a machine that never ran the
command — the page keeps what it holds. Then ``results.md`` is written: a header and every page,
in order. Running it twice changes nothing; ``tests/research/test_results_doc.py`` checks that the
committed ``results.md`` is what the committed pages give.
"""

from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
REPORTS = REPO_ROOT / "reports"

# The result pages, in the order results.md shows them (docs/results/<name>.md).
TOPICS = ("benchmark", "growth", "partitioning", "embedding", "webpath", "cluster", "evaluation",
          "matching", "calibration", "verifier", "faults")

# Plots a report writes (under reports/) → the committed copy (under docs/results/).
PLOTS = {
    "bench/growth/growth.png": "growth-latency.png",
    "eval/latest/sweep.png": "eval-sweep.png",
    "eval/latest/cost.png": "eval-cost.png",
    "eval/latest/staleness.png": "eval-staleness.png",
    "matching/latest/trade-off.png": "matching-trade-off.png",
    "replay/celery-noise0.1/replay.png": "calibration-replay.png",
}

BLOCK = re.compile(r"(<!-- latest: (?P<path>[^ ]+) -->\n)(?P<body>.*?)(<!-- /latest -->)", re.S)

HEADER = """# Results

<!-- Written by `make results` (research/results_doc.py) from docs/results/*.md: edit those pages,
     then run it again. -->

What was measured, how to measure it again, and what bounds each figure. Every figure was taken
on a 2-core machine with 24 GB of memory and no GPU, often shared with other work: each table
says the load it ran under where that matters. The commands write their JSON and Markdown
reports to `reports/` (not committed); `make results` copies their latest tables and plots into
the pages of `docs/results/` and writes this file again.

"""


@dataclass(frozen=True)
class Refreshed:
    pages: list[str]
    plots: list[str]


def _stamp(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")


def refresh_page(text: str, reports: Path) -> str:
    """The page with each ``latest`` block replaced by its report, when that report exists."""

    def fill(match: re.Match[str]) -> str:
        report = reports / match.group("path")
        if not report.is_file():
            return match.group(0)
        body = report.read_text(encoding="utf-8").strip()
        note = f"Latest run (`reports/{match.group('path')}`, written {_stamp(report)}):\n\n"
        return f"{match.group(1)}{note}{body}\n{match.group(4)}"

    return BLOCK.sub(fill, text)


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def render(docs: Path) -> str:
    pages = [(docs / "results" / f"{name}.md").read_text(encoding="utf-8").strip() for name in TOPICS]
    titles = [page.splitlines()[0].removeprefix("## ") for page in pages]
    contents = "".join(f"- [{title}](#{_anchor(title)})\n" for title in titles)
    return HEADER + contents + "\n" + "\n\n".join(pages) + "\n"


def build(*, docs: Path = DOCS, reports: Path = REPORTS) -> Refreshed:
    """Refresh the pages and plots from ``reports`` (what exists of it), then write results.md."""
    pages, plots = [], []
    for name in TOPICS:
        page = docs / "results" / f"{name}.md"
        text = page.read_text(encoding="utf-8")
        new = refresh_page(text, reports)
        if new != text:
            page.write_text(new, encoding="utf-8")
            pages.append(page.name)
    for source, target in PLOTS.items():
        if (reports / source).is_file():
            shutil.copyfile(reports / source, docs / "results" / target)
            plots.append(target)
    (docs / "results.md").write_text(render(docs), encoding="utf-8")
    return Refreshed(pages, plots)


def main(argv: list[str] | None = None) -> Refreshed:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=Path, default=REPORTS)
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    done = build(docs=args.docs, reports=args.reports)
    print(f"wrote {args.docs / 'results.md'}; pages refreshed from reports: {', '.join(done.pages) or 'none'}; "
          f"plots copied: {', '.join(done.plots) or 'none'}")
    return done


if __name__ == "__main__":
    main()
