"""The negation and polarity guard: two questions that embed close together but ask opposite
things ("How do I enable 2FA?" / "How do I disable 2FA?", "Can I …" / "Why can't I …") must
not share a trail. Pure word-level rules: negation parity and antonym pairs."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

NEGATIONS = {"not", "never", "cannot", "no"}
# Negation parity alone is too blunt: paraphrases often drop a negation while rewording
# ("Why isn't there a switch statement?" / "What do I use instead of switch?"). It counts only
# when the two questions share most of their content words, i.e. the negation is the difference.
# Measured on tests/data (see README, "Matching quality"): words-only negation parity lost 13%
# of FAQ paraphrase hits; gated by an overlap of 0.6 it loses none of 149 and still turns away
# 19 of 70 near-miss hits of the hand-labelled pairs.
NEGATION_MIN_OVERLAP = 0.6
_STOPWORDS = set(
    "a an the i my me to of in on for and or is are be do does did how what why when where which can could "
    "should would will with it this that there you your we from by as at if so use using".split()
)

ANTONYMS = [
    ("enable", "disable"), ("add", "remove"), ("install", "uninstall"), ("start", "stop"),
    ("open", "close"), ("read", "write"), ("encode", "decode"), ("import", "export"),
    ("upload", "download"), ("increase", "decrease"), ("create", "delete"), ("allow", "deny"),
    ("allow", "block"), ("show", "hide"), ("lock", "unlock"), ("connect", "disconnect"),
    ("include", "exclude"), ("compress", "decompress"), ("encrypt", "decrypt"),
    ("serialize", "deserialize"), ("backup", "restore"), ("subscribe", "unsubscribe"),
    ("login", "logout"), ("maximum", "minimum"), ("max", "min"), ("first", "last"),
    ("before", "after"), ("send", "receive"), ("push", "pull"), ("get", "set"), ("attach", "detach"),
    ("mount", "unmount"), ("freeze", "unfreeze"), ("upgrade", "downgrade"), ("expand", "collapse"),
    ("grant", "revoke"), ("accept", "reject"), ("pause", "resume"), ("join", "leave"),
    ("insert", "delete"), ("append", "remove"), ("load", "unload"), ("pack", "unpack"),
    ("wrap", "unwrap"), ("zip", "unzip"), ("archive", "unarchive"), ("register", "unregister"),
    ("mute", "unmute"), ("follow", "unfollow"), ("pin", "unpin"), ("share", "unshare"),
    ("select", "deselect"), ("check", "uncheck"), ("activate", "deactivate"), ("assign", "unassign"),
    ("publish", "unpublish"), ("link", "unlink"), ("merge", "split"), ("import", "unimport"),
    ("sign in", "sign out"), ("log in", "log out"), ("turn on", "turn off"), ("opt in", "opt out"),
    ("faster", "slower"), ("more", "less"), ("larger", "smaller"), ("bigger", "smaller"),
    ("higher", "lower"), ("inside", "outside"), ("client", "server"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("mutable", "immutable"), ("public", "private"),
    ("local", "global"), ("input", "output"), ("upper", "lower"), ("uppercase", "lowercase"),
]


_STEMMERS = threading.local()  # a Snowball stemmer keeps state while it stems: one per thread


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English Snowball (Porter2) stem of a lower-case word: enable/enabled/enabling → enabl.
    The one stemmer of the polarity guard and the term features (``pairfeatures.content_words``,
    hence ``Section.terms``)."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def negation_count(text: str) -> int:
    count = 0
    for token in _tokens(text):
        if token in NEGATIONS or token.endswith("n't"):
            count += 1
    return count


def _stemmed_term(term: str) -> str:
    return " ".join(stem(w) for w in term.split())


# Stemmed once: the guard runs on every candidate of every recall.
_STEMMED_ANTONYMS = [(x, y, _stemmed_term(x), _stemmed_term(y)) for x, y in ANTONYMS]


def _terms(text: str) -> frozenset[str]:
    """The text's stemmed words and stemmed two-word phrases (antonyms are one or two words)."""
    stems = [stem(t) for t in _tokens(text)]
    return frozenset(stems) | frozenset(f"{a} {b}" for a, b in zip(stems, stems[1:]))


def _content_words(text: str) -> set[str]:
    return {
        stem(t) for t in _tokens(text) if t not in _STOPWORDS and t not in NEGATIONS and not t.endswith("n't")
    }


def _antonym_sides(terms: frozenset[str]) -> tuple[tuple[int, bool], ...]:
    """For each pair of ``ANTONYMS`` of which a text holds one side and not the other, the
    pair's index and which side (True: the first), in the list's order."""
    return tuple((i, sx in terms) for i, (_, _, sx, sy) in enumerate(_STEMMED_ANTONYMS)
                 if (sx in terms) != (sy in terms))


@lru_cache(maxsize=8192)
def _text_sides(text: str) -> tuple[tuple[int, bool], ...]:
    """``_antonym_sides`` of a text's ``_terms``, read once per text (the guard runs on every
    candidate of every recall)."""
    return _antonym_sides(_terms(text))


@dataclass(frozen=True)
class PolarityView:
    """What the guard reads of one text, computed once: its negation count, content words and
    the antonym pairs it holds one side of (a recall compares its query with every candidate's
    question)."""

    negations: int
    content: frozenset[str]
    sides: tuple[tuple[int, bool], ...]

    @classmethod
    def of(cls, text: str) -> PolarityView:
        return cls(negation_count(text), frozenset(_content_words(text)), _text_sides(text))


def polarity_conflict(a: str, b: str) -> str | None:
    """Why ``a`` and ``b`` ask opposite things, or None. Symmetric."""
    return views_conflict(PolarityView.of(a), PolarityView.of(b))


def views_conflict(a: PolarityView, b: PolarityView) -> str | None:
    """``polarity_conflict`` of two texts' views."""
    if (a.negations % 2) != (b.negations % 2):
        ca, cb = a.content, b.content
        if len(ca & cb) / max(1, len(ca | cb)) >= NEGATION_MIN_OVERLAP:
            return "negation differs"
    if a.sides and b.sides:
        # The first pair (in ``ANTONYMS``' order) of which each holds the side the other lacks.
        b_sides = dict(b.sides)
        for i, first in a.sides:
            if b_sides.get(i) is (not first):
                x, y, _, _ = _STEMMED_ANTONYMS[i]
                return f"{x} vs {y}"
    return None
