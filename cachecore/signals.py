"""What the services report to whoever counts (the ops app's metrics): explicit Django signals.
Receivers are connected in an
``AppConfig.ready()``, so every process that loads Django (web, worker, shell) counts alike.

- ``trails_invalidated(tenant, count)``: trails invalidated by a section change, once, when the
  upsert or delete is accepted (a large upsert counts its citing trails then and fans out in a
  job, which does not report again). Sent when the transaction that made the change commits.
- ``recall_answered(tenant, result)``: one answered recall (sent by the caller of the recall
  service that answers a client: the API's recall view), when the answer is ready."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import Signal

trails_invalidated = Signal()
recall_answered = Signal()


def report_trails_invalidated(*, sender: Any, tenant: Any, count: int) -> None:
    """Send ``trails_invalidated`` when the current transaction commits (nothing for 0)."""
    if count > 0:
        transaction.on_commit(lambda: trails_invalidated.send(sender=sender, tenant=tenant, count=count))
