"""``manage.py embedded_db start|stop|url``: the embedded default database (config/embedded_db.py).
The settings only read its URL; this, ``make`` and the scripts start it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from config import embedded_db


class Command(BaseCommand):
    help = "Start or stop the embedded PostgreSQL, or print its URL (start does nothing when DATABASE_URL is set)."
    # Nothing here may need the database: it is what starts it.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "url"])

    def handle(self, *args: Any, **options: Any) -> None:
        embedded_db.main([options["action"]])
