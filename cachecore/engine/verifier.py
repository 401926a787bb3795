"""The built-in, offline answer verifier (no LLM).

Rule 1 — non-answers: an answer that says or implies the sources do not answer the question
("the documents I found don't cover this", "I couldn't find…", "not mentioned") is
unsupported, even when it lists true facts. Detected by patterns *and* by similarity of each
clause to non-answer exemplars, so rewordings the patterns miss are still caught. The patterns
talk about the *sources* or the *speaker* ("the docs don't say", "I couldn't find"), so an
ordinary negative statement in a good answer ("the service does not start automatically",
"audit logs are not included") is not a non-answer. For similarity, each clause is reduced to
its skeleton (words outside a closed vocabulary of function and "sources/finding/saying"
words become "X"), so the topic does not drown the signal; a clause counts as a non-answer
when its skeleton is close enough to the non-answer exemplars and closer to them (by at
least ``non_answer_margin``) than to a contrast set of answer-like statements, which keeps
ordinary negative facts out.
Rule 2 — support: most of the answer must be supported by the cited sections. A sentence is
supported when its best cosine against the cited chunks reaches ``support_floor``; the share
of the answer's words in supported sentences must reach ``min_supported_ratio`` (short
anaphoric sentences such as "Not on its own." weigh little), and the whole answer's best
cosine against the chunks must reach ``answer_support_floor``.

Bounded: ``check`` embeds an answer only up to ``MAX_CHECKED_CHARS`` characters and
``MAX_CHECKED_SENTENCES`` sentences (a longer one fails, "too long to check": the trail waits
for feedback), and the patterns run in linear time.

Pure: the caller passes an ``embed`` function and the cited chunks' vectors. Calibrated by
``research/verifier_calibration.py`` on ``tests/data/verifier_answers.jsonl``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

# Calibrated on the calibration half of tests/data/verifier_answers.jsonl
# (python -m research.verifier_calibration; tests/research/test_verifier_calibration.py pins the result).
SUPPORT_FLOOR = 0.40
MIN_SUPPORTED_RATIO = 0.6
ANSWER_SUPPORT_FLOOR = 0.68
NON_ANSWER_SIMILARITY = 0.70
NON_ANSWER_MARGIN = 0.0

# What an answer calls its sources.
_SOURCE = (
    r"(?:docs?|documents?|documentation|sources?|sections?|passages?|materials?|articles?|pages?|context"
    r"|results?|excerpts?|snippets?|extracts?|guides?|manuals?|references?|write-?ups?|faqs?|help (?:centre|center)"
    r"|knowledge base|information (?:i|we) (?:found|have|got)|what i (?:found|have|retrieved|read|could find))"
)
# What a source does when it answers.
_TELL = (
    r"(?:cover|mention|address|say|describe|discuss|explain|specify|answer|document|touch(?: on| upon)?|talk"
    r"|state|go into|get into|get at|tell|spell(?: it)? out|clarify|indicate|detail|speak|deal with|reference"
    r"|confirm|elaborate|help with)"
)
_NEG = r"(?:do(?:es)?(?:n't| not)|did(?:n't| not)|never|can(?:'t|not)|won't|will not)"

NON_ANSWER_PATTERNS = [
    # The speaker failed to find or cannot tell.
    r"\bi(?:'m|'ve| am| have)?(?: \w+)? (?:couldn't|could not|can't|cannot|can not|wasn't able to|was not able to"
    r"|unable to|was unable to|not able to|didn't|did not|failed to|haven't been able to|have not been able to"
    r"|been unable to|don't|do not)"
    r" (?:find|locate|see|spot|determine|identify|confirm|verify|tell|say|answer|work out|figure out"
    r"|come across|pin down|find any|know)\b",
    r"\bwe (?:couldn't|could not|weren't able to|were not able to|were unable to|didn't|did not|failed to)"
    r" (?:find|locate|determine|confirm)\b",
    r"\bi(?:'m| am) (?:not (?:sure|certain)|afraid (?:i|the|these|this|that|there|my|nothing|none)|unsure)\b",
    r"\bi (?:don't|do not) have (?:enough|any|the|that|this|sufficient|more|further) (?:information|details?|data"
    r"|context|answer|documentation)\b",
    r"\bi (?:found|see|have|got) (?:no|nothing)\b",
    r"\b(?:all|the most|the only thing|the best) i (?:can|could) (?:say|tell|find|offer|see)\b",
    r"\bthe closest (?:thing|match|i (?:found|could find|got))\b",
    r"\bnothing (?:i|we) (?:found|retrieved|read|have|saw|could find)\b",
    # A source does not say it.
    rf"\b{_SOURCE}\b[^.;!?]{{0,60}}?\b{_NEG}\s+(?:\w+\s+){{0,2}}?{_TELL}",
    rf"\b{_SOURCE}\b[^.;!?]{{0,60}}?\b{_NEG} (?:appear|seem) to\b",
    rf"\b{_SOURCE}\b[^.;!?]{{0,60}}?\b(?:say|says|said|mention|mentions|contain|contains|have|has|offer|offers"
    rf"|give|gives) (?:nothing|no)\b",
    rf"\b{_SOURCE}\b[^.;!?]{{0,40}}?\b(?:only|just|mostly|mainly|entirely|merely|solely) (?:\w+ ){{0,1}}?"
    rf"(?:covers?|talks?|discuss(?:es)?|describes?|explains?|mentions?|deals?|focus(?:es)?|address(?:es)?"
    rf"|documents?|concerns?|is about|are about|relates? to|walks? through|says?|go(?:es)? as far as)\b",
    rf"\b{_SOURCE}\b[^.;!?]{{0,40}}?\b(?:skips?|skipped|glosses? over|omits?|omitted|leaves? out|left out)\b",
    rf"\b{_SOURCE}\b[^.;!?]{{0,40}}?\b(?:is|are|seems?|appears?|remains?) (?:\w+ )?silent\b",
    r"\bsilent (?:on|about|regarding|as to)\b",
    rf"\b{_SOURCE}\b[^.;!?]{{0,40}}?\bstops? short\b",
    rf"\b{_SOURCE}\b[^.;!?]{{0,40}}?\b(?:is|are|isn't|aren't)(?: not)? (?:really |directly |entirely )?"
    rf"(?:about (?:something|a different|another)|(?:ir)?relevant|unrelated|related)\b",
    rf"\b(?:isn't|is not|aren't|are not|not)\b[^.;!?]{{0,40}}?\b(?:this|these|the|my|any|that|those)"
    rf"(?: \w+)? {_SOURCE} (?:\w+ ){{0,2}}?(?:explains?|covers?|describes?|discuss(?:es)?|mentions?|address(?:es)?"
    rf"|says?|documents?|answers?)\b",
    # "they don't say", "it says nothing about", "none of this tells you".
    rf"\b(?:it|they)\b {_NEG} (?:\w+ )?(?:say|mention|tell|state|discuss|explain|address|go into|get into|spell out"
    rf"|clarify|talk about|specify whether|speak to)\b",
    r"\b(?:it|they|this|that)\s+(?:says?|said|mentions?|tells? you) nothing\b",
    r"\b(?:it|they|this|that|these|those)\s+(?:isn't|aren't|is not|are not)\s+(?:really |directly |very )?"
    r"(?:relevant|related)\b",
    r"\bnone of (?:this|that|these|it)\b[^.;!?]{0,30}?\b(?:tells?|says?|answers?|covers?|explains?|address(?:es)?"
    r"|mentions?)\b",
    rf"\b{_NEG} (?:\w+ )?mention\b",
    rf"\bnone of (?:the|these|those|my|what)\b[^.;!?]{{0,40}}?\b(?:{_SOURCE}|i found|i have|i retrieved)\b",
    # It is not mentioned / not in the material.
    r"\b(?:is|are|was|were|been)(?:n't| not) (?:\w+ )?(?:mentioned|discussed|addressed|answered|stated|explained"
    r"|spelled out|spelt out|touched on|brought up|referred to)\b",
    rf"(?:\bnot|n't) (?:\w+ )?(?:covered|described|documented|specified|listed|detailed|included|given|explained"
    rf"|mentioned|found|clear|there)(?: \w+){{0,2}} (?:in|by|within|from|on) (?:\w+ ){{0,3}}?{_SOURCE}\b",
    r"(?:\bnot|n't) (?:mentioned|covered|documented|described|addressed|discussed) (?:anywhere|at all|here|there)\b",
    r"\bno (?:mention|word|guidance|indication|explanation|discussion|coverage)s? (?:of|on|about|regarding|for"
    r"|here|in|as to|whether|that)\b",
    r"\bthere(?:'s| is| are) no (?:\w+ )?(?:information|details?|documentation|answer|mention|guidance|word"
    r"|reference|indication)\b",
    r"\bthere(?:'s| is| are) nothing (?:on|about|regarding|in|here|relevant)\b",
    r"\bno way (?:to|of) (?:tell|telling|know|knowing|say|saying|determine|confirm)\b",
    r"\bno answer (?:to|for|in|here|on)\b",
    rf"\bnothing (?:in|on|about|regarding|here|from)\b[^.;!?]{{0,60}}?\b(?:{_SOURCE}|here|i found|i have)\b",
    rf"\bnothing (?:in|on|about|regarding)\b[^.;!?]{{0,60}}?\b{_TELL}s?\b",
    # Unclear, out of scope, elsewhere.
    rf"\b(?:unclear|not clear|isn't clear|is not clear|not obvious|hard to (?:say|tell)|difficult to (?:say|tell)"
    rf"|impossible to (?:say|tell))\b[^.;!?]{{0,20}}\b(?:from|in|based on|given|with) (?:\w+ ){{0,3}}?"
    rf"(?:{_SOURCE}|what i have|this|these|here)\b",
    r"\b(?:hard|difficult|impossible) to (?:say|tell)\b",
    r"\b(?:an )?open question\b",
    r"\b(?:beyond|outside) (?:the )?(?:scope|what)\b",
    r"\bgoes? beyond\b",
    r"\b(?:insufficient|not enough) (?:information|context|detail)\b",
    r"\bno (?:relevant|matching|useful) (?:results?|sections?|documents?|sources?|information|passages?)\b",
    r"\b(?:came|come|comes) up (?:empty|short|with nothing)\b",
    r"\b(?:turned|turns|turn) up (?:nothing|no|empty)\b",
    r"\b(?:have|has|would have|will have|need) to come from (?:somewhere|elsewhere|another|other|a different)\b",
    r"\b(?:leaves?|left) (?:\w+ ){0,3}?(?:untouched|unanswered|open|unaddressed)\b",
]
_PATTERNS = [re.compile(p, re.IGNORECASE) for p in NON_ANSWER_PATTERNS]
# A match after "if"/"when" in the same clause (up to a comma) is a condition, not a
# non-answer: "if the section does not specify a port, relay uses 8080"; but "if you need a
# port, the docs don't say which" is one.
# Spelled as two lookups (the condition words, and the stops that end a condition) so that a
# long answer with many matches stays linear: "a condition word after the clause's start and
# after the last stop before the match" is what ``\b(?:if|…)\b[^,.;:!?—–]*$`` said.
_CONDITION_WORD = re.compile(r"\b(?:if|when|whenever|unless|where)\b", re.IGNORECASE)
_CLAUSE_STOPS = ".!?\n"
_CONDITION_STOPS = ",.;:!?—–\n"
MAX_CHECKED_CHARS = 20_000
MAX_CHECKED_SENTENCES = 100

# Sentences that say the sources do not answer, in many wordings (matched clause by clause).
NON_ANSWER_EXEMPLARS = [
    "The documents I found don't cover this.",
    "I couldn't find anything about this in the documentation.",
    "The provided sources do not answer this question.",
    "This is not mentioned in the sections I read.",
    "I was unable to locate information on that topic.",
    "The documentation doesn't say.",
    "There is no information about this in the available context.",
    "I don't know based on the given documents.",
    "None of the search results address this question.",
    "The sources are silent on this point.",
    "Sorry, I could not determine the answer from the docs.",
    "That question is outside the scope of the documents provided.",
    "It isn't clear from the material.",
    "The articles only talk about something else, not what you asked.",
    "I'd suggest contacting support since the documentation doesn't say.",
    "My search didn't turn up anything relevant.",
    "Unfortunately the pages I looked at don't go into that.",
    "I'm not able to confirm that from what I found.",
    "The retrieved text is about a different topic.",
    "That detail would have to come from another source.",
    "I can't answer that from these passages.",
    "Nothing I found addresses your question.",
    "The material doesn't explain how to do that.",
    "Whether that is possible isn't stated anywhere.",
    "I'm afraid I don't have enough information to answer.",
]

# Answer-like statements, including negative facts, that a non-answer clause must be farther
# from than from the exemplars above (by ``non_answer_margin``).
ANSWER_EXEMPLARS = [
    "Yes, you can do this from the settings page.",
    "No, this option is not available on the free plan.",
    "The service does not start automatically after a reboot.",
    "It does not require root privileges.",
    "This feature is not included in the export.",
    "The default value is 30 seconds.",
    "Run the command with the flag to enable it.",
    "The request fails with an error when the limit is exceeded.",
    "Set the option in the configuration file and restart the server.",
    "The link expires after one hour, so request a new one.",
    "Damage of this kind is not covered by the warranty.",
    "It returns a new object unless you pass the argument.",
    "The app keeps your recent documents on the device.",
    "The export contains documents, comments and uploaded files.",
    "Open the page and click the button to confirm.",
    "Only the owner can see this section.",
]

# The closed vocabulary a non-answer is made of: pronouns, auxiliaries, negations, function
# words, and words about sources, searching and saying. Every other word is topic and becomes
# "X" in a clause's skeleton before it is compared with the (skeletons of the) exemplars, so
# "I couldn't find anything about parametrized fixtures" reads as "i couldn't find anything
# about X" and its similarity is not drowned by the topic.
META_WORDS = frozenset(
    """
    i i'm i've i'd me my we we're we've our you your you'd you'll it it's its they they're their them this
    that that's these those there there's here what which whether how why anything nothing something none
    any all only just also so but though however unfortunately sorry afraid hmm
    is isn't are aren't was wasn't were weren't be been being do does doesn't did didn't don't have has
    hasn't haven't had can can't cannot could couldn't would wouldn't should will won't might may must not no
    never neither nor
    the a an of in on about for to from with by as into regarding beyond outside within than rather instead
    other another else elsewhere somewhere anywhere through up out short
    find found finding locate located see saw seen spot search searched searching look looked looking check
    checked read say says said mention mentions mentioned mentioning cover covers covered address addresses
    addressed discuss discusses discussed describe describes described explain explains explained answer
    answers answered state states stated specify specifies specified document documented tell tells told know
    knew confirm confirmed determine verify talk talks go goes touch touches speak speaks clarify suggest
    recommend contact ask seem seems appear appears come came turn turned leave leaves left stop stops focus
    focuses deal deals retrieved provided given available
    docs doc documents documentation source sources section sections passage passages material materials
    article articles page pages context result results excerpt text guide manual reference information info
    question topic point detail details support team sure certain clear unclear able unable enough relevant
    silent scope empty open untouched word guidance hard difficult impossible
    """.split()
)
_TOKEN = re.compile(r"[A-Za-z']+|[^\sA-Za-z']+")
_PUNCT = re.compile(r"[,.;:!?—–-]+")


def skeleton(text: str) -> str:
    """``text`` with every word outside META_WORDS replaced by "X" (runs collapsed), lower case."""
    out: list[str] = []
    for token in _TOKEN.findall(text.replace("\u2019", "'")):
        word = token.lower()
        if word in META_WORDS:
            out.append(word)
        elif _PUNCT.fullmatch(token):
            out.append(token)
        elif not out or out[-1] != "X":
            out.append("X")
    return " ".join(out)


_ABBREVIATION = re.compile(r"\b(e\.g|i\.e|etc|vs|cf|approx)\.", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE = re.compile(r"\s*[;:—–]\s*|\s+-\s+|,\s+(?=(?:but|though|although|so|however|which)\b)|\s+(?=but\s)")
_WORD = re.compile(r"\S+")


def split_sentences(text: str) -> list[str]:
    """Answer sentences worth checking (at least three words). Splits at . ! ? followed by
    white space and at line breaks, but not after "e.g.", "i.e.", "etc.", "vs."."""
    protected = _ABBREVIATION.sub(lambda m: m.group(1) + "\x00", text)
    parts = (s.replace("\x00", ".").strip() for s in _SENTENCE.split(protected))
    return [s for s in parts if len(s.split()) >= 3]


def split_clauses(sentence: str) -> list[str]:
    """The sentence and its clauses (split at ; : dashes and before "but", "so", "though"...),
    those of at least three words; the unit compared with the non-answer exemplars."""
    clauses = [c.strip(" ,.") for c in _CLAUSE.split(sentence)]
    units = [sentence] + [c for c in clauses if len(c.split()) >= 3 and c != sentence]
    return list(dict.fromkeys(units))


def non_answer_pattern(text: str) -> str | None:
    """The first phrase saying the sources do not answer (None if there is none). Ordinary
    negative statements ("it does not require root") and conditions ("if the section does not
    specify a port") do not count."""
    text = text.replace("\u2019", "'")
    clause_stops = [i for i, c in enumerate(text) if c in _CLAUSE_STOPS]
    condition_stops = [i for i, c in enumerate(text) if c in _CONDITION_STOPS]
    conditions: list[tuple[int, int]] | None = None
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start = match.start()
            # The clause runs from after the last . ! ? or line break before the match; the
            # condition from after the last stop (comma included) before it.
            n = bisect_left(clause_stops, start)
            clause_start = clause_stops[n - 1] + 1 if n else 0
            n = bisect_left(condition_stops, start)
            since = max(clause_start, condition_stops[n - 1] + 1 if n else 0)
            if conditions is None:
                conditions = [(m.start(), m.end()) for m in _CONDITION_WORD.finditer(text)]
            k = bisect_left(conditions, (start, -1))
            conditional = False
            while k > 0 and conditions[k - 1][0] >= since:
                k -= 1
                if conditions[k][1] <= start:
                    conditional = True
                    break
            if conditional:
                continue
            return match.group(0)
    return None


def too_long_to_check(answer: str) -> str | None:
    """Why ``answer`` is over the verifier's caps, or None."""
    if len(answer) > MAX_CHECKED_CHARS:
        return f"answer too long to check (over {MAX_CHECKED_CHARS} characters)"
    if len(_SENTENCE.split(answer, maxsplit=MAX_CHECKED_SENTENCES)) > MAX_CHECKED_SENTENCES:
        return f"answer too long to check (over {MAX_CHECKED_SENTENCES} sentences)"
    return None


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reasons: list[str] = field(default_factory=list)
    non_answer: bool = False
    supported_ratio: float | None = None
    sentence_scores: list[float] = field(default_factory=list)
    answer_support: float | None = None
    non_answer_score: float | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Evidence:
    """What ``Verifier.measure`` finds in one answer, before any threshold is applied."""

    sentences: list[str]
    clauses: list[str]
    pattern: str | None
    to_non_answer: np.ndarray  # per clause: best cosine of its skeleton against NON_ANSWER_EXEMPLARS
    to_answer: np.ndarray  # per clause: best cosine of its skeleton against ANSWER_EXEMPLARS
    support: np.ndarray  # per sentence: best cosine against the cited chunks (0 without chunks)
    words: np.ndarray  # per sentence: word count
    answer_support: float  # the whole answer's best cosine against the cited chunks


class Verifier:
    """Holds the exemplar vectors; ``check`` runs both rules on one answer
    (``measure`` then ``decide``, so calibration can re-decide without re-embedding)."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], np.ndarray],
        *,
        support_floor: float = SUPPORT_FLOOR,
        min_supported_ratio: float = MIN_SUPPORTED_RATIO,
        answer_support_floor: float = ANSWER_SUPPORT_FLOOR,
        non_answer_similarity: float = NON_ANSWER_SIMILARITY,
        non_answer_margin: float = NON_ANSWER_MARGIN,
    ) -> None:
        self._embed = embed
        self.support_floor = support_floor
        self.min_supported_ratio = min_supported_ratio
        self.answer_support_floor = answer_support_floor
        self.non_answer_similarity = non_answer_similarity
        self.non_answer_margin = non_answer_margin
        self._exemplars = self._vectors([skeleton(e) for e in NON_ANSWER_EXEMPLARS])
        self._answer_exemplars = self._vectors([skeleton(e) for e in ANSWER_EXEMPLARS])

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._embed(list(texts)), dtype=np.float32)

    def measure(self, answer: str, chunk_vectors: np.ndarray | Sequence[Sequence[float]]) -> Evidence | None:
        """The threshold-free evidence about ``answer`` (None for an empty answer)."""
        text = answer.strip()
        if not text:
            return None
        sentences = split_sentences(text) or [text]
        clauses = list(dict.fromkeys(c for s in sentences for c in split_clauses(s)))
        skeletons = [skeleton(c) for c in clauses]
        units = list(dict.fromkeys([*sentences, text, *skeletons]))
        index = {u: i for i, u in enumerate(units)}
        vectors = self._vectors(units)
        clause_vectors = vectors[[index[k] for k in skeletons]]
        chunks = np.asarray(chunk_vectors, dtype=np.float32)
        if chunks.size == 0:
            support = np.zeros(len(sentences), dtype=np.float32)
            whole = 0.0
        else:
            chunks = chunks.reshape(-1, chunks.shape[-1])
            support = (vectors[[index[s] for s in sentences]] @ chunks.T).max(axis=1)
            whole = float((vectors[index[text]] @ chunks.T).max())
        return Evidence(
            sentences=sentences,
            clauses=clauses,
            pattern=non_answer_pattern(text),
            to_non_answer=(clause_vectors @ self._exemplars.T).max(axis=1),
            to_answer=(clause_vectors @ self._answer_exemplars.T).max(axis=1),
            support=support,
            words=np.array([len(_WORD.findall(s)) for s in sentences], dtype=np.float64),
            answer_support=whole,
        )

    def decide(self, evidence: Evidence | None) -> Verdict:
        """Apply the thresholds to the evidence."""
        if evidence is None:
            return Verdict(False, ["empty answer"])
        reasons: list[str] = []

        # Rule 1: non-answers. A clause reads like one when it is close to the non-answer
        # exemplars and closer to them than to the answer exemplars by the margin.
        eligible = evidence.to_non_answer - evidence.to_answer >= self.non_answer_margin
        scored = np.where(eligible, evidence.to_non_answer, -1.0)
        which = int(scored.argmax())
        closest = float(scored[which])
        non_answer = evidence.pattern is not None or closest >= self.non_answer_similarity
        if evidence.pattern is not None:
            # Reasons are stored on the trail and shown: never a word of the answer (which is
            # not stored), only which check failed, with scores and positions.
            reasons.append("says the sources do not answer (a non-answer phrase)")
        elif non_answer:
            reasons.append(
                f"reads like a non-answer ({closest:.2f}, clause {which + 1} of {len(evidence.clauses)})"
            )

        # Rule 2: support by the cited sections.
        supported = evidence.support >= self.support_floor
        ratio = float((evidence.words * supported).sum() / evidence.words.sum())
        if ratio < self.min_supported_ratio:
            reasons.append(
                f"{int((~supported).sum())} of {len(supported)} sentences not supported by the cited sections "
                f"({ratio:.0%} of the answer supported)"
            )
        if evidence.answer_support < self.answer_support_floor:
            reasons.append(
                f"the answer as a whole is not close to the cited sections ({evidence.answer_support:.2f})"
            )
        passed = (
            not non_answer
            and ratio >= self.min_supported_ratio
            and evidence.answer_support >= self.answer_support_floor
        )
        return Verdict(
            passed,
            reasons,
            non_answer,
            round(ratio, 4),
            [round(float(s), 4) for s in evidence.support],
            round(evidence.answer_support, 4),
            round(max(closest, 0.0), 4),
        )

    def check(self, answer: str, chunk_vectors: np.ndarray | Sequence[Sequence[float]]) -> Verdict:
        problem = too_long_to_check(answer.strip())
        if problem:
            return Verdict(False, [problem])
        return self.decide(self.measure(answer, chunk_vectors))
