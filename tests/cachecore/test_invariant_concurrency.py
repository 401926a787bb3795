"""The invariant: a recall never returns text of a section whose current hash differs from
the hash the trail stored — also while sections change concurrently."""

import threading

import pytest
from django.db import connection

from cachecore.engine.text import content_hash
from cachecore.models import Citation
from cachecore.services.recall import recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller

ORIGINAL = {
    "doc#install": "To install Acme on Debian, run apt install acme. The service starts at boot.",
    "doc#config": "Acme reads its configuration from /etc/acme/acme.toml. Restart after editing.",
}
QUERY = "How do I install and configure Acme on Debian?"


@pytest.mark.django_db(transaction=True)
def test_recall_never_serves_changed_text_while_sections_are_rewritten(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": k, "text": v} for k, v in ORIGINAL.items()])
    trail = trail_record(
        caller=tenant_caller(tenant), scope="default", query=QUERY, steps=[], cited=list(ORIGINAL),
        signal={"source": "caller", "accepted": True},
    )
    recorded = dict(Citation.objects.filter(trail=trail).values_list("section_id", "recorded_hash"))
    stop = threading.Event()
    errors: list[BaseException] = []
    outcomes: list[str] = []
    served_texts: list[tuple[str, str]] = []

    def writer(section_id: str) -> None:
        try:
            i = 0
            while not stop.is_set():
                i += 1
                # Alternate between the recorded text and a changed one, so prefetches happen too.
                text = ORIGINAL[section_id] if i % 2 else f"{ORIGINAL[section_id]} (edit {i})"
                sections_upsert(caller=tenant_caller(tenant), sections=[{"id": section_id, "text": text}])
                # Put the trail back in play when both sections match again.
                if i % 2:
                    trail.__class__.objects.filter(pk=trail.pk).update(status="active")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    def reader() -> None:
        try:
            for _ in range(40):
                result = recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
                outcomes.append(result.answer.outcome)
                for section in result.answer.sections:
                    if "text" in section:
                        served_texts.append((section["id"], section["text"]))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    writers = [threading.Thread(target=writer, args=(sid,)) for sid in ORIGINAL]
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in writers + readers:
        t.start()
    for t in readers:
        t.join(timeout=120)
    stop.set()
    for t in writers:
        t.join(timeout=60)

    assert not errors, errors
    assert len(outcomes) == 120
    for section_id, text in served_texts:
        assert content_hash(text) == recorded[section_id], f"changed text served for {section_id}"
    # The race was real: both kinds of answers happened while the writers ran.
    assert "prefetch" in outcomes and served_texts, outcomes
    assert set(outcomes) - {"prefetch"}, outcomes
