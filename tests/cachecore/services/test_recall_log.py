"""The recall log's write after the answer (cachecore.services.recall_log): outside a caller's
transaction a recall does not wait for it, nothing is lost or counted twice, and a record or a
feedback that names the recall finds it even while it is still queued or in another process."""

import threading
import time
import uuid

import psycopg
import pytest
from django.db import connection, transaction

from cachecore.errors import InvalidInput, NotFound
from cachecore.models import RecallEvent, Trail
from cachecore.services import recall_log
from cachecore.services.feedback import feedback_apply
from cachecore.services.recall import recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller

QUERY = "How do I install Acme on a fresh machine?"


def _seed(tenant) -> Trail:
    sections_upsert(caller=tenant_caller(tenant), sections=[
        {"id": "doc#install", "text": "Install Acme with the installer, then run acme init on a fresh machine."},
        {"id": "doc#remove", "text": "Remove Acme with acme uninstall; the data folder stays."}])
    trail_record(caller=tenant_caller(tenant), scope="default", query=QUERY, steps=[], cited=["doc#install"],
                 signal={"source": "caller", "accepted": True})
    recall_log.flush()
    return Trail.objects.get(tenant=tenant, query=QUERY)


def _write_params(tenant, **overrides) -> dict:
    """The parameters of one recall log write (a miss unless ``overrides`` say otherwise), as
    recall hands them to the writer."""
    from django.utils import timezone

    return {"now": timezone.now(), "tenant": tenant.pk, "stale": [], "hit": [], "trail_ids": [],
            "trail_confidences": [], "passed_trail_ids": [], "passed_confidences": [],
            "scope": "default", "query": "q", "subject": "", "trail": None,
            "outcome": "miss", "shadow_outcome": "",
            "miss_reason": "no_candidate", "reason": "no_match", "confidence": 0.0, "similarity": 0.0,
            "coverage": 0.0, "escalated": False, "asked_again": False, "latency": 1.0, "served": [], "offered": [],
            **overrides}


class _RowLock:
    """Another session holding a trail's row lock: the writer's UPDATE of that trail waits."""

    def __init__(self, trail: Trail) -> None:
        s = connection.settings_dict
        self.conn = psycopg.connect(dbname=s["NAME"], user=s["USER"] or None, password=s["PASSWORD"] or None,
                                    host=s["HOST"] or None, port=s["PORT"] or None)
        self.conn.execute("SELECT 1 FROM cachecore_trail WHERE id = %s FOR UPDATE", [trail.pk])

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def _in_thread(fn, *args, **kwargs) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 — handed to the test
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_recall_answers_before_its_log_write_lands_and_the_write_lands_whole(transactional_db, make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    recall(caller=tenant_caller(tenant), scope="default", query="warm the scope-size cache")
    recall_log.flush()
    lock = _RowLock(trail)
    try:
        # The write would wait for the lock; the recall does not.
        thread, out = _in_thread(recall, caller=tenant_caller(tenant), scope="default", query=QUERY)
        thread.join(timeout=10)
        assert not thread.is_alive() and "error" not in out
        result = out["value"]
        assert result.answer.outcome == "prefetch" and result.answer.trail_id == str(trail.pk)
        assert not RecallEvent.objects.filter(pk=result.recall_id).exists()
    finally:
        lock.release()
    assert recall_log.flush()
    event = RecallEvent.objects.get(pk=result.recall_id)
    assert event.outcome == "prefetch" and event.trail_id == trail.pk and event.served_ids == ["doc#install"]
    assert Trail.objects.get(pk=trail.pk).hits == 1


def test_many_queued_recalls_are_each_logged_and_counted_once(transactional_db, make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    ids = [recall(caller=tenant_caller(tenant), scope="default", query=QUERY).recall_id for _ in range(150)]
    assert recall_log.flush()
    assert RecallEvent.objects.filter(pk__in=ids).count() == 150
    assert Trail.objects.get(pk=trail.pk).hits == 150


def test_a_record_linked_to_a_recall_still_queued_finds_it(transactional_db, make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    recall(caller=tenant_caller(tenant), scope="default", query="warm the scope-size cache")
    recall_log.flush()
    lock = _RowLock(trail)
    try:
        result = recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
        assert not RecallEvent.objects.filter(pk=result.recall_id).exists()
        thread, out = _in_thread(
            trail_record, caller=tenant_caller(tenant), scope="default", query="How to remove Acme again?",
            steps=[], cited=["doc#remove"], signal={"source": "caller", "accepted": True},
            recall_id=result.recall_id)
        time.sleep(0.2)
        assert thread.is_alive()   # waiting for the queued write, not refusing the link
    finally:
        lock.release()
    thread.join(timeout=10)
    assert "error" not in out, out.get("error")
    event = RecallEvent.objects.get(pk=result.recall_id)
    assert event.recorded_trail_id == out["value"].pk
    assert event.offered_cited is not None   # the label: the offered section was not cited


def test_a_recall_written_late_by_another_process_is_found_within_the_wait(transactional_db, make_tenant,
                                                                        settings):
    """The link waits for a recall another process has answered but not written yet."""
    settings.TRAILCACHE_RECALL_LINK_WAIT_MS = 3000
    tenant = make_tenant()
    trail = _seed(tenant)
    recall_id = uuid.uuid4()
    params = _write_params(tenant, hit=[str(trail.pk)], trail_ids=[str(trail.pk)], id=recall_id, query=QUERY,
                           trail=str(trail.pk), outcome="prefetch", miss_reason="", reason="same_need",
                           confidence=0.9, similarity=0.95, coverage=1.0, served=["doc#install"],
                           offered=["doc#install"])

    def late_write() -> None:
        time.sleep(0.3)
        recall_log.write_now(params)   # another connection, as another process's writer

    writer, _ = _in_thread(late_write)
    started = time.monotonic()
    event = feedback_apply(caller=tenant_caller(tenant), recall_id=recall_id, accepted=True)
    writer.join(timeout=10)
    assert event.pk == recall_id and event.feedback is True
    assert 0.25 <= time.monotonic() - started < 3.0


def test_a_recall_that_never_was_is_refused_after_the_wait(transactional_db, make_tenant, settings):
    settings.TRAILCACHE_RECALL_LINK_WAIT_MS = 100
    tenant = make_tenant()
    _seed(tenant)
    started = time.monotonic()
    with pytest.raises(InvalidInput) as exc:
        trail_record(caller=tenant_caller(tenant), scope="default", query="How to remove Acme again?", steps=[],
                     cited=["doc#remove"], signal={"source": "caller", "accepted": True}, recall_id=str(uuid.uuid4()))
    assert exc.value.fields == {"recall_id": ["no such recall for this tenant"]}
    assert time.monotonic() - started >= 0.1
    with pytest.raises(NotFound):
        recall_log.recall_for_label(caller=tenant_caller(tenant), recall_id="not-a-uuid")


def test_another_tenants_recall_is_not_found_and_waits_as_long(transactional_db, make_tenant, settings):
    settings.TRAILCACHE_RECALL_LINK_WAIT_MS = 150
    owner, other = make_tenant(), make_tenant()
    _seed(owner)
    result = recall(caller=tenant_caller(owner), scope="default", query=QUERY)
    recall_log.flush()
    started = time.monotonic()
    with pytest.raises(NotFound), transaction.atomic():
        recall_log.recall_for_label(caller=tenant_caller(other), recall_id=result.recall_id)
    assert time.monotonic() - started >= 0.15


def test_a_full_queue_writes_inline_and_off_writes_every_recall_inline(transactional_db, make_tenant, settings):
    tenant = make_tenant()
    trail = _seed(tenant)
    writer = recall_log._Writer(capacity=1)
    # A writer of capacity 1 takes one write and queues one; the third does not fit.
    base = _write_params(tenant)
    lock = _RowLock(trail)
    try:
        blocking = {**base, "id": uuid.uuid4(), "hit": [str(trail.pk)]}
        assert writer.submit(blocking)
        deadline = time.monotonic() + 5
        while writer.queue.qsize() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writer.submit({**base, "id": uuid.uuid4()})
        assert not writer.submit({**base, "id": uuid.uuid4()})
    finally:
        lock.release()
    assert writer.flush()
    assert RecallEvent.objects.filter(pk=blocking["id"]).exists()

    settings.TRAILCACHE_RECALL_LOG_QUEUE = 0
    lock = _RowLock(trail)
    try:
        thread, out = _in_thread(recall, caller=tenant_caller(tenant), scope="default", query=QUERY)
        time.sleep(0.3)
        assert thread.is_alive()   # inline: the recall waits for its own write
    finally:
        lock.release()
    thread.join(timeout=10)
    assert RecallEvent.objects.filter(pk=out["value"].recall_id).exists()


def test_inside_a_callers_transaction_the_write_is_part_of_it(make_tenant):
    tenant = make_tenant()
    _seed(tenant)
    assert connection.in_atomic_block
    result = recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
    assert RecallEvent.objects.filter(pk=result.recall_id).exists()   # written in this transaction, at once
