"""Sample data for the demo tenant: a small product manual, trails recorded against it, and
two weeks of recalls, all written through the services so they behave like real traffic."""

from __future__ import annotations

import random
from datetime import timedelta

from django.db.models import OuterRef, Subquery
from django.utils import timezone

from cachecore import services
from cachecore.models import RecallEvent, Section, Trail
from tenants.models import Tenant

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
}

TRAILS = [
    ("default", "How do I install Acme Sync on Ubuntu?", ["manual/install.md#requirements", "manual/install.md#linux"]),
    ("default", "What happens when a file is edited on two computers at once?", ["manual/sync.md#conflicts"]),
    ("default", "How can I stop some folders from syncing to my laptop?", ["manual/sync.md#selective"]),
    ("default", "How do I reset my password?", ["manual/account.md#password"]),
    ("default", "How do I turn on two-factor authentication?", ["manual/account.md#two-factor"]),
    ("group:premium", "How much storage does the Pro plan include?", ["manual/billing.md#plans"]),
    ("default", "How do I limit the upload speed?", ["manual/sync.md#bandwidth"]),
]

RECALLS = [
    ("default", "how to install acme sync on debian"),
    ("default", "Installing Acme Sync on an Ubuntu machine"),
    ("default", "two devices changed the same file, what happens?"),
    ("default", "choose which folders sync to my laptop"),
    ("default", "I forgot my password, how do I reset it?"),
    ("default", "enable 2FA on my account"),
    ("default", "how do I cap the upload rate?"),
    ("default", "does acme sync support arm processors"),
    ("default", "how do I export my contacts"),
    ("group:premium", "what storage do I get with Pro?"),
]


EDITS = [
    # A manual edit some days ago: the bandwidth trail goes stale, the install trail becomes a hint.
    {"id": "manual/sync.md#bandwidth", "text": SECTIONS["manual/sync.md#bandwidth"] + " Limits can be scheduled."},
    {"id": "manual/install.md#linux", "text": SECTIONS["manual/install.md#linux"].replace("dnf", "dnf or yum")},
]


def seed_demo_data(*, tenant: Tenant, days: int = 35, edit_days_ago: int = 9) -> str:
    """Seed once: does nothing when the tenant already has sections. Recalls are spread over
    ``days`` days; the manual is edited ``edit_days_ago`` days ago, so the dashboard shows
    hints and stale misses after that day, and the trail list shows every status."""
    if Section.objects.filter(tenant=tenant).exists():
        return ""
    services.sections_upsert(tenant=tenant, sections=[{"id": k, "text": v} for k, v in SECTIONS.items()])
    now = timezone.now()
    recorded = []
    for i, (scope, query, cited) in enumerate(TRAILS):
        trail = services.trail_record(
            tenant=tenant, scope=scope, query=query, cited=cited,
            steps=[{"tool": "search", "args": {"q": query}, "returned": cited}],
            signal={"source": "user", "accepted": True}, subject=f"demo-user-{1 + i % 3}",
        )
        recorded.append(trail.pk)
    # Recorded without a signal: pending, never served until positive feedback arrives.
    services.trail_record(
        tenant=tenant, scope="default", query="Can I delete my account and keep my files?",
        cited=["manual/account.md#delete"],
        steps=[{"tool": "search", "args": {"q": "delete account files"}, "returned": ["manual/account.md#delete"]}],
        signal=None,
    )
    for offset, pk in enumerate(recorded):
        Trail.objects.filter(pk=pk).update(created_at=now - timedelta(days=days + 1, hours=offset * 5))
    rng = random.Random(7)
    made = 0
    for day in range(days, -1, -1):
        if day == edit_days_ago:
            services.sections_upsert(tenant=tenant, sections=EDITS)
        for _ in range(rng.randint(3, 9)):
            scope, query = rng.choice(RECALLS)
            result = services.recall(tenant=tenant, scope=scope, query=query)
            made += 1
            when = now - timedelta(days=day, minutes=rng.randint(0, 600))
            RecallEvent.objects.filter(pk=result.recall_id).update(created_at=when)
            if result.outcome != "miss" and rng.random() < 0.3:
                # Rare negative feedback: the trail served is quarantined for review.
                services.feedback_apply(tenant=tenant, recall_id=result.recall_id, accepted=rng.random() < 0.96)
    if edit_days_ago > days:
        services.sections_upsert(tenant=tenant, sections=EDITS)
    # Recalls were back-dated above; so are the trails' last hits.
    last_hit = (RecallEvent.objects.filter(trail=OuterRef("pk")).exclude(outcome="miss")
                .order_by("-created_at").values("created_at")[:1])
    Trail.objects.filter(tenant=tenant, last_hit_at__isnull=False).update(last_hit_at=Subquery(last_hit))
    return f"{len(SECTIONS)} sections, {len(TRAILS) + 1} trails, {made} recalls over {days} days"
