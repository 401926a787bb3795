"""Query normalisation, content hashing and chunking: pure functions, no Django."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")
# Stripped from both ends with str.strip, linear: a regex alternative anchored at the end
# (``[...]+$``) retries from every position of a long punctuation run, quadratic.
_EDGE_CHARS = " \"'`.,;:!?"
# A sentence ends at . ! ? followed by space and an upper-case letter, digit or quote, or at a
# blank line. Good enough for documentation prose; code lines are kept as their own chunks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])|\n\s*\n")


def normalise_query(query: str) -> str:
    """The form a query is embedded and compared in: NFKC, lower case, single spaces,
    no surrounding quotes or trailing punctuation, no conversational framing around the question
    (``without_framing``: "Hi! … Thanks.", "Quick question: …")."""
    text = unicodedata.normalize("NFKC", query)
    text = _WS.sub(" ", text).strip().lower()  # white space is single spaces from here on
    return without_framing(text.strip(_EDGE_CHARS))


# How a question is put rather than what it asks: articles, auxiliaries and modals ("should"
# excepted: "should I" asks for advice, "can I" for a possibility), "please". Interrogatives,
# pronouns, prepositions and negations all stay: "why" is not "how", "to" is not "from".
PHRASING_WORDS = frozenset("a an the is are am be do does did can could would please".split())
# An emoticon (lower case): eyes, an optional tear and nose, then a mouth of punctuation.
_EMOTICON_EYES = r"[:;=]'?-?"
_EMOTICON_MOUTH = r"[()/\\|\[\]]"
# A word (letters and digits of any script, joined by - . or '; "c++", "c#" keep their signs),
# an emoticon made of punctuation standing alone ("what does the :( emoticon mean"), or any other
# symbol that is not punctuation ("what does ~ mean").
_WORDING_TOKEN = re.compile(rf"[^\W_]+(?:[-.'][^\W_]+)*[+#]*|(?<!\S){_EMOTICON_EYES}{_EMOTICON_MOUTH}(?!\S)"
                            r"|[^\w\s.,;:!?\"'()-]")
# A yes/no question's leading auxiliary says what it asks: "can jellyfish change colour?" (can
# they) is not "do jellyfish change colour?" (do they). It stays, as its class ("could" is "can").
_LEADING_AUXILIARY = {"can": "can", "could": "can", "do": "do", "does": "do", "did": "did", "is": "is",
                      "are": "is", "am": "is", "would": "would"}
# "what's" is "what is" (a possessive "celery's" stays a word of its own).
_IS_CONTRACTED = frozenset({"what's", "where's", "how's", "who's", "when's", "why's", "that's", "there's",
                            "it's", "here's"})


# Conversational framing around a question, which says nothing of what it asks. Leading, set off
# by punctuation: a greeting or "(a quick) question" ("hi, …", "quick question: …"). Leading, before
# an interrogative: a lead-in ("can you tell me how …", "i was wondering why …"). Trailing, after
# the question's own punctuation: thanks ("…? thanks"). Written from what these phrases do in a
# question, not fitted; the phrase must be whole and set off, so "question marks in urls" or
# "hi-res images" keep their words.
# Emoji: the pictograph blocks, dingbats and miscellaneous symbols, stars, and what joins or
# modifies them (zero-width joiner, variation selectors, keycap). After the question's end
# punctuation, or between a greeting and the question, they decorate it ("…? 🙂", "hi 👋 how …");
# before its end they stay words of it ("what does this emoji mean ✊?").
_PICTOGRAPH_RANGES = (("\U0001F000", "\U0001FAFF"), ("\u2600", "\u27BF"))
_PICTOGRAPH_MARKS = "\u2B50\u2B55\u200D\uFE0E\uFE0F\u20E3"
_PICTOGRAPHS = "".join(f"{first}-{last}" for first, last in _PICTOGRAPH_RANGES) + _PICTOGRAPH_MARKS
_SET_OFF = f"[,:;!.\u2013\u2014\\-{_PICTOGRAPHS}]"
_SET_OFF_LEAD = re.compile(
    r"(?:hi|hello|hey|hiya|greetings|ok|okay|so|sorry|excuse me|"
    r"(?:a |one |just a )?(?:quick |simple |short |small |silly |stupid |dumb |beginner |newbie |noob )?question|"
    r"i (?:have|had|got) a (?:quick |simple |short |small )?question|i've got a (?:quick |simple )?question)"
    r"(?: (?:there|all|everyone|everybody|folks|guys|team))? ?"
    # Set off by punctuation or emoji ("hi 👋 how …"), spaces between them; possessive: linear.
    rf"{_SET_OFF}(?:{_SET_OFF}| (?={_SET_OFF}))*+ ")
_LEAD_IN = re.compile(
    r"(?:(?:can|could|would) (?:you|anyone|someone|somebody) (?:please )?(?:tell|explain to|show) me|"
    r"(?:does|do) (?:anyone|anybody|someone|somebody|you) know|i (?:was|am) wondering|i'm wondering|"
    r"i wonder|just wondering|wondering|please tell me|tell me|i (?:want|would like) to know|i'd like to know|"
    r"i need to know),? (?=(?:how|what|what's|why|when|where|which|who|whom|whose|whether)\b)")
_THANKS = ("thanks", "thank you", "thx", "ty", "cheers", "tia", "thanks in advance", "thank you in advance",
           "many thanks", "thanks a lot", "thank you very much")
_QUESTION_END = ".?!,;:"
# The common emoticons: the faces above (a mouth may also be d, p or o), and a few others.
_EMOTICON = re.compile(rf"{_EMOTICON_EYES}(?:{_EMOTICON_MOUTH}|[dpo])|xd|\^_?\^|<3")
_EMOTICON_WIDTHS = (2, 3, 4)  # the lengths _EMOTICON matches (":)" … ":'-(")


def without_framing(text: str) -> str:
    """``text`` (lower case, single spaces, stripped of ``_EDGE_CHARS``) without the
    conversational framing around the question (greetings, "quick question:", "can you tell me
    …", trailing thanks, emoji and emoticons after the question's punctuation), as often as it is
    repeated; unchanged when nothing else would be left. Linear: the framing is found by
    anchored matches and suffix tests that move two indexes."""
    start, end = 0, len(text)
    while True:
        match = _SET_OFF_LEAD.match(text, start, end) or _LEAD_IN.match(text, start, end)
        if match is not None:
            start = match.end()
            continue
        thanks = _thanks_at(text, start, end)
        if thanks is not None:
            end -= len(thanks) + 1
        else:
            decorated = _decoration_from(text, start, end)
            if decorated == end or not (text[decorated - 1] in _QUESTION_END
                                        or _thanks_at(text, start, decorated) is not None):
                break
            end = decorated
        while end > start and text[end - 1] in _EDGE_CHARS:
            end -= 1
    rest = text[start:end].strip(_EDGE_CHARS)
    return text if not rest or rest in _THANKS else rest


def _thanks_at(text: str, start: int, end: int) -> str | None:
    """The thanks phrase that ends ``text[start:end]`` after the question's punctuation, if any."""
    return next((t for t in _THANKS if text.endswith(" " + t, start, end)
                 and end - start > len(t) + 2 and text[end - len(t) - 2] in _QUESTION_END), None)


def _decoration_from(text: str, start: int, end: int) -> int:
    """Where the emoji and emoticons that end ``text[start:end]`` begin, with the spaces before
    them: ``end`` when it ends in neither, or when nothing else is left. Each step moves the
    index back by a character or an emoticon."""
    i = end
    while i > start:
        ch = text[i - 1]
        if ch == " " or _is_pictograph(ch):
            i -= 1
            continue
        for width in _EMOTICON_WIDTHS:
            k = i - width
            if k >= start and _EMOTICON.fullmatch(text, k, i) and (k == start or text[k - 1] == " "):
                i = k
                break
        else:
            break
    return i if start < i < end else end


def _is_pictograph(ch: str) -> bool:
    return ch in _PICTOGRAPH_MARKS or any(first <= ch <= last for first, last in _PICTOGRAPH_RANGES)


def question_wording(normalised: str) -> tuple[str, ...]:
    """The words of a normalised question that say what it asks, in order: ``PHRASING_WORDS``
    left out but a leading auxiliary (as its class) and a trailing "do", "n't" read as "not" and
    "what's" as "what is". Two questions with the same wording ask the same thing in other words
    ("how do I …" / "how can I …")."""
    tokens = _WORDING_TOKEN.findall(normalised.replace("\u2019", "'"))
    words = []
    for i, token in enumerate(tokens):
        if token.endswith("n't"):
            words.append("not")
        elif token in _IS_CONTRACTED:
            words.append(token[:-2])
        elif i == 0 and token in _LEADING_AUXILIARY:
            words.append(_LEADING_AUXILIARY[token])
        # A trailing "do" is the main verb ("what does celery beat do?" is not "what is celery beat?").
        elif token not in PHRASING_WORDS or (i == len(tokens) - 1 and token == "do"):
            words.append(token)
    return tuple(words)


# What ``question_ask`` reads as the kind of answer wanted: an interrogative, or a yes/no
# question's leading auxiliary or modal (its class, as ``question_wording`` keeps it).
ASK_WORDS = frozenset("how what why when where which who whom whose whether can do did is would should shall "
                      "will must may might".split())
# Who asks and in what mood, right after the interrogative ("how do I", "how should one", "how to"
# all ask how): not what is asked.
ASKER_WORDS = frozenset("i you we one to should shall will must may might".split())
# Prepositions of place and belonging that a question typed as keywords leaves out ("install acme
# sync ubuntu" for "… on ubuntu"). Direction stays ("to", "from", "into", "without"), as do "for"
# and "with", which can change what is asked.
FILLER_WORDS = frozenset("on in at of by".split())
# Fewer words than this after the asking part say too little to be sure of ("what is wire?").
MIN_ASK_WORDS = 2


def question_ask(wording: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """What a question (its ``question_wording``) asks, less who asks it: the kind of answer
    wanted (its interrogative or leading auxiliary, None for a question typed as keywords) and
    the words that follow, in order, less the asker ("how do I", "how should one", "how to") and
    the fillers of ``FILLER_WORDS``. "what is the way to …" asks how. ``()`` for words: too few
    to say (``MIN_ASK_WORDS``)."""
    kind = wording[0] if wording and wording[0] in ASK_WORDS else None
    at = 1 if kind else 0
    while at < len(wording) and wording[at] in ASKER_WORDS:
        at += 1
    if kind == "what" and wording[at:at + 2] == ("way", "to"):
        kind, at = "how", at + 2
    asked = tuple(w for w in wording[at:] if w not in FILLER_WORDS)
    return kind, asked if len(asked) >= MIN_ASK_WORDS else ()


def content_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text, the identity of a section's content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_chunks(text: str, *, max_words: int = 60, max_chunks: int = 200) -> list[str]:
    """Sentences grouped into short passages (at most ``max_words`` words, a long sentence
    stays whole), for coverage. Bounded at ``max_chunks`` per section."""
    sentences = [_WS.sub(" ", s).strip() for s in _SENTENCE_END.split(text)]
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for sentence in filter(None, sentences):
        n = len(sentence.split())
        if current and words + n > max_words:
            chunks.append(" ".join(current))
            current, words = [], 0
        current.append(sentence)
        words += n
        if len(chunks) >= max_chunks:
            break
    if current and len(chunks) < max_chunks:
        chunks.append(" ".join(current))
    return chunks


# Sentences kept per section for the sentence-level evidence (a long section's first ones).
MAX_SENTENCES = 200


def split_sentences(text: str) -> list[str]:
    """The sentences of a section (as ``split_chunks`` splits them, one per piece), for the
    sentence-level evidence of which section answers a query. Bounded at ``MAX_SENTENCES``."""
    return split_chunks(text, max_words=1, max_chunks=MAX_SENTENCES)
