"""The growth curve: the benchmark at several sizes, one summary and a plot of latency against trails.

    .venv/bin/python -m research.bench.growth [--sizes 10000,100000] [--with-1m] [--quick]
                                              [--out-dir reports/bench/growth]
    make bench-growth GROWTH_ARGS="--with-1m"

For each size it runs ``manage.py bench`` (its own database per size, ``trailcache_growth_<size>``
on the embedded server or on ``DATABASE_URL``'s server, seeded once and reused while its
parameters match; one tenant per 1,000 trails, at least 5) as a child process, then collects from
its JSON report: in-process recall p50/p99 (embedding excluded and included), HTTP recall p50/p99
at concurrency 1 and recalls/s and records/s at concurrency 8, HNSW recall@5, database bytes per
trail (trail and citation tables with their indexes), the HNSW index size, the seed's load and
index-build times and the web workers' peak RSS. The query-vector cache is off (every recall
embeds). Writes ``growth.json``, ``growth.md`` and
``growth.png`` (latency against trails, log scale). Each bench starts and stops its own gunicorn;
nothing else is started, stopped or restarted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
QUICK = ["--recalls", "400", "--recalls-full", "120", "--knn-per-bucket", "10", "--records", "80",
         "--http-requests", "300", "--http-records", "150", "--http-time-limit", "20"]


def label(size: int) -> str:
    return f"{size // 1_000_000}m" if size >= 1_000_000 and size % 1_000_000 == 0 else f"{size // 1000}k"


def run_size(size: int, out_dir: Path, *, quick: bool, reseed: bool) -> dict:
    report = out_dir / f"bench-{label(size)}.json"
    tenants = max(5, size // 1000)
    args = [sys.executable, "manage.py", "bench", "--trails", str(size), "--tenants", str(tenants),
            "--database", f"trailcache_growth_{label(size)}", "--out", str(report)]
    args += QUICK if quick else []
    args += ["--reseed"] if reseed else []
    # As `make bench`: development mode, and no request-rate limits while the load generator runs.
    # No query-vector cache either: the timed questions repeat across phases, and every figure here
    # is the cold cost (a repeated question skips the ~7 ms of embedding, research/embedding_throughput.py).
    env = dict(os.environ, TRAILCACHE_DEV="true", TRAILCACHE_RATE_PER_KEY_PER_MINUTE="0",
               TRAILCACHE_RATE_PER_TENANT_PER_MINUTE="0", TRAILCACHE_EMBEDDING_CACHE_SIZE="0",
               DJANGO_SETTINGS_MODULE="config.settings")
    print(f"== {size:,} trails × {tenants} tenants", flush=True)
    subprocess.run(args, cwd=ROOT, env=env, check=True)
    return summarise(size, json.loads(report.read_text()))


def summarise(size: int, r: dict) -> dict:
    sizes, seed, http = r.get("sizes", {}), r.get("seed", {}), r.get("http", {})
    per_trail = sum(sizes.get(k, 0) for k in ("trail_table", "trail_indexes", "citation_table", "citation_indexes"))
    inc = r["recall"]["included"]
    ex = inc.get("without_embedding") or inc
    row = {
        "trails": size, "tenants": r["config"]["tenants"], "load_average": r.get("load_average"),
        "recall_excluded_p50_ms": ex["p50_ms"], "recall_excluded_p99_ms": ex["p99_ms"],
        "recall_included_p50_ms": inc["p50_ms"], "recall_included_p99_ms": inc["p99_ms"],
        # Mean CPU per recall in Python and in the database server (research/bench/cpu.py).
        "recall_cpu_python_ms": (inc.get("cpu_ms") or {}).get("process"),
        "recall_cpu_database_ms": (inc.get("cpu_ms") or {}).get("database"),
        "hnsw_recall_at5_mean": r.get("hnsw_recall", {}).get("mean"),
        "hnsw_recall_at5_min": r.get("hnsw_recall", {}).get("min"),
        "records_in_process_per_s": r["records"]["per_s"],
        "db_bytes_per_trail": round(per_trail / size) if size else None,
        "hnsw_index_bytes": sizes.get("trail_hnsw"), "database_bytes": sizes.get("database"),
        "seed_load_s": seed.get("copy_s") or seed.get("load_s"), "hnsw_build_s": seed.get("hnsw_build_s"),
        "seed_total_s": seed.get("seed_total_s"), "seed_reused": seed.get("reused"),
    }
    if http:
        row.update({
            "http_c1_p50_ms": http["recall_c1"]["p50_ms"], "http_c1_p99_ms": http["recall_c1"]["p99_ms"],
            "http_c8_recalls_per_s": http["recall_c8"]["per_s"], "http_c8_p50_ms": http["recall_c8"]["p50_ms"],
            "http_c8_records_per_s": http["record_c8"]["per_s"],
            "worker_peak_rss_bytes": http.get("worker_peak_rss_bytes"),
        })
    return row


def render_markdown(rows: list[dict]) -> str:
    def cell(row: dict, key: str, fmt: str = "{}") -> str:
        value = row.get(key)
        return "–" if value is None else fmt.format(value)

    mb = lambda v: v / 1e6  # noqa: E731
    F1 = "{:.1f}"  # noqa: N806
    lines = ["| trails × tenants | in-process p50 / p99 (excl. embedding) | incl. embedding p50 / p99 | "
             "CPU per recall: Python · database | "
             "HTTP c=1 p50 / p99 | HTTP c=8 recalls/s · records/s | recall@5 mean / min | DB bytes/trail | "
             "HNSW index | load / HNSW build | worker RSS |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(" | ".join([
            f"| {r['trails']:,} × {r['tenants']:,}",
            f"{cell(r, 'recall_excluded_p50_ms', F1)} / {cell(r, 'recall_excluded_p99_ms', F1)} ms",
            f"{cell(r, 'recall_included_p50_ms', F1)} / {cell(r, 'recall_included_p99_ms', F1)} ms",
            f"{cell(r, 'recall_cpu_python_ms', F1)} · {cell(r, 'recall_cpu_database_ms', F1)} ms",
            f"{cell(r, 'http_c1_p50_ms', F1)} / {cell(r, 'http_c1_p99_ms', F1)} ms",
            f"{cell(r, 'http_c8_recalls_per_s')} · {cell(r, 'http_c8_records_per_s')}",
            f"{cell(r, 'hnsw_recall_at5_mean')} / {cell(r, 'hnsw_recall_at5_min')}",
            cell(r, "db_bytes_per_trail", "{:,}"),
            "–" if r.get("hnsw_index_bytes") is None else f"{mb(r['hnsw_index_bytes']):.0f} MB",
            f"{cell(r, 'seed_load_s')} / {cell(r, 'hnsw_build_s')} s" + (" (reused)" if r.get("seed_reused") else ""),
            "–" if r.get("worker_peak_rss_bytes") is None else f"{mb(r['worker_peak_rss_bytes']):.0f} MB",
        ]) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["trails"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 5), dpi=120)
    series = [("recall_excluded_p50_ms", "in-process p50 (excl. embedding)", "-o"),
              ("recall_excluded_p99_ms", "in-process p99 (excl. embedding)", "--o"),
              ("recall_included_p50_ms", "in-process p50 (incl. embedding)", "-s"),
              ("http_c1_p50_ms", "HTTP p50, concurrency 1", "-^"),
              ("http_c1_p99_ms", "HTTP p99, concurrency 1", "--^")]
    for key, name, style in series:
        ys = [r.get(key) for r in rows]
        if all(y is not None for y in ys):
            ax.plot(xs, ys, style, label=name)
    ax.set_xscale("log")
    ax.set_xticks(xs, [f"{x:,}" for x in xs])
    ax.set_xlabel("trails")
    ax.set_ylabel("ms")
    ax.set_title("Trailcache recall latency against trails (2 cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated trail counts")
    parser.add_argument("--with-1m", action="store_true", help="add 1,000,000 trails × 1,000 tenants")
    parser.add_argument("--quick", action="store_true", help="fewer timed requests per size")
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "reports" / "bench" / "growth")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.with_1m and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in sorted(sizes):
        load = os.getloadavg()[0]
        row = run_size(size, args.out_dir, quick=args.quick, reseed=args.reseed)
        row["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        rows.append(row)
    (args.out_dir / "growth.json").write_text(json.dumps(rows, indent=2))
    table = render_markdown(rows)
    (args.out_dir / "growth.md").write_text(table)
    plot(rows, args.out_dir / "growth.png")
    print(table)
    print(f"load average (start, end) per size: {[r['load_average'] for r in rows]}")
    print(f"written: {args.out_dir / 'growth.json'}, growth.md, growth.png")
    return rows


if __name__ == "__main__":
    main()
