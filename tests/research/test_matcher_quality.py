"""Matching quality on the held-out split of the matcher study (issue 6), real model, no DB.

Measured (python -m research.matcher_study) on the test split: 396 pairs, 90 paraphrases and
306 negatives from 106 question groups:

* embedding only @0.51: paraphrase hit 86.7%, false hit 26.8%;
* embedding + polarity guard @0.51 (the default): 86.7%, 24.2% (85.6%, 24.2% with the old suffix
  stripper; the Snowball stemmer since);
* learned (cosine >= 0.45, then the pair scorer >= 0.46): 52.2%, 9.5% (was 50.0%, 9.5%); near
  duplicates 100%.

At matched paraphrase hit rates the learned scorer and embedding + guard are within about a
point of each other (see the study): the learned mode is a precision-first operating point,
not better discrimination. The bounds leave a small margin.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cachecore.engine.pairfeatures import WEIGHTS_PATH, PairScorer
from cachecore.engine.polarity import polarity_conflict
from research import matcher_study as study

MIN_LEARNED_PARAPHRASE_HIT = 0.46  # measured 0.522 (47/90)
MAX_LEARNED_FALSE_HIT = 0.12  # measured 0.095 (29/306)
MIN_FALSE_HIT_CUT = 0.12  # vs embedding only @0.51: measured 0.268 -> 0.095 (17 points)
MAX_PARAPHRASE_LOSS = 0.40  # vs embedding only @0.51: measured 0.867 -> 0.522 (34 points)
MIN_NEAR_DUPLICATE_HIT = 0.98  # measured 1.000: a re-asked question must still hit
MAX_MATCHED_GAP = 0.04  # learned vs embedding + guard false hit at 50% paraphrase hit: 9.2% vs 8.5%


@pytest.fixture(scope="module")
def split():
    from cachecore.embedding import Embedder

    pairs = study.build_pairs()
    dups = study.near_duplicates(pairs)
    study.embed_pairs(pairs + dups, Embedder().embed, coverage=False)
    return {
        "train": [p for p in pairs if p.train],
        "test": [p for p in pairs if not p.train],
        "dup_train": [p for p in dups if p.train],
        "dup_test": [p for p in dups if not p.train],
    }


def test_split_is_by_group_and_about_60_40(split):
    train_groups = {p.group for p in split["train"]}
    test_groups = {p.group for p in split["test"]}
    assert not train_groups & test_groups
    share = len(train_groups) / (len(train_groups) + len(test_groups))
    assert 0.55 <= share <= 0.70
    assert sum(p.positive for p in split["test"]) >= 80


def test_retraining_reproduces_the_shipped_weights(split):
    shipped = PairScorer.load()
    retrained = study.train_scorer(split["train"] + split["dup_train"])
    assert retrained.threshold == shipped.threshold
    assert np.allclose(retrained.weights, shipped.weights, atol=1e-4)
    assert retrained.bias == pytest.approx(shipped.bias, abs=1e-4)
    assert json.loads(WEIGHTS_PATH.read_text())["version"] == study.VERSION


def test_learned_matcher_on_the_test_split(split):
    scorer = PairScorer.load()
    learned = study.evaluate(split["test"], lambda p: scorer.matches(p.a, p.b, p.cosine))
    embedding = study.evaluate(split["test"], lambda p: p.cosine >= study.DEFAULT_THRESHOLD)
    assert learned["paraphrase_hit"] >= MIN_LEARNED_PARAPHRASE_HIT
    assert learned["false_hit"] <= MAX_LEARNED_FALSE_HIT
    assert embedding["false_hit"] - learned["false_hit"] >= MIN_FALSE_HIT_CUT
    assert embedding["paraphrase_hit"] - learned["paraphrase_hit"] <= MAX_PARAPHRASE_LOSS
    dups = split["dup_test"]
    assert sum(scorer.matches(p.a, p.b, p.cosine) for p in dups) / len(dups) >= MIN_NEAR_DUPLICATE_HIT


def test_learned_is_no_worse_than_embedding_guard_at_matched_hit_rate(split):
    scorer = PairScorer.load()
    test = split["test"]
    positive = np.array([p.positive for p in test])
    learned = np.array([scorer.score(p.a, p.b, p.cosine) if p.cosine >= scorer.first_stage_threshold else 0.0
                        for p in test])
    guarded = np.array([p.cosine if polarity_conflict(p.a, p.b) is None else 0.0 for p in test])
    at_learned = study.false_hit_at_hit_rates(learned, positive)["50%"]
    at_guarded = study.false_hit_at_hit_rates(guarded, positive)["50%"]
    assert at_learned <= at_guarded + MAX_MATCHED_GAP
