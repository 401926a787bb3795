"""Sample data for the demo tenant: a small product manual, trails recorded against it, and
about four weeks of recalls, all written through the services so they behave like real
traffic, then back-dated. Everything is generated relative to now and inside the tenant's own
retention windows, so the retention sweep finds nothing to redact or delete: every question
stays readable."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max, OuterRef, Subquery
from django.utils import timezone

from cachecore.models import DailyStat, Job, JobKind, JobStatus, RecallEvent, RecallOutcome, Section, Trail, TrailStatus
from cachecore.services import recall_log
from cachecore.services.erasure import subject_erase_request
from cachecore.services.exports import export_request
from cachecore.services.feedback import feedback_apply
from cachecore.services.jobs import job_execute
from cachecore.services.recall import recall
from cachecore.services.rollups import stats_rollup_tenant
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller
from tenants.models import DEFAULT_COVERAGE_FLOOR, Tenant
from tenants.services import tenant_settings_update

DEMO_ACTOR = "operator:demo@trailcache.local"
DEMO_COVERAGE_FLOOR = 0.45
ERASED_SUBJECT = "demo-user-5"

SECTIONS = {
    "manual/install.md#requirements": "Acme Sync runs on Linux, macOS and Windows. It needs 2 GB of memory "
    "and 500 MB of disk space. A 64-bit processor is required; 32-bit systems are not supported.",
    "manual/install.md#linux": "On Linux, install the package with your package manager: apt install acme-sync "
    "on Debian and Ubuntu, dnf install acme-sync on Fedora. The service starts automatically after installation.",
    "manual/install.md#windows": "On Windows, download the installer and run it as an administrator. The installer "
    "adds Acme Sync to the Start menu and registers it as a Windows service.",
    "manual/sync.md#conflicts": "When the same file changes on two devices before they sync, Acme Sync keeps both "
    "copies. The older copy is renamed with the suffix (conflict) and the device name, so no change is lost.",
    "manual/sync.md#selective": "Selective sync lets you choose which folders are kept on a device. Open Settings, "
    "choose Folders, and untick the folders you do not need locally. They stay in the cloud.",
    "manual/sync.md#bandwidth": "To limit bandwidth, open Settings, choose Network and set upload and download "
    "limits in kilobytes per second. Limits apply to every account on the device.",
    "manual/account.md#password": "To reset your password, choose Forgot password on the sign-in page. We email a "
    "link that is valid for one hour. Resetting the password signs you out on every device.",
    "manual/account.md#delete": "To delete your account, open Account, choose Delete account and confirm with your "
    "password. Files are removed from our servers within 30 days. This cannot be undone.",
    "manual/account.md#two-factor": "Two-factor authentication adds a code from an authenticator app to every "
    "sign-in. Turn it on under Account, Security. Keep the recovery codes somewhere safe.",
    "manual/billing.md#plans": "The Free plan includes 5 GB of storage. The Pro plan includes 2 TB and priority "
    "support. Plans are billed monthly or yearly; yearly billing saves two months.",
    "manual/billing.md#invoices": "Invoices are emailed to the account owner on each billing date. Past invoices "
    "are listed under Account, Billing, where each one can be downloaded as a PDF.",
}


@dataclass(frozen=True)
class DemoTrail:
    key: str
    scope: str
    query: str
    cited: tuple[str, ...]
    # Questions agents asked later that mean the same (served as prefetch while valid).
    paraphrases: tuple[str, ...]


TRAILS = (
    DemoTrail("install", "default", "How do I install Acme Sync on Ubuntu?",
              ("manual/install.md#requirements", "manual/install.md#linux"),
              ("How do I install Acme Sync on Ubuntu", "how to install acme sync on ubuntu?",
               "How can I install Acme Sync on Ubuntu?")),
    DemoTrail("conflicts", "default", "What happens when a file is edited on two computers at once?",
              ("manual/sync.md#conflicts",),
              ("What happens when a file is edited on two computers at once",
               "what happens if a file is edited on two computers at once?")),
    DemoTrail("selective", "default", "How can I stop some folders from syncing to my laptop?",
              ("manual/sync.md#selective",),
              ("How can I stop some folders from syncing to my laptop",
               "how can i stop certain folders from syncing to my laptop?")),
    DemoTrail("password", "default", "How do I reset my password?", ("manual/account.md#password",),
              ("How do I reset my password", "how do i reset my password?", "How can I reset my password?")),
    DemoTrail("two-factor", "default", "How do I turn on two-factor authentication?",
              ("manual/account.md#two-factor",),
              ("How do I turn on two-factor authentication", "how do I turn on two factor authentication?")),
    DemoTrail("plans", "group:premium", "How much storage does the Pro plan include?", ("manual/billing.md#plans",),
              ("How much storage does the Pro plan include", "how much storage does the pro plan include?")),
    DemoTrail("bandwidth", "default", "How do I limit the upload speed?", ("manual/sync.md#bandwidth",),
              ("How do I limit the upload speed", "how do I limit the upload speed?")),
    DemoTrail("delete", "default", "How do I delete my account?", ("manual/account.md#delete",),
              ("How do I delete my account", "how do i delete my account?")),
    DemoTrail("invoices", "default", "Where can I download my invoices?", ("manual/billing.md#invoices",),
              ("Where can I download my invoices", "where can i download my invoices?")),
)

# Near questions (a different need, or more than the cited text covers) and questions the
# manual does not answer: hints, escalations and misses.
NEAR = (
    ("default", "How do I install Acme Sync on Ubuntu and move my old settings across?"),
    ("default", "What happens to shared links when a file is edited on two computers at once?"),
    ("default", "How do I reset my password and also change the email address on my account?"),
    ("default", "Can I reset my password without access to my email?"),
    ("default", "How do I turn off two-factor authentication?"),
    ("default", "How do I limit the download speed at night only?"),
    ("group:premium", "How much does the Pro plan cost per year?"),
)
UNRELATED = (
    ("default", "How do I export my contacts?"),
    ("default", "Does Acme Sync work with a NAS drive?"),
    ("default", "Can I share a folder with someone outside my team?"),
    ("default", "Is there a dark mode?"),
    ("group:premium", "Can I get a refund for my annual plan?"),
)

EDITS = [
    # A manual edit some days ago: the bandwidth trail goes stale, the install trail recalls as a hint.
    {"id": "manual/sync.md#bandwidth", "text": SECTIONS["manual/sync.md#bandwidth"] + " Limits can be scheduled."},
    {"id": "manual/install.md#linux", "text": SECTIONS["manual/install.md#linux"].replace("dnf", "dnf or yum")},
]

PENDING_QUERY = "Can I delete my account and keep my files?"


def demo_span_days(tenant: Tenant) -> int:
    """How many days back the demo reaches: four weeks, but always inside the tenant's query,
    recall-log and trail retention, so nothing seeded is redacted or deleted by the sweep."""
    return max(2, min(28, tenant.query_retention_days - 2, tenant.recall_log_retention_days - 2,
                      tenant.trail_ttl_days - 2))


def demo_is_current(*, tenant: Tenant, now: datetime | None = None) -> bool:
    """True when the demo data was generated in the last 20 hours and nothing of it has been
    redacted: then a second `make run` leaves it as it is."""
    now = now or timezone.now()
    if not Section.objects.filter(tenant=tenant).exists():
        return False
    newest = RecallEvent.objects.filter(tenant=tenant).aggregate(newest=Max("created_at"))["newest"]
    if newest is None or newest < now - timedelta(hours=20):
        return False
    return not Trail.objects.filter(tenant=tenant, query_redacted_at__isnull=False).exists()


def demo_clear(*, tenant: Tenant) -> None:
    """Forget the tenant's sections, trails, recalls and daily stats (not its keys, jobs, audit)."""
    with transaction.atomic():
        RecallEvent.objects.filter(tenant=tenant).delete()
        Trail.objects.filter(tenant=tenant).delete()
        Section.objects.filter(tenant=tenant).delete()
        DailyStat.objects.filter(tenant=tenant).delete()


def seed_demo_data(*, tenant: Tenant, now: datetime | None = None, force: bool = False) -> str:
    """Generate the demo relative to ``now``; idempotent: does nothing while the data is
    current (see demo_is_current), else replaces it. Returns a one-line summary, or ""."""
    now = now or timezone.now()
    if not force and demo_is_current(tenant=tenant, now=now):
        return ""
    demo_clear(tenant=tenant)
    return _generate(tenant=tenant, now=now, days=demo_span_days(tenant))


def _compliance_history(*, tenant: Tenant) -> None:
    """Once per tenant: an export of the premium scope and one subject's erasure, run here as
    the worker would, so the exports page and the audit log have entries to show."""
    if not Job.objects.filter(tenant=tenant, kind=JobKind.EXPORT).exists():
        job = export_request(caller=tenant_caller(tenant, actor_label=DEMO_ACTOR), format="csv", scope="group:premium")
        job_execute(job_id=str(job.pk))
    if not Job.objects.filter(tenant=tenant, kind=JobKind.SUBJECT_ERASE).exists():
        # A user who asked to be forgotten: their trail and recalls go; only the hash stays.
        question = "Can I move my files to another account?"
        trail_record(caller=tenant_caller(tenant), scope="default", query=question, cited=["manual/account.md#delete"],
                              steps=[], signal={"source": "user", "accepted": True}, subject=ERASED_SUBJECT)
        for _ in range(2):
            recall(caller=tenant_caller(tenant), scope="default", query=question, subject=ERASED_SUBJECT)
        job = subject_erase_request(caller=tenant_caller(tenant, actor_label=DEMO_ACTOR), subject=ERASED_SUBJECT)
        job_execute(job_id=str(job.pk))


def _at(now: datetime, day: int, rng: random.Random) -> datetime:
    """A moment on ``day`` days ago during working hours (UTC), never in the future."""
    base = (now - timedelta(days=day)).replace(hour=8, minute=0, second=0, microsecond=0)
    return min(base + timedelta(minutes=rng.randint(0, 10 * 60)), now - timedelta(minutes=rng.randint(2, 50)))


def _generate(*, tenant: Tenant, now: datetime, days: int) -> str:
    started = timezone.now()
    rng = random.Random(7)
    if tenant.coverage_floor == DEFAULT_COVERAGE_FLOOR:
        # A stricter floor than the default: thinly covered prefetches become escalated hints.
        tenant_settings_update(caller=tenant_caller(tenant, actor_label=DEMO_ACTOR),
                               changes={"coverage_floor": DEMO_COVERAGE_FLOOR})
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": k, "text": v} for k, v in SECTIONS.items()])
    trails: dict[str, Trail] = {}
    first_asks: dict[str, str] = {}
    for i, demo in enumerate(TRAILS):
        # Asked first with nothing to recall (a miss); the agent then searched, read what it
        # cites and recorded the trail after that recall: the tenant's miss path, which the
        # dashboard's savings count each cited prefetch against.
        subject = f"demo-user-{1 + i % 3}"
        first = recall(caller=tenant_caller(tenant), scope=demo.scope, query=demo.query, subject=subject)
        recall_log.flush()
        followed_a_miss = first.answer.outcome == RecallOutcome.MISS
        if followed_a_miss:
            first_asks[demo.key] = first.recall_id
        trails[demo.key] = trail_record(
            caller=tenant_caller(tenant), scope=demo.scope, query=demo.query, cited=list(demo.cited),
            steps=[{"tool": "search", "args": {"q": demo.query}, "returned": list(demo.cited)},
                   *({"tool": "read", "args": {"id": section}, "returned": [section]} for section in demo.cited)],
            signal={"source": "user", "accepted": True}, subject=subject,
            recall_id=first.recall_id if followed_a_miss else None,
        )
    # Recorded in the first days of the window, a few hours apart, each a few minutes after its miss.
    for i, demo in enumerate(TRAILS):
        created = now - timedelta(days=days, hours=-2 - i * 5)
        Trail.objects.filter(pk=trails[demo.key].pk).update(created_at=created,
                                                             expires_at=created + timedelta(days=tenant.trail_ttl_days))
        if demo.key in first_asks:
            RecallEvent.objects.filter(pk=first_asks[demo.key]).update(created_at=created - timedelta(minutes=4))
    edit_day = max(1, days // 3)  # the manual is edited about a week before today
    quarantine_day = max(edit_day + 1, days * 2 // 3)  # an agent's user rejects what "delete" served
    by_key = {demo.key: demo for demo in TRAILS}
    made = len(TRAILS)  # their first asks, above
    feedback = 0
    for day in range(days - 1, -1, -1):
        if day == edit_day:
            # A large docs import: the fan-out runs as a background job, so recalls that come
            # before it find every cited hash changed (miss, reason "stale") and mark the trail.
            sections_upsert(caller=tenant_caller(tenant), sections=EDITS, invalidation="job")
            fan_out = list(Job.objects.filter(tenant=tenant, kind=JobKind.TRAILS_INVALIDATE,
                                              status=JobStatus.QUEUED).values_list("pk", flat=True))
        weekend = (now - timedelta(days=day)).weekday() >= 5
        asks: list[tuple[str, str, str | None]] = []
        for _ in range(rng.randint(3, 6) if weekend else rng.randint(7, 13)):
            roll = rng.random()
            if roll < 0.68:
                demo = by_key[rng.choice([d.key for d in TRAILS])]
                asks.append((demo.scope, rng.choice(demo.paraphrases), demo.key))
            elif roll < 0.84:
                asks.append((*rng.choice(NEAR), None))
            else:
                asks.append((*rng.choice(UNRELATED), None))
        if day == edit_day:  # asked again before the fan-out has run: a stale miss
            asks.insert(0, ("default", by_key["bandwidth"].paraphrases[0], None))
        if day == quarantine_day:
            demo = by_key["delete"]
            asks.append((demo.scope, demo.paraphrases[0], "reject"))
        for scope, query, tag in asks:
            result = recall(caller=tenant_caller(tenant), scope=scope, query=query,
                                     subject=f"demo-user-{rng.randint(1, 4)}")
            # Outside a transaction (make run) the log entry is written after the answer, by
            # this process's writer thread: wait for it before back-dating it.
            recall_log.flush()
            made += 1
            when = _at(now, day, rng)
            RecallEvent.objects.filter(pk=result.recall_id).update(created_at=when)
            answer = result.answer
            if answer.outcome == RecallOutcome.MISS:
                continue
            if rng.random() < 0.7:
                # The agent's following record (its recall_id) says whether it cited what it was
                # offered: the labels the settings page calibrates from. 10 % of them are noise.
                cited = (tag is not None and tag != "reject") != (rng.random() < 0.1)
                RecallEvent.objects.filter(pk=result.recall_id).update(
                    offered_cited=cited, served_cited=len(answer.sections) if cited and answer.outcome == "prefetch"
                    else (0 if answer.outcome == "prefetch" else None))
            # Feedback comes from users who asked one of the demo's own questions: an accepted
            # answer on a same-need ask, a rejection for "reject". A close-but-different ask
            # (tag None) gets none: its answer was not the trail's, so accepting it would be
            # wrong, and rejecting it would quarantine a trail that is right for its own question.
            if tag is None or (tag != "reject" and rng.random() >= 0.35):
                continue
            # Negative feedback quarantines the trail served, for review in the console.
            event = feedback_apply(caller=tenant_caller(tenant), recall_id=result.recall_id, accepted=tag != "reject")
            feedback += 1
            later = when + timedelta(minutes=3)
            RecallEvent.objects.filter(pk=event.pk).update(feedback_at=later)
            if tag == "reject" and event.trail_id:
                Trail.objects.filter(pk=event.trail_id).update(status_changed_at=later)
        if day == edit_day:
            for job_id in fan_out:  # the background fan-out catches up at the end of that day
                job_execute(job_id=str(job_id))
    # Recorded an hour ago without a signal: pending, never served until positive feedback arrives.
    pending = trail_record(
        caller=tenant_caller(tenant), scope="default", query=PENDING_QUERY, cited=["manual/account.md#delete"],
        steps=[{"tool": "search", "args": {"q": "delete account keep files"},
                "returned": ["manual/account.md#delete"]}],
        signal=None, subject="demo-user-4",
    )
    Trail.objects.filter(pk=pending.pk).update(created_at=now - timedelta(hours=1))
    # The edit made the sections' and trails' state change on that day, not today.
    edited_at = _at(now, edit_day, rng)
    imported = now - timedelta(days=days + 1)  # the manual was mirrored the day before the first trail
    Section.objects.filter(tenant=tenant).update(created_at=imported, updated_at=imported)
    Section.objects.filter(tenant=tenant, external_id__in=[e["id"] for e in EDITS]).update(updated_at=edited_at)
    Trail.objects.filter(tenant=tenant, status_changed_at__gte=started).exclude(
        status__in=[TrailStatus.QUARANTINED, TrailStatus.PENDING]).update(status_changed_at=edited_at)
    # Recalls were back-dated above; so are the trails' last hits.
    last_hit = (RecallEvent.objects.filter(trail=OuterRef("pk")).exclude(outcome=RecallOutcome.MISS)
                .order_by("-created_at").values("created_at")[:1])
    Trail.objects.filter(tenant=tenant, last_hit_at__isnull=False).update(last_hit_at=Subquery(last_hit))
    _compliance_history(tenant=tenant)
    # What the beat would have rolled up for the complete days.
    stats_rollup_tenant(tenant=tenant, now=now)
    return (f"{len(SECTIONS)} sections, {len(TRAILS) + 1} trails, {made} recalls ({feedback} with feedback) "
            f"over {days} days")
