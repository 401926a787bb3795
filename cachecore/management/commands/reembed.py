"""``manage.py reembed``: after an embedding model change, embed stored trails and chunks again
now (the beat schedule does it every 10 minutes)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand

from cachecore.services.reembed import embeddings_refresh


class Command(BaseCommand):
    help = "Re-embed trails and section chunks stored under another embedding model than the current one."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(json.dumps(asdict(embeddings_refresh())))
