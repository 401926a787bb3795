"""``manage.py sweep_retention``: the hourly retention sweep, run now."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand

from cachecore.services.retention import retention_sweep


class Command(BaseCommand):
    help = "Apply every tenant's retention now (the beat schedule runs this hourly). Safe to run twice."

    def handle(self, *args: Any, **options: Any) -> None:
        result = retention_sweep()
        self.stdout.write(json.dumps(asdict(result)))
