"""The verifier calibration study (research/verifier_calibration.py): the labelled answer set, and
the precision and recall the real model gives the built-in verifier on it
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
from collections import Counter

import pytest

from cachecore.embedding import Embedder
from cachecore.engine.verifier import Verifier, non_answer_pattern, split_sentences
from research.verifier_calibration import (
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


def test_good_and_unsupported_answers_in_the_set_do_not_match_the_patterns() -> None:
    fired = [i.answer for i in load_items() if i.label != NON_ANSWER and non_answer_pattern(i.answer)]
    assert fired == []


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


def test_harness_probe_non_answer_is_rejected(verifier: Verifier, embed: CachedEmbed) -> None:
    from research.evaluation.agent import NON_ANSWER as PROBE

    section = "The documentation covers installation on Linux. Run the installer and follow the prompts."
    verdict = verifier.check(PROBE, embed([section]))
    assert not verdict.passed and verdict.non_answer
