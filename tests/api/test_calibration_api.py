"""The operating point from the agents' citations, and savings, through the API and services."""

import pytest

from cachecore.models import RecallEvent
from cachecore.services import recall_log
from cachecore.services.calibration import operating_point_apply, operating_points_auto_apply
from tenants.caller import tenant_caller
from tenants.models import AuditAction, AuditEntry
from tests.api.acme import SAME_NEED


@pytest.fixture
def caller(make_caller):
    """These tests are about labels, bars and what a recall serves at the tenant's cut, on a few
    sections: a tenant that small raises its cut above a rewording's confidence
    (``small_tenant_cut``, tests/cachecore/engine/test_small_tenant_cut.py), so it is off here."""
    return make_caller(small_tenant_cut=False)

TEXT = {"doc#config": "Set ACME_HOME to move the configuration directory.",
        "doc#logging": "Logs go to /var/log/acme; set ACME_LOG_LEVEL to change the level."}
QUERY = "How do I move the Acme configuration directory?"


def _labelled(caller, n_cited: int, n_uncited: int) -> float:
    """Recalls with labels: cited ones at high confidence, uncited ones just above the tenant's
    cut. Returns the uncited ones' confidence."""
    confidence_uncited = round(caller.tenant.prefetch_confidence + 0.02, 2)
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    rows = [(0.97, True)] * n_cited + [(confidence_uncited, False)] * n_uncited
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=caller.tenant, scope="default", query=QUERY, trail_id=trail["trail_id"],
                    outcome="prefetch", reason="match", confidence=c, latency_ms=1.0, served_ids=["doc#config"],
                    offered_ids=["doc#config"], served_cited=int(cited), offered_cited=cited)
        for c, cited in rows
    ])
    return confidence_uncited


def test_stats_show_the_suggested_operating_point_with_its_evidence(caller):
    uncited = _labelled(caller, 100, 20)
    cal = caller.get("/api/v1/stats").json()["calibration"]
    assert cal["enough_labels"] and cal["labels"] == 120 and cal["cited"] == 100
    assert cal["current"]["false_rate"] == round(20 / 120, 4)  # at the default cut every uncited one is served
    assert cal["suggested"]["prefetch_confidence"] > uncited and cal["suggested"]["false_rate"] == 0.0
    assert cal["suggested"]["hit_rate"] == 1.0 and cal["changes"] is True


def test_an_admin_applies_the_suggestion_and_it_is_audited(caller):
    uncited = _labelled(caller, 100, 20)
    before = caller.tenant.prefetch_confidence
    applied = operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="operator:admin@example.com"))
    assert applied is not None and caller.tenant.prefetch_confidence > uncited > before
    entry = AuditEntry.objects.get(tenant=caller.tenant, action=AuditAction.CALIBRATION_APPLY)
    assert entry.details["prefetch_confidence"] == {"old": before, "new": caller.tenant.prefetch_confidence}
    assert entry.details["automatic"] is False and entry.details["labels"] == 120
    # Nothing left to change.
    assert operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="operator:x")) is None


def test_automatic_calibration_only_for_tenants_that_opted_in(make_caller):
    # Both at the setting's cut (``caller``'s reason): the labels sit between it and the cut a
    # two-section tenant would apply.
    opted, other = make_caller(auto_calibrate=True, small_tenant_cut=False), make_caller(small_tenant_cut=False)
    uncited = _labelled(opted, 100, 20)
    _labelled(other, 100, 20)
    assert operating_points_auto_apply() >= 1
    opted.tenant.refresh_from_db()
    other.tenant.refresh_from_db()
    assert opted.tenant.prefetch_confidence > uncited > other.tenant.prefetch_confidence
    entry = AuditEntry.objects.get(tenant=opted.tenant, action=AuditAction.CALIBRATION_APPLY)
    assert entry.actor_label == "system:calibration" and entry.details["automatic"] is True


def test_a_small_tenants_labels_are_judged_at_the_cut_it_applies_and_a_suggestion_places_it(make_caller):
    """A two-section tenant applies a cut near 1 (``small_tenant_cut``, on as shipped). Its labels
    are judged at that cut, not at the setting under it, and applying a suggested cut makes it
    the cut recall applies: the size prior is turned off, audited, since the labels place the cut."""
    from cachecore.engine.decide import small_tenant_prefetch_cut

    small = make_caller()
    small.upsert(TEXT)
    trail = small.record(query=QUERY, cited=["doc#config"]).json()
    setting = small.tenant.prefetch_confidence
    in_force = small_tenant_prefetch_cut(setting, len(TEXT))
    hinted = small.recall(SAME_NEED)
    assert (hinted["outcome"], hinted["reason"]) == ("hint", "low_confidence")
    assert 0.61 <= hinted["confidence"] < in_force
    # Clean labels down to 0.61, a tenth uncited under it, none at the cut applied (hints, as a
    # small tenant's labels are): the cuts just under it serve too few to judge.
    _labels(small.tenant, trail["trail_id"], [(0.95, True)] * 200 + [(0.6, True)] * 180 + [(0.6, False)] * 20)
    cal = small.get("/api/v1/stats").json()["calibration"]
    assert cal["current_prefetch_confidence"] == setting and cal["applied_prefetch_confidence"] == in_force
    assert cal["current"]["prefetch_confidence"] == in_force and cal["current"]["served"] == 0
    assert cal["move"] == "lower" and cal["suggested"]["prefetch_confidence"] == 0.61
    applied = operating_point_apply(caller=tenant_caller(small.tenant, actor_label="operator:admin@example.com"))
    assert applied is not None and small.tenant.prefetch_confidence == 0.61
    assert small.tenant.small_tenant_cut is False
    entry = AuditEntry.objects.get(tenant=small.tenant, action=AuditAction.CALIBRATION_APPLY)
    assert entry.details["small_tenant_cut"] == {"old": True, "new": False}
    # The same evidence now prefetches: the cut applied is the suggested one.
    again = small.recall(SAME_NEED)
    assert again["outcome"] == "prefetch" and again["confidence"] == hinted["confidence"]
    assert small.get("/api/v1/stats").json()["calibration"]["applied_prefetch_confidence"] == 0.61


def test_a_pause_leaves_the_small_tenant_cut_as_it_is(make_caller):
    small = make_caller()
    small.upsert(TEXT)
    trail = small.record(query=QUERY, cited=["doc#config"]).json()
    # A tenth uncited at every confidence, the applied cut's band included: no cut meets 5 %.
    _labels(small.tenant, trail["trail_id"], [(0.9999, True)] * 270 + [(0.9999, False)] * 30)
    applied = operating_point_apply(caller=tenant_caller(small.tenant, actor_label="operator:admin@example.com"))
    assert applied is not None and applied.move.value == "pause" and small.tenant.prefetch_paused
    assert small.tenant.small_tenant_cut is True


def test_too_few_labels_suggest_nothing(caller):
    _labelled(caller, 5, 1)
    cal = caller.get("/api/v1/stats").json()["calibration"]
    assert cal["enough_labels"] is False and cal["suggested"] is None


def test_savings_count_cited_prefetches_at_the_miss_path_baseline(caller):
    caller.upsert(TEXT)
    miss = caller.recall(QUERY)
    assert miss["outcome"] == "miss"
    # The miss path: two searches, one read, then the cited section.
    caller.post("/api/v1/trails", {
        "scope": "default", "query": QUERY, "cited": ["doc#config"], "recall_id": miss["recall_id"],
        "signal": {"source": "caller", "accepted": True},
        "steps": [{"tool": "search", "args": {"q": "acme config"}}, {"tool": "search", "args": {"q": "ACME_HOME"}},
                  {"tool": "read", "args": {"id": "doc#config"}}]})
    served = caller.recall(QUERY)
    assert served["outcome"] == "prefetch"
    caller.record(query=QUERY + " again", cited=["doc#config"], recall_id=served["recall_id"])
    savings = caller.get("/api/v1/stats").json()["savings"]
    assert savings["cited_prefetches"] == 1 and savings["baseline_records"] == 1
    assert savings["calls"] == 3.0 and savings["tokens"] > 0


def _labels(tenant, trail_id, rows) -> None:
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=tenant, scope="default", query=QUERY, trail_id=trail_id, outcome="hint",
                    reason="low_confidence", confidence=c, latency_ms=1.0, served_ids=[], offered_ids=["doc#config"],
                    served_cited=0, offered_cited=cited)
        for c, cited in rows
    ])


def test_no_cut_meeting_the_target_pauses_prefetch_and_recall_answers_hints_only(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    assert caller.recall(QUERY)["outcome"] == "prefetch"
    # A tenth of every band uncited: no cut meets 5 % without an allowance for label noise.
    _labels(caller.tenant, trail["trail_id"], ([(0.95, True)] * 270 + [(0.95, False)] * 30
                                                 + [(0.8, True)] * 90 + [(0.8, False)] * 10))
    cal = caller.get("/api/v1/stats").json()["calibration"]
    assert cal["move"] == "pause" and cal["hint_only"] is True and cal["suggested"] is None
    assert cal["noise_allowance"] == 0.0 and cal["noise_floor"] == 0.1 and cal["prefetch_paused"] is False
    applied = operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="operator:admin@example.com"))
    assert applied is not None and caller.tenant.prefetch_paused
    entry = AuditEntry.objects.get(tenant=caller.tenant, action=AuditAction.CALIBRATION_APPLY)
    assert entry.details["prefetch_paused"] == {"old": False, "new": True} and entry.details["move"] == "pause"
    paused = caller.recall(SAME_NEED)
    assert (paused["outcome"], paused["reason"]) == ("hint", "prefetch_paused")
    assert all("text" not in s for s in paused["sections"]) and "hints only" in paused["hint"]
    # The very question the trail was recorded for is a positive of its own: served over the pause.
    assert caller.recall(QUERY)["outcome"] == "prefetch"
    # Nothing more to do while the labels say the same.
    assert operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="operator:x")) is None
    # The tenant declares its agents leave a tenth of right sections uncited: prefetch resumes.
    caller.tenant.noise_allowance = 0.1
    caller.tenant.save(update_fields=["noise_allowance"])
    # Not yet enough.
    assert operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="operator:x")) is None
    _labels(caller.tenant, trail["trail_id"], [(0.95, True)] * 540 + [(0.95, False)] * 60)
    resumed = operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="operator:admin@example.com"))
    assert resumed is not None and resumed.move.value == "resume" and not caller.tenant.prefetch_paused
    assert caller.recall(SAME_NEED)["outcome"] == "prefetch"


def test_rounds_of_labels_through_the_service_move_the_cut_only_on_evidence(caller):
    """Rounds of labels drawn from a known confidence → correctness curve, applied between
    rounds as auto-calibration would: the cut moves up once on evidence, then never swings."""
    import random

    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    rng = random.Random(1)
    states = [(caller.tenant.prefetch_confidence, False)]
    for _ in range(6):
        rows = []
        for _ in range(300):
            c = round(rng.uniform(0.5, 1.0), 3)
            rows.append((c, rng.random() < min(1.0, 0.1 + 0.92 * c)))
        _labels(caller.tenant, trail["trail_id"], rows)
        operating_point_apply(caller=tenant_caller(caller.tenant, actor_label="system:calibration"), automatic=True)
        states.append((caller.tenant.prefetch_confidence, caller.tenant.prefetch_paused))
    # Served cut per round (None: hints only). The default serves ~5 % false here: the evidence
    # first raises it (or pauses prefetch while no higher cut has shown it meets the target)...
    served = [None if paused else cut for cut, paused in states]
    moves = [(a, b) for a, b in zip(served, served[1:]) if a != b]
    assert moves and (moves[0][1] is None or moves[0][1] > moves[0][0]), states
    # ...then it only comes down, on evidence, and never swings back up.
    assert all(a is None or (b is not None and b < a) for a, b in moves[1:]), states
    final = served[-1]
    assert final is not None, states
    # The real false rate at the final cut (uniform confidences, known curve) is under 5 %.
    true_rate = sum(1 - min(1.0, 0.1 + 0.92 * (final + (1 - final) * (i + 0.5) / 1000)) for i in range(1000)) / 1000
    assert true_rate <= 0.05, (states, true_rate)
    entries = AuditEntry.objects.filter(tenant=caller.tenant, action=AuditAction.CALIBRATION_APPLY)
    assert entries.count() == len(moves) and all(e.details["automatic"] for e in entries)


def test_only_answers_the_cut_decides_are_labels_for_it(caller):
    from cachecore.services.calibration import calibration_labels

    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=caller.tenant, scope="default", query=QUERY, trail_id=trail["trail_id"], outcome=outcome,
                    reason=reason, confidence=0.95, latency_ms=1.0, offered_ids=["doc#config"], offered_cited=False)
        for outcome, reason in [("prefetch", "match"), ("hint", "low_confidence"), ("hint", "prefetch_paused"),
                                ("hint", "polarity"), ("hint", "ambiguous"), ("hint", "not_cited_before"),
                                ("hint", "coverage_pending"), ("hint", "changed"), ("hint", "nearer_wording")]
    ])
    # A hint the cut did not decide (a guard, a bar, pending chunks) would be a hint at any cut.
    assert len(calibration_labels(tenant=caller.tenant)) == 3


def test_a_question_asked_again_is_no_label_for_the_cut(caller):
    """The question a trail was recorded for (confidence 1, served over any cut and a pause), or
    one an agent cited it for before (a positive): the trail's own evidence decides those, not
    the cut, and repeat traffic cited every time must not make a cut look safe for rewordings."""
    from cachecore.services.calibration import calibration_labels

    caller.upsert(TEXT)
    caller.record(query=QUERY, cited=["doc#config"])
    for query in (QUERY, SAME_NEED):
        answer = caller.recall(query)
        assert answer["outcome"] == "prefetch", answer
        caller.record(query=query, cited=["doc#config"], recall_id=answer["recall_id"], accepted=None)
    # The rewording, cited, is a positive now: asked again, its trail is served from that bar.
    again = caller.recall(SAME_NEED)
    assert again["outcome"] == "prefetch", again
    caller.record(query=SAME_NEED, cited=["doc#config"], recall_id=again["recall_id"], accepted=None)
    recall_log.flush()
    logged = sorted(RecallEvent.objects.filter(tenant=caller.tenant).values_list("query", "asked_again"))
    assert logged == sorted([(QUERY, True), (SAME_NEED, False), (SAME_NEED, True)])
    labels = calibration_labels(tenant=caller.tenant)
    assert len(labels) == 1 and labels[0][0] < 1.0
