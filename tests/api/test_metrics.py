"""GET /metrics: scraped in the Prometheus text format, token or loopback only, bounded labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from api import metrics
from cachecore.models import Job, JobKind, JobStatus
from tenants.caller import tenant_caller


def scrape(client: Client | None = None, **headers: str) -> dict[str, dict[tuple, float]]:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict[str, dict[tuple, float]], name: str, **labels: str) -> float:
    return samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


def test_the_invalidation_counter_wraps_every_step_it_names_and_recall_times_its_own_phases(make_tenant):
    """When the sections service renames a step, this fails instead of the counter silently vanishing."""
    assert set(metrics.install_recall_timers()) == {
        "trails_invalidate_for_sections", "trails_invalidate_schedule", "trails_invalidate_job_run",
    }
    from cachecore.services.recall import recall

    result = recall(caller=tenant_caller(make_tenant()), scope="default", query="anything at all")
    assert set(result.diagnostics.timings) == {"embedding", "search", "validation", "scoring", "write", "total"}
    assert set(metrics.PHASES) <= set(result.diagnostics.timings)


@pytest.mark.django_db(transaction=True)
def test_recalls_records_invalidations_and_latency_phases_are_counted(make_caller, settings):
    caller = make_caller(slug="metered")
    settings.TRAILCACHE_METRICS_TENANTS = ["metered"]
    before = scrape()
    caller.upsert({"guide/a": "Install with apt install acme-sync on Ubuntu."})
    assert caller.recall("How do I install Acme Sync on Ubuntu?")["outcome"] == "miss"
    assert caller.record(query="How do I install Acme Sync on Ubuntu?", cited=["guide/a"]).status_code == 201
    assert caller.record(query="unsure", cited=["guide/a"], accepted=None).status_code == 201
    assert caller.recall("How do I install Acme Sync on Ubuntu?")["outcome"] == "prefetch"
    caller.upsert({"guide/a": "Install with snap install acme-sync."})
    after = scrape()

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("trailcache_recalls_total", tenant="metered", outcome="miss", reason="no_candidate") == 1
    assert delta("trailcache_recalls_total", tenant="metered", outcome="prefetch", reason="match") == 1
    assert delta("trailcache_records_total", tenant="metered", status="active") == 1
    assert delta("trailcache_records_total", tenant="metered", status="pending") == 1
    assert delta("trailcache_invalidated_trails_total") == 2
    for phase in ("embedding", "search", "scoring", "validation", "write", "total"):
        assert delta("trailcache_recall_duration_seconds_count", phase=phase) == 2, phase
    assert delta("trailcache_recall_best_similarity_count", outcome="prefetch") == 1
    assert value(after, "trailcache_database_up") == 1
    assert value(after, "trailcache_broker_up") in (0, 1)
    # Every series the Grafana dashboard queries is one the service exposes.
    dashboard = (Path(__file__).resolve().parents[2] / "docs" / "grafana-trailcache.json").read_text()
    queried = set(re.findall(r"trailcache_[a-z_]+", dashboard)) - {"trailcache"}
    assert queried and queried <= set(after), queried - set(after)


@pytest.mark.django_db(transaction=True)
def test_a_large_fan_out_is_counted_once_when_accepted_not_again_when_the_job_runs(caller, settings):
    from cachecore.services.jobs import job_execute

    settings.TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS = 0  # every upsert's fan-out becomes a job
    caller.upsert({"a": "Alpha text.", "b": "Beta text."})
    assert caller.record(query="What about alpha and beta?", cited=["a", "b"]).status_code == 201
    before = value(scrape(), "trailcache_invalidated_trails_total")
    assert caller.upsert({"a": "Alpha text, rewritten."})["invalidated_trails"] == 1
    job = Job.objects.get(kind=JobKind.TRAILS_INVALIDATE)
    assert value(scrape(), "trailcache_invalidated_trails_total") - before == 1
    job_execute(job_id=str(job.pk))
    assert Job.objects.get(pk=job.pk).status == JobStatus.DONE
    assert value(scrape(), "trailcache_invalidated_trails_total") - before == 1
    assert caller.delete("/api/v1/sections/b").status_code == 204
    assert value(scrape(), "trailcache_invalidated_trails_total") - before == 2


@pytest.mark.django_db
def test_tenants_not_opted_in_share_one_label(make_caller, settings):
    settings.TRAILCACHE_METRICS_TENANTS = []
    caller = make_caller(slug="unlisted")
    before = scrape()
    caller.recall("anything at all")
    after = scrape()
    assert not any(dict(labels).get("tenant") == "unlisted" for labels in after["trailcache_recalls_total"])
    assert (value(after, "trailcache_recalls_total", tenant="other", outcome="miss", reason="no_candidate")
            - value(before, "trailcache_recalls_total", tenant="other", outcome="miss", reason="no_candidate")) == 1


@pytest.mark.django_db
def test_jobs_by_kind_and_status_and_the_oldest_queued_age(make_tenant):
    tenant = make_tenant()
    Job.objects.create(tenant=tenant, kind=JobKind.EXPORT, status=JobStatus.QUEUED)
    Job.objects.create(tenant=tenant, kind=JobKind.EXPORT, status=JobStatus.FAILED, error="boom")
    Job.objects.create(tenant=tenant, kind=JobKind.SUBJECT_ERASE, status=JobStatus.RUNNING)
    samples = scrape()
    assert value(samples, "trailcache_jobs", kind="export", status="queued") == 1
    assert value(samples, "trailcache_jobs", kind="export", status="failed") == 1
    assert value(samples, "trailcache_jobs", kind="subject_erase", status="running") == 1
    assert value(samples, "trailcache_jobs", kind="section_chunks", status="queued") == 0
    assert value(samples, "trailcache_job_oldest_queued_age_seconds", kind="export") >= 0
    assert ("trailcache_job_oldest_queued_age_seconds" in samples
            and len(samples["trailcache_job_oldest_queued_age_seconds"]) == len(JobKind.values))


@pytest.mark.django_db
def test_without_a_token_only_loopback_may_scrape(settings):
    settings.TRAILCACHE_METRICS_TOKEN = ""
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="10.0.0.8").get("/metrics").status_code == 403


@pytest.mark.django_db
def test_with_a_token_every_scraper_needs_it(settings):
    settings.TRAILCACHE_METRICS_TOKEN = "s3cret-scrape"
    loopback = Client(REMOTE_ADDR="127.0.0.1")
    assert loopback.get("/metrics").status_code == 401
    assert loopback.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    remote = Client(REMOTE_ADDR="10.0.0.8")
    assert scrape(remote, HTTP_AUTHORIZATION="Bearer s3cret-scrape")["trailcache_database_up"]


@pytest.mark.django_db
def test_only_get(settings):
    assert Client().post("/metrics").status_code == 405


def test_multiprocess_mode_sums_the_files_of_every_worker(tmp_path, monkeypatch):
    """Under gunicorn each worker writes its counts to PROMETHEUS_MULTIPROC_DIR; a scrape sums them."""
    import subprocess
    import sys

    code = (
        "import django, os; django.setup();"
        "from api import metrics; from types import SimpleNamespace as N;"
        "metrics.recall_observed(tenant=N(slug='x'), result=N(answer=N(outcome='hint', reason='changed',"
        " similarity=0.8, confidence=0.7), diagnostics=N(timings={})))"
    )
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], check=True, env={**__import__("os").environ, **env})
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    text = generate_latest(registry).decode()
    families = {s.name: s for f in text_string_to_metric_families(text) for s in f.samples}
    assert families["trailcache_recalls_total"].value == 2
