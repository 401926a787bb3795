"""The demo tenant `make run` seeds: generated relative to now, inside its own retention
windows (the sweep redacts and deletes nothing), every kind of outcome the console shows, and
idempotent (a second run the same day changes nothing; a run days later regenerates)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from cachecore.models import DailyStat, RecallEvent, Trail, TrailStatus
from cachecore.selectors.stats import stats_for_tenant
from cachecore.selectors.trails import top_trails_by_hits
from cachecore.services.retention import tenant_retention_sweep
from devtools.demo import ERASED_SUBJECT, PENDING_QUERY, seed_demo_data
from tenants.caller import tenant_caller
from tenants.models import AuditAction, AuditEntry, Tenant
from tenants.services import tenant_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def exports_in_tmp(settings, tmp_path) -> None:
    settings.MEDIA_ROOT = str(tmp_path)  # the demo's export file


@pytest.fixture
def demo() -> Tenant:
    tenant = tenant_create(slug="demo", name="Demo Docs Inc.")
    assert seed_demo_data(tenant=tenant)
    return tenant


def test_the_retention_sweep_right_after_seeding_redacts_and_deletes_nothing(demo):
    result = tenant_retention_sweep(tenant=demo)
    assert (result.redacted_trail_queries, result.redacted_recall_queries, result.recall_events,
            result.expired_trails, result.pending_trails) == (0, 0, 0, 0, 0)
    trails = Trail.objects.filter(tenant=demo)
    assert trails.count() == 10
    assert not trails.filter(query="").exists() and not trails.filter(query_redacted_at__isnull=False).exists()


def test_recalls_span_two_to_four_weeks_up_to_today(demo):
    now = timezone.now()
    events = RecallEvent.objects.filter(tenant=demo)
    oldest = min(events.values_list("created_at", flat=True))
    newest = max(events.values_list("created_at", flat=True))
    assert timedelta(days=14) <= now - oldest < timedelta(days=demo.query_retention_days)
    assert now - newest < timedelta(hours=12) and newest <= now
    days_with_recalls = {d.date() for d in events.values_list("created_at", flat=True)}
    assert len(days_with_recalls) >= 14


def test_every_outcome_and_status_the_console_shows_is_there(demo):
    events = RecallEvent.objects.filter(tenant=demo)
    assert {"prefetch", "hint", "miss"} <= set(events.values_list("outcome", flat=True))
    reasons = set(events.values_list("reason", flat=True))
    assert "stale" in reasons and len(reasons) >= 4, reasons  # the trail history shows several reasons
    assert events.filter(escalated=True).exists()
    assert events.filter(feedback=True).exists() and events.filter(feedback=False).exists()
    statuses = dict(Trail.objects.filter(tenant=demo).values_list("query", "status"))
    assert statuses["How do I limit the upload speed?"] == TrailStatus.STALE
    assert statuses["How do I delete my account?"] == TrailStatus.QUARANTINED
    assert statuses[PENDING_QUERY] == TrailStatus.PENDING
    quarantined = Trail.objects.get(tenant=demo, status=TrailStatus.QUARANTINED)
    assert quarantined.negative_feedback == 1
    # The dashboard's top trails are readable questions.
    top = top_trails_by_hits(caller=tenant_caller(demo), limit=10)
    assert len(top) >= 7 and all(t.query for t in top)
    stats = stats_for_tenant(caller=tenant_caller(demo), since=timezone.now() - timedelta(days=30))
    assert stats["recalls"] > 100 and 0 < stats["hit_rate"] < 1 and stats["stale_rate"] > 0
    assert stats["escalation_rate"] > 0


def test_the_audit_log_and_exports_have_entries(demo):
    actions = set(AuditEntry.objects.filter(tenant=demo).values_list("action", flat=True))
    assert {AuditAction.SETTINGS_CHANGE, AuditAction.EXPORT, AuditAction.SUBJECT_ERASE} <= actions
    erased = AuditEntry.objects.get(tenant=demo, action=AuditAction.SUBJECT_ERASE).details
    assert (erased["trails"], erased["recall_events"]) == (1, 2)
    # The erased subject stays erased, also when the demo is generated again.
    seed_demo_data(tenant=demo, force=True)
    assert not Trail.objects.filter(tenant=demo, subject=ERASED_SUBJECT).exists()
    assert not RecallEvent.objects.filter(tenant=demo, subject=ERASED_SUBJECT).exists()


def test_seeding_twice_the_same_day_changes_nothing(demo):
    before = (Trail.objects.filter(tenant=demo).count(), RecallEvent.objects.filter(tenant=demo).count())
    assert seed_demo_data(tenant=demo) == ""
    assert (Trail.objects.filter(tenant=demo).count(), RecallEvent.objects.filter(tenant=demo).count()) == before


def test_a_run_weeks_later_regenerates_inside_the_windows(demo):
    later = timezone.now() + timedelta(days=40)
    with time_machine.travel(later, tick=False):
        tenant_retention_sweep(tenant=demo)  # what the beat did meanwhile
        assert seed_demo_data(tenant=demo)
        assert not Trail.objects.filter(tenant=demo, query_redacted_at__isnull=False).exists()
        newest = max(RecallEvent.objects.filter(tenant=demo).values_list("created_at", flat=True))
        assert later - newest < timedelta(hours=12)
        assert not DailyStat.objects.filter(tenant=demo, day__lt=(later - timedelta(days=30)).date()).exists()


def test_shorter_retention_keeps_the_demo_inside_it():
    tenant = tenant_create(slug="demo", name="Demo Docs Inc.")
    Tenant.objects.filter(pk=tenant.pk).update(query_retention_days=10, recall_log_retention_days=12)
    tenant.refresh_from_db()
    seed_demo_data(tenant=tenant)
    result = tenant_retention_sweep(tenant=tenant)
    assert result.redacted_trail_queries == result.recall_events == 0


def test_seed_demo_command_is_idempotent(capsys):
    call_command("seed_demo", "--port", "8123")
    first = capsys.readouterr().out
    assert "Seeded demo data" in first and "login demo@trailcache.local" in first
    call_command("seed_demo", "--port", "8123")
    assert "Seeded demo data" not in capsys.readouterr().out
    assert Tenant.objects.filter(slug="demo").count() == 1


def test_the_demo_has_enough_labelled_traffic_for_a_calibration_suggestion(demo):
    from cachecore.services.calibration import operating_point

    suggestion = operating_point(caller=tenant_caller(demo))
    assert suggestion is not None and suggestion.labels >= 30
    assert 0 < suggestion.cited < suggestion.labels  # cited and uncited labels both


@pytest.mark.django_db(transaction=True)
def test_seeded_as_make_run_seeds_it_outside_a_transaction_the_history_is_back_dated(settings, tmp_path):
    """``make run`` seeds outside any transaction, where a recall's log entry is written by this
    process's writer thread after the answer (cachecore/services/recall_log.py), not inline as in
    the tests above: the demo's back-dating and labels must still land on every entry, and the
    trails' last hits must be back-dated too (not overwritten by the writes landing late)."""
    settings.MEDIA_ROOT = str(tmp_path)
    call_command("seed_demo", "--port", "8123")
    tenant = Tenant.objects.get(slug="demo")
    now = timezone.now()
    events = RecallEvent.objects.filter(tenant=tenant)
    days_with_recalls = {d.date() for d in events.values_list("created_at", flat=True)}
    assert len(days_with_recalls) >= 14
    assert events.filter(created_at__lt=now - timedelta(days=1)).count() > events.count() * 0.8
    assert events.filter(offered_cited__isnull=False).count() >= 30
    hits = list(Trail.objects.filter(tenant=tenant, last_hit_at__isnull=False).values_list("last_hit_at", flat=True))
    assert hits and sum(now - hit > timedelta(hours=1) for hit in hits) >= len(hits) // 2


def test_the_dashboard_savings_have_a_miss_path_to_count_against(demo):
    """Most demo trails were recorded after their question missed (linked by recall_id), with a
    search and a read per cited section: the savings card counts the cited prefetches at that."""
    stats = stats_for_tenant(caller=tenant_caller(demo), since=timezone.now() - timedelta(days=30))
    savings = stats["savings"]
    assert savings["baseline_records"] >= 6 and savings["baseline_calls"] >= 2
    assert savings["cited_prefetches"] > 20 and savings["calls"] > 40 and savings["tokens"] > 0
