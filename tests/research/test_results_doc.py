"""research.results_doc: docs/results.md is what the committed pages give, and a report under
reports/ replaces its page's block and its plot (on a copy of docs/, never the real one)."""

from __future__ import annotations

import shutil
from pathlib import Path

from research.results_doc import DOCS, PLOTS, TOPICS, build, render


def test_the_committed_results_page_is_what_the_committed_pages_give() -> None:
    assert (DOCS / "results.md").read_text(encoding="utf-8") == render(DOCS), "run `make results` and commit"


def test_every_plot_a_page_shows_is_committed() -> None:
    text = render(DOCS)
    for target in PLOTS.values():
        assert (DOCS / "results" / target).is_file()
        assert f"(results/{target})" in text


def _copy_of_docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "results").mkdir(parents=True)
    for name in TOPICS:
        shutil.copyfile(DOCS / "results" / f"{name}.md", docs / "results" / f"{name}.md")
    for target in PLOTS.values():
        shutil.copyfile(DOCS / "results" / target, docs / "results" / target)
    return docs


def test_without_reports_nothing_changes(tmp_path: Path) -> None:
    docs = _copy_of_docs(tmp_path)
    done = build(docs=docs, reports=tmp_path / "no-reports")
    assert done.pages == [] and done.plots == []
    assert (docs / "results.md").read_text(encoding="utf-8") == (DOCS / "results.md").read_text(encoding="utf-8")


def test_a_report_replaces_its_block_and_its_plot(tmp_path: Path) -> None:
    docs = _copy_of_docs(tmp_path)
    reports = tmp_path / "reports"
    (reports / "bench" / "growth").mkdir(parents=True)
    (reports / "bench" / "growth" / "growth.md").write_text("| trails | p50 |\n|---|---|\n| 10 | 1.23 ms |\n")
    (reports / "bench" / "growth" / "growth.png").write_bytes(b"\x89PNG fresh plot")
    before = (docs / "results" / "growth.md").read_text(encoding="utf-8")

    done = build(docs=docs, reports=reports)

    assert done.pages == ["growth.md"] and done.plots == ["growth-latency.png"]
    page = (docs / "results" / "growth.md").read_text(encoding="utf-8")
    assert "| 10 | 1.23 ms |" in page and "Latest run (`reports/bench/growth/growth.md`" in page
    assert "1,000,000 × 1,000" in before and "1,000,000 × 1,000" not in page  # the old table is gone
    assert page.split("<!-- latest:")[0] == before.split("<!-- latest:")[0]  # the prose stays
    assert (docs / "results" / "growth-latency.png").read_bytes() == b"\x89PNG fresh plot"
    results = (docs / "results.md").read_text(encoding="utf-8")
    assert "| 10 | 1.23 ms |" in results
    # Once more with the same reports: the same page.
    build(docs=docs, reports=reports)
    assert (docs / "results" / "growth.md").read_text(encoding="utf-8") == page
