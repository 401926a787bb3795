"""The RedisVL side-by-side study: its summary, and that it skips (exit 0, saying why) where the
peer cannot run."""

from research import redisvl_peer
from research.redisvl_peer import Sample, summarise, summary_markdown


def _sample(tc: float, rv: float, *, tc_hit: bool = True, rv_hit: bool = False, first: str = "trailcache") -> Sample:
    return Sample(question="q", first=first, with_embedding={"trailcache": tc, "redisvl": rv},
                  without_embedding={"trailcache": tc - 2.0, "redisvl": rv - 2.0},
                  hit={"trailcache": tc_hit, "redisvl": rv_hit}, own={"trailcache": tc_hit, "redisvl": rv_hit})


def test_the_summary_pairs_each_lookup_and_counts_what_each_side_answered():
    samples = [_sample(10.0, 4.0), _sample(12.0, 5.0, rv_hit=True, first="redisvl"), _sample(14.0, 9.0)]
    summary = summarise(samples)
    assert summary["trailcache"]["with_embedding_ms"]["p50"] == 12.0
    assert summary["redisvl"]["with_embedding_ms"]["p50"] == 5.0
    assert summary["trailcache"]["without_embedding_ms"]["p50"] == 10.0
    # Paired differences 6, 7, 5: the median of the pairs, not the difference of the medians.
    assert summary["paired_median_ms"] == {"with_embedding": 6.0, "without_embedding": 6.0}
    assert summary["trailcache"]["hit_rate"] == 1.0 and summary["redisvl"]["hit_rate"] == round(1 / 3, 3)

    report = {"summary": summary, "phases": {"embedding": 2.0}, "meta": {
        "stored": 10, "lookups": 3, "rounds": 1, "model": "m@1", "threads": 1, "spinning": False,
        "redisvl_version": "0.28.0", "load_start": 0.5, "load_end": 0.6}}
    text = summary_markdown(report)
    assert "| 12.0 / " in text and "Paired median, Trailcache − RedisVL: 6.0 ms" in text
    assert "embedding 2.0" in text


def test_without_a_search_module_the_study_says_so_and_skips(own_redis, capsys):
    """The machine's plain Redis has no search module: the study skips with the reason (or
    earlier, where RedisVL itself is not installed), and exits 0."""
    assert redisvl_peer.main(["--redis-url", own_redis.url, "--trails", "1", "--lookups", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skipped: ")
    missing = redisvl_peer.peer_missing()
    assert ("not installed" in out) if missing else ("has no search module" in out)
