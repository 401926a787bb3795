"""The replay harness on a tiny slice of the Celery corpus (one page, a few items, 2 rounds)
against the real database and model, over the REST API and through the services: the report's
shape, and counts that add up."""

from __future__ import annotations

import json
import random

import pytest

from research.calibration_replay import RoundCounts, other_section, replay, table
from research.corpora import CELERY_DOCS, Corpus, celery_items
from research.splits import CALIBRATION, HELD_OUT

PAGE = "userguide/tasks.html"


def test_other_section_stays_on_the_gold_page():
    rng = random.Random(0)
    by_page = {"a.html": ["a.html#x", "a.html#y", "a.html#z"], "b.html": ["b.html#only"]}
    all_ids = ["a.html#x", "a.html#y", "a.html#z", "b.html#only"]
    picks = {other_section(["a.html#x"], by_page, all_ids, rng) for _ in range(50)}
    assert picks == {"a.html#y", "a.html#z"}
    # A page with no other section: any other section of the corpus.
    assert other_section(["b.html#only"], by_page, all_ids, rng) in {"a.html#x", "a.html#y", "a.html#z"}


@pytest.fixture(scope="module")
def tiny_reports(tmp_path_factory, django_db_blocker):
    """The tiny replay over the REST API and through the services, same slice and seed."""
    assert CELERY_DOCS.is_dir(), "Debian's python-celery-doc is needed (scripts/test.sh installs it)"
    corpus = Corpus("celery", CELERY_DOCS, (PAGE,), "celery", "python-celery-doc", celery_items)
    reports = {}
    with django_db_blocker.unblock():
        for via in ("rest", "services"):
            out = tmp_path_factory.mktemp(via)
            reports[via] = (out, replay(corpus=corpus, rounds=2, noise=0.5, seed=3, out=out, limit=LIMIT,
                                        plot_png=True, via=via))
    return reports


LIMIT = 4


@pytest.mark.parametrize("via", ["rest", "services"])
def test_replay_on_a_tiny_slice(tiny_reports, via):
    out, report = tiny_reports[via]
    on_page = [i for i in celery_items() if i.gold[0].startswith(PAGE + "#")]
    assert json.loads((out / "report.json").read_text()) == report
    assert (out / "replay.png").stat().st_size > 1000
    assert report["corpus"] == "celery" and report["headline_side"] == HELD_OUT and report["via"] == via
    assert report["items"] == LIMIT and len(on_page) >= LIMIT
    assert sum(report["items_by_side"].values()) == LIMIT
    assert set(report["items_by_side"]) == {HELD_OUT, CALIBRATION}
    assert report["sections"] > 20
    assert [r["round"] for r in report["rounds"]] == [1, 2]
    # The cut a round starts from is the one the previous round left.
    assert report["rounds"][1]["prefetch_cut_before"] == report["rounds"][0]["prefetch_cut_after"]
    assert report["rounds"][0]["prefetch_cut_before"] == report["defaults"]["prefetch_confidence"]
    assert report["rounds"][1]["cut_in_force_before"] == report["rounds"][0]["cut_in_force_after"]
    for row in report["rounds"]:
        assert row["suggestion"]["current_prefetch_confidence"] == row["prefetch_cut_before"]
        # The suggestion is judged at the cut recall applied in the round (a page of Celery is a
        # small tenant: higher than the setting while ``small_tenant_cut`` is on).
        assert row["suggestion"]["applied_prefetch_confidence"] == row["cut_in_force_before"]
        assert row["cut_in_force_before"] >= row["prefetch_cut_before"]
        for side, f in row["sides"].items():
            n_items = report["items_by_side"][side]
            same, hinted = f["same_need_own_prefetch"], f["same_need_own_prefetch_or_hint"]
            assert same["n"] == hinted["n"] == n_items
            assert same["k"] <= hinted["k"] <= n_items
            close, answered = f["close_any_prefetch"], f["close_answered_own_prefetch"]
            assert close["n"] + answered["n"] == n_items  # every item has a close question per round
            assert f["close_prefetch_own_trail"] <= close["k"] <= close["n"]
            assert sum(f["false_prefetch_by_kind"].values()) == close["k"]
            # A wrong prefetch is a prefetch that carries none of the sections that answer it.
            assert f["close_wrong_prefetch"]["n"] == close["n"] and f["close_wrong_prefetch"]["k"] <= close["k"]
            outcomes = f["outcomes"]
            assert sum(v for k, v in outcomes.items() if k.startswith("same_need:")) == n_items
            assert sum(v for k, v in outcomes.items() if k.startswith("close:")) == n_items
            assert set(outcomes) <= {f"{kind}:{o}" for kind in ("same_need", "close")
                                     for o in ("prefetch", "hint", "miss")}
            for p in (same, hinted, close):
                lo, hi = p["ci95"]
                assert 0.0 <= lo <= hi <= 1.0
    # One log line per recall, which agrees with the counts.
    log = report["recalls"]
    assert len(log) == 2 * LIMIT * len(report["rounds"])
    for r in report["rounds"]:
        lines = [x for x in log if x["round"] == r["round"]]
        for side, f in r["sides"].items():
            mine = [x for x in lines if x["side"] == side]
            assert sum(x["kind"] == "same_need" and x["outcome"] == "prefetch" and x["own"] for x in mine) \
                == f["same_need_own_prefetch"]["k"]
            wrong = [x for x in mine if x["kind"].startswith("close:") and not x["answered_by_source"]
                     and x["outcome"] == "prefetch" and not x["right"]]
            assert len(wrong) == f["close_wrong_prefetch"]["k"]
    printed = table(report["rounds"], HELD_OUT)
    assert printed.count("\n") == 1 + len(report["rounds"])


def test_rest_and_services_decide_the_same(tiny_reports):
    """The REST views add auth, throttling and serialisation around the same services."""
    rest, services = (tiny_reports[v][1]["rounds"] for v in ("rest", "services"))
    assert [r["sides"] for r in rest] == [r["sides"] for r in services]
    assert [r["prefetch_cut_after"] for r in rest] == [r["prefetch_cut_after"] for r in services]


def test_the_agent_cites_what_answers_a_close_question_where_the_set_names_it():
    from research.calibration_replay import agent_citation

    by_page = {"a.html": ["a.html#x", "a.html#y", "a.html#z"]}
    all_ids = ["a.html#x", "a.html#y", "a.html#z", "b.html#w"]
    known = set(all_ids)
    kw = {"known": known, "ids_by_page": by_page, "all_ids": all_ids, "rng": random.Random(0)}
    assert agent_citation(["a.html#x"], ["b.html#w"], cites_gold=True, **kw) == ["a.html#x"]
    assert agent_citation(["a.html#x"], ["b.html#w"], cites_gold=False, **kw) == ["b.html#w"]
    # An answer the corpus does not hold, or none: another section of the gold's page.
    assert agent_citation(["a.html#x"], ["c.html#gone"], cites_gold=False, **kw)[0] in {"a.html#y", "a.html#z"}
    assert agent_citation(["a.html#x"], [], cites_gold=False, **kw)[0] in {"a.html#y", "a.html#z"}


def test_round_counts_figures_are_proportions():
    c = RoundCounts(same_need=4, same_own_prefetch=1, same_own_prefetch_or_hint=3, close=2, close_prefetch=1,
                    close_prefetch_own=1)
    f = c.figures()
    assert f["same_need_own_prefetch"]["rate"] == 0.25
    assert f["same_need_own_prefetch_or_hint"]["k"] == 3
    assert f["close_any_prefetch"]["rate"] == 0.5
    assert f["close_answered_own_prefetch"]["rate"] is None


def test_labels_recorded_as_accepted_answers_become_trails_that_serve_the_question_again(django_db_blocker):
    """``--labels accepted``: the agent records as the README's loop does (the recall's scope, an
    accepted signal), so round 3, which asks round 1's same-need questions again, finds each one's
    own recorded trail: never a miss, always the gold section (noise 0)."""
    corpus = Corpus("celery", CELERY_DOCS, (PAGE,), "celery", "python-celery-doc", celery_items)
    with pytest.raises(ValueError, match="labels"):
        replay(corpus=corpus, rounds=1, noise=0.0, seed=3, out=None, limit=LIMIT, labels="bogus")
    with django_db_blocker.unblock():
        report = replay(corpus=corpus, rounds=3, noise=0.0, seed=3, out=None, limit=LIMIT, plot_png=False,
                        via="services", labels="accepted")
    assert report["labels"] == "accepted"
    again = [x for x in report["recalls"] if x["round"] == 3 and x["kind"] == "same_need"]
    assert len(again) == LIMIT
    assert all(x["right"] and x["outcome"] != "miss" for x in again), again
    for row in report["rounds"]:
        for f in row["sides"].values():
            gold = f["same_need_gold_prefetch"]
            assert f["same_need_own_prefetch"]["k"] <= gold["k"] <= gold["n"]


def test_a_carved_small_tenant_holds_only_its_sections_and_their_items(django_db_blocker):
    """``--sections N``: a small tenant carved out of the corpus (``small_tenant_sections``): the
    report counts its sections only, every item's gold is among them, and the cut in force is the
    small tenant's, above the setting."""
    from docingest.ingest import collect_sections
    from research.corpora import small_tenant_sections

    corpus = Corpus("celery", CELERY_DOCS, ("userguide/",), "celery", "python-celery-doc", celery_items)
    with django_db_blocker.unblock():
        report = replay(corpus=corpus, rounds=1, noise=0.0, seed=3, out=None, limit=4, plot_png=False,
                        carve=(30, 1))
    assert report["carve"] == {"sections": 30, "seed": 1}
    assert 20 <= report["sections"] <= 30 and report["items"] == 4
    kept, chosen = small_tenant_sections([s.id for s in collect_sections(CELERY_DOCS, ("userguide/",))],
                                         celery_items(), 30, seed=1)
    assert report["sections"] == len(kept)
    logged = {x["item"] for x in report["recalls"]}
    assert logged <= {i.id for i in chosen}
    row = report["rounds"][0]
    assert row["cut_in_force_before"] > row["prefetch_cut_before"]
