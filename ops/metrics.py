"""``GET /metrics``: Prometheus text format.

Counters and histograms are updated from what the services report through explicit hooks
(``cachecore.signals``: answered recalls, invalidated trails) and from Trail inserts
(``post_save``); the receivers are connected in ``OpsConfig.ready()``, so web and worker
processes count alike. Job, database and broker gauges are computed at scrape time from a few
aggregate queries. Under gunicorn, set ``PROMETHEUS_MULTIPROC_DIR`` (``make run`` does) so every
worker's counts are summed at scrape time.

Tenant labels are bounded: only the tenants listed in ``TRAILCACHE_METRICS_TENANTS`` (slugs) get
their own label value, every other tenant is ``other``.

The recall latency phases are the ones the recall service times itself (``RecallResult.timings``):
``embedding``, ``search``, ``validation``, ``scoring``, ``write`` and ``total``.

Access (``metrics_allowed``): ``Authorization: Bearer <TRAILCACHE_METRICS_TOKEN>`` when the setting
is set. Without a token, production mode refuses every scrape; development mode
(``TRAILCACHE_DEV=true``) allows loopback addresses only.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Min
from django.db.models.signals import post_save
from django.http import HttpRequest
from django.utils import timezone
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

OTHER_TENANT = "other"
PHASES = ("embedding", "search", "validation", "scoring", "write")

# Process-local registry (single-process mode); in multiprocess mode the values live in files and
# are collected from PROMETHEUS_MULTIPROC_DIR at scrape time.
PROCESS_REGISTRY = CollectorRegistry(auto_describe=True)

RECALLS = Counter("trailcache_recalls", "Recalls answered, by outcome and reason.",
                  ["tenant", "outcome", "reason"], registry=PROCESS_REGISTRY)
RECALL_SECONDS = Histogram(
    "trailcache_recall_duration_seconds", "Recall latency by phase (and total).", ["phase"],
    buckets=(0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5),
    registry=PROCESS_REGISTRY,
)
RECALL_SIMILARITY = Histogram(
    "trailcache_recall_best_similarity", "Cosine similarity of the best candidate (recalls with a candidate).",
    ["outcome"], buckets=tuple(round(0.05 * i, 2) for i in range(4, 21)), registry=PROCESS_REGISTRY,
)
RECALL_CONFIDENCE = Histogram(
    "trailcache_recall_confidence", "Confidence of the answer (0 when nothing was close).", ["outcome"],
    buckets=tuple(round(0.1 * i, 1) for i in range(1, 11)), registry=PROCESS_REGISTRY,
)
RECORDS = Counter("trailcache_records", "Trails recorded, by admission status.", ["tenant", "status"],
                  registry=PROCESS_REGISTRY)
INVALIDATIONS = Counter("trailcache_invalidated_trails",
                        "Trails invalidated by section changes (counted when an upsert or delete is accepted).",
                        registry=PROCESS_REGISTRY)


def tenant_label(tenant: Any) -> str:
    slug = getattr(tenant, "slug", "")
    return slug if slug and slug in settings.TRAILCACHE_METRICS_TENANTS else OTHER_TENANT


# --- what the services report -----------------------------------------------------------------


def _trails_invalidated(sender: Any, *, tenant: Any, count: int, **_: Any) -> None:
    """``cachecore.signals.trails_invalidated``: sent once the change committed."""
    INVALIDATIONS.inc(count)


def _recall_answered(sender: Any, *, tenant: Any, result: Any, **_: Any) -> None:
    recall_observed(tenant=tenant, result=result)


def recall_observed(*, tenant: Any, result: Any) -> None:
    """Count one answered recall (``cachecore.signals.recall_answered``)."""
    answer = result.answer
    outcome = str(answer.outcome)
    RECALLS.labels(tenant_label(tenant), outcome, str(answer.reason) or "none").inc()
    if answer.similarity is not None:
        RECALL_SIMILARITY.labels(outcome).observe(answer.similarity)
    RECALL_CONFIDENCE.labels(outcome).observe(answer.confidence or 0.0)
    for phase, seconds in result.diagnostics.timings.items():
        RECALL_SECONDS.labels(phase).observe(seconds)


def _trail_saved(sender: Any, instance: Any, created: bool, **_: Any) -> None:
    if created:
        label, status = tenant_label(instance.tenant), str(instance.status)
        transaction.on_commit(lambda: RECORDS.labels(label, status).inc())


def connect_receivers() -> None:
    """Connect the counters to what the services report (``OpsConfig.ready()``; idempotent)."""
    from cachecore.models import Trail
    from cachecore.signals import recall_answered, trails_invalidated

    post_save.connect(_trail_saved, sender=Trail, dispatch_uid="trailcache-metrics-records")
    trails_invalidated.connect(_trails_invalidated, dispatch_uid="trailcache-metrics-invalidations")
    recall_answered.connect(_recall_answered, dispatch_uid="trailcache-metrics-recalls")


# --- scrape-time gauges ----------------------------------------------------------------------
def _broker_up() -> bool:
    # The project's Celery app (config/__init__.py loads it with Django), as the job publisher uses it.
    from celery import current_app

    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=0, timeout=2)
        return True
    except Exception:  # any broker failure is a 0, never a failed scrape
        return False


class ScrapeCollector(Collector):
    """Jobs by kind and status, the oldest queued job's age, database and broker up."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from cachecore.models import Job, JobKind, JobStatus

        jobs = GaugeMetricFamily("trailcache_jobs", "Background jobs by kind and status (queued, running, failed).",
                                 labels=["kind", "status"])
        oldest = GaugeMetricFamily("trailcache_job_oldest_queued_age_seconds",
                                   "Age of the oldest queued job, by kind (0 when none).", labels=["kind"])
        database = GaugeMetricFamily("trailcache_database_up", "1 when the database answers.")
        counts: dict[tuple[str, str], int] = {}
        ages: dict[str, float] = {}
        try:
            rows = (Job.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FAILED])
                    .order_by().values("kind", "status").annotate(n=Count("id"), oldest=Min("created_at")))
            now = timezone.now()
            for row in rows:
                counts[(row["kind"], row["status"])] = row["n"]
                if row["status"] == JobStatus.QUEUED:
                    ages[row["kind"]] = max(0.0, (now - row["oldest"]).total_seconds())
            database.add_metric([], 1)
        except Exception:  # a database outage is reported as a 0, the scrape still answers
            connection.close_if_unusable_or_obsolete()
            database.add_metric([], 0)
        for kind in JobKind.values:
            for status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FAILED):
                jobs.add_metric([kind, str(status)], counts.get((kind, str(status)), 0))
            oldest.add_metric([kind], ages.get(kind, 0.0))
        broker = GaugeMetricFamily("trailcache_broker_up", "1 when the Celery broker accepts a connection.")
        broker.add_metric([], 1 if _broker_up() else 0)
        yield from (jobs, oldest, database, broker)


def render() -> bytes:
    """What a scrape returns: this process's metrics (or, multiprocess, every worker's summed),
    then the gauges read now."""
    scraped = CollectorRegistry()
    scraped.register(ScrapeCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = PROCESS_REGISTRY
    return generate_latest(counted) + generate_latest(scraped)


# --- access ----------------------------------------------------------------------------------
def metrics_allowed(request: HttpRequest) -> bool:
    """The configured bearer token when there is one; without it, loopback in development mode
    only (production mode refuses: a same-host proxy would make loopback public)."""
    token = settings.TRAILCACHE_METRICS_TOKEN
    if token:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
    if not settings.TRAILCACHE_DEV:
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False
