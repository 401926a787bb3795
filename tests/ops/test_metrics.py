"""GET /metrics: scraped in the Prometheus text format, the token (or loopback in development mode)
only, bounded labels, counted from what the services report in every process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from cachecore.models import Job, JobKind, JobStatus
from ops import metrics
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


def test_services_are_not_patched_and_recall_times_the_phases_counted(make_tenant):
    """The counters hang on explicit hooks (cachecore.signals), not on wrapped service functions."""
    from cachecore.services import jobs, sections
    from cachecore.services.recall import recall

    for name in ("trails_invalidate_for_sections", "trails_invalidate_schedule", "trails_invalidate_job_run",
                 "sections_upsert", "section_delete"):
        fn = getattr(sections, name)
        assert fn.__module__ == "cachecore.services.sections" and not hasattr(fn, "__wrapped__"), name
    assert jobs._HANDLERS[JobKind.TRAILS_INVALIDATE] is sections.trails_invalidate_job_run
    result = recall(caller=tenant_caller(make_tenant()), scope="default", query="anything at all")
    assert set(result.diagnostics.timings) == {"embedding", "search", "validation", "scoring", "write", "total"}
    assert set(metrics.PHASES) <= set(result.diagnostics.timings)


def test_a_worker_process_counts_without_loading_the_urlconf():
    """django.setup() alone (what a Celery worker does) connects every counter."""
    import subprocess
    import sys

    code = (
        "import django, sys; django.setup();"
        "from django.db.models.signals import post_save; from cachecore.models import Trail;"
        "from cachecore.signals import recall_answered, trails_invalidated;"
        "assert 'config.urls' not in sys.modules and 'api.views.core' not in sys.modules;"
        "assert trails_invalidated.has_listeners() and recall_answered.has_listeners();"
        "assert post_save.has_listeners(Trail); print('connected')"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "config.settings"})
    assert out.stdout.strip() == "connected"


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
def test_without_a_token_only_loopback_may_scrape_in_development_mode(settings):
    settings.TRAILCACHE_METRICS_TOKEN = ""
    settings.TRAILCACHE_DEV = True
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="10.0.0.8").get("/metrics").status_code == 403


@pytest.mark.django_db
def test_without_a_token_production_mode_refuses_every_scraper_even_loopback(settings):
    """A same-host proxy makes loopback public: production mode needs TRAILCACHE_METRICS_TOKEN."""
    settings.TRAILCACHE_METRICS_TOKEN = ""
    settings.TRAILCACHE_DEV = False
    for address in ("127.0.0.1", "::1", "10.0.0.8"):
        response = Client(REMOTE_ADDR=address).get("/metrics")
        assert response.status_code == 403, address
        assert b"TRAILCACHE_METRICS_TOKEN" in response.content
        assert b"trailcache_" not in response.content


@pytest.mark.django_db
def test_with_a_token_every_scraper_needs_it_in_either_mode(settings):
    settings.TRAILCACHE_METRICS_TOKEN = "s3cret-scrape"
    loopback = Client(REMOTE_ADDR="127.0.0.1")
    assert loopback.get("/metrics").status_code == 401
    assert loopback.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    remote = Client(REMOTE_ADDR="10.0.0.8")
    assert scrape(remote, HTTP_AUTHORIZATION="Bearer s3cret-scrape")["trailcache_database_up"]
    settings.TRAILCACHE_DEV = False
    assert loopback.get("/metrics").status_code == 401
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
        "from ops import metrics; from types import SimpleNamespace as N;"
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
