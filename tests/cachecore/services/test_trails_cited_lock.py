"""A record's check of its cited sections and its write are one (issue 21): the cited rows are
read again ``FOR SHARE`` in the record's transaction. A delete or a rescope that holds the row
first is waited for and then seen (the id is unknown: 422, nothing written; a rewrite leaves the
hash read first and a stale trail); one that comes after the record's lock waits for the trail and
then invalidates it. Each test orders the two
transactions with a second connection held open, and waits for the blocked one by bounded
retries on ``pg_stat_activity`` (no wall-clock limits)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction

from cachecore.engine.text import content_hash
from cachecore.errors import UnknownSections
from cachecore.models import Citation, Section, Trail, TrailStatus
from cachecore.services.sections import section_delete, sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import Caller, caller_for_key, tenant_caller
from tenants.models import ApiKey, all_key_permissions
from tenants.services import api_key_create

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Public: the opening hours are nine to five."
QUERY = "When are you open?"


def _limited(tenant: Any) -> Caller:
    key, _ = api_key_create(caller=tenant_caller(tenant), name="public", scope_prefixes=["public:"],
                            permissions=all_key_permissions())
    return caller_for_key(ApiKey.objects.select_related("tenant").get(pk=key.pk))


def _record(caller: Caller) -> Trail:
    return trail_record(caller=caller, scope="public:x", query=QUERY, steps=[], cited=["pub#1"],
                        signal={"source": "caller", "accepted": True})


def _wait_until_blocked_on_a_lock() -> None:
    """Until another connection of this database waits for a row lock (bounded retries)."""
    for _ in range(600):
        with connection.cursor() as cur:
            cur.execute("SELECT pg_stat_clear_snapshot()")  # inside a transaction it is read once otherwise
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'")
            if cur.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError("no transaction ever waited for the other one's row lock")


def _in_thread(work: Callable[[], Any], *, hold: threading.Event | None = None,
               holding: threading.Event | None = None) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``work`` on its own connection, in a transaction; with ``hold``, keep that transaction
    open (its locks held) until ``hold`` is set, after setting ``holding``."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            with transaction.atomic():
                out["result"] = work()
                if hold is not None:
                    holding.set()
                    hold.wait(60)
        except BaseException as exc:  # reported by the test
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


# The change that gets the row first: a tenant-wide delete, or a rescope out of ``public:``.
FIRST = {
    "delete": lambda tenant: section_delete(caller=tenant_caller(tenant), section_id="pub#1"),
    "rescope": lambda tenant: sections_upsert(caller=tenant_caller(tenant), sections=[
        {"id": "pub#1", "text": TEXT, "scopes": ["internal:"]}]),
}


@pytest.mark.parametrize("change", list(FIRST))
def test_a_change_that_locks_the_cited_section_first_is_seen_by_the_record(make_tenant, change):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "pub#1", "text": TEXT, "scopes": ["public:"]}])
    limited = _limited(tenant)
    hold, holding = threading.Event(), threading.Event()
    changer, changed = _in_thread(lambda: FIRST[change](tenant), hold=hold, holding=holding)
    assert holding.wait(60), changed
    # The change is not committed: the record's first read still sees the section, its lock waits.
    recorder, recorded = _in_thread(lambda: _record(limited))
    try:
        _wait_until_blocked_on_a_lock()
    finally:
        hold.set()
        changer.join(60)
        recorder.join(60)
    assert "error" not in changed, changed
    assert isinstance(recorded.get("error"), UnknownSections), recorded
    assert recorded["error"].extra["unknown_ids"] == ["pub#1"]
    assert not Trail.objects.filter(tenant=tenant).exists()
    assert not Citation.objects.filter(tenant=tenant).exists()


def test_a_rewrite_that_locks_the_cited_section_first_leaves_a_stale_trail_with_the_hash_read_first(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "pub#1", "text": TEXT, "scopes": ["public:"]}])
    limited = _limited(tenant)
    hold, holding = threading.Event(), threading.Event()
    rewriter, rewritten = _in_thread(lambda: sections_upsert(caller=tenant_caller(tenant), sections=[
        {"id": "pub#1", "text": "Public: the opening hours are ten to four."}]), hold=hold, holding=holding)
    assert holding.wait(60), rewritten
    recorder, recorded = _in_thread(lambda: _record(limited))
    try:
        _wait_until_blocked_on_a_lock()
    finally:
        hold.set()
        rewriter.join(60)
        recorder.join(60)
    assert "error" not in rewritten and "error" not in recorded, (rewritten, recorded)
    trail = Trail.objects.get(pk=recorded["result"].pk)
    assert trail.status == TrailStatus.STALE  # its one cited section changed before it existed
    assert Citation.objects.get(trail=trail).recorded_hash == content_hash(TEXT)


def test_a_delete_after_the_records_lock_waits_and_then_invalidates_the_trail(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "pub#1", "text": TEXT, "scopes": ["public:"]}])
    limited = _limited(tenant)
    with transaction.atomic():
        trail = _record(limited)
        # The trail is not committed; the delete must wait for it, not slip past it.
        deleter, deleted = _in_thread(lambda: section_delete(caller=tenant_caller(tenant), section_id="pub#1"))
        try:
            _wait_until_blocked_on_a_lock()
        except AssertionError:
            deleter.join(60)
            raise
    deleter.join(60)
    assert deleted == {"result": 1}, deleted  # it saw the committed trail and invalidated it
    assert not Section.objects.filter(tenant=tenant).exists()
    assert Trail.objects.get(pk=trail.pk).status == TrailStatus.STALE
