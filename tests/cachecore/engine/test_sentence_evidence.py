"""The rival margin at sentence level: the best sentence of the cited sections against the best
sentence of the tenant's best-covering sections the trail does not cite. Pure functions and
decide(), no database."""

from cachecore.engine.decide import Candidate, Cited, Policy, decide
from cachecore.engine.evidence import FEATURES, Idf, sentence_rival
from cachecore.engine.scorer import default_match_scorer, default_question_scorer
from cachecore.engine.text import MAX_SENTENCES, content_hash, split_sentences

IDF = Idf(sections=50, df={})
QUERY = "how do i set the visibility timeout for the redis broker"
TEXT = "The visibility timeout defines the number of seconds to wait. Set it in the transport options."
MARGIN, KNOWN = FEATURES.index("sentence_margin"), FEATURES.index("sentence_known")


def _decide(*, sentence_coverage, sentence_rivals, chunks_pending=False):
    policy = Policy(scorer=default_match_scorer(), question_scorer=default_question_scorer(),
                    similarity_threshold=0.3, prefetch_confidence=0.9, hint_confidence=0.05, coverage_floor=0.0)
    h = content_hash(TEXT)
    cited = Cited("broker#visibility", h, h, TEXT, 20, coverage=None if chunks_pending else 0.7,
                  trail_coverage=None if chunks_pending else 0.8, sentence_coverage=sentence_coverage,
                  chunks_pending=chunks_pending)
    candidate = Candidate("t1", 0.8, "what does the visibility timeout of the redis transport mean", [], (cited,))
    return decide(query=QUERY, candidates=[candidate], policy=policy, budget=1000, idf=IDF,
                  rivals=[("broker#visibility", 0.7), ("broker#prefetch", 0.6)], sentence_rivals=sentence_rivals)


def test_the_sentence_rival_is_the_best_known_section_the_trail_does_not_cite():
    best = [("a", 0.6), ("b", 0.9), ("c", 0.7)]
    assert sentence_rival(best, ["b"]) == 0.7
    assert sentence_rival(best, ["a"]) == 0.9
    # Every known section cited, or none known: unknown (no bound at sentence level).
    assert sentence_rival(best, ["a", "b", "c"]) is None
    assert sentence_rival([], ["a"]) is None


def test_the_margin_is_the_cited_sentence_less_the_rival_sentence():
    ahead = _decide(sentence_coverage=0.8, sentence_rivals=[("broker#visibility", 0.8), ("broker#prefetch", 0.5)])
    behind = _decide(sentence_coverage=0.5, sentence_rivals=[("broker#prefetch", 0.75), ("broker#visibility", 0.5)])
    assert round(ahead.scored[0].features[MARGIN], 6) == 0.3 and ahead.scored[0].features[KNOWN] == 1.0
    assert round(behind.scored[0].features[MARGIN], 6) == -0.25 and behind.scored[0].features[KNOWN] == 1.0


def test_unknown_sentences_give_no_sentence_evidence():
    # The cited section's sentences are not embedded (a section chunked before them).
    no_own = _decide(sentence_coverage=None, sentence_rivals=[("broker#prefetch", 0.75)])
    # No rival's sentences are known.
    no_rival = _decide(sentence_coverage=0.8, sentence_rivals=[])
    # Chunks pending: the questions' cosine stands in for coverage, no rival evidence at all.
    pending = _decide(sentence_coverage=0.8, sentence_rivals=[("broker#prefetch", 0.75)], chunks_pending=True)
    for decision in (no_own, no_rival, pending):
        assert decision.scored[0].features[MARGIN] == 0.0 and decision.scored[0].features[KNOWN] == 0.0


def test_sentences_are_the_chunker_s_sentences_one_each_and_bounded():
    text = "First sentence here. Second one follows! A third? Yes.\n\nA new paragraph"
    assert split_sentences(text) == ["First sentence here.", "Second one follows!", "A third?", "Yes.",
                                     "A new paragraph"]
    assert len(split_sentences("One more. " * (MAX_SENTENCES + 50))) == MAX_SENTENCES
    assert split_sentences("   ") == []


def test_unknown_margins_count_neither_for_nor_against():
    scorer = default_match_scorer()
    mean = dict(zip(scorer.features, scorer.means))
    base = [0.5] * len(FEATURES)
    base[FEATURES.index("rival_known")] = 1.0

    def scored(**values):
        vector = list(base)
        for name, value in values.items():
            vector[FEATURES.index(name)] = value
        return scorer.score(vector)

    at_mean = scored(sentence_margin=mean["sentence_margin"], sentence_known=1.0)
    # Unknown: read at its mean, whatever value stands in the vector.
    assert scored(sentence_margin=0.0, sentence_known=0.0) == at_mean == scored(sentence_margin=0.9,
                                                                                 sentence_known=0.0)
    # Known, the margin counts: a better one raises the confidence, a worse one lowers it.
    assert scored(sentence_margin=0.3, sentence_known=1.0) > at_mean > scored(sentence_margin=-0.3,
                                                                              sentence_known=1.0)


def test_without_a_known_rival_the_question_evidence_decides():
    from cachecore.engine.scorer import scorer_for

    document, question = default_match_scorer(), default_question_scorer()
    assert scorer_for(0.5, document=document, question=question, rivals_known=False) is question
    assert scorer_for(0.5, document=document, question=question, rivals_known=True) is document
    pending = _decide(sentence_coverage=0.8, sentence_rivals=[("broker#prefetch", 0.75)], chunks_pending=True)
    assert pending.scored[0].confidence == question.score(pending.scored[0].features)
