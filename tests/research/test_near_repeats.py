"""research.near_repeats: the forms a recorded question is asked again in, and how an answer is
counted. The study itself needs a corpus ingested (``python -m research.near_repeats``)."""

from cachecore.engine.evidence import TextEvidence, restates
from cachecore.engine.text import normalise_query
from research.near_repeats import classify, forms_of, framed


def _restates(a: str, b: str) -> bool:
    return restates(TextEvidence.of(normalise_query(a)), TextEvidence.of(normalise_query(b)))


def test_the_forms_of_a_question_and_which_of_them_restate_it():
    q = "How do I give a Celery task an explicit name?"
    forms = forms_of(q)
    assert forms == {
        "verbatim": q,
        "function_words": "how can i give a celery task an explicit name?",
        "article_dropped": "How do I give Celery task an explicit name?",
        "prefixed": "Quick question: " + q,
        "greeted": f"Hi! {q} Thanks.",
        "emoji": f"Hi 👋 {q} 🙂",
        "how_to": "how to give a celery task an explicit name?",
        "asker_changed": "how do you give a celery task an explicit name?",
        "keywords": "give celery task explicit name",
        "typo": "How do I give a Celery task an expilcit name?",
        "last_word_dropped": "How do I give a Celery task an explicit?",
    }
    # All but the last two say the same thing (the framing is left out, or who asks); those
    # misspell or take away a word.
    assert [f for f, text in forms.items() if _restates(text, q)] == ["verbatim", "function_words",
                                                                      "article_dropped", "prefixed", "greeted",
                                                                      "emoji", "how_to", "asker_changed",
                                                                      "keywords"]
    # Keywords of a question that asks why have lost what it asks: the scorer judges them.
    why = "Why does the worker restart after each task?"
    keywords = forms_of(why)["keywords"]
    assert keywords == "worker restart after each task" and not _restates(keywords, why)


def test_a_form_that_does_not_apply_is_absent():
    forms = forms_of("Why does the worker restart after each task?")
    assert "function_words" not in forms and "article_dropped" in forms
    assert set(forms_of("Celery beat?")) == {"verbatim", "prefixed", "greeted", "emoji", "typo", "keywords"}
    assert "how_to" not in forms_of("What is Celery beat?")


def test_an_answer_counts_as_the_own_trail_another_or_a_miss():
    assert classify(outcome="prefetch", trail_id="t1", own="t1") == "own_prefetch"
    assert classify(outcome="hint", trail_id="t1", own="t1") == "own_hint"
    assert classify(outcome="prefetch", trail_id="t2", own="t1") == "other_prefetch"
    assert classify(outcome="hint", trail_id="t2", own="t1") == "other_hint"
    assert classify(outcome="miss", trail_id=None, own="t1") == "miss"


def test_a_question_framed_normalises_as_it_does_plain():
    q = "Can I set my own name for a task in the decorator rather than letting Celery pick it?"
    forms = framed(q)
    assert set(forms) == {"plain", "greeted", "prefixed", "emoji"}
    assert {normalise_query(text) for text in forms.values()} == {normalise_query(q)}
