"""Pair features and the learned scorer: pure, no Django, no model."""

import json

import pytest

from cachecore.engine.pairfeatures import (
    FEATURES,
    HYBRID_COSINE_WEIGHT,
    WEIGHTS_PATH,
    PairScorer,
    identifiers,
    numbers,
    pair_features,
    trigram_similarity,
    trigrams,
)

# Measured with PostgreSQL 18 + pg_trgm: SELECT similarity(a, b).
PG_TRGM = [
    ("how do i reset my password", "i forgot my login password, how can i get a new one", 0.333333),
    ("how do i enable 2fa", "how do i disable 2fa", 0.666667),
    ("what is os.path.join() for", "how does os.path.join work", 0.368421),
    ("why can't i use len() on a generator", "why is there no len for generators", 0.400000),
    ("a", "a", 1.0),
    ("x_y z", "x y", 0.666667),
    ("how do i install python 3.11", "how to install python 3.12 on windows", 0.511628),
    ("what is the gil", "what is the global interpreter lock", 0.351351),
]


@pytest.mark.parametrize("a,b,expected", PG_TRGM)
def test_trigram_similarity_matches_pg_trgm(a, b, expected):
    assert trigram_similarity(a, b) == pytest.approx(expected, abs=1e-6)
    assert trigram_similarity(b, a) == pytest.approx(expected, abs=1e-6)


def test_trigrams_like_show_trgm():
    # SELECT show_trgm('a b2 x_y len()')
    assert trigrams("a b2 x_y len()") == {
        "  a", "  b", "  l", "  x", "  y", " a ", " b2", " le", " x ", " y ", "b2 ", "en ", "len",
    }
    assert trigram_similarity("", "") == 0.0


def test_numbers_and_identifiers():
    assert numbers("install python 3.11 on windows 10") == {"3.11", "10"}
    assert numbers("utf8 and py3") == set()
    ids = identifiers("what does os.path.join() do with __init__ and --user or `sys.argv`?")
    assert {"os.path.join", "__init__", "--user", "sys.argv"} <= ids


def test_features_are_sane_and_symmetric():
    a, b = "how do i enable 2fa", "how can i disable 2fa"
    f = dict(zip(FEATURES, pair_features(a, b, 0.9)))
    assert f["cosine"] == 0.9
    assert f["polarity_conflict"] == 1.0
    assert 0 < f["trigram"] < 1 and 0 < f["content_jaccard"] < 1
    assert pair_features(a, b, 0.9) == pair_features(b, a, 0.9)
    same = dict(zip(FEATURES, pair_features(a, a, 1.0)))
    assert same["trigram"] == same["content_jaccard"] == same["length_ratio"] == 1.0
    assert same["negation_differs"] == same["polarity_conflict"] == same["unshared_content"] == 0.0
    nums = dict(zip(FEATURES, pair_features("python 3.11 on windows", "python 3.12 on windows", 0.95)))
    assert nums["numbers_differ"] == 1.0
    can, cant = "can i use a list as a dict key", "why can't i use a list as a dict key"
    neg = dict(zip(FEATURES, pair_features(can, cant, 0.9)))
    assert neg["negation_differs"] == 1.0


def test_weights_load_and_match_the_code():
    scorer = PairScorer.load()
    data = json.loads(WEIGHTS_PATH.read_text())
    assert scorer.features == FEATURES and len(scorer.weights) == len(FEATURES)
    assert 0 < scorer.threshold < 1 and 0 < scorer.first_stage_threshold < 0.6
    assert data["hybrid"]["cosine_weight"] == HYBRID_COSINE_WEIGHT
    # Overlap never lowers the score, a difference never raises it.
    w = dict(zip(FEATURES, scorer.weights))
    assert w["cosine"] > 0 and w["trigram"] >= 0 and w["content_jaccard"] >= 0
    assert w["polarity_conflict"] <= 0 and w["negation_differs"] <= 0 and w["numbers_differ"] <= 0


def test_weights_for_other_features_are_refused():
    data = json.loads(WEIGHTS_PATH.read_text())
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError):
        PairScorer.from_dict(data)


def test_scorer_separates_obvious_pairs():
    scorer = PairScorer.load()
    q = "how do i sort a list of dictionaries by a key"
    assert scorer.matches(q, q, 1.0)
    assert scorer.matches(q, "how can i sort a list of dictionaries by a key", 0.97)
    assert scorer.matches(q, "what's the way to order a list of dicts by one of their fields", 0.80)
    assert not scorer.matches("how do i enable 2fa", "how do i disable 2fa", 0.93)
    assert not scorer.matches(q, "how do i reverse a string", 0.30)  # below the first stage
    assert scorer.score(q, q, 1.0) > scorer.score("how do i enable 2fa", "how do i disable 2fa", 0.93)
