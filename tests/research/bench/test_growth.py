"""The growth curve's summary of bench reports: one row per size with the figures docs/results.md
quotes, a Markdown table and a PNG plot of latency against trails."""

from __future__ import annotations

from research.bench import growth


def _report(trails: int, p50: float) -> dict:
    return {
        "config": {"tenants": trails // 1000},
        "recall": {"included": {"p50_ms": p50 + 7, "p99_ms": 4 * p50,
                               "without_embedding": {"p50_ms": p50, "p99_ms": 3 * p50},
                               "cpu_ms": {"process": p50 + 2, "database": None}}},
        "hnsw_recall": {"mean": 0.97, "min": 0.6},
        "records": {"per_s": 60.0},
        "sizes": {"trail_table": 2300 * trails, "trail_indexes": 2100 * trails, "citation_table": 100 * trails,
                  "citation_indexes": 100 * trails, "trail_hnsw": 1900 * trails, "database": 6000 * trails},
        "seed": {"load_s": 8.0, "hnsw_build_s": 19.0, "seed_total_s": 40.0, "reused": False},
        "http": {"recall_c1": {"p50_ms": p50 + 12, "p99_ms": p50 + 30},
                 "recall_c8": {"p50_ms": 80.0, "per_s": 100.0}, "record_c8": {"per_s": 110.0},
                 "worker_peak_rss_bytes": 325_000_000},
    }


def test_rows_table_and_plot(tmp_path):
    rows = [growth.summarise(n, _report(n, p)) for n, p in ((10_000, 2.0), (100_000, 4.5))]
    assert rows[1]["db_bytes_per_trail"] == 4600 and rows[1]["hnsw_index_bytes"] == 190_000_000
    assert rows[0]["http_c1_p50_ms"] == 14.0 and rows[1]["http_c8_records_per_s"] == 110.0
    table = growth.render_markdown(rows)
    assert "| 10,000 × 10 | 2.0 / 6.0 ms | 9.0 / 8.0 ms | 4.0 · – ms |" in table and "| 100,000 × 100 |" in table
    growth.plot(rows, tmp_path / "growth.png")
    assert (tmp_path / "growth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert growth.label(1_000_000) == "1m" and growth.label(100_000) == "100k"
