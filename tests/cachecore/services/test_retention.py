"""Retention: expired and pending trails go, the recall log goes after its retention, query
text is redacted while the trail keeps matching by its embedding. Bounded, idempotent."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from cachecore.models import Citation, DailyStat, RecallEvent, Trail, TrailStatus
from cachecore.services.retention import retention_sweep, tenant_retention_sweep
from tests.factories import make_recall_event, make_trail

pytestmark = pytest.mark.django_db


def test_trails_past_expiry_are_deleted_with_their_citations(make_tenant):
    tenant = make_tenant(trail_ttl_days=10)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        expiring = make_trail(tenant, cited=["a", "b"])
    with time_machine.travel(start + timedelta(days=9, hours=23), tick=False):
        assert tenant_retention_sweep(tenant=tenant).expired_trails == 0
    with time_machine.travel(start + timedelta(days=10, seconds=1), tick=False):
        assert tenant_retention_sweep(tenant=tenant).expired_trails == 1
    assert not Trail.objects.filter(pk=expiring.pk).exists()
    assert not Citation.objects.filter(trail_id=expiring.pk).exists()


def test_pending_trails_past_their_ttl_are_deleted_but_active_ones_stay(make_tenant):
    tenant = make_tenant(pending_ttl_hours=24)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        pending = make_trail(tenant, status=TrailStatus.PENDING)
        active = make_trail(tenant)
    with time_machine.travel(start + timedelta(hours=25), tick=False):
        result = tenant_retention_sweep(tenant=tenant)
    assert result.pending_trails == 1
    assert not Trail.objects.filter(pk=pending.pk).exists()
    assert Trail.objects.filter(pk=active.pk).exists()


def test_recall_log_is_deleted_after_its_retention_but_rolled_up_first(make_tenant):
    tenant = make_tenant(recall_log_retention_days=30)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        trail = make_trail(tenant)
        make_recall_event(tenant, trail=trail, outcome="prefetch")
    with time_machine.travel(start + timedelta(days=29), tick=False):
        assert tenant_retention_sweep(tenant=tenant).recall_events == 0
    with time_machine.travel(start + timedelta(days=30, seconds=1), tick=False):
        assert tenant_retention_sweep(tenant=tenant).recall_events == 1
    assert not RecallEvent.objects.filter(tenant=tenant).exists()
    assert DailyStat.objects.get(tenant=tenant).prefetch == 1


def test_query_text_is_redacted_after_query_retention_and_the_trail_stays_active_with_its_embedding(make_tenant):
    tenant = make_tenant(query_retention_days=30, trail_ttl_days=365)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        trail = make_trail(tenant, query="what is alice's account number?")
        event = make_recall_event(tenant, query="what is alice's account number?", trail=trail)
        tenant.recall_log_retention_days = 60
        tenant.save()
    embedding_before = list(trail.embedding)
    with time_machine.travel(start + timedelta(days=31), tick=False):
        result = tenant_retention_sweep(tenant=tenant)
    assert result.redacted_trail_queries == 1 and result.redacted_recall_queries == 1
    trail.refresh_from_db()
    event.refresh_from_db()
    assert trail.query == "" and trail.query_normalised == "" and trail.query_redacted_at is not None
    assert trail.status == TrailStatus.ACTIVE
    assert list(trail.embedding) == embedding_before
    assert event.query == ""


CONFIG_TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
CONFIG_QUERY = "Where does Acme read its configuration from?"
# Same need, few shared trigrams (cosine 0.88, trigram similarity 0.22 with CONFIG_QUERY).
CONFIG_PARAPHRASE = "In which file is the acme config stored?"


def _record_then_redact(caller) -> str:
    """A trail recorded through the API, then a sweep 31 days later redacts its query."""
    caller.upsert({"doc#config": CONFIG_TEXT})
    trail_id = caller.record(query=CONFIG_QUERY, cited=["doc#config"]).json()["trail_id"]
    with time_machine.travel(timezone.now() + timedelta(days=31), tick=False):
        assert tenant_retention_sweep(tenant=caller.tenant).redacted_trail_queries == 1
    trail = Trail.objects.get(pk=trail_id)
    assert trail.query == "" and trail.query_normalised == "" and trail.query_redacted_at is not None
    return trail_id


def test_a_redacted_trail_is_still_recalled_by_its_embedding(make_caller):
    # A tenant of one section raises its prefetch cut (small_tenant_cut): this is about redaction.
    caller = make_caller(query_retention_days=30, trail_ttl_days=365, small_tenant_cut=False)
    trail_id = _record_then_redact(caller)
    served = caller.recall(CONFIG_QUERY)
    assert served["outcome"] == "prefetch" and served["trail_id"] == trail_id
    assert served["sections"] == [{"id": "doc#config", "status": "valid", "text": CONFIG_TEXT}]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_the_trigram_match_modes_treat_a_redacted_trail_as_embedding_only(make_caller, mode):
    caller = make_caller(query_retention_days=30, trail_ttl_days=365, match_mode=mode)
    if mode == "lexical":  # with its words, the paraphrase is too far from the trail's question by trigrams
        caller.upsert({"doc#config": CONFIG_TEXT})
        unredacted = caller.record(query=CONFIG_QUERY, cited=["doc#config"]).json()["trail_id"]
        assert caller.recall(CONFIG_PARAPHRASE)["outcome"] == "miss"
        Trail.objects.filter(pk=unredacted).delete()
    trail_id = _record_then_redact(caller)
    # No words left to compare: the empty query matches nothing by trigrams, the embedding decides.
    served = caller.recall(CONFIG_PARAPHRASE)
    assert served["outcome"] in {"prefetch", "hint"} and served["trail_id"] == trail_id


def test_retention_follows_each_tenants_own_settings(make_tenant):
    short = make_tenant(trail_ttl_days=1)
    long = make_tenant(trail_ttl_days=100)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        make_trail(short)
        make_trail(long)
    with time_machine.travel(start + timedelta(days=2), tick=False):
        call_command("sweep_retention")
    assert not Trail.objects.filter(tenant=short).exists()
    assert Trail.objects.filter(tenant=long).count() == 1


def test_sweep_works_in_bounded_batches_and_a_second_run_finds_nothing(make_tenant):
    tenant = make_tenant(trail_ttl_days=1)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for _ in range(7):
            make_trail(tenant)
    with time_machine.travel(start + timedelta(days=2), tick=False):
        assert retention_sweep(batch=3).expired_trails == 7
        again = retention_sweep(batch=3)
    assert again.expired_trails == 0 and again.redacted_trail_queries == 0


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_split_the_work_without_errors(make_tenant):
    tenant = make_tenant(trail_ttl_days=1)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for _ in range(40):
            make_trail(tenant)
    results, errors = [], []

    def sweep() -> None:
        try:
            results.append(retention_sweep(now=start + timedelta(days=2), batch=5).expired_trails)
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(results) == 40
    assert not Trail.objects.filter(tenant=tenant).exists()


def test_query_redaction_also_clears_the_query_from_step_arguments_and_verdict_quotes(make_tenant):
    tenant = make_tenant(query_retention_days=30, trail_ttl_days=365)
    query = "what is alice's account number 4471?"
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        trail = make_trail(tenant, query=query, subject="user-4471")
        Trail.objects.filter(pk=trail.pk).update(
            steps=[{"tool": "search", "args": {"q": query, "filters": {"owner": "alice 4471"}, "k": 5,
                                               "terms": [query, "4471"]}, "returned": ["doc#1"]}],
            verdict={"passed": False, "supported_ratio": 0.0,
                     "reasons": ["says the sources do not answer: 'alice 4471 could not find'",
                                 "reads like a non-answer (0.81): \"about 4471\"",
                                 "1 of 1 sentences not supported by the cited sections (0% of the answer supported)"]})
    with time_machine.travel(start + timedelta(days=31), tick=False):
        assert tenant_retention_sweep(tenant=tenant).redacted_trail_queries == 1
    with connection.cursor() as cur:
        cur.execute("SELECT steps::text, verdict::text FROM cachecore_trail WHERE id = %s", [trail.pk])
        steps_text, verdict_text = cur.fetchone()
    assert "4471" not in steps_text and "alice" not in steps_text
    assert "4471" not in verdict_text and "alice" not in verdict_text
    trail.refresh_from_db()
    assert trail.steps == [{"tool": "search", "args": {"q": "", "filters": {"owner": ""}, "k": 5, "terms": ["", ""]},
                            "returned": ["doc#1"]}]
    assert trail.verdict["reasons"] == [
        "says the sources do not answer", "reads like a non-answer (0.81)",
        "1 of 1 sentences not supported by the cited sections (0% of the answer supported)"]
    assert trail.verdict["supported_ratio"] == 0.0
    assert trail.subject == "user-4471"  # kept: erasure finds the subject's rows by it (docs/background.md → Retention)
