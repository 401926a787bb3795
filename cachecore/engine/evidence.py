"""Evidence that a stored trail answers *this* query, beyond the cosine of the two questions:
pure functions over text, no Django.

A close-but-different question usually shares the trail question's topic words and adds what
it really asks for: another parameter, object, version or direction. That addition is a
*salient* term (rare in the tenant's own sections, so high IDF) that neither the trail's
question, nor the agent's search arguments, nor the cited text explain. A paraphrase rewords
with common words, or with words the cited text uses. ``match_features`` turns that, the
coverage of the query by the cited chunks, lexical overlap and the polarity features into one
vector in ``FEATURES`` order for the calibrated scorer (``engine/scorer.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

from cachecore.engine.pairfeatures import (
    content_sequence,
    content_words,
    identifiers,
    numbers,
    sets_differ,
    trigram_overlap,
    trigrams,
)
from cachecore.engine.polarity import PolarityView, stem, views_conflict
from cachecore.engine.text import (
    ASK_WORDS,
    ASKER_WORDS,
    MIN_ASK_WORDS,
    normalise_query,
    question_ask,
    question_wording,
)

# A section contributes at most this many distinct terms to the tenant's document frequencies.
MAX_TERMS_PER_SECTION = 4000
# The document-frequency row that holds the number of sections (no real term is empty).
SECTION_COUNT_TERM = ""

FEATURES = (
    "cosine",
    "unexplained",
    "unexplained_max",
    "trail_unmatched",
    "coverage",
    "coverage_known",
    "coverage_gap",
    "trigram",
    "content_jaccard",
    "polarity_conflict",
    "negation_differs",
    "numbers_differ",
    "identifiers_differ",
    "rival_margin",
    "rival_known",
    "specifics_unexplained",
    "sentence_margin",
    "sentence_known",
    "via_sections",
)

# Evidence that is unknown when its flag is 0 (the margins: no rival known, or the cited or
# rival sentences not embedded yet). The scorer reads an unknown one at its mean, as no evidence
# either way: its 0 would otherwise read as a margin better than most.
UNKNOWN_UNLESS = {"rival_margin": "rival_known", "sentence_margin": "sentence_known"}


def section_terms(text: str | None) -> set[str]:
    """The distinct content terms of a section's text, as counted for document frequency."""
    if not text:
        return set()
    terms = content_words(text)
    if len(terms) > MAX_TERMS_PER_SECTION:
        terms = set(sorted(terms)[:MAX_TERMS_PER_SECTION])
    return terms


def strings_in(value: object) -> Iterable[str]:
    """Every string inside a JSON value (a step's ``args``), depth-first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings_in(v)


def step_terms(steps: object) -> set[str]:
    """Content terms of the search arguments the agent used on the trail."""
    if not isinstance(steps, list):
        return set()
    terms: set[str] = set()
    for step in steps:
        if isinstance(step, Mapping):
            for text in strings_in(step.get("args")):
                terms |= content_words(text[:2000])
    return terms


@dataclass(frozen=True)
class Idf:
    """Inverse document frequency over the tenant's sections: ``log((N + 1) / (df + 1)) + 1``,
    scaled to 0..1 by its maximum (a term no section holds). Unknown terms count as unseen."""

    sections: int
    df: Mapping[str, int]

    def weight(self, term: str) -> float:
        top = math.log(self.sections + 1) + 1.0
        return (math.log((self.sections + 1) / (self.df.get(term, 0) + 1)) + 1.0) / top


def _share(terms: AbstractSet[str], explained: AbstractSet[str], idf: Idf) -> tuple[float, float]:
    """IDF mass share of ``terms`` not in ``explained``, and the largest such weight."""
    if not terms:
        return 0.0, 0.0
    weights = {t: idf.weight(t) for t in terms}
    total = sum(weights.values())
    missing = [w for t, w in weights.items() if t not in explained]
    return (sum(missing) / total if total else 0.0), max(missing, default=0.0)


@dataclass(frozen=True)
class TrailContext:
    """What recall knows of a candidate trail besides its embedding's cosine."""

    query_normalised: str
    steps: object
    # The query's terms that the cited sections' text holds (read with the sections).
    cited_terms: frozenset[str] = frozenset()
    # The cited sections' text, lower-cased (None: not known, or not needed: the query names no
    # specifics), for the query's specifics.
    cited_text: str | None = None

    @property
    def question(self) -> TextEvidence:
        """The evidence of the trail's question (empty for a redacted trail), normalised as a
        query is now: a question stored before its framing was left out reads without it."""
        return question_evidence(self.query_normalised)


@lru_cache(maxsize=1024)
def question_evidence(question_normalised: str) -> TextEvidence:
    """A stored question's ``TextEvidence``, read once per process while it keeps coming up as a
    candidate (immutable, so shared; the query's own is read on every recall). A hit saves about
    0.05 ms of a recall's CPU, as ``polarity._text_sides`` and ``stem`` do per text and word: far
    under a recall's run-to-run spread, so it tells no tenant what another's recalls read. An
    entry holds about 6 KB (its trigram set, words and stems): 1,024 of them about 6 MB a process."""
    return TextEvidence.of(normalise_query(question_normalised))


# Sections still waiting for their chunks, as a share of the tenant's, beyond which the list of
# best-covering sections is too incomplete to count against anyone: a large upsert whose chunks
# are still being embedded, not the trickle of a tenant that writes all the time.
RIVALS_PENDING_SHARE = 0.01


def rivals_complete(*, pending: int, sections: int) -> bool:
    """Whether the best-covering sections can be weighed against a candidate: at most
    ``RIVALS_PENDING_SHARE`` of the tenant's ``sections`` wait for their chunks."""
    return pending <= RIVALS_PENDING_SHARE * sections


def rival_coverage(best_sections: Sequence[tuple[str, float]], cited_ids: Iterable[str]) -> float | None:
    """The best cosine of the query against a section the trail does not cite, from the
    tenant's best-covering sections (best first). When every listed section is cited, the last
    one listed bounds the rest from above. None: nothing is known (no chunks anywhere)."""
    cited = set(cited_ids)
    for section_id, cosine in best_sections:
        if section_id not in cited:
            return cosine
    return best_sections[-1][1] if best_sections else None


def sentence_rival(sentences: Sequence[tuple[str, float]], cited_ids: Iterable[str]) -> float | None:
    """The best sentence cosine of the query in a section the trail does not cite, among the
    tenant's best-covering sections whose sentences are known (``sentences``: section id and
    its best sentence cosine). None: none of them is known, or the trail cites them all."""
    cited = set(cited_ids)
    return max((cosine for section_id, cosine in sentences if section_id not in cited), default=None)


@dataclass(frozen=True)
class TextEvidence:
    """What the evidence reads of one normalised question, computed once per recall for the
    query and once per candidate for its trail's question."""

    text: str
    content: frozenset[str]
    trigrams: frozenset[str]
    numbers: frozenset[str]
    identifiers: frozenset[str]
    polarity: PolarityView
    # What the question asks, in order, without how it is put (``text.question_wording``).
    wording: tuple[str, ...] = ()
    # The same less who asks it: the kind of answer wanted and the words asked about
    # (``text.question_ask``).
    ask: tuple[str | None, tuple[str, ...]] = (None, ())
    # Its content words in order (``pairfeatures.content_sequence``), and the words that relate
    # them (``RELATION_WORDS``) in order, after who asks.
    content_order: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str) -> TextEvidence:
        wording = question_wording(text)
        order = content_sequence(text)
        return cls(text, frozenset(order), frozenset(trigrams(text)), frozenset(numbers(text)),
                   frozenset(identifiers(text)), PolarityView.of(text), wording, question_ask(wording), order,
                   _relations(wording))

    @property
    def specifics(self) -> frozenset[str]:
        """Numbers, versions and code identifiers the text names."""
        return self.numbers | self.identifiers


def restates(query: TextEvidence, question: TextEvidence, idf: Idf | None = None) -> bool:
    """Whether ``query`` is ``question`` put in other words: the same words say what each asks,
    in the same order (``text.question_wording``: "how can I …" for "how do I …"), or it asks the
    same of the same words whoever asks (``asks_the_same``: "how to …" for "how do I …"). Such a query
    asks what the recorded question asked, as the very same question does; the scorer, fitted
    on rewordings and near misses that share few or many words, is not asked. An empty wording
    (a redacted trail) restates nothing. With the tenant's ``idf``, one word mistyped counts as
    that word (``_mistyped``)."""
    if not question.wording:
        return False
    if query.wording == question.wording or asks_the_same(query, question) or says_the_same(query, question):
        return True
    if idf is None or len(query.wording) != len(question.wording):
        return False
    differ = [(a, r) for a, r in zip(query.wording, question.wording, strict=True) if a != r]
    return len(differ) == 1 and _mistyped(*differ[0], idf=idf)


# What a question typed as keywords asks: how to do it, or what it is ("celery beat schedule" for
# "what is the celery beat schedule?"); never why, when, which or whether.
KEYWORDS_ASK = frozenset({None, "how", "what"})


def asks_the_same(query: TextEvidence, question: TextEvidence) -> bool:
    """Whether ``query`` asks what ``question`` asks in other words around the same ones: the
    same kind of answer wanted and the same words asked about, in the same order, whoever asks
    ("how to install x on ubuntu", "how should I install x on ubuntu" for "how do I install x on
    ubuntu"); a question typed as keywords ("install x ubuntu") asks how or what
    (``KEYWORDS_ASK``), whichever of the two was recorded (an agent may record its search). None
    of the hard sets' rewordings or close questions is one (they reword or change a word), so the
    scorer fitted on them has never seen such a query, and reads its shared words as a near
    miss's."""
    (kind, words), (recorded_kind, recorded_words) = query.ask, question.ask
    return bool(words) and words == recorded_words and _same_kind(kind, recorded_kind)


def _same_kind(kind: str | None, recorded_kind: str | None) -> bool:
    """Whether two questions want the same kind of answer: the same interrogative or auxiliary,
    or keywords (None) on either side against "how" or "what" (``KEYWORDS_ASK``)."""
    return kind == recorded_kind or (None in (kind, recorded_kind) and {kind, recorded_kind} <= KEYWORDS_ASK)


# The words that relate a question's content words and that ``content_sequence`` leaves out (stop
# words) or that change what is asked around the same words: the two ends of a move ("copy a
# file to the server" / "from the server"), what goes with what, a comparison or a choice.
RELATION_WORDS = frozenset("to into onto from out off for with without than or vs versus between instead".split())


def _relations(wording: tuple[str, ...]) -> tuple[str, ...]:
    """The ``RELATION_WORDS`` of a question's wording in order, after its interrogative and who
    asks ("how to", "how should I")."""
    at = 0
    while at < len(wording) and (wording[at] in ASK_WORDS or wording[at] in ASKER_WORDS):
        at += 1
    return tuple(w for w in wording[at:] if w in RELATION_WORDS)


# The characters of a word that the content words read: ASCII letters and digits, and the
# marks inside a word ("don't", "well-known", "os.path").
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-'")


def _marked(wording: tuple[str, ...]) -> frozenset[str]:
    """The words of a question that the content words do not read whole: a name a "+" or "#"
    makes another ("C++", "C#"), an emoticon, a word in another script; and a trailing "do", the
    main verb ("what does celery beat do?" is not "what is celery beat?")."""
    marked = frozenset(w for w in wording if not set(w) <= _PLAIN)
    return marked | {"<do>"} if wording[-1:] == ("do",) else marked


def says_the_same(query: TextEvidence, question: TextEvidence) -> bool:
    """Whether ``query`` is ``question`` typed again in a few other words: the same kind of answer
    wanted (as ``asks_the_same`` reads it), the same content words in the same order, by their
    stems ("installing acme sync on ubuntu - how?" for "how do I install Acme Sync on Ubuntu?"),
    related by the same words (``RELATION_WORDS``), with the same numbers and identifiers and the
    same sense (no negation or antonym between them, ``polarity.views_conflict``). What a near
    miss changes is one of these: a word for another (a sibling setting, another release), the
    order of two (the reverse direction: "a number to a string" / "a string to a number"), a
    relation ("to" / "from"), a negation. The hard sets' rewordings avoid the question's words and
    their close questions change one, so the scorer fitted on them reads shared words as a near
    miss's. Of the light rewordings of ``tests/data/eval/*_light.jsonl`` this takes a fifth to a
    third, and no near miss, hard rewording or close question for its own trail's question
    (docs/evaluation.md). Not fitted."""
    (kind, _), (recorded_kind, _) = query.ask, question.ask
    return (len(query.content_order) >= MIN_ASK_WORDS and query.content_order == question.content_order
            and _same_kind(kind, recorded_kind)
            and query.relations == question.relations
            and query.numbers == question.numbers and query.identifiers == question.identifiers
            and _marked(query.wording) == _marked(question.wording)
            and query.polarity.negations % 2 == question.polarity.negations % 2
            and views_conflict(query.polarity, question.polarity) is None
            and not direction_reversed(query, question))


# The prepositions that give the two ends of a conversion, a call or a move ("a number to a
# string", "Python from C"), by class. The last one of a question is read (a first "to" is
# usually the infinitive's: "the best way to convert a number to a string").
DIRECTIONS = {"to": "to", "into": "to", "onto": "to", "from": "from"}


def _ends(wording: tuple[str, ...]) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """For each class of ``DIRECTIONS`` in a question's wording, the stems of every word before
    and after its last occurrence (stop words too: "Python" is one for the content words), less
    what asks and who asks."""
    ends = {}
    for i in range(len(wording) - 1, -1, -1):
        kind = DIRECTIONS.get(wording[i])
        if kind and kind not in ends:
            words = [(stem(w), j < i) for j, w in enumerate(wording)
                     if j != i and w not in ASK_WORDS and w not in ASKER_WORDS and w not in DIRECTIONS]
            ends[kind] = (frozenset(w for w, before in words if before),
                          frozenset(w for w, before in words if not before))
    return ends


def direction_reversed(query: TextEvidence, question: TextEvidence) -> bool:
    """Whether the query asks the question's move the other way round: around the same
    preposition, a word of each end of the question on the other end in the query ("execute
    Python statements from C" for "execute C statements from Python"). Both ends must trade a
    word: a clause moved to the front or the back of a question moves words one way only."""
    mine, theirs = _ends(query.wording), _ends(question.wording)
    for kind in mine.keys() & theirs.keys():
        (q_before, q_after), (t_before, t_after) = mine[kind], theirs[kind]
        if (q_after & t_before) - t_after and (q_before & t_after) - t_before:
            return True
    return False


# A mistyped word is this long at least: shorter ones swapped are too often other words.
MIN_TYPO_LETTERS = 5


def _mistyped(asked: str, recorded: str, *, idf: Idf) -> bool:
    """Whether ``asked`` is ``recorded`` with two neighbouring letters swapped ("expilcit" for
    "explicit"), a word of ``MIN_TYPO_LETTERS`` letters or more that no section of the tenant
    holds: a word its documents use ("trial" beside "trail") is a word, not a slip. Not fitted."""
    if len(asked) != len(recorded) or len(asked) < MIN_TYPO_LETTERS or not asked.isalpha():
        return False
    at = [i for i, (a, r) in enumerate(zip(asked, recorded, strict=True)) if a != r]
    return (len(at) == 2 and at[1] == at[0] + 1 and asked[at[0]] == recorded[at[1]]
            and asked[at[1]] == recorded[at[0]] and not any(idf.df.get(t, 0) for t in content_words(asked)))


def specifics_unexplained(query: str, trail_question: str, cited_text: str | None) -> float:
    """The share of the query's specifics (numbers, versions, code identifiers) that neither the
    trail's question nor the cited text holds: "in 4.2", "--max-tasks-per-child" asked of a
    section about another release or setting. 0 when the query names none or no text is known."""
    return _specifics_unexplained(TextEvidence.of(query), TextEvidence.of(trail_question), cited_text)


def _specifics_unexplained(query: TextEvidence, question: TextEvidence, cited_text: str | None) -> float:
    wanted = query.specifics
    if not wanted or cited_text is None:
        return 0.0
    have = question.specifics | numbers(cited_text)
    # A number must appear as a number ("4" is in "404" as a string); an identifier as a string.
    missing = [w for w in wanted if w not in have and (w in numbers(w) or w not in cited_text)]
    return len(missing) / len(wanted)


def match_features(
    *,
    query: TextEvidence,
    trail: TrailContext,
    cosine: float,
    idf: Idf,
    coverage: float | None,
    trail_coverage: float | None = None,
    rival: float | None = None,
    sentences: float | None = None,
    sentence_rival: float | None = None,
    via_sections: bool = False,
) -> list[float]:
    """The evidence vector of (query, trail), in ``FEATURES`` order. ``coverage`` is the best
    cosine of the query against the cited chunks and
    ``trail_coverage`` that of the trail's own question, ``rival`` that of the best section the
    trail does not cite (None: unknown; see ``rival_coverage``); ``sentences`` and
    ``sentence_rival`` the same two at sentence level (see ``sentence_rival``). ``via_sections``:
    the trail was found through the sections covering the query, its question not among the
    nearest (``decide.Candidate.via_sections``).
    A redacted trail (no query text) is judged by what remains: its steps and cited text."""
    question = trail.question
    q_terms = query.content
    t_terms = question.content
    explained = t_terms | step_terms(trail.steps) | trail.cited_terms
    unexplained, unexplained_max = _share(q_terms, explained, idf)
    trail_unmatched, _ = _share(t_terms, q_terms, idf) if t_terms else (0.0, 0.0)
    union = len(q_terms | t_terms)
    asked = bool(question.text)
    return [
        float(cosine),
        unexplained,
        unexplained_max,
        trail_unmatched,
        0.0 if coverage is None else float(coverage),
        0.0 if coverage is None else 1.0,
        # How much less the cited text supports this query than the question it was cited for.
        trail_coverage - coverage if coverage is not None and trail_coverage is not None else 0.0,
        trigram_overlap(query.trigrams, question.trigrams) if asked else 0.0,
        len(q_terms & t_terms) / union if union else 0.0,
        1.0 if asked and views_conflict(query.polarity, question.polarity) else 0.0,
        1.0 if asked and query.polarity.negations % 2 != question.polarity.negations % 2 else 0.0,
        sets_differ(query.numbers, question.numbers),
        sets_differ(query.identifiers, question.identifiers),
        # How much better the cited text covers the query than anything else the tenant holds:
        # a neighbouring setting's question is covered better by its own section.
        coverage - rival if coverage is not None and rival is not None else 0.0,
        1.0 if coverage is not None and rival is not None else 0.0,
        _specifics_unexplained(query, question, trail.cited_text),
        # The same margin weighed sentence by sentence: a neighbouring section often shares the
        # cited section's topic passage by passage, but not the one sentence that answers.
        sentences - sentence_rival if sentences is not None and sentence_rival is not None else 0.0,
        1.0 if sentences is not None and sentence_rival is not None else 0.0,
        # Found through the sections that cover the query, not through its question: the section
        # evidence then speaks for a trail whose question is not among the nearest, and on every
        # corpus measured it speaks too loudly there (docs/evaluation.md).
        1.0 if via_sections else 0.0,
    ]
