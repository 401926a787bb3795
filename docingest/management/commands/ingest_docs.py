"""Ingest a documentation tree as a tenant's sections: ``manage.py ingest_docs DIR --tenant SLUG``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from docingest.ingest import UPSERT_BATCH, collect_sections, ingest_sections
from docingest.progress import Progress
from tenants.models import Tenant


class Command(BaseCommand):
    help = ("Split a documentation tree (Sphinx HTML build, reST or Markdown sources) into sections by heading "
            "and upsert them for a tenant. Section id = <path relative to DIR>#<anchor>, stable across runs.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", type=Path)
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--subtree", action="append", default=[],
                            help="only this folder or file under DIR (repeatable), e.g. --subtree faq")
        parser.add_argument("--batch", type=int, default=UPSERT_BATCH, help="sections per upsert (≤ 1000)")
        parser.add_argument("--chunks", choices=("jobs", "sync"), default="jobs",
                            help="chunk embeddings for coverage: as the API does (background jobs for large "
                                 "upserts, needs a Celery worker; default) or computed here (slow for big trees)")
        parser.add_argument("--dry-run", action="store_true", help="split and count only")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["dir"]
        if not root.exists():
            raise CommandError(f"{root} does not exist")
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        if not 1 <= options["batch"] <= 1000:
            raise CommandError("--batch must be between 1 and 1000")
        sections = collect_sections(root, options["subtree"])
        if options["dry_run"]:
            self.stdout.write(f"{len(sections)} sections under {root}")
            return
        with Progress("ingest sections", len(sections)) as bar:
            result = ingest_sections(tenant=tenant, sections=sections, batch_size=options["batch"],
                                     on_batch=bar.step, chunks=options["chunks"])
        self.stdout.write(
            f"{result.sections} sections: {result.created} created, {result.updated} updated, "
            f"{result.unchanged} unchanged in {result.seconds} s"
        )
