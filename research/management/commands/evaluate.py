"""The evaluation harness (``make eval``): see research/evaluation/harness.py."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from research.evaluation.harness import (
    DEFAULT_DOCS,
    DEFAULT_QUESTIONS,
    EDIT_RATES,
    GATES,
    EvalConfig,
    parse_overrides,
    run_evaluation,
)
from research.evaluation.report import write_report


class Command(BaseCommand):
    help = ("Evaluate Trailcache with a simulated agent over ingested documentation: admission gates, "
            "cost with/without cache, staleness vs a naive text cache, matching quality and a threshold sweep. "
            "Writes report.json, summary.md and PNG plots.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS,
                            help=f"documentation tree (default {DEFAULT_DOCS})")
        parser.add_argument("--subtree", action="append", default=[],
                            help="ingest only this folder/file under --docs (repeatable); default everything")
        parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS, help="questions JSONL")
        parser.add_argument("--limit", type=int, default=None, help="first N questions only")
        parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                            help="tenant setting for this run (repeatable), e.g. --set similarity_threshold=0.85")
        parser.add_argument("--gates", default=",".join(GATES), help="admission gates: none,oracle,verifier")
        parser.add_argument("--edit-rates", default=",".join(str(r) for r in EDIT_RATES),
                            help="fractions of cited sections edited in the staleness experiment")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--out", type=Path, default=None,
                            help="output folder (default reports/eval/<timestamp>/, with reports/eval/latest)")
        parser.add_argument("--keep-tenant", action="store_true", help="keep the eval tenant for inspection")
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            overrides = parse_overrides(options["overrides"])
            rates = tuple(float(x) for x in options["edit_rates"].split(",") if x.strip())
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if any(not 0 < r <= 1 for r in rates):
            raise CommandError("--edit-rates must be fractions in (0, 1]")
        if not options["docs"].exists():
            raise CommandError(f"{options['docs']} does not exist (Debian: apt-get install python3.11-doc)")
        config = EvalConfig(
            docs=options["docs"], questions=options["questions"], limit=options["limit"],
            subtrees=tuple(options["subtree"]),
            gates=tuple(g.strip() for g in options["gates"].split(",") if g.strip()),
            seed=options["seed"], overrides=overrides, edit_rates=rates, keep_tenant=options["keep_tenant"],
            progress=not options["quiet"],
        )
        try:
            report = run_evaluation(config)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        base = Path(settings.BASE_DIR) / "reports" / "eval"
        out = options["out"] or base / datetime.now().strftime("%Y%m%d-%H%M%S")
        files = write_report(report, out, latest=base / "latest" if options["out"] is None else None)
        m = report["matching"]
        self.stdout.write(f"Report in {out}: " + ", ".join(f.name for f in files))
        self.stdout.write(f"paraphrase hit rate {m['paraphrase_hit_rate']}, false-hit rate {m['false_hit_rate']}, "
                          f"total {report['meta']['timings_s']['total']} s")
