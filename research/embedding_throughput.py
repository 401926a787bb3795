"""Where a query embedding's time goes, and what the thread settings and the query cache buy.

    .venv/bin/python -m research.embedding_throughput [--seconds 1.5] [--out reports/embedding.json]
    .venv/bin/python -m research.embedding_throughput --after-wait 300

For each onnxruntime setting (intra-op threads 1 or 2, thread spinning on or off) and each
background load (0, 1 or 2 other processes each keeping a core busy, standing in for web
workers), it times ``embed_one`` on short queries (p50/p99) and the throughput of ``embed`` on
many (sentences/s; one graph run per text). It also splits one query into tokenizer / model /
pooling, compares one run per text with padded batches of 32 on texts of mixed lengths (speed,
and how far a batched text's vector is from the same text alone), and shows what a cache hit
costs. ``--after-wait`` times one query after an idle wait, after the caches were swept, and
after nothing (``after_wait``). Prints a table; writes JSON when ``--out`` is given. Runs
without Django or a database.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

import numpy as np

from cachecore.embedding import VARIANTS, Embedder, shipped_model
from cachecore.engine.text import normalise_query
from research.stats import time_calls

WORDS = ["proxy", "cache", "timeout", "retry", "certificate", "install", "upgrade", "logging", "quota", "backup"]


def _queries(n: int) -> list[str]:
    return [normalise_query(f"How do I configure the {WORDS[i % 10]} option of service {i} on Linux?")
            for i in range(n)]


def _busy(stop: Event) -> None:  # pragma: no cover - runs in a child process
    x = 0
    while not stop.is_set():
        for _ in range(10_000):
            x += 1


def _pct(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples), q)), 3)


def time_one(emb: Embedder, queries: list[str], seconds: float) -> dict:
    for q in queries[:10]:
        emb.embed_one(q)
    samples = time_calls(lambda i: emb.embed_one(queries[i % len(queries)]), seconds=seconds)
    return {"n": len(samples), "p50_ms": _pct(samples, 50), "p99_ms": _pct(samples, 99)}


def time_many(emb: Embedder, queries: list[str], seconds: float, size: int = 128) -> float:
    done = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        emb.embed(queries[:size])
        done += size
    return round(done / (time.perf_counter() - t0), 1)


def breakdown(emb: Embedder, queries: list[str]) -> dict:
    """One query's time split into tokenizer, model run and pooling (medians, ms)."""
    tok, run, pool = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        enc = emb._tokenizer.encode_batch([q])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        t1 = time.perf_counter()
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = emb._session.run(None, feeds)[0]
        t2 = time.perf_counter()
        w = mask[..., None].astype(np.float32)
        pooled = (hidden * w).sum(axis=1) / w.sum(axis=1)
        pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        t3 = time.perf_counter()
        tok.append(t1 - t0), run.append(t2 - t1), pool.append(t3 - t2)
    med = lambda xs: round(statistics.median(xs) * 1000, 3)  # noqa: E731
    return {"tokenizer_ms": med(tok), "model_ms": med(run), "pooling_ms": med(pool),
            "tokens": int(ids.shape[1])}


def _padded_batch(emb: Embedder, texts: list[str]) -> np.ndarray:
    """The texts in one graph run, padded to the longest (what ``Embedder.embed`` did before it
    ran each text alone): mean pooling over the attention mask, then unit length."""
    encodings = emb._counter.encode_batch(texts)  # special tokens, no truncation here: short texts
    width = max(len(e.ids) for e in encodings)
    ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encodings], dtype=np.int64)
    mask = np.array([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in encodings], dtype=np.int64)
    hidden = emb._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                     "token_type_ids": np.zeros_like(ids)})[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def batching_cost(emb: Embedder, n: int = 128) -> dict:
    """Texts of mixed lengths: one run each (``embed``) against padded batches of 32, sorted by
    length; sentences/s of each, and the cosine of each batched vector to the same text alone."""
    texts = sorted((normalise_query(" ".join(WORDS[(i + j) % 10] for j in range(4 + (i * 37) % 120)))
                    for i in range(n)), key=len)
    t0 = time.perf_counter()
    alone = emb.embed(texts)
    alone_per_s = len(texts) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    batched = np.concatenate([_padded_batch(emb, texts[start:start + 32]) for start in range(0, len(texts), 32)])
    batched_per_s = len(texts) / (time.perf_counter() - t0)
    cosine = (alone * batched).sum(axis=1)
    return {"alone_sentences_per_s": round(alone_per_s, 1), "batched_sentences_per_s": round(batched_per_s, 1),
            "cosine_batched_to_alone": {"min": round(float(cosine.min()), 4), "mean": round(float(cosine.mean()), 4)}}


def cache_hit_cost(emb: Embedder, queries: list[str]) -> float:
    for q in queries:
        emb.embed_query(q, tenant="study")
    t0 = time.perf_counter()
    for _ in range(20):
        for q in queries:
            emb.embed_query(q, tenant="study")
    return round((time.perf_counter() - t0) * 1e6 / (20 * len(queries)), 2)


def interleaved(queries: list[str], rounds: int, *, threads: int = 1) -> dict:
    """Both model versions one query after the other, ``rounds`` times over ``queries``: on a
    machine others load too, each pair of samples sees the same load, so the ratio of the
    medians holds where the absolute figures do not."""
    models = {}
    for v in VARIANTS:
        path, sha = shipped_model(v)
        models[v] = Embedder(path, expected_sha256=sha, threads=threads, cache_size=0)
    for emb in models.values():
        for q in queries[:10]:
            emb.embed_one(q)
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for i in range(rounds):
        q = queries[i % len(queries)]
        for v in (VARIANTS if i % 2 else VARIANTS[::-1]):  # alternate who goes first
            t0 = time.perf_counter()
            models[v].embed_one(q)
            samples[v].append((time.perf_counter() - t0) * 1000)
    out = {v: {"p50_ms": _pct(x, 50), "p99_ms": _pct(x, 99), "n": len(x)} for v, x in samples.items()}
    a, b = models[VARIANTS[0]].embed(queries), models[VARIANTS[1]].embed(queries)
    cosine = (a * b).sum(axis=1)
    return {"load_before": os.getloadavg(), "threads": threads, "by_variant": out,
            "speedup_p50": round(out[VARIANTS[1]]["p50_ms"] / out[VARIANTS[0]]["p50_ms"], 2),
            "cosine_between_versions": {"mean": round(float(cosine.mean()), 4), "min": round(float(cosine.min()), 4)}}


def after_wait(queries: list[str], rounds: int, *, waits_ms: tuple[float, ...] = (1, 4, 16),
               sweep_mb: int = 64, block: int = 50) -> dict:
    """One query at a time after each kind of pause: none (queries back to back), an idle wait of
    each of ``waits_ms`` (as a recall's process waits on the database between two embeddings),
    or ``sweep_mb`` MB read through the caches (the model's weights evicted without the process
    going idle). Each kind runs ``block`` queries in a row, the kinds take turns until each has
    ``rounds``: a steady state per kind, and the same machine load for all. p50 / p99 of the
    model's time alone."""
    path, sha = shipped_model(VARIANTS[0])
    emb = Embedder(path, expected_sha256=sha, threads=1, cache_size=0)
    for q in queries[:20]:
        emb.embed_one(q)
    sweep = np.ones(sweep_mb * 1024 * 1024 // 8)
    pauses = {"none": lambda: None,
              **{f"idle {w:g} ms": (lambda w=w: time.sleep(w / 1000)) for w in waits_ms},
              f"{sweep_mb} MB read": lambda: float(sweep.sum())}
    samples: dict[str, list[float]] = {name: [] for name in pauses}
    i = 0
    while min(len(x) for x in samples.values()) < rounds:
        for name, pause in pauses.items():
            for _ in range(block):
                q = queries[i % len(queries)]
                i += 1
                pause()
                t0 = time.perf_counter()
                emb.embed_one(q)
                samples[name].append((time.perf_counter() - t0) * 1000)
    return {"load_before": os.getloadavg(), "variant": VARIANTS[0],
            "by_pause": {n: {"p50_ms": _pct(x, 50), "p99_ms": _pct(x, 99), "n": len(x)} for n, x in samples.items()}}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="per measurement")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="small batches and samples (the test)")
    parser.add_argument("--interleaved", type=int, default=0, metavar="ROUNDS",
                        help="only the two model versions, one query after the other, ROUNDS times")
    parser.add_argument("--after-wait", type=int, default=0, metavar="ROUNDS",
                        help="only one query after an idle wait, a cache sweep or nothing, ROUNDS times each")
    args = parser.parse_args(argv)
    queries = _queries(200)
    if args.interleaved or args.after_wait:
        result = (interleaved(queries, args.interleaved) if args.interleaved
                  else after_wait(queries, args.after_wait))
        print(json.dumps(result, indent=2))
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=2))
        return result
    batch, sample = (32, 10) if args.quick else (128, 150)
    rows = []
    ctx = mp.get_context("spawn")
    for busy in (0, 1, 2):
        stop = ctx.Event()
        procs = [ctx.Process(target=_busy, args=(stop,), daemon=True) for _ in range(busy)]
        for p in procs:
            p.start()
        time.sleep(0.3)
        try:
            for variant in VARIANTS:
                path, sha = shipped_model(variant)
                for threads in (1, 2):
                    for spinning in (False, True):
                        if threads == 1 and spinning:
                            continue  # one thread: no pool, nothing spins
                        emb = Embedder(path, expected_sha256=sha, threads=threads, spinning=spinning, cache_size=0)
                        one = time_one(emb, queries, args.seconds)
                        rows.append({"busy_cores": busy, "variant": variant, "threads": threads,
                                     "spinning": spinning, **one,
                                     "sentences_per_s": time_many(emb, queries, args.seconds, batch)})
        finally:
            stop.set()
            for p in procs:
                p.join(timeout=5)
    path, sha = shipped_model(VARIANTS[0])
    emb = Embedder(path, expected_sha256=sha, threads=1, cache_size=1024)
    result = {
        "load_before": os.getloadavg(),
        "rows": rows,
        "breakdown_threads1": breakdown(emb, queries[:sample]),
        "batching": batching_cost(emb, batch),
        "cache_hit_us": cache_hit_cost(emb, queries[:100]),
    }
    print(f"load average at start: {result['load_before'][0]:.2f}")
    print("| busy cores | model | threads | spinning | one query p50 / p99 ms | sentences/s through embed |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['busy_cores']} | {r['variant']} | {r['threads']} | {'on' if r['spinning'] else 'off'} | "
              f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f} | {r['sentences_per_s']:.0f} |")
    b = result["breakdown_threads1"]
    print(f"one query ({b['tokens']} tokens, 1 thread, {VARIANTS[0]}): tokenizer {b['tokenizer_ms']} ms, "
          f"model {b['model_ms']} ms, pooling {b['pooling_ms']} ms")
    print(f"one run per text against padded batches of 32 (mixed lengths): {result['batching']}")
    print(f"cache hit: {result['cache_hit_us']} µs")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
