"""The built-in verifier (product): its text helpers, patterns and decision logic without a
model, and fresh phrasings with the real model. Its precision and recall on the labelled answer
set, and the constants the calibration picks, are pinned by the study's tests
(tests/research/test_verifier_calibration.py).
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest

from cachecore.embedding import get_embedder
from cachecore.engine import verifier as V
from cachecore.engine.verifier import Verdict, Verifier, non_answer_pattern, skeleton, split_clauses, split_sentences

# Phrasings written after the patterns were first tuned (an out-of-sample check that caught
# 21/25 non-answers and wrongly flagged 1/25 good sentences before the fixes it prompted),
# kept as regression cases. Non-answers, many of them naming a topic:
NON_ANSWERS = [
    "The documents I found don't cover this.",
    "I couldn't find anything about rate limits in the documentation.",
    "This isn't mentioned in the sections I read.",
    "The docs only talk about cancelling, not pausing.",
    "It isn't clear from the material whether a removed member can be restored.",
    "I'd suggest contacting support since the documentation is silent on this.",
    "There doesn't seem to be anything on SAML in the sections I was given.",
    "The passages don't get into how retries are scheduled.",
    "I looked through the cited pages but they never touch on Windows support.",
    "That's not something the provided docs answer.",
    "I have no details on the rate limits for the Enterprise tier.",
    "The documentation is vague on this point, so I can't give you a definitive answer.",
    "Based on the excerpts, I can't determine whether the cache is shared.",
    "From the retrieved text alone there's no way to tell which version added this.",
    "The guide skips over the migration step entirely.",
    "These results focus on Docker Compose; Kubernetes isn't touched on.",
    "I'm unable to answer this with the information available.",
    "The sections cited don't contain the answer to your question.",
    "Regrettably, the material provided has no mention of GPU support.",
    "You may need to ask the vendor directly, as the docs are silent about licensing.",
    "I don't see anything here about exporting to PDF.",
    "No answer to that in the pages I found — they cover only the CLI flags.",
    "It's not documented in what I retrieved, but the default is probably 30 seconds.",
    "My sources only go as far as installation; configuration of TLS isn't included.",
    "The articles say how to create a webhook but are silent on deleting one.",
    "Your question isn't answered by any of the cited sections.",
    "I didn't come across anything about SSO for the Free plan.",
    "The docs provided are about a different product version, so they don't help here.",
    "Sorry, I have nothing on that.",
]
# Of those, the ones the patterns alone do not catch (the exemplar similarity has to).
SIMILARITY_ONLY = {
    "There doesn't seem to be anything on SAML in the sections I was given.",
    "The documentation is vague on this point, so I can't give you a definitive answer.",
    "The information needed to answer this isn't in the sources.",
}
NON_ANSWERS.append("The information needed to answer this isn't in the sources.")

# Ordinary negative (or conditional) statements a good answer makes: not non-answers.
NEGATIVE_FACTS = [
    "It does not require root.",
    "The service does not start automatically.",
    "The free plan does not include audit logs.",
    "If the config file does not specify a port, relay listens on 8080.",
    "The scheduler does not consider limits when placing pods.",
    "Deleted projects are not shown in search results.",
    "The API does not return archived items unless you pass include_archived=true.",
    "Webhooks are not retried after the eighth attempt.",
    "Guests cannot see the member directory.",
    "The CLI doesn't prompt for confirmation when you pass -f.",
    "Accidental damage isn't covered by the warranty.",
    "The export does not contain audit logs.",
    "No, it doesn't require a restart; a reload is enough.",
    "Annual plans are not refunded after 30 days.",
    "The token is not valid across different filters.",
    "Nothing is deleted when you cancel.",
    "There is no limit on the number of projects.",
    "The report page doesn't show cancelled invoices.",
    "Mentions are never batched into the digest.",
    "When the section doesn't specify a timeout, the default of 30 seconds applies.",
    "The docs recommend PgBouncer instead of raising max_connections.",
    "This setting isn't available on self-hosted installs.",
    "You won't be charged for guests.",
    "If no key has a TTL, volatile-lru can't evict anything.",
    "Pandas does not modify the original DataFrame unless inplace=True.",
    "Plain VACUUM does not take an exclusive lock, so reads and writes continue.",
    "Refunds aren't given for partial months.",
    "No — autogenerate does not detect renames.",
]


# Text helpers and patterns (no model).


def test_split_sentences() -> None:
    text = "Yes. Run it with --restart always. The container then comes back after a reboot!\nSee the docs for more"
    assert split_sentences(text) == [
        "Run it with --restart always.",
        "The container then comes back after a reboot!",
        "See the docs for more",
    ]
    assert split_sentences("Pass a hook, e.g. certbot renew --deploy-hook cmd. It runs after renewal.") == [
        "Pass a hook, e.g. certbot renew --deploy-hook cmd.",
        "It runs after renewal.",
    ]
    assert split_sentences("No.") == [] and split_sentences("") == []
    assert split_sentences("Use this:\ndf = df.dropna(subset=['a'])\nIt returns a copy.") == [
        "df = df.dropna(subset=['a'])",
        "It returns a copy.",
    ]


def test_split_clauses() -> None:
    clauses = split_clauses("The page explains start and enable; it doesn't say where the logs go.")
    assert clauses[0] == "The page explains start and enable; it doesn't say where the logs go."
    assert "it doesn't say where the logs go" in clauses
    assert split_clauses("No — that's it.") == ["No — that's it."]


def test_skeleton_keeps_the_meta_words_and_masks_the_topic() -> None:
    assert skeleton("I couldn't find anything about parametrized fixtures.") == "i couldn't find anything about X ."
    assert skeleton("The docs don’t mention SAML.") == "the docs don't mention X ."


@pytest.mark.parametrize("text", sorted(set(NON_ANSWERS) - SIMILARITY_ONLY))
def test_non_answer_pattern_catches(text: str) -> None:
    assert non_answer_pattern(text) is not None


@pytest.mark.parametrize("text", NEGATIVE_FACTS)
def test_non_answer_pattern_ignores_negative_facts(text: str) -> None:
    assert non_answer_pattern(text) is None


def test_non_answer_pattern_on_answers_listing_true_facts() -> None:
    text = (
        "Deliveries are retried up to 8 times over about 24 hours. Failed events can be redelivered from the "
        "dashboard. None of this tells you which IP addresses the webhooks come from, though."
    )
    assert non_answer_pattern(text) == "None of this tells"


def test_non_answer_pattern_handles_curly_apostrophes() -> None:
    assert non_answer_pattern("The docs don\u2019t say, and I couldn\u2019t find it elsewhere.") is not None
    assert non_answer_pattern("It doesn\u2019t require root.") is None


def test_non_answer_pattern_skips_conditions_but_not_later_clauses() -> None:
    assert non_answer_pattern("If the section doesn't specify a port, relay uses 8080.") is None
    assert non_answer_pattern("If you need a port, the docs don't say which one. ") is not None


# Decision logic with a fake embedding (bag of hashed words), no model.


def _fake_embed(texts) -> np.ndarray:
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z0-9']+", text.lower()):
            out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


PASSAGE = "Use the restart flag to restart containers automatically. The default policy is no restart at all."


@pytest.fixture()
def fake() -> Verifier:
    return Verifier(_fake_embed)


def test_supported_answer_passes(fake: Verifier) -> None:
    verdict = fake.check(PASSAGE, _fake_embed([PASSAGE]))
    assert verdict.passed and not verdict.non_answer
    assert verdict.supported_ratio == 1.0 and verdict.answer_support == pytest.approx(1.0, abs=1e-4)
    assert json.loads(json.dumps(verdict.as_dict()))["passed"] is True


def test_non_answer_with_true_facts_is_rejected(fake: Verifier) -> None:
    answer = PASSAGE + " The documents I found don't say how to do it in compose."
    verdict = fake.check(answer, _fake_embed([PASSAGE]))
    assert not verdict.passed and verdict.non_answer
    assert verdict.reasons[0].startswith("says the sources do not answer")


def test_unsupported_answer_is_rejected(fake: Verifier) -> None:
    answer = "Billing invoices arrive monthly by email. Quarterly plans cost extra money."
    verdict = fake.check(answer, _fake_embed([PASSAGE]))
    assert not verdict.passed and not verdict.non_answer
    assert verdict.supported_ratio == 0.0
    assert any("not supported" in r for r in verdict.reasons)


def test_empty_answer_and_no_chunks(fake: Verifier) -> None:
    assert fake.check("   ", _fake_embed([PASSAGE])) == Verdict(False, ["empty answer"])
    verdict = fake.check(PASSAGE, np.zeros((0, 64), dtype=np.float32))
    assert not verdict.passed and verdict.answer_support == 0.0


def test_check_is_measure_then_decide(fake: Verifier) -> None:
    chunks = _fake_embed([PASSAGE])
    for answer in (PASSAGE, "I couldn't find it.", "Quarterly plans cost extra money."):
        assert fake.check(answer, chunks) == fake.decide(fake.measure(answer, chunks))


def test_constants_are_sane() -> None:
    assert 0 < V.SUPPORT_FLOOR < 1 and 0 < V.MIN_SUPPORTED_RATIO <= 1
    assert 0 <= V.ANSWER_SUPPORT_FLOOR < 1 and 0 < V.NON_ANSWER_SIMILARITY < 1 and V.NON_ANSWER_MARGIN >= 0
    assert len(V.NON_ANSWER_EXEMPLARS) >= 20 and len(V.ANSWER_EXEMPLARS) >= 10


# The real model.


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(get_embedder().embed)


def test_fresh_phrasings_with_the_model(verifier: Verifier) -> None:
    no_chunks = np.zeros((0, 384), dtype=np.float32)
    for text in NON_ANSWERS:
        assert verifier.check(text, no_chunks).non_answer, text
    for text in SIMILARITY_ONLY:
        verdict = verifier.check(text, no_chunks)
        assert verdict.non_answer and verdict.non_answer_score >= verifier.non_answer_similarity, text
    for text in NEGATIVE_FACTS:
        assert not verifier.check(text, no_chunks).non_answer, text
