"""The polarity guard's word rules (no model, no database)."""

import pytest

from cachecore.engine.polarity import ANTONYMS, PolarityView, polarity_conflict, views_conflict


@pytest.mark.parametrize(("a", "b"), [
    ("Can I run Acme on Windows?", "Why can't I run Acme on Windows?"),
    ("How do I enable two-factor authentication?", "How do I disable two-factor authentication?"),
    ("How do I sign in with SSO?", "How do I sign out of SSO?"),
    ("How do I add a user to a group?", "How do I remove a user from a group?"),
    ("How to encrypt a backup", "how to decrypt a backup"),
    ("Is the config file read at startup?", "Is the config file not read at startup?"),
])
def test_opposite_questions_conflict(a, b):
    assert polarity_conflict(a, b) is not None
    assert polarity_conflict(b, a) is not None


@pytest.mark.parametrize(("a", "b"), [
    ("How do I install Acme on Debian?", "What are the steps to install Acme on a Debian machine?"),
    ("Why isn't there a switch statement in Python?", "What should I use in place of a C-style switch statement?"),
    ("How do I enable and disable logging?", "How do I disable logging?"),
    ("How do I reset my password?", "I forgot my password, how can I get a new one?"),
])
def test_paraphrases_do_not_conflict(a, b):
    assert polarity_conflict(a, b) is None


@pytest.mark.parametrize(("x", "y"), ANTONYMS)
def test_each_antonym_pair_reads_as_itself(x, y):
    # Each text's view holds the pairs it has one side of; the guard names the pair both read.
    a, b = f"how do i {x} the thing", f"how do i {y} the thing"
    assert polarity_conflict(a, b) == f"{x} vs {y}"
    assert polarity_conflict(b, a) == f"{x} vs {y}"


def test_the_first_pair_in_order_is_named_whichever_text_comes_first():
    a = "How do I enable logging and add a handler?"
    b = "How do I disable logging and remove a handler?"
    assert polarity_conflict(a, b) == polarity_conflict(b, a) == "enable vs disable"


def test_a_text_with_both_sides_of_a_pair_holds_neither():
    view = PolarityView.of("how do i enable and disable logging")
    assert not any(ANTONYMS[i] == ("enable", "disable") for i, _ in view.sides)
    assert views_conflict(view, PolarityView.of("how do i disable logging")) is None
