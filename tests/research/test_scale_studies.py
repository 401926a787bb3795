"""The issue-15 measuring scripts run end to end on tiny settings: the embedding throughput
study (threads × busy cores, the split of one query, the cache, one query after a wait) and the web-path study (the
in-process split and one worker model over HTTP, on a database of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], tmp_path: Path) -> dict:
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRAILCACHE_DEV="true")
    result = subprocess.run([sys.executable, "-m", *args, "--out", str(out)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return json.loads(out.read_text())


def test_embedding_throughput_study(tmp_path):
    result = _run(["research.embedding_throughput", "--seconds", "0.05", "--quick"], tmp_path)
    # One thread has no pool, so nothing spins: threads 1 runs without spinning only.
    assert {(r["busy_cores"], r["threads"], r["spinning"]) for r in result["rows"]} == {
        (b, t, s) for b in (0, 1, 2) for t in (1, 2) for s in (False, True) if not (t == 1 and s)}
    assert all(r["n"] > 0 and r["p50_ms"] > 0 and r["sentences_per_s"] > 0 for r in result["rows"])
    split = result["breakdown_threads1"]
    assert split["model_ms"] > split["tokenizer_ms"] > 0
    batching = result["batching"]
    assert batching["alone_sentences_per_s"] > 0 and batching["batched_sentences_per_s"] > 0
    assert 0.9 < batching["cosine_batched_to_alone"]["min"] <= batching["cosine_batched_to_alone"]["mean"] <= 1.0001
    assert 0 < result["cache_hit_us"] < 1000  # a hit is a dictionary lookup, not a model run


def test_embedding_after_a_wait_study(tmp_path):
    result = _run(["research.embedding_throughput", "--after-wait", "10"], tmp_path)
    by_pause = result["by_pause"]
    # Every kind of pause, each timed as often as asked (whole blocks: at least that many).
    assert set(by_pause) == {"none", "idle 1 ms", "idle 4 ms", "idle 16 ms", "64 MB read"}
    assert all(p["n"] >= 10 and 0 < p["p50_ms"] <= p["p99_ms"] for p in by_pause.values())


def test_webpath_study(tmp_path):
    database = os.environ.get("TRAILCACHE_TEST_DB", "test_trailcache") + "_webpath"
    result = _run(["research.webpath", "--requests", "12", "--seconds", "5", "--rounds", "1", "--levels", "1,2",
                   "--models", "sync", "--database", database, "--trails", "40"], tmp_path)
    ip = result["in_process"]
    assert ip["request_p50_ms"] > ip["web_p50_ms"] > 0
    assert {"embedding", "search", "total"} <= set(ip["service_phases_p50_ms"])
    assert [(r["model"], r["concurrency"]) for r in result["http"]] == [("sync", 1), ("sync", 2)]
    assert all(r["errors"] == 0 and r["per_s"] > 0 for r in result["http"])
