"""Form of the hand-written hard sets tests/data/eval/celery_hard.jsonl, flask_hard.jsonl,
pytest_hard.jsonl and click_hard.jsonl: fields, kinds, sizes, the split by topic, gold ids present
in the split docs, low-overlap rewordings, and each close question's ``answer``: the section ids
of the split docs that answer it (``[]`` when none does), ``[gold]`` exactly when the gold section
answers it, never the gold otherwise."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from research.corpora import CELERY_SET, CLICK_SET, CORPORA, FLASK_SET, KINDS, PYTEST_SET
from research.splits import CALIBRATION, HELD_OUT, celery_side, click_side, flask_side, pytest_side
from tests.research.evalsets import load_jsonl, norm

# corpus: (set, side of a topic, fewest items, fewest held-out items, fewest sections in the split docs)
SETS = {
    "celery": (CELERY_SET, celery_side, 166, 40, 1000),
    "flask": (FLASK_SET, flask_side, 160, 30, 300),
    "pytest": (PYTEST_SET, pytest_side, 166, 40, 400),
    "click": (CLICK_SET, click_side, 130, 30, 140),
}
STOP = frozenset(
    "a an the and or of to in on for with by at from as is are was were be been being do does did i my me we "
    "our you your it its this that these those what which who whom how why when where can could should would "
    "will shall may might must there their them they he she his her not no yes if then than so just also only "
    "about into out up down over under again any all some each every other such own same too very s t get "
    "use using used make made way one much many more most".split())


def content_words(text: str) -> set[str]:
    """Content words, crudely stemmed (first five letters), for the overlap check."""
    words = re.findall(r"[a-z0-9_]+", text.lower())
    return {w[:5] for w in words if w not in STOP and len(w) > 1}


@pytest.fixture(scope="module", params=sorted(SETS))
def corpus(request):
    return request.param


@pytest.fixture(scope="module")
def rows(corpus):
    return load_jsonl(SETS[corpus][0])


def test_row_shape(rows):
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    for r in rows:
        assert set(r) == {"id", "topic", "split", "question", "gold", "same_need", "close"}, r["id"]
        assert isinstance(r["gold"], str) and "#" in r["gold"], r["id"]
        assert len(r["same_need"]) == 2 and all(isinstance(q, str) and q.strip() for q in r["same_need"]), r["id"]
        assert len(r["close"]) == 2, r["id"]
        for c in r["close"]:
            assert list(c) == ["question", "kind", "answered_by_source", "why", "answer"], r["id"]
            assert c["kind"] in KINDS, (r["id"], c["kind"])
            assert isinstance(c["answered_by_source"], bool), r["id"]
            assert c["question"].strip() and c["why"].strip(), r["id"]
            answer = c["answer"]
            assert isinstance(answer, list) and len(answer) <= 3, r["id"]
            assert all(isinstance(a, str) and "#" in a for a in answer), r["id"]
            assert len(set(answer)) == len(answer), r["id"]
            if c["answered_by_source"]:
                assert answer == [r["gold"]], (r["id"], c["question"])
            else:
                assert r["gold"] not in answer, (r["id"], c["question"])


def test_sizes_and_kinds(corpus, rows):
    assert len(rows) >= SETS[corpus][2]
    closes = [c for r in rows for c in r["close"]]
    kinds = Counter(c["kind"] for c in closes)
    for kind in KINDS:
        assert kinds[kind] >= 20, (kind, kinds)
    # Most close questions need another section; some are answered by the gold section anyway.
    assert sum(not c["answered_by_source"] for c in closes) >= 0.7 * len(closes)
    assert sum(c["answered_by_source"] for c in closes) >= 20


def test_split_by_topic(corpus, rows):
    side = SETS[corpus][1]
    sides: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        assert r["split"] == side(r["topic"]), r["id"]
        sides[r["topic"]].add(r["split"])
    assert all(len(s) == 1 for s in sides.values())
    counts = Counter(r["split"] for r in rows)
    assert counts[HELD_OUT] >= SETS[corpus][3] and counts[CALIBRATION] >= 80, counts
    assert len(CORPORA[corpus].items()) == len(rows)


def test_every_question_is_new(rows):
    seen: set[str] = set()
    for r in rows:
        for q in [r["question"], *r["same_need"], *(c["question"] for c in r["close"])]:
            assert norm(q) not in seen, (r["id"], q)
            seen.add(norm(q))


def test_a_third_of_rewordings_share_almost_no_content_words(rows):
    low = 0
    total = 0
    for r in rows:
        original = content_words(r["question"])
        for q in r["same_need"]:
            total += 1
            low += len(content_words(q) & original) <= 1
    assert low >= total / 3, (low, total)


@pytest.mark.django_db
def test_gold_ids_exist_in_the_split_corpus(corpus, rows):
    from docingest.ingest import collect_sections

    spec = CORPORA[corpus]
    assert spec.available(), f"Debian's {spec.package} is needed (scripts/test.sh installs it)"
    ids = {s.id for s in collect_sections(spec.docs, spec.subtrees)}
    assert len(ids) > SETS[corpus][4]
    missing = [(r["id"], r["gold"]) for r in rows if r["gold"] not in ids]
    assert not missing
    missing_answers = [(r["id"], a) for r in rows for c in r["close"] for a in c["answer"] if a not in ids]
    assert not missing_answers


def test_some_close_questions_are_answered_elsewhere_and_some_nowhere(rows):
    """Most other-section close questions name the section that answers them; a few have none."""
    others = [c for r in rows for c in r["close"] if not c["answered_by_source"]]
    assert sum(bool(c["answer"]) for c in others) >= 0.8 * len(others)
    assert any(not c["answer"] for c in others)
