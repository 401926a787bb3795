"""Never serving changed text, beyond the plain race of test_invariant_concurrency.py: text
stored under a hash it no longer matches, and merged trails cut to a token budget while
their sections are rewritten concurrently."""

import threading

import pytest
from django.db import connection

from cachecore.engine.text import content_hash
from cachecore.models import Citation, Section, Trail
from cachecore.services.recall import recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller

ORIGINAL = {
    "doc#install": "To install Acme on Debian, run apt install acme. The service starts at boot.",
    "doc#config": "Acme reads its configuration from /etc/acme/acme.toml. Restart after editing.",
    "doc#upgrade": "To upgrade Acme on Debian, run apt upgrade acme and restart the service.",
}
QUERY = "How do I install and configure Acme on Debian?"
# The same question once normalised: the two trails are equally close, so a prefetch merges them.
SAME_QUERY = "How do I install and configure Acme on Debian ?!"
# Fits doc#install and doc#upgrade (about 19 tokens each) but not doc#config as well.
BUDGET = 40


def _record(tenant, query, cited):
    return trail_record(caller=tenant_caller(tenant), scope="default", query=query, steps=[], cited=cited,
                                 signal={"source": "caller", "accepted": True})


@pytest.mark.django_db
def test_stored_text_that_no_longer_matches_its_stored_hash_is_never_served(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "doc#config", "text": ORIGINAL["doc#config"]}])
    _record(tenant, QUERY, ["doc#config"])
    assert recall(caller=tenant_caller(tenant), scope="default", query=QUERY).answer.outcome == "prefetch"
    tampered = "Acme reads its configuration from /tmp/evil.toml. Restart after editing."
    # The row's text changes behind the service's back (a bad migration, a manual fix): its hash
    # still says the section is unchanged, but the text no longer hashes to it.
    Section.objects.filter(tenant=tenant, external_id="doc#config").update(text=tampered)
    result = recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
    assert result.answer.outcome != "prefetch"
    assert all(s.get("text") != tampered for s in result.answer.sections), result.answer.sections
    assert all("text" not in s for s in result.answer.sections)


@pytest.mark.django_db(transaction=True)
def test_merged_trails_cut_to_a_budget_never_serve_changed_text_while_sections_are_rewritten(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": k, "text": v} for k, v in ORIGINAL.items()])
    trails = [_record(tenant, QUERY, ["doc#install", "doc#config"]),
              _record(tenant, SAME_QUERY, ["doc#install", "doc#upgrade"])]
    recorded = dict(Citation.objects.filter(trail__in=trails).values_list("section_id", "recorded_hash"))
    calm = recall(caller=tenant_caller(tenant), scope="default", query=QUERY, budget_tokens=BUDGET)
    assert calm.answer.outcome == "prefetch" and len(calm.answer.trails) == 2 and calm.answer.omitted == ["doc#config"]

    stop = threading.Event()
    errors: list[BaseException] = []
    answers: list[tuple[str, list[str], list[dict], list[str]]] = []

    def writer(section_id: str) -> None:
        try:
            i = 0
            while not stop.is_set():
                i += 1
                text = ORIGINAL[section_id] if i % 2 else f"{ORIGINAL[section_id]} (edit {i})"
                sections_upsert(caller=tenant_caller(tenant), sections=[{"id": section_id, "text": text}])
                if i % 2:  # back to the recorded text: put the trails back in play (one row at a time:
                    for trail in trails:  # this test's own writes take no two locks at once)
                        Trail.objects.filter(pk=trail.pk).update(status="active")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    def seen(kind: str) -> bool:
        if kind == "merged":
            return any(o == "prefetch" and len(t) == 2 for o, t, _, _ in answers)
        if kind == "cut":
            return any(o == "prefetch" and om for o, _, _, om in answers)
        return any(o != "prefetch" for o, _, _, _ in answers)

    def reader(budget: int | None) -> None:
        try:
            for n in range(400):  # bounded: until every kind of answer was seen while writers ran
                # Concurrent recalls lock shared trails in one order (one UPDATE): no deadlock,
                # so any database error fails the test.
                result = recall(caller=tenant_caller(tenant), scope="default", query=QUERY, budget_tokens=budget)
                answers.append((result.answer.outcome, list(result.answer.trails), list(result.answer.sections),
                                list(result.answer.omitted)))
                if n >= 30 and all(seen(k) for k in ("merged", "cut", "other")):
                    break
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    writers = [threading.Thread(target=writer, args=(sid,)) for sid in ORIGINAL]
    readers = [threading.Thread(target=reader, args=(b,)) for b in (BUDGET, BUDGET, None)]
    for t in writers + readers:
        t.start()
    for t in readers:
        t.join(timeout=300)
    stop.set()
    for t in writers:
        t.join(timeout=60)

    assert not errors, errors
    for outcome, _trails, sections, omitted in answers:
        ids = [s["id"] for s in sections]
        assert len(ids) == len(set(ids)), ids  # deduplicated across the merged trails
        for section in sections:
            if "text" in section:
                assert outcome == "prefetch"
                assert section["id"] not in omitted
                assert content_hash(section["text"]) == recorded[section["id"]], f"changed text: {section['id']}"
    # The race was real: merged prefetches, budget cuts and other answers all happened meanwhile.
    assert seen("merged") and seen("cut") and seen("other"), [(o, len(t), om) for o, t, _, om in answers][:50]
