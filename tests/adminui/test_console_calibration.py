"""The Settings page's calibration card: the noise allowance setting, a suggestion to answer hints
only, and the paused state, applied and audited from the console."""

from cachecore.models import RecallEvent
from tenants.models import AuditAction, AuditEntry


def _noisy_labels(tenant, trail) -> None:
    rows = [(0.95, True)] * 270 + [(0.95, False)] * 30 + [(0.8, True)] * 90 + [(0.8, False)] * 10
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=tenant, scope="default", query="q", trail_id=trail.pk, outcome="hint",
                    reason="low_confidence", confidence=c, latency_ms=1.0,
                    offered_ids=["manual/install.md#linux"], offered_cited=cited)
        for c, cited in rows
    ])


def test_settings_page_suggests_hints_only_and_says_so_once_applied(world):
    # The labels are judged at the cut recall applies; the world's few sections would raise it
    # over all of them (``small_tenant_cut``, tests/api/test_calibration_api.py), so it is off.
    world.tenant.small_tenant_cut = False
    world.tenant.save(update_fields=["small_tenant_cut"])
    client = world.client("admin")
    page = client.get("/console/settings/?tenant=acme").content.decode()
    assert "Label noise the operating point may allow" in page and "Hints only, no prefetch" in page
    _noisy_labels(world.tenant, world.trails[0])
    page = client.get("/console/settings/?tenant=acme").content.decode()
    assert "No prefetch confidence meets the target with these labels" in page
    assert "Apply suggestion: hints only" in page and "prefetch is paused" not in page
    applied = client.post("/console/settings/calibration/apply/?tenant=acme")
    assert applied.status_code == 302
    world.tenant.refresh_from_db()
    assert world.tenant.prefetch_paused
    assert AuditEntry.objects.get(tenant=world.tenant, action=AuditAction.CALIBRATION_APPLY).details["move"] == "pause"
    page = client.get(applied["Location"]).content.decode()
    assert "Prefetch paused, hints only" in page
    assert "Hints only: prefetch is paused." in page and "prefetch_paused" in page


def test_a_small_tenants_card_judges_the_cut_it_applies(world):
    """The world's few sections raise the cut recall applies near 1 (``small_tenant_cut``): labels
    under it say nothing about it, and the card says so instead of suggesting a move."""
    from cachecore.services.calibration import cut_in_force

    _noisy_labels(world.tenant, world.trails[0])
    applied, _ = cut_in_force(world.tenant)
    assert applied > 0.99
    page = world.client("admin").get("/console/settings/?tenant=acme").content.decode()
    assert f'data-small-tenant="{applied}"' in page
    assert "No labelled recall at this confidence or above yet" in page
    assert '<th scope="row">Suggested</th>' not in page and "Apply suggestion" not in page
    assert "The prefetch confidence applied now is the suggested one" in page
    # The chart's axis reaches the cut in force (above the grid's last cut, 0.99): its line is drawn.
    assert "<title>now: 1.00</title>" in page
