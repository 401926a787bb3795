"""The engine's regexes run in linear time: each is timed on a pathological input of size n and
4n (a ratio, not a wall-clock budget: linear work grows about 4x, quadratic about 16x), and a
property test normalises any input up to the query size limit."""

from __future__ import annotations

import time
from collections.abc import Callable

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cachecore.engine import limits
from cachecore.engine.pairfeatures import identifiers
from cachecore.engine.text import normalise_query, question_ask, question_wording
from cachecore.engine.verifier import non_answer_pattern

LINEAR_RATIO = 8.0  # 4x is linear; quadratic is 16x


def _best(f: Callable[[str], object], text: str, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        f(text)
        best = min(best, time.perf_counter() - started)
    return best


def _ratio(f: Callable[[str], object], make: Callable[[int], str], n: int) -> float:
    _best(f, make(n), 1)  # warm up
    return _best(f, make(4 * n)) / max(_best(f, make(n)), 1e-7)


def test_normalise_query_is_linear_on_a_run_of_punctuation():
    ratio = _ratio(normalise_query, lambda n: "a" + "." * n + "a", 1000)
    assert ratio < LINEAR_RATIO, ratio


def test_normalise_query_is_linear_on_repeated_framing():
    for make in (lambda n: "hi, " * (n // 4) + "x", lambda n: "x" + "? thanks" * (n // 8),
                 lambda n: "quick question: " * (n // 16) + "x" + "! thanks" * (n // 8),
                 lambda n: "hi 👋 " * (n // 5) + "x", lambda n: "x" + "? 🙂" * (n // 3),
                 lambda n: "x? " + ":) " * (n // 3), lambda n: "x" + " 🙂" * (n // 2) + "?",
                 lambda n: "hi " + "👋 ! " * (n // 4) + "- x"):
        ratio = _ratio(normalise_query, make, 2000)
        assert ratio < LINEAR_RATIO, (make(20), ratio)


def test_normalise_query_keeps_its_meaning():
    assert normalise_query('  "How do I  INSTALL acme?"  ') == "how do i install acme"
    assert normalise_query("a" + "." * 10 + "a") == "a" + "." * 10 + "a"
    assert normalise_query("?!.. ok ..!?") == "ok"
    assert normalise_query("ﬁle\u00a0name.") == "file name"
    # Conversational framing is not the question (text.without_framing), however often repeated.
    assert normalise_query("Hi! Quick question: how do I install acme? Thanks.") == "how do i install acme"
    assert normalise_query("Hey, hi, hello - why? thanks. thanks!") == "why"
    assert normalise_query("Hi! Thanks.") == "hi! thanks"
    # Emoji and emoticons after the question's punctuation decorate it; before its end they stay.
    assert normalise_query("Hi 👋 how do I install acme? 🙂 :)") == "how do i install acme"
    assert normalise_query("What does this emoji mean ✊?") == "what does this emoji mean ✊"
    assert normalise_query("How do I install acme 🙏") == "how do i install acme 🙏"
    assert normalise_query("🙂") == "🙂"


PATHOLOGICAL = st.text(alphabet=st.sampled_from(list(" \t\n.,;:!?\"'`a_1(-)\u00a0\u2019é🙂👋\u200d\ufe0f<3hix")),
                       max_size=limits.MAX_QUERY_CHARS)


@settings(max_examples=60, deadline=None)
@given(PATHOLOGICAL)
@example("a" + "." * (limits.MAX_QUERY_CHARS - 2) + "a")
@example("a" + " ." * (limits.MAX_QUERY_CHARS // 2 - 1))
def test_normalising_any_input_up_to_the_size_limit_is_fast_and_idempotent(text):
    started = time.perf_counter()
    once = normalise_query(text)
    took = time.perf_counter() - started
    assert normalise_query(once) == once
    assert once == once.strip(" \"'`.,;:!?")
    assert took < 0.02, took  # generous on a loaded machine; the quadratic form took ~40 ms idle at 4,000


@settings(max_examples=30, deadline=None)
@given(PATHOLOGICAL)
def test_identifiers_on_any_input_up_to_the_size_limit(text):
    found = identifiers(text)
    assert all(token and token == token.strip() and "`" not in token for token in found)


def test_identifiers_are_linear_on_long_words():
    for make in (lambda n: "a" * n, lambda n: "1" * n, lambda n: ("ab" * n)[:n] + "(",
                 lambda n: "x" + "a1" * (n // 2)):
        ratio = _ratio(identifiers, make, 2000)
        assert ratio < LINEAR_RATIO, (make(10), ratio)


def test_identifiers_keep_their_meaning():
    text = "Use `pip install acme`, os.path.join() or len() with --user, -v, my_var, utf8 and py3."
    assert identifiers(text) == {"pip install acme", "os.path.join", "len", "--user", "-v", "my_var", "utf8", "py3"}


def test_question_wording_is_linear_on_long_words_and_runs_of_joiners():
    for make in (lambda n: "a" * n, lambda n: "a'" * (n // 2), lambda n: ("a-" * n)[:n] + "+" * 10,
                 lambda n: "a" * n + "'", lambda n: "~" * n, lambda n: "hi" + "," * n + "x",
                 lambda n: "quick question " + ":" * n + "a", lambda n: "can you tell me " * (n // 16) + "how",
                 lambda n: "hi, " * (n // 4) + "x", lambda n: "x" + "? thanks" * (n // 8)):
        ratio = _ratio(question_wording, make, 2000)
        assert ratio < LINEAR_RATIO, (make(10), ratio)


def test_question_ask_is_linear_on_a_long_run_of_askers():
    for make in (lambda n: "how " + "i " * (n // 2) + "x y", lambda n: "what " + "to " * (n // 3) + "way to x y",
                 lambda n: "on " * (n // 3) + "x"):
        ratio = _ratio(lambda text: question_ask(question_wording(text)), make, 2000)
        assert ratio < LINEAR_RATIO, (make(10), ratio)


@settings(max_examples=30, deadline=None)
@given(PATHOLOGICAL)
def test_question_wording_on_any_input_up_to_the_size_limit(text):
    started = time.perf_counter()
    words = question_wording(normalise_query(text))
    assert all(w and not w.isspace() for w in words)
    assert time.perf_counter() - started < 0.02


def test_the_non_answer_pattern_is_linear_on_a_long_answer():
    for make in (lambda n: ("if hard to say " * n)[:n], lambda n: ("the docs say a thing " * n)[:n],
                 lambda n: ("if " * n)[:n], lambda n: "x" * n):
        ratio = _ratio(non_answer_pattern, make, 10_000)
        assert ratio < LINEAR_RATIO, (make(20), ratio)


def test_the_non_answer_pattern_keeps_its_conditions():
    assert non_answer_pattern("If the section does not specify a port, relay uses 8080.") is None
    assert non_answer_pattern("If you need a port, the docs don't say which.") is not None
    assert non_answer_pattern("It is hard to say. If so, fine.") == "hard to say"
    assert non_answer_pattern("When it is hard to say, ask.") is None


def _counting_embed(seen: list[int]):
    import numpy as np

    def embed(texts):
        seen.append(len(texts))
        rows = [np.frombuffer(t.encode()[:8].ljust(8, b" "), dtype=np.uint8).astype(np.float32) + 1 for t in texts]
        return np.asarray([r / np.linalg.norm(r) for r in rows], dtype=np.float32)

    return embed


def test_the_verifier_refuses_to_embed_an_answer_over_its_caps():
    from cachecore.engine.verifier import MAX_CHECKED_CHARS, MAX_CHECKED_SENTENCES, Verifier

    seen: list[int] = []
    verifier = Verifier(_counting_embed(seen))
    exemplars = len(seen)
    many = " ".join(f"Sentence number {n} says a thing." for n in range(MAX_CHECKED_SENTENCES + 1))
    long = "word " * (MAX_CHECKED_CHARS // 5 + 1)
    for answer in (many, long):
        verdict = verifier.check(answer, [])
        assert not verdict.passed and "too long" in verdict.reasons[0], verdict
    assert len(seen) == exemplars  # nothing of those answers was embedded
    assert MAX_CHECKED_CHARS <= limits.MAX_ANSWER_CHARS
    verifier.check("A short answer. It has two sentences here.", [])
    assert len(seen) == exemplars + 1
