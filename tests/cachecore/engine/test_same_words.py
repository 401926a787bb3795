"""``same_words``: the question asked again in a few other words (its words shared, nothing left
over on either side) against a near miss that changes one word, and a redacted trail."""

from cachecore.engine.evidence import FEATURES, Idf, TextEvidence, TrailContext, match_features, same_words
from cachecore.engine.text import normalise_query

IDF = Idf(sections=100, df={})
QUESTION = "How do I install Acme Sync on Ubuntu?"


def _same_words(query: str, question: str = QUESTION) -> float:
    trail = TrailContext(query_normalised=normalise_query(question), steps=[])
    vector = match_features(query=TextEvidence.of(normalise_query(query)), trail=trail, cosine=0.9, idf=IDF,
                            coverage=None)
    assert len(vector) == len(FEATURES)
    return vector[FEATURES.index("same_words")]


def test_the_same_words_score_one_and_every_change_less():
    assert _same_words("How can I get acme sync installed on ubuntu") == 1.0  # stems; "get" a stop word
    assert _same_words("installing acme sync on ubuntu") == 1.0
    light = _same_words("acme sync: installing it on ubuntu")
    swapped = _same_words("How do I install Acme Sync on Debian?")  # a sibling object
    added = _same_words("How do I install Acme Sync on Ubuntu in a container?")
    reverse = _same_words("How do I uninstall Acme Sync on Ubuntu?")
    assert light == 1.0 and max(swapped, added, reverse) < 0.7
    assert swapped < 0.5 and reverse < 0.5


def test_a_redacted_trail_shares_no_words():
    assert _same_words("install acme sync ubuntu", question="") == 0.0


def test_it_is_the_product_of_shared_words_and_nothing_left_over():
    assert same_words(content_jaccard=1.0, unexplained=0.0, trail_unmatched=0.0) == 1.0
    assert same_words(content_jaccard=0.8, unexplained=0.5, trail_unmatched=0.0) == 0.4
    assert same_words(content_jaccard=0.8, unexplained=0.0, trail_unmatched=1.0) == 0.0
