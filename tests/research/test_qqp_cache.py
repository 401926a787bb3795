"""research.qqp_cache: the sampling rules on synthetic pairs, and a small replay against the
test database (60 trails, 10 + 10 recalled) whose counts must add up, plus a control recall
of a duplicate's own ``a`` text (test only, not part of the research run)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from research.qqp_cache import (
    CATEGORIES,
    QQPConfig,
    classify,
    cosine_sweep,
    duplicate_clusters,
    main,
    run_qqp_cache,
    sample_pairs,
    write_report,
)
from research.splits import QQP_PATH, QQPPair
from tenants.caller import tenant_caller


def norm(q: str) -> str:
    return " ".join(q.lower().split()).strip("?")


def synthetic() -> list[QQPPair]:
    pairs = []
    for i in range(40):
        side = "held_out" if i % 2 else "calibration"
        pairs.append(QQPPair(f"How do I learn topic {i}?", f"What is the best way to learn topic {i}?", True, f"g{i}",
                             side))
        pairs.append(QQPPair(f"Why is topic {i} hard?", f"Why is topic {i} easy?", False, f"g{i}", side))
    # Shared questions: a b that is another pair's a, and a pair whose questions normalise the same.
    pairs.append(QQPPair("What is the best way to learn topic 1?", "Is topic 1 worth it?", False, "g1", "held_out"))
    pairs.append(QQPPair("Same question?", "same   QUESTION", True, "gx", "held_out"))
    return pairs


def test_sample_rules() -> None:
    pairs = synthetic()
    s = sample_pairs(pairs, side="held_out", duplicates=8, non_duplicates=8, trails=30, seed=0, norm=norm)
    assert Counter(x.label for x in s.pairs) == {"duplicate": 8, "non_duplicate": 8}
    assert all(x.pair.side == "held_out" for x in s.pairs)
    trails = [norm(q) for q in s.trail_questions]
    recalled = [norm(x.pair.b) for x in s.pairs]
    assert len(trails) == len(set(trails)) == 30
    assert len(recalled) == len(set(recalled))
    assert not set(trails) & set(recalled)
    assert {norm(x.pair.a) for x in s.pairs} <= set(trails)
    held_out_questions = {norm(q) for p in pairs if p.side == "held_out" for q in (p.a, p.b)}
    assert set(trails) <= held_out_questions
    # Deterministic given the seed, different with another.
    again = sample_pairs(pairs, side="held_out", duplicates=8, non_duplicates=8, trails=30, seed=0, norm=norm)
    assert again.trail_questions == s.trail_questions and again.pairs == s.pairs
    other = sample_pairs(pairs, side="held_out", duplicates=8, non_duplicates=8, trails=30, seed=1, norm=norm)
    assert other.pairs != s.pairs
    # As many as exist; never both questions of a pair that normalise the same.
    everything = sample_pairs(pairs, side="held_out", duplicates=999, non_duplicates=999, trails=999, seed=0,
                              norm=norm)
    assert all(norm(x.pair.a) != norm(x.pair.b) for x in everything.pairs)
    assert everything.skipped.get("a and b normalise the same") == 1


def test_classify_and_clusters() -> None:
    assert classify({"outcome": "miss", "trail_id": None, "trails": []}, "t1") == ("miss", "miss")
    assert classify({"outcome": "prefetch", "trail_id": "t1", "trails": ["t1"]}, "t1") == ("own_prefetch",) * 2
    assert classify({"outcome": "hint", "trail_id": "t2", "trails": ["t2", "t1"]}, "t1") == ("other_hint", "own_hint")
    assert classify({"outcome": "weird"}, "t1") == ("unexpected", "unexpected")
    clusters = duplicate_clusters([QQPPair("a", "b", True, "g", "x"), QQPPair("b", "c", True, "g", "x"),
                                   QQPPair("c", "d", False, "g", "x")], norm)
    assert clusters["a"] == clusters["c"] and "d" not in clusters
    sweep = cosine_sweep([{"label": "duplicate", "pair_cosine": 0.9}, {"label": "non_duplicate", "pair_cosine": 0.6}])
    assert sweep[0]["duplicates"]["k"] == 1 and sweep[0]["non_duplicates"]["k"] == 1
    assert [r for r in sweep if r["threshold"] == 0.65][0]["non_duplicates"]["k"] == 0


def test_the_pairs_are_in_the_repository_and_the_variable_overrides(tmp_path) -> None:
    """The default path is the vendored file (nothing beside the checkout); TRAILCACHE_QQP wins."""
    import subprocess
    import sys

    from research.splits import REPO_ROOT, qqp_pairs

    assert QQP_PATH == REPO_ROOT / "tests" / "data" / "qqp" / "qqp_pairs.jsonl.gz"
    assert QQP_PATH.is_file()
    pairs = qqp_pairs()
    assert len(pairs) == 65_653 and sum(p.duplicate for p in pairs) == 15_643
    other = tmp_path / "pairs.jsonl.gz"
    code = "from research.splits import QQP_PATH; print(QQP_PATH)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "TRAILCACHE_QQP": str(other)})
    assert out.stdout.strip() == str(other)


SIZES = {"trails": 60, "duplicates": 10, "non_duplicates": 10}


@pytest.fixture(scope="module")
def replay(django_db_setup, django_db_blocker):  # noqa: ANN001 - pytest-django fixtures
    from cachecore.services.recall import recall
    from tenants.models import Tenant

    with django_db_blocker.unblock():
        report = run_qqp_cache(QQPConfig(**SIZES, keep_tenant=True, progress=False))
        tenant = Tenant.objects.get(slug=report["meta"]["tenant"])
        try:
            dup = next(d for d in report["details"] if d["label"] == "duplicate")
            control = recall(caller=tenant_caller(tenant), scope="qqp", query=dup["pair_question"])
        finally:
            Tenant.objects.filter(pk=tenant.pk).delete()
    return report, dup, control


def test_counts_add_up(replay) -> None:
    report = replay[0]
    meta = report["meta"]
    assert meta["side"] == "held_out"
    assert meta["sampled"] == {"trails": 60, "duplicates": 10, "non_duplicates": 10}
    details = report["details"]
    assert len(details) == 20 and len({d["query"] for d in details}) == 20
    for label, n in (("duplicate", 10), ("non_duplicate", 10)):
        block = report[label]
        assert block["n"] == n
        rows = [d for d in details if d["label"] == label]
        for variant, key in (("strict", "category"), ("loose", "category_loose")):
            assert set(block[variant]) == set(CATEGORIES)
            assert sum(v["k"] for v in block[variant].values()) == n
            assert all(v["n"] == n for v in block[variant].values())
            assert Counter(d[key] for d in rows) == Counter({c: v["k"] for c, v in block[variant].items()
                                                             if v["k"]})
        assert block["strict"]["unexpected"]["k"] == 0
        strict = block["strict"]
        assert block["any_prefetch"]["k"] == strict["own_prefetch"]["k"] + strict["other_prefetch"]["k"]
        for v in block["strict"].values():
            lo, hi = v["ci95"]
            assert 0 <= lo <= v["rate"] <= hi <= 1
    for d in details:
        assert d["outcome"] in ("prefetch", "hint", "miss")
        assert (d["trail_id"] is None) == (d["outcome"] == "miss")
        if d["trail_id"] is not None:
            assert d["served_question"]
        assert -1 <= d["pair_cosine"] <= 1.0001
        assert {"reason", "confidence", "similarity"} <= set(d)
    assert report["latency_ms"]["n"] == 20 and 0 < report["latency_ms"]["p50"] <= report["latency_ms"]["p99"]
    assert [r["threshold"] for r in report["cosine_sweep"]] == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    for r in report["cosine_sweep"]:
        assert r["duplicates"]["n"] == 10 and r["non_duplicates"]["n"] == 10


def test_control_exact_text_is_served_its_own_trail(replay) -> None:
    _, dup, control = replay
    assert control.answer.outcome == "prefetch"
    assert control.answer.trail_id == dup["pair_trail_id"]
    assert control.answer.similarity == pytest.approx(1.0, abs=1e-3)


def test_report_files(replay, tmp_path) -> None:
    report = replay[0]
    files = write_report(report, tmp_path)
    assert {f.name for f in files} == {"report.json", "summary.md", "details.jsonl"}
    body = json.loads((tmp_path / "report.json").read_text())
    assert "details" not in body and body["duplicate"]["n"] == 10
    lines = (tmp_path / "details.jsonl").read_text().splitlines()
    assert len(lines) == 20 and json.loads(lines[0])["query"]
    summary = (tmp_path / "summary.md").read_text()
    assert "## Duplicates (n = 10)" in summary and "false prefetch" in summary and "Cosine-only" in summary


def test_cli_overrides_and_tenant_removed(django_db_setup, django_db_blocker, tmp_path, capsys) -> None:  # noqa: ANN001
    from tenants.models import Tenant

    with django_db_blocker.unblock():
        before = set(Tenant.objects.values_list("slug", flat=True))
        assert main(["--trails", "30", "--duplicates", "3", "--non-duplicates", "3", "--quiet",
                     "--set", "similarity_threshold=0.99", "--out", str(tmp_path)]) == 0
        after = set(Tenant.objects.values_list("slug", flat=True))
    assert before == after
    body = json.loads((tmp_path / "report.json").read_text())
    assert body["meta"]["settings"]["similarity_threshold"] == "0.99"
    assert body["duplicate"]["n"] == 3 and body["non_duplicate"]["n"] == 3
    assert "QQP as a cache sees it" in capsys.readouterr().out
