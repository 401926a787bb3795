"""``research.match_calibration.fit`` on rows made up here: the question regime fits only the
candidates whose cited text restates their question, on the evidence without the section's,
and a set with too few close probes does not choose the prefetch cut."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cachecore.engine.evidence import FEATURES
from research.match_calibration import MIN_SET_PROBES, SECTION_EVIDENCE, fit, load_rows
from research.splits import CALIBRATION


def _candidate(*, source: bool, cosine: float, restates: bool) -> dict:
    features = {f: 0.0 for f in FEATURES}
    features.update(cosine=cosine, coverage=cosine, coverage_known=1.0, rival_known=1.0,
                    # Section evidence that would tell the labels apart by itself: the question
                    # regime must not read it.
                    rival_margin=cosine - 0.5)
    return {"is_source": source, "similarity": cosine, "coverage": cosine, "via_sections": False,
            "trail_coverage": 0.95 if restates else 0.5, "features": features}


def _rows(name: str, *, paraphrases: int, twins: int, twin_cosine: float, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(paraphrases):
        rows.append({"set": name, "side": CALIBRATION, "kind": "paraphrase", "answered_by_source": True,
                     "query": f"{name} paraphrase {i}",
                     "candidates": [_candidate(source=True, cosine=0.8 + 0.15 * rng.random(), restates=True),
                                    # A document-regime candidate: in the document fit only.
                                    _candidate(source=False, cosine=0.9, restates=False)]})
    for i in range(twins):
        rows.append({"set": name, "side": CALIBRATION, "kind": "twin", "answered_by_source": False,
                     "query": f"{name} twin {i}",
                     "candidates": [_candidate(source=True, cosine=twin_cosine + 0.1 * rng.random(), restates=True)]})
    return rows


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_question_regime_fits_its_own_candidates_on_the_question_evidence(tmp_path: Path) -> None:
    rng = random.Random(0)
    rows = _write(tmp_path / "a.jsonl", _rows("a", paraphrases=60, twins=60, twin_cosine=0.4, rng=rng))

    question = fit([rows], write=False, target_false=0.04, regime="question")
    document = fit([rows], write=False, target_false=0.04, regime="document")

    assert not set(SECTION_EVIDENCE) & set(question["features"])
    assert set(SECTION_EVIDENCE) <= set(document["features"])
    # 60 paraphrases' source + 60 twins' source; the document fit also has the 60 other trails.
    assert question["pairs"] == {"calibration": 120, "positive": 60}
    assert document["pairs"] == {"calibration": 180, "positive": 60}
    assert question["regime"] == "question"


def test_a_set_with_fewer_close_probes_than_the_minimum_does_not_choose_the_cut(tmp_path: Path) -> None:
    rng = random.Random(1)
    few = MIN_SET_PROBES - 1
    # Set b's few close probes sit among the paraphrases: had they chosen the cut, it would be
    # higher, and fewer of a's paraphrases served.
    rows = _write(tmp_path / "ab.jsonl",
                  _rows("a", paraphrases=60, twins=60, twin_cosine=0.4, rng=rng)
                  + _rows("b", paraphrases=60, twins=few, twin_cosine=0.8, rng=rng))

    report = fit([rows], write=False, target_false=0.04, regime="question")

    served = report["calibration"]
    assert report["prefetch_confidence"] < 0.99
    assert served["a:paraphrase"]["own_prefetch"] >= 50
    assert served["a:twin"]["source_prefetch"] / served["a:twin"]["n"] <= 0.04
    assert served["b:twin"]["n"] == few and served["b:twin"]["source_prefetch"] > 0.04 * few



def _probe(kind: str, cosine: float, i: int) -> dict:
    return {"set": "a", "side": CALIBRATION, "kind": kind, "answered_by_source": kind == "paraphrase",
            "query": f"{kind} {i}", "candidates": [_candidate(source=True, cosine=cosine, restates=True)]}


def test_the_bands_are_the_lowest_cut_under_the_target_and_the_fifth_percentile_of_own_trails() -> None:
    from research.match_calibration import choose_bands

    # 100 close probes whose source scores 0.40 + i/200 (0.40 … 0.895), 100 paraphrases whose
    # own trail scores 0.50 + i/400 (0.50 … 0.7475).
    cal = ([_probe("twin", 0.40 + i / 200, i) for i in range(100)]
           + [_probe("paraphrase", 0.50 + i / 400, i) for i in range(100)])
    prefetch, hint = choose_bands(cal, lambda c: c["features"]["cosine"], target_false=0.03)
    # At 0.88 four close probes are served (i ≥ 96), at 0.89 two (i ≥ 98): 0.89 is the lowest
    # cut with at most 3 %.
    assert prefetch == 0.89
    # The paraphrases' own trail at the fifth percentile: 0.50 + 5/400 = 0.5125 → 0.51.
    assert hint == 0.51
    # Nothing on the grid meets a target of 0: the top of the grid.
    assert choose_bands(cal, lambda c: c["features"]["cosine"] + 0.2, target_false=0.0)[0] == 0.99


def test_a_sets_near_misses_count_with_its_close_questions_against_the_cut() -> None:
    from research.match_calibration import choose_bands

    # 100 twins whose source scores 0.40 + i/200 (at 0.89 two are served, 2 %) and 40 near
    # misses (kind twin_near, never answered by the source) of which two score 0.895: alone
    # they are 5 % of 40, with the twins 4 of 140 (2.9 %), under a 3 % target.
    twins = [_probe("twin", 0.40 + i / 200, i) for i in range(100)]
    near = [_probe("twin_near", 0.895 if i < 2 else 0.3, i) for i in range(40)]
    paraphrases = [_probe("paraphrase", 0.50 + i / 400, i) for i in range(100)]
    assert choose_bands(twins + near + paraphrases, lambda c: c["features"]["cosine"], target_false=0.03)[0] == 0.89
    # Four near misses served make 6 of 140 (4.3 %): the cut rises above them.
    near = [_probe("twin_near", 0.895 if i < 4 else 0.3, i) for i in range(40)]
    assert choose_bands(twins + near + paraphrases, lambda c: c["features"]["cosine"], target_false=0.03)[0] == 0.9


def test_cuts_are_chosen_again_for_the_shipped_weights(tmp_path: Path) -> None:
    from cachecore.engine.scorer import QUESTION_SCORER_PATH, MatchScorer
    from research.match_calibration import choose_bands, recut

    rng = random.Random(2)
    rows = _write(tmp_path / "q.jsonl", _rows("a", paraphrases=60, twins=60, twin_cosine=0.55, rng=rng))
    shipped = MatchScorer.load(QUESTION_SCORER_PATH)

    result = recut([rows], regime="question", target_false=0.03, write=False)

    assert result["scorer"] == shipped.version
    assert result["before"] == {"prefetch_confidence": shipped.prefetch_confidence,
                                "hint_confidence": shipped.hint_confidence}
    # The cuts are the shipped weights' bands on these rows (the document-regime candidate of each
    # paraphrase left out), and the file is not touched without write.
    cal = [{**r, "candidates": [c for c in r["candidates"] if c["trail_coverage"] >= 0.9]}
           for r in map(json.loads, rows.read_text().splitlines())]
    expected = choose_bands(cal, lambda c: shipped.score([c["features"][f] for f in FEATURES]), target_false=0.03)
    assert (result["prefetch_confidence"], result["hint_confidence"]) == expected
    assert MatchScorer.load(QUESTION_SCORER_PATH) == shipped


def test_collect_writes_each_corpus_to_its_own_rows_file_by_default():
    # ``collect --corpus celery`` once wrote to faq-rows.jsonl, and the FAQ's collect then
    # overwrote the Celery rows.
    from research.match_calibration import default_rows

    assert default_rows("celery").name == "celery-rows.jsonl"
    assert default_rows("faq").name == "faq-rows.jsonl"
    assert default_rows("celery").parent == default_rows("faq").parent


def test_per_corpus_standardises_each_file_on_its_own_candidates_and_cannot_be_written(tmp_path: Path) -> None:
    rng = random.Random(1)
    low = _write(tmp_path / "low.jsonl", _rows("low", paraphrases=40, twins=40, twin_cosine=0.4, rng=rng))
    high_rows = _rows("high", paraphrases=40, twins=40, twin_cosine=0.4, rng=rng)
    for r in high_rows:     # the same evidence on another scale: every cosine 0.05 higher
        for c in r["candidates"]:
            c["features"]["cosine"] += 0.05
    high = _write(tmp_path / "high.jsonl", high_rows)

    raw = load_rows([low, high])
    scaled = load_rows([low, high], per_corpus=["cosine"])
    for rows_of in ("low", "high"):
        values = [c["features"]["cosine"] for r in scaled if r["set"] == rows_of for c in r["candidates"]]
        assert abs(sum(values) / len(values)) < 1e-9      # each file centred on its own mean
    # Only the features named change, and a file's order of candidates is kept.
    assert [c["features"]["coverage"] for r in scaled for c in r["candidates"]] == \
        [c["features"]["coverage"] for r in raw for c in r["candidates"]]
    low_raw = [c["features"]["cosine"] for r in raw if r["set"] == "low" for c in r["candidates"]]
    low_scaled = [c["features"]["cosine"] for r in scaled if r["set"] == "low" for c in r["candidates"]]
    assert sorted(range(len(low_raw)), key=low_raw.__getitem__) == sorted(range(len(low_scaled)),
                                                                          key=low_scaled.__getitem__)

    assert fit([low, high], write=False, target_false=0.04, per_corpus=["cosine"])["features"] == list(FEATURES)
    with pytest.raises(ValueError, match="per-corpus"):
        fit([low, high], write=True, target_false=0.04, per_corpus=["cosine"])


def test_answers_label_every_trail_by_whether_its_section_answers_the_probe() -> None:
    from research.corpora import CORPORA
    from research.match_calibration import annotate_answers, pair_label

    items = CORPORA["flask"].items()
    gold = {i.id: set(i.gold) for i in items}
    # An item with a close question answered by another item's gold section, and one that
    # shares its gold section with another item.
    close_item, close = next((i, c) for i in items for c in i.close
                             if not c.answered_by_source and any(set(c.answer) & gold[j.id] for j in items))
    answering = sorted(j.id for j in items if set(close.answer) & gold[j.id])
    para_item = next(i for i in items if sum(gold[j.id] == gold[i.id] for j in items) > 1)
    sharing = sorted(j.id for j in items if gold[j.id] & gold[para_item.id])
    other = next(j.id for j in items if j.id not in answering and not gold[j.id] & gold[para_item.id])
    rows = [
        {"set": "flask", "group": close_item.id, "kind": "twin", "query": close.question,
         "answered_by_source": False},
        {"set": "flask", "group": para_item.id, "kind": "paraphrase", "query": para_item.same_need[0],
         "answered_by_source": True},
        {"set": "faq", "group": "x", "kind": "twin", "query": "q", "answered_by_source": False},
    ]
    annotate_answers(rows)
    twin, para, faq = rows
    assert twin["right_entries"] == answering and close_item.id not in answering
    assert para["right_entries"] == sharing and para_item.id in sharing
    assert "right_entries" not in faq
    assert pair_label(twin, {"entry": answering[0]}) == 1
    assert pair_label(twin, {"entry": close_item.id, "is_source": True}) == 0
    assert pair_label(para, {"entry": sharing[-1] if sharing[-1] != para_item.id else sharing[0]}) == 1
    assert pair_label(para, {"entry": other}) == 0
    # Without the answers, another trail served to a close question is unlabelled.
    assert pair_label(faq, {"entry": "y"}) is None


def test_with_answers_another_trail_that_does_not_answer_a_close_probe_counts_against_the_cut() -> None:
    from research.match_calibration import choose_bands

    def twin(i: int, *, answers: bool) -> dict:
        row = _probe("twin", 0.40, i)
        row["candidates"][0]["entry"] = f"source {i}"
        # Another item's trail, scored 0.80 + i/1000, that does not answer the probe (i odd)
        # or does (i even).
        other = _candidate(source=False, cosine=0.80 + i / 1000, restates=True)
        other["entry"] = f"other {i}"
        row["candidates"].append(other)
        if answers:
            row["right_entries"] = [f"other {i}"] if i % 2 == 0 else []
        return row

    paraphrases = [_probe("paraphrase", 0.95, i) for i in range(100)]
    score = lambda c: c["features"]["cosine"]  # noqa: E731
    # Unlabelled, the other trails do not count: the source scores 0.40, so the lowest cut.
    assert choose_bands([twin(i, answers=False) for i in range(100)] + paraphrases, score,
                        target_false=0.03)[0] == 0.5
    # Labelled, the 50 wrong ones (0.801 … 0.899) do: 0.89 serves 5 of them (0.891 … 0.899), 0.90 none.
    assert choose_bands([twin(i, answers=True) for i in range(100)] + paraphrases, score,
                        target_false=0.03)[0] == 0.9


def test_a_trail_recorded_for_the_items_rewording_is_labelled_as_the_items_own() -> None:
    """``collect --with-rewordings``: the item's recorded rewording is the same need for its other
    rewordings and for a close question its gold answers, a different one for the others;
    served to a probe it counts as the item's own trail."""
    from research.match_calibration import pair_label, should_serve

    para = {"set": "flask", "group": "i1", "kind": "paraphrase", "answered_by_source": True,
            "source_trail": "t1", "item_trails": ["t1", "r1"]}
    twin = {**para, "kind": "twin", "answered_by_source": False}
    answered_twin = {**twin, "answered_by_source": True}
    mine = {"entry": "i1", "recorded_rewording": True}
    assert pair_label(para, mine) == 1 and pair_label(twin, mine) == 0 and pair_label(answered_twin, mine) == 1
    # Another item's recorded rewording: as another item's trail.
    theirs = {"entry": "i2", "recorded_rewording": True}
    assert pair_label(para, theirs) == 0 and pair_label(twin, theirs) is None
    assert should_serve(para, "r1") is True and should_serve(twin, "r1") is False
    assert should_serve(para, "r2") is False and should_serve(twin, "r2") is None
    # Rows collected without recorded rewordings: only the source trail is the item's.
    plain = {k: v for k, v in twin.items() if k != "item_trails"}
    assert should_serve(plain, "t1") is False and should_serve(plain, "r1") is None


def test_a_probe_that_is_another_trails_own_question_is_left_out_of_the_fit(tmp_path: Path) -> None:
    # Recall answers such a probe by rule and skips the read that gives every candidate its rival
    # evidence (decide.asked_as_recorded): its source trail's row would teach the scorer that an
    # unknown rival means another need.
    rng = random.Random(0)
    rows = _rows("a", paraphrases=60, twins=60, twin_cosine=0.4, rng=rng)
    for i in range(10):
        recorded = _candidate(source=False, cosine=1.0, restates=True)
        source = _candidate(source=True, cosine=0.6, restates=False)
        for c in (recorded, source):
            c["features"]["rival_known"] = 0.0
        recorded["query_normalised"] = f"why was thing {i} created in the first place"
        rows.append({"set": "a", "side": CALIBRATION, "kind": "distinct", "answered_by_source": False,
                     "query": f"Why was thing {i} created in the first place?", "candidates": [recorded, source]})
    # A distinct probe that no trail was recorded for is a negative of the fit, as before.
    other = _candidate(source=True, cosine=0.6, restates=False)
    other["query_normalised"] = "why was thing 0 created"
    rows.append({"set": "a", "side": CALIBRATION, "kind": "distinct", "answered_by_source": False,
                 "query": "Why was thing 0 made?", "candidates": [other]})

    document = fit([_write(tmp_path / "a.jsonl", rows)], write=False, target_false=0.04, regime="document")

    assert document["pairs"] == {"calibration": 181, "positive": 60}
