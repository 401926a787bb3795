"""Admission under the verifier: a record embeds at most ``TRAILCACHE_SYNC_CHUNK_LIMIT`` chunks of
its cited sections in the request (issue 25: 100 cited sections of 200 chunks each not embedded
yet were 20,000 chunks embedded synchronously by one record). Chunks over the cap are not
checked; the verdict says so, and an answer supported by the chunks checked still passes."""

from __future__ import annotations

import pytest

from cachecore.embedding import get_embedder
from cachecore.models import Section
from cachecore.services.admission import admission_decide, get_verifier
from cachecore.services.sections import sections_upsert
from tenants.caller import tenant_caller

CONFIG = "Acme reads its configuration from /etc/acme/acme.toml. It reloads the file on SIGHUP."
FILLER = " ".join(f"Paragraph {n} of the appendix lists the option number {n} and its default." for n in range(40))
GOOD = "Acme reads its configuration from /etc/acme/acme.toml, and it reloads that file on SIGHUP."


@pytest.fixture
def counted(monkeypatch):
    """Texts the embedder is asked for, counted (the verifier's own exemplars embedded first)."""
    get_verifier()
    embedder = get_embedder()
    seen = {"texts": 0}
    original = embedder.embed

    def embed(texts, *args, **kwargs):
        seen["texts"] += len(texts)
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(embedder, "embed", embed)
    return seen


@pytest.fixture
def tenant(make_tenant):
    tenant = make_tenant(admission_policy="signal+verifier")
    # Chunks left to a job that has not run (the broker is down here): none ready at record time.
    sections = [{"id": "doc#config", "text": CONFIG}] + [{"id": f"doc#appendix-{n}", "text": FILLER} for n in range(5)]
    sections_upsert(caller=tenant_caller(tenant), sections=sections, chunks="job")
    assert not Section.objects.filter(tenant=tenant, chunks_ready=True).exists()
    return tenant


SIGNAL = {"source": "caller", "accepted": True}
CITED = ["doc#config"] + [f"doc#appendix-{n}" for n in range(5)]


def test_a_record_embeds_at_most_the_cap_of_chunks_in_the_request(tenant, counted, settings):
    settings.TRAILCACHE_SYNC_CHUNK_LIMIT = 3
    admitted, verdict = admission_decide(tenant=tenant, signal=SIGNAL, answer=GOOD, cited=CITED)
    # The answer's sentences, and at most 3 chunks of the cited sections (there are far more).
    assert counted["texts"] <= 3 + 2
    assert admitted and verdict.passed  # the first cited section, checked, supports the answer
    assert any("not checked" in reason for reason in verdict.reasons), verdict.reasons


def test_under_the_cap_every_chunk_is_checked(tenant, counted, settings):
    settings.TRAILCACHE_SYNC_CHUNK_LIMIT = 10_000
    admitted, verdict = admission_decide(tenant=tenant, signal=SIGNAL, answer=GOOD, cited=CITED)
    assert counted["texts"] > 10
    assert admitted and not any("not checked" in reason for reason in verdict.reasons)
