"""A recorded question asked again in other words ("how can I …" for "how do I …", "how to …",
keywords) is that question: ``text.question_wording``, ``text.question_ask``, ``evidence.restates``
and what ``decide`` makes of them.

The shipped scorer is fitted on hand-written rewordings (which avoid the question's words) and
near misses (which reuse them), so lexical overlap reads as a near miss to it: before this rule a
question asked again as "how can I" instead of "how do I" was scored about 0.08 and lost to other
trails (research/near_repeats.py)."""

import pytest

from cachecore.engine.decide import Candidate, Cited, Policy, Reason, decide
from cachecore.engine.evidence import FEATURES, Idf, TextEvidence, TrailContext, question_evidence, restates
from cachecore.engine.outcome import Outcome
from cachecore.engine.scorer import MatchScorer
from cachecore.engine.text import content_hash, normalise_query, question_wording, without_framing

# A scorer that finds nothing convincing below cosine 0.99 (confidence 0.5 there): whatever
# prefetches below it is the rule's doing, not the scorer's.
STRICT = MatchScorer(
    weights=tuple(50.0 if f == "cosine" else 0.0 for f in FEATURES), bias=-49.5,
    means=(0.0,) * len(FEATURES), scales=(1.0,) * len(FEATURES), prefetch_confidence=0.88, hint_confidence=0.19,
)
POLICY = Policy(scorer=STRICT, similarity_threshold=0.5, prefetch_confidence=0.88, hint_confidence=0.19,
                coverage_floor=0.3)
RECORDED = "How do I give a Celery task an explicit name?"
# The README's recorded question and the ways a user or an agent asks it again around the same
# words: who asks, "how to", a question typed as keywords.
INSTALL = "How do I install Acme Sync on Ubuntu?"


def wording(q: str) -> tuple[str, ...]:
    return question_wording(normalise_query(q))


def same(a: str, b: str, idf: Idf | None = None) -> bool:
    return restates(TextEvidence.of(normalise_query(a)), TextEvidence.of(normalise_query(b)), idf)


@pytest.mark.parametrize("asked_again", [
    "How can I give a Celery task an explicit name?",
    "how could i give the celery task an explicit name",
    "How do I give a Celery task an explicit name please?",
    "HOW DO I GIVE A CELERY TASK AN EXPLICIT NAME",
])
def test_the_question_put_in_other_function_words_restates_it(asked_again):
    assert wording(asked_again) == wording(RECORDED)
    assert same(asked_again, RECORDED)


@pytest.mark.parametrize(("a", "b"), [
    # Another interrogative asks for something else.
    ("How does the worker restart after a crash?", "Why does the worker restart after a crash?"),
    # Direction: prepositions and word order stay.
    ("How do I convert str to bytes?", "How do I convert bytes to str?"),
    ("How do I migrate from 4 to 5?", "How do I migrate from 5 to 4?"),
    # Advice is not possibility.
    ("Can I run two workers on one host?", "Should I run two workers on one host?"),
    # A negation.
    ("Why does the task retry?", "Why doesn't the task retry?"),
    # A neighbouring setting, another version, a symbol.
    ("What does the soft time limit do?", "What does the hard time limit do?"),
    ("How do I set the broker url in Celery 4?", "How do I set the broker url in Celery 5?"),
    ("What does ~ mean in C++?", "What does % mean in C++?"),
    ("Is this C#?", "Is this C?"),
    # A yes/no question's leading auxiliary: whether one can is not whether one does.
    ("Can jellyfish change color?", "Do jellyfish change color?"),
    ("Is the result backend required?", "Can the result backend be required?"),
    # A trailing "do" is the main verb: what a thing does is not what it is.
    ("What does celery beat do?", "What is celery beat?"),
    # One word more or less is another question for this rule (the scorer judges it).
    ("How do I name a task?", "How do I name a periodic task?"),
    # Framing must be whole and set off: these words belong to the question.
    ("Question marks in URLs?", "Marks in URLs?"),
    ("Hi-res images in the docs?", "Res images in the docs?"),
    ("Hello world in Flask?", "World in Flask?"),
    ("Tell me about Celery beat?", "About Celery beat?"),
    ("Why does it say thanks?", "Why does it say?"),
    # What follows the framing is still compared word for word.
    ("Quick question: how do I name a task?", "How do I name a periodic task?"),
    ("Can you tell me why the worker restarts?", "How does the worker restart?"),
    # An emoji or emoticon before the question's end is what it asks about (QQP holds these).
    ("What does this emoji mean 👍?", "What does this emoji mean?"),
    ("What does the :( emoticon mean?", "What does the emoticon mean?"),
    ("How do I type ♥ on a Mac?", "How do I type on a Mac?"),
    # Asked by someone else or as keywords (``asks_the_same``): the same holds.
    # Another kind of answer: why, whether one should, whether one can.
    ("Why install Acme Sync on Ubuntu?", INSTALL),
    ("Should I install Acme Sync on Ubuntu?", INSTALL),
    ("Can I install Acme Sync on Ubuntu?", INSTALL),
    # Keywords ask how or what, not why, when or whether.
    ("acme sync fails ubuntu", "Why does Acme Sync fail on Ubuntu?"),
    ("worker restarts after crash", "When does the worker restart after a crash?"),
    ("install acme sync ubuntu", "Should I install Acme Sync on Ubuntu?"),
    # A word more, less or changed, another object, another order, another direction.
    ("installing acme sync on an ubuntu machine", INSTALL),
    ("How to install Acme Sync on Ubuntu 22.04?", INSTALL),
    ("how to uninstall acme sync on ubuntu", INSTALL),
    ("ubuntu install acme sync", INSTALL),
    ("how to convert bytes to str", "How do I convert str to bytes?"),
    ("how to copy files to the server", "How do I copy files from the server?"),
    ("how to run celery without eventlet", "How do I run Celery with eventlet?"),
    ("how to run celery eventlet", "How do I run Celery with eventlet?"),
    # Too few words to be sure of.
    ("what is wire", "What is the Wire about?"),
    # The same content words (``says_the_same``), but another order, direction, name or sense.
    ("How do I get a task's id when I only have its result?",
     "How do I get a task's result when I only have its id?"),
    ("How do I access a module written in Python from C?", "How do I access a module written in C from Python?"),
    ("How do I convert a number to a string?", "converting a string to a number"),
    ("Can I create my own functions in C++?", "Can I create my own functions in C?"),
    ("What does باقر mean in Arabic?", "What does this mean in Arabic?"),
    ("How do I copy a file to the server?", "copying a file from the server"),
    ("What is the difference between a list and a tuple?", "difference between a list or a tuple"),
    ("How do I enable task events?", "disabling task events"),
    ("Why are tasks not acknowledged?", "why are tasks acknowledged"),
])
def test_what_changes_the_question_is_never_taken_for_a_restatement(a, b):
    assert not same(a, b) and not same(b, a)


@pytest.mark.parametrize("framed", [
    "Quick question: how do I give a Celery task an explicit name?",
    "Hi! How can I give a Celery task an explicit name? Thanks.",
    "Hey there, a quick question - how do I give a Celery task an explicit name?",
    "I have a question: how do I give a Celery task an explicit name? Thank you in advance",
    "Can you tell me how I give a Celery task an explicit name?",
    # Emoji and emoticons after the question's punctuation, or between a greeting and it.
    "How do I give a Celery task an explicit name? 🙂",
    "Hi 👋 how do I give a Celery task an explicit name?",
    "Hey! 👋👋 How do I give a Celery task an explicit name?! Thanks 🙏",
    "How do I give a Celery task an explicit name? Thx!! :) 👍🏽",
    "How do I give a Celery task an explicit name? =] :'-(",
])
def test_the_question_in_conversational_framing_restates_it(framed):
    assert wording(framed) == wording(RECORDED)
    assert same(framed, RECORDED) and same(RECORDED, framed)




@pytest.mark.parametrize("asked_again", [
    "how to install acme sync on ubuntu",
    "How should I install Acme Sync on Ubuntu?",
    "How do you install Acme Sync on Ubuntu?",
    "How does one install Acme Sync on Ubuntu?",
    "What's the way to install Acme Sync on Ubuntu?",
    "install acme sync ubuntu",
    "Install Acme Sync on Ubuntu",
])
def test_the_question_asked_around_the_same_words_by_anyone_restates_it(asked_again):
    assert wording(asked_again) != wording(INSTALL)  # not the rule of the same wording
    assert same(asked_again, INSTALL)




@pytest.mark.parametrize(("asked_again", "recorded"), [
    # Light rewordings (tests/data/eval/*_light.jsonl): another inflection, another form of the
    # question, a keyword or request form; the same content words in the same order.
    ("installing acme sync on ubuntu - how?", INSTALL),
    ("giving a celery task an explicit name", RECORDED),
    ("configuring logging of the celery worker", "How do I configure the logging of Celery workers?"),
    ("Why doesn't my periodic task run?", "why isn't my periodic task running"),
    ("what is a negative index", "What are negative indexes?"),
])
def test_the_same_content_words_in_the_same_order_and_sense_restate_it(asked_again, recorded):
    assert wording(asked_again) != wording(recorded)
    assert same(asked_again, recorded) and same(recorded, asked_again)


def test_framing_alone_is_left_as_it_is():
    assert without_framing("hi, thanks") == "hi, thanks"
    assert without_framing("quick question") == "quick question"
    assert without_framing("hello") == "hello"


def test_a_leading_auxiliary_of_the_same_class_restates():
    assert same("Could I run two workers on one host?", "Can I run two workers on one host?")
    assert same("Does the worker retry?", "Do the worker retry?")


def test_a_contracted_is_reads_as_is_and_a_possessive_stays():
    assert same("What's the default broker?", "What is the default broker?")
    assert not same("What is Celery's default broker?", "What is the default broker?")


def test_a_redacted_trail_restates_nothing():
    assert not restates(TextEvidence.of("how do i x"), TextEvidence.of(""))
    assert wording("") == ()


def _cited(section_id: str) -> Cited:
    text = f"{section_id} text"
    return Cited(section_id, content_hash(text), content_hash(text), text, 10)


def test_decide_serves_the_restated_question_its_trail_as_the_very_same_question():
    recorded = Candidate("t1", 0.95, normalise_query(RECORDED), [], (_cited("names"),))
    # Closer by cosine, and a hair more confident to the scorer, but not the question recorded.
    other = Candidate("t2", 0.96, "how do i name tasks automatically", [], (_cited("auto"),))
    d = decide(query=normalise_query("How can I give a Celery task an explicit name?"),
               candidates=[other, recorded], policy=POLICY, budget=1000, idf=Idf(sections=10, df={}))
    assert (d.outcome, d.reason, d.trail_id, d.confidence) == (Outcome.PREFETCH, Reason.MATCH, "t1", 1.0)
    # Not in doubt either, whatever comes close: no ambiguity with the other trail.
    assert [s["id"] for s in d.sections] == ["names"]


def test_a_trail_recorded_from_keywords_is_the_how_question_of_its_words():
    # An agent may record its search as the trail's question.
    assert same("How do I install Acme Sync on Ubuntu?", "install acme sync ubuntu")
    assert not same("Why does Acme Sync install on Ubuntu?", "acme sync install ubuntu")


def test_keywords_ask_what_the_words_are_too():
    assert same("default broker url", "What is the default broker url?")
    assert same("What's the default broker url?", "default broker url")
    assert not same("default broker url", "Which is the default broker url?")


def test_decide_serves_the_question_asked_as_keywords_its_recorded_trail():
    recorded = Candidate("t1", 0.9, normalise_query(INSTALL), [], (_cited("install"),))
    other = Candidate("t2", 0.92, "how do i upgrade acme sync on ubuntu", [], (_cited("upgrade"),))
    d = decide(query=normalise_query("install acme sync ubuntu"), candidates=[other, recorded], policy=POLICY,
               budget=1000, idf=Idf(sections=10, df={}))
    assert (d.outcome, d.reason, d.trail_id, d.confidence) == (Outcome.PREFETCH, Reason.MATCH, "t1", 1.0)


def test_without_the_rule_the_same_candidates_give_no_prefetch():
    recorded = Candidate("t1", 0.95, normalise_query(RECORDED), [], (_cited("names"),))
    d = decide(query=normalise_query("How can I give a Celery task an explicit name for logging?"),
               candidates=[recorded], policy=POLICY, budget=1000, idf=Idf(sections=10, df={}))
    assert d.outcome is not Outcome.PREFETCH and d.confidence < 0.5


def test_a_restated_question_still_never_serves_changed_text():
    changed = Cited("names", content_hash("names text"), content_hash("names text v2"), None, 10)
    recorded = Candidate("t1", 0.95, normalise_query(RECORDED), [], (changed,))
    d = decide(query=normalise_query("How can I give a Celery task an explicit name?"),
               candidates=[recorded], policy=POLICY, budget=1000, idf=Idf(sections=10, df={}))
    assert d.outcome is not Outcome.PREFETCH and all("text" not in s for s in d.sections)


def test_a_question_stored_with_its_framing_reads_without_it():
    # Normalised before framing was left out, the stored form still holds it; asked now, plain.
    stored = "hi! how do i give a celery task an explicit name? thanks"
    recorded = Candidate("t1", 0.93, stored, [], (_cited("names"),))
    d = decide(query=normalise_query("How can I give a Celery task an explicit name?"),
               candidates=[recorded], policy=POLICY, budget=1000, idf=Idf(sections=10, df={}))
    assert (d.outcome, d.trail_id, d.confidence) == (Outcome.PREFETCH, "t1", 1.0)


# One word mistyped (two neighbouring letters swapped) is that word when no section holds it.
TYPO = "How do I give a Celery task an expilcit name?"
UNKNOWN = Idf(sections=10, df={})


def test_a_question_asked_again_with_one_word_mistyped_restates_it():
    assert same(TYPO, RECORDED, UNKNOWN)
    assert same("How do I give a Celery task an explicit nmae?", RECORDED, UNKNOWN) is False  # 4 letters


@pytest.mark.parametrize(("asked", "idf"), [
    # A word the tenant's sections hold is a word, not a slip ("trial" beside "trail").
    ("How do I start a trial?", Idf(sections=10, df={"trial": 2})),
    # Two slips, a letter replaced rather than swapped, letters swapped apart: another question.
    ("How do I gvie a Celery task an expilcit name?", UNKNOWN),
    ("How do I give a Celery task an explizit name?", UNKNOWN),
    ("How do I give a Celery task an txplicie name?", UNKNOWN),
])
def test_what_is_not_one_slip_of_the_same_word_does_not_restate(asked, idf):
    recorded = "How do I start a trail?" if "trial" in asked else RECORDED
    assert not same(asked, recorded, idf)


def test_without_the_tenants_sections_a_slip_is_not_read_as_the_word():
    assert not same(TYPO, RECORDED)


def test_decide_serves_the_recorded_trail_to_its_question_asked_with_a_slip():
    recorded = Candidate("t1", 0.93, normalise_query(RECORDED), [], (_cited("names"),))
    other = Candidate("t2", 0.94, "how do i name tasks automatically", [], (_cited("auto"),))
    d = decide(query=normalise_query(TYPO), candidates=[other, recorded], policy=POLICY, budget=1000, idf=UNKNOWN)
    assert (d.outcome, d.reason, d.trail_id, d.confidence) == (Outcome.PREFETCH, Reason.MATCH, "t1", 1.0)
    # The tenant's sections use the word as typed: the scorer judges (nothing convincing here).
    known = Idf(sections=10, df={"expilcit": 1})
    assert not same(TYPO, RECORDED, known)
    d = decide(query=normalise_query(TYPO), candidates=[other, recorded], policy=POLICY, budget=1000, idf=known)
    assert d.outcome != Outcome.PREFETCH


def test_a_stored_question_reads_as_a_query_of_its_words_and_once():
    stored = "hi! how do i give a celery task an explicit name? thanks"   # stored before framing was cut
    context = TrailContext(stored, steps=[])
    assert context.question == TextEvidence.of(normalise_query(stored))
    assert context.question.wording == TextEvidence.of(normalise_query(RECORDED)).wording
    # Read once per process while it keeps coming up: the same (immutable) evidence again.
    assert TrailContext(stored, steps=[]).question is context.question is question_evidence(stored)
