"""Held-out evaluation: MiniLM cosine (shipped ``Embedder``) vs the cross-encoder (int8 ONNX).

    python -m research.pairmodel.evaluate --int8 .data/pairmodel/run1/pair-scorer.int8.onnx \
        --fp32 .data/pairmodel/run1/pair-scorer.fp32.onnx --out research/pairmodel/results.json

Held-out side only (``research/splits.py``):
- QQP held-out pairs (all of them unless ``--qqp-sample N``: a fixed random sample, seed 0).
- Python FAQ held-out: positives (question, paraphrase) and (question, paraphrases_extra);
  negatives (question, twin with answered_by_source false) where the entry has such twins,
  else (question, distinct). Also reported: the same positives against only the twin
  negatives, and against only the ``distinct`` negatives (the original FAQ set's definition).
Also reported: cosine and the cross-encoder logit combined by a 2-feature logistic regression
fit on the QQP calibration dev slice (both scores exist at recall time for a candidate).
Metrics: ROC AUC, TPR at FPR 5 % and 10 %. Latency of the int8 model with one intra-op
thread: 500 single pairs and 500 batches of 2 (p50/p99, model run alone and with tokenisation).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from research.pairmodel.data import CALIBRATION, FAQ_HARD, HELD_OUT, Pair, faq, qqp
from research.pairmodel.export import OnnxScorer
from research.pairmodel.metrics import roc_auc, tpr_at_fpr


def metrics(labels: ArrayLike, scores: ArrayLike) -> dict:
    return {
        "auc": round(roc_auc(labels, scores), 4),
        "tpr@fpr5": round(tpr_at_fpr(labels, scores, 0.05), 4),
        "tpr@fpr10": round(tpr_at_fpr(labels, scores, 0.10), 4),
    }


def cosine_scores(pairs: list[Pair]) -> np.ndarray:
    """The shipped embedding's cosine of each pair's two texts (each distinct text embedded once)."""
    from cachecore.embedding import Embedder

    emb = Embedder(threads=2)
    texts = sorted({p.a for p in pairs} | {p.b for p in pairs})
    vecs = emb.embed(texts)
    index = {t: i for i, t in enumerate(texts)}
    a = vecs[[index[p.a] for p in pairs]]
    b = vecs[[index[p.b] for p in pairs]]
    return (a * b).sum(axis=1)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 50) -> np.ndarray:
    """Weights (bias first) of a logistic regression by Newton's method."""
    X = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ w))
        g = X.T @ (p - y) + l2 * w
        H = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(len(w))
        w -= np.linalg.solve(H, g)
    return w


def latency(path: Path, pairs: list[tuple[str, str]], n: int = 500) -> dict:
    scorer = OnnxScorer(path, threads=1)
    out = {}
    for batch in (1, 2):
        model_ms, total_ms = [], []
        for i in range(20):  # warm-up
            scorer.session.run(None, scorer.feeds(pairs[i : i + batch]))
        for i in range(n):
            chunk = [pairs[(i * batch + j) % len(pairs)] for j in range(batch)]
            t0 = time.perf_counter()
            feeds = scorer.feeds(chunk)
            t1 = time.perf_counter()
            scorer.session.run(None, feeds)
            t2 = time.perf_counter()
            model_ms.append((t2 - t1) * 1000)
            total_ms.append((t2 - t0) * 1000)
        out[f"batch{batch}"] = {
            "calls": n,
            "model_ms_min": round(float(np.min(model_ms)), 3),
            "model_ms_p50": round(float(np.percentile(model_ms, 50)), 3),
            "model_ms_p99": round(float(np.percentile(model_ms, 99)), 3),
            "with_tokenisation_ms_p50": round(float(np.percentile(total_ms, 50)), 3),
            "with_tokenisation_ms_p99": round(float(np.percentile(total_ms, 99)), 3),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--int8", required=True, type=Path)
    ap.add_argument("--fp32", type=Path, help="also score the fp32 export (int8 agreement)")
    ap.add_argument("--qqp-sample", type=int, default=0, help="0 = all held-out QQP pairs")
    ap.add_argument("--out", type=Path, default=Path("research/pairmodel/results.json"))
    ap.add_argument("--threads", type=int, default=2, help="threads for the bulk scoring (not the latency run)")
    args = ap.parse_args(argv)

    q = qqp(HELD_OUT)
    if args.qqp_sample:
        random.Random(0).shuffle(q)
        q = q[: args.qqp_sample]
    f = faq(HELD_OUT, report=True)
    sets = {
        "qqp_held_out": q,
        "faq_held_out": f,
        # the two kinds of negative separately, each against all the positives
        "faq_held_out_twins_only": [p for p in f if p.label == 1 or p.source == "faq_hard:twin"],
        "faq_held_out_distinct_only": [p for p in f if p.label == 1]
        + [p for p in faq(HELD_OUT) if p.source == "faq:distinct"],
    }
    results: dict = {
        "faq_hard_file_present": FAQ_HARD.is_file(),
        "counts": {
            k: {"pairs": len(v), "pos": sum(p.label for p in v), "neg": sum(1 - p.label for p in v)}
            for k, v in sets.items()
        },
        "qqp_sample": args.qqp_sample or "all",
        "metrics": {},
    }
    int8 = OnnxScorer(args.int8, threads=args.threads)
    fp32 = OnnxScorer(args.fp32, threads=args.threads) if args.fp32 else None
    # cosine + cross-encoder logit, combined by a logistic regression fit on the QQP calibration
    # dev slice (never trained on, never held out): both are available at recall time
    dev = qqp(CALIBRATION, dev=True)
    w = fit_logistic(
        np.stack([cosine_scores(dev), int8.logits([(p.a, p.b) for p in dev])], axis=1),
        np.array([p.label for p in dev], dtype=np.float64),
    )
    results["combined_weights_bias_cosine_logit"] = [round(float(v), 4) for v in w]
    results["combined_fit_on"] = f"QQP calibration dev slice ({len(dev)} pairs)"
    for name, pairs in sets.items():
        y = [p.label for p in pairs]
        t0 = time.time()
        cos = cosine_scores(pairs)
        t1 = time.time()
        l8 = int8.logits([(p.a, p.b) for p in pairs])
        t2 = time.time()
        m = {
            "minilm_cosine": metrics(y, cos),
            "cross_encoder_int8": metrics(y, l8),
            "cosine_plus_cross_encoder": metrics(y, w[0] + w[1] * cos + w[2] * l8),
            "seconds": {"cosine": round(t1 - t0, 1), "cross_encoder_int8": round(t2 - t1, 1)},
        }
        if fp32 is not None:
            l32 = fp32.logits([(p.a, p.b) for p in pairs])
            m["cross_encoder_fp32"] = metrics(y, l32)
            s8, s32 = 1 / (1 + np.exp(-l8)), 1 / (1 + np.exp(-l32))
            m["int8_vs_fp32_sigmoid_max_abs_diff"] = round(float(np.abs(s8 - s32).max()), 4)
            m["int8_vs_fp32_sigmoid_mean_abs_diff"] = round(float(np.abs(s8 - s32).mean()), 4)
        results["metrics"][name] = m
        print(name, json.dumps(m), flush=True)

    lat_pairs = [(p.a, p.b) for p in f] + [(p.a, p.b) for p in q[:500]]
    import os

    results["load_average_before_latency"] = os.getloadavg()
    results["latency_int8_intra_op_1"] = latency(args.int8, lat_pairs)
    results["load_average_after_latency"] = os.getloadavg()
    results["latency_note"] = (
        f"{platform.processor() or platform.machine()}, shared 2-core machine (other jobs running), "
        "onnxruntime 1.32.0, max_len 64, pairs drawn from the held-out FAQ and QQP sets"
    )
    print(json.dumps(results["latency_int8_intra_op_1"], indent=2))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
