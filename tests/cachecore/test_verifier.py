"""The built-in verifier: model-free tests of its text helpers, patterns and decision logic, and
the precision and recall the real model gives on the labelled answer set
(tests/data/verifier_answers.jsonl; the positive class is "should be admitted", label good).

Measured with all-MiniLM-L6-v2 (int8 ONNX) at the module's constants (support_floor 0.40,
min_supported_ratio 0.6, answer_support_floor 0.68, non_answer_similarity 0.70,
non_answer_margin 0.0), sections chunked as admission does:

* calibration half (111 items): precision 0.894 (42/47), recall 0.750 (42/56);
* held-out half (84 items): precision 0.765 (26/34), recall 0.605 (26/43);
* all (195 items): precision 0.840 (68/81), recall 0.687 (68/99); rejected: non-answers
  48/48, unsupported 35/48 (0.729), good 31/99.

The bounds below leave a small margin under those numbers, so a regressed verifier (patterns,
exemplars, thresholds, sentence splitting) or model fails them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

import numpy as np
import pytest

from cachecore.embedding import Embedder
from cachecore.engine import verifier as V
from cachecore.engine.verifier import Verdict, Verifier, non_answer_pattern, skeleton, split_clauses, split_sentences
from cachecore.verifier_calibration import (
    CALIBRATION,
    DEFAULT_ANSWERS_PATH,
    GOOD,
    HELD_OUT,
    LABELS,
    NON_ANSWER,
    UNSUPPORTED,
    CachedEmbed,
    Item,
    Measured,
    current_constants,
    evaluate,
    halves,
    load_items,
    measure_items,
    similarity_flags,
    similarity_grid,
    support_grid,
)

MIN_PRECISION_HELD_OUT = 0.72  # measured 0.765 (26/34)
MIN_RECALL_HELD_OUT = 0.55  # measured 0.605 (26/43)
MIN_PRECISION_ALL = 0.80  # measured 0.840 (68/81)
MIN_RECALL_ALL = 0.64  # measured 0.687 (68/99)
MIN_NON_ANSWER_REJECTION = 0.95  # measured 1.000 (48/48), each half too
MIN_UNSUPPORTED_REJECTION_ALL = 0.68  # measured 0.729 (35/48)
MIN_SIMILARITY_ALONE_NON_ANSWERS = 0.28  # measured 0.354 (17/48) with the patterns switched off
MAX_SIMILARITY_ALONE_GOOD = 2  # measured 1/99 good answers flagged by the similarity alone

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


# The data file.


def test_answer_file_counts_and_fields() -> None:
    items = load_items(DEFAULT_ANSWERS_PATH)
    counts = Counter(i.label for i in items)
    assert len(items) >= 120
    assert counts[GOOD] >= 50 and counts[NON_ANSWER] >= 35 and counts[UNSUPPORTED] >= 35
    assert len({i.answer for i in items}) == len(items), "answers are unique (they decide the split)"
    for item in items:
        assert item.question.strip() and item.answer.strip()
        assert 1 <= len(item.sections) <= 3
        assert 2 <= sum(len(split_sentences(section)) for section in item.sections) <= 6, item.sections
    per_half = Counter((i.half, i.label) for i in items)
    for half in (CALIBRATION, HELD_OUT):
        for label in LABELS:
            assert per_half[(half, label)] >= 15, (half, label)


def test_answer_file_is_plain_jsonl() -> None:
    with open(DEFAULT_ANSWERS_PATH, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    assert all(set(row) == {"question", "sections", "answer", "label"} for row in rows)


def test_load_items_rejects_bad_rows(tmp_path) -> None:
    bad_label = tmp_path / "bad.jsonl"
    bad_label.write_text(json.dumps({"question": "q", "sections": ["s."], "answer": "a", "label": "maybe"}) + "\n")
    with pytest.raises(ValueError, match="unknown label"):
        load_items(bad_label)
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({"question": "q", "answer": "a", "label": "good"}) + "\n")
    with pytest.raises(ValueError, match="missing field"):
        load_items(missing)


def test_split_is_deterministic_by_answer_hash() -> None:
    item = Item("q", ("s",), "An answer.", GOOD)
    expected = CALIBRATION if hashlib.sha256(b"An answer.").digest()[0] % 2 == 0 else HELD_OUT
    assert item.half == expected
    assert Item("other question", ("t",), "An answer.", NON_ANSWER).half == expected


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


def test_good_and_unsupported_answers_in_the_set_do_not_match_the_patterns() -> None:
    fired = [i.answer for i in load_items() if i.label != NON_ANSWER and non_answer_pattern(i.answer)]
    assert fired == []


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


# The real model on the labelled set.


@pytest.fixture(scope="module")
def embed() -> CachedEmbed:
    return CachedEmbed(Embedder())


@pytest.fixture(scope="module")
def verifier(embed: CachedEmbed) -> Verifier:
    return Verifier(embed)


@pytest.fixture(scope="module")
def measured(verifier: Verifier, embed: CachedEmbed) -> dict[str, list[Measured]]:
    return halves(measure_items(load_items(), verifier, embed))


def test_precision_and_recall_held_out(measured, verifier: Verifier) -> None:
    metrics = evaluate(measured[HELD_OUT], verifier)
    assert metrics.precision >= MIN_PRECISION_HELD_OUT, metrics.as_dict()
    assert metrics.recall >= MIN_RECALL_HELD_OUT, metrics.as_dict()


def test_precision_and_recall_all(measured, verifier: Verifier) -> None:
    metrics = evaluate(measured["all"], verifier)
    assert metrics.precision >= MIN_PRECISION_ALL, metrics.as_dict()
    assert metrics.recall >= MIN_RECALL_ALL, metrics.as_dict()
    assert metrics.rejection_rate(UNSUPPORTED) >= MIN_UNSUPPORTED_REJECTION_ALL, metrics.as_dict()


@pytest.mark.parametrize("part", [CALIBRATION, HELD_OUT, "all"])
def test_non_answers_are_rejected_as_non_answers(measured, verifier: Verifier, part: str) -> None:
    non_answers = [m for m in measured[part] if m.item.label == NON_ANSWER]
    verdicts = [verifier.decide(m.evidence) for m in non_answers]
    caught = sum(1 for v in verdicts if not v.passed and v.non_answer)
    missed = [m.item.answer for m, v in zip(non_answers, verdicts) if not v.non_answer]
    assert caught / len(non_answers) >= MIN_NON_ANSWER_REJECTION, missed


def test_similarity_alone_is_a_working_backstop(measured, verifier: Verifier) -> None:
    """With the patterns switched off, the exemplar similarity still catches a share of the
    non-answers and flags (almost) no good answer."""
    threshold, margin = verifier.non_answer_similarity, verifier.non_answer_margin
    flagged = Counter(m.item.label for m in measured["all"] if similarity_flags(m.evidence, threshold, margin))
    n_non = sum(1 for m in measured["all"] if m.item.label == NON_ANSWER)
    assert flagged[NON_ANSWER] / n_non >= MIN_SIMILARITY_ALONE_NON_ANSWERS
    assert flagged[GOOD] <= MAX_SIMILARITY_ALONE_GOOD
    assert flagged[UNSUPPORTED] == 0


def test_constants_are_the_calibration_half_choice(measured, verifier: Verifier) -> None:
    """The module's constants are what the runner picks on the calibration half."""
    constants = current_constants()
    best, _ = support_grid(measured[CALIBRATION], verifier)[0]
    assert best == {k: constants[k] for k in best}
    assert similarity_grid(measured[CALIBRATION])[0].constants == {
        k: constants[k] for k in ("non_answer_similarity", "non_answer_margin")
    }


def test_fresh_phrasings_with_the_model(verifier: Verifier) -> None:
    no_chunks = np.zeros((0, 384), dtype=np.float32)
    for text in NON_ANSWERS:
        assert verifier.check(text, no_chunks).non_answer, text
    for text in SIMILARITY_ONLY:
        verdict = verifier.check(text, no_chunks)
        assert verdict.non_answer and verdict.non_answer_score >= verifier.non_answer_similarity, text
    for text in NEGATIVE_FACTS:
        assert not verifier.check(text, no_chunks).non_answer, text


def test_harness_probe_non_answer_is_rejected(verifier: Verifier, embed: CachedEmbed) -> None:
    from cachecore.evaluation.agent import NON_ANSWER as PROBE

    section = "The documentation covers installation on Linux. Run the installer and follow the prompts."
    verdict = verifier.check(PROBE, embed([section]))
    assert not verdict.passed and verdict.non_answer
