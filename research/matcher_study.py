"""Matcher study: which matcher separates paraphrases from near misses best (issue 6).

Builds a labelled pair set from the test data, splits it by question group (60/40, hash of
the group id), embeds every question as recall does (normalised, all-MiniLM-L6-v2 int8),
trains the second-stage pair scorer (``cachecore.engine.pairfeatures``) on the train split and
compares on the test split:

* embedding only (at the default 0.51 and at the best-F0.5 threshold chosen on train), with
  and without the polarity guard;
* lexical only (pg_trgm-style trigram similarity of the normalised questions);
* hybrid (weighted sum of cosine and trigram, weight and threshold chosen on train);
* learned: first stage cosine >= a low threshold, then the pair scorer;
* optionally a second embedding model shipped inside a PyPI wheel (``--alt-model PATH``).

For each: paraphrase hit rate, false-hit rate, and false hits split into false prefetch and
false hint: a false hit whose coverage (max cosine of the query against the chunks of the
sections the matched trail cites: the FAQ entry's gold sections, or the pair's passage) is
under the coverage floor is escalated to a hint by recall. Pairs without passage (the
hand-written matcher pairs) have unknown coverage.

No Django. ``python -m research.matcher_study [--no-write] [--alt-model PATH.onnx]``: retrains
(deterministic), prints the table, writes ``cachecore/engine/matcher_weights.json`` and
``reports/matcher/study.{json,md}``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cachecore.engine.pairfeatures import FEATURES, WEIGHTS_PATH, PairScorer, pair_features, trigram_similarity
from cachecore.engine.polarity import polarity_conflict
from cachecore.engine.text import normalise_query, split_chunks

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
FAQ_PATH = DATA / "eval" / "python_faq.jsonl"
PAIRS_PATH = DATA / "paraphrase_pairs.jsonl"
MATCHER_PAIRS_PATH = DATA / "matcher_pairs.jsonl"
DOCS_ROOT = Path("/usr/share/doc/python3.11/html/_sources")
REPORT_DIR = ROOT / "reports" / "matcher"

VERSION = "1"
TRAIN_SHARE = 60  # percent of question groups
DEFAULT_THRESHOLD = 0.51
COVERAGE_FLOOR = 0.32
FIRST_STAGE = 0.45
BETA = 0.5
SEED = 6
L2 = 1.0
THRESHOLDS = tuple(round(0.20 + i / 100, 2) for i in range(76))  # 0.20 .. 0.95
HYBRID_WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass
class LabelledPair:
    group: str
    source: str  # faq | pairs | matcher
    a: str  # the trail's question (normalised)
    b: str  # the new query (normalised)
    positive: bool
    kind: str  # paraphrase | near_miss | unrelated | distinct
    gold: tuple[str, ...] = ()
    passage: str | None = None
    cosine: float = 0.0
    coverage: float | None = None
    alt_cosine: dict[str, float] = field(default_factory=dict)

    @property
    def train(self) -> bool:
        return in_train(self.group)


def in_train(group: str) -> bool:
    return int(hashlib.sha256(group.encode()).hexdigest(), 16) % 100 < TRAIN_SHARE


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build_pairs(
    faq_path: Path = FAQ_PATH, pairs_path: Path = PAIRS_PATH, matcher_path: Path = MATCHER_PAIRS_PATH
) -> list[LabelledPair]:
    """FAQ question↔paraphrase (positive), question↔distinct and paraphrase↔distinct
    (negative), grouped by FAQ id; the labelled pair files grouped by their first question."""
    n = normalise_query
    out: list[LabelledPair] = []
    for row in _jsonl(faq_path):
        gold = tuple(row["gold"])
        q = row["question"]
        for p in row["paraphrases"]:
            out.append(LabelledPair(row["id"], "faq", n(q), n(p), True, "paraphrase", gold))
        for d in row["distinct"]:
            out.append(LabelledPair(row["id"], "faq", n(q), n(d), False, "distinct", gold))
            for p in row["paraphrases"]:
                out.append(LabelledPair(row["id"], "faq", n(p), n(d), False, "distinct", gold))
    for source, path in (("pairs", pairs_path), ("matcher", matcher_path)):
        for row in _jsonl(path):
            out.append(LabelledPair(
                f"{source}:{n(row['a'])}", source, n(row["a"]), n(row["b"]), row["label"] == "paraphrase",
                row["label"], passage=row.get("passage"),
            ))
    return out


# Light rewordings a user re-asking the same question types: the commonest cache hit. The
# labelled sets are all deliberate rewordings, so without these the scorer learns that high
# lexical overlap means a near miss and turns away a repeated question.
_REWORDINGS = (
    ("how do i ", "how can i "),
    ("how do i ", "how to "),
    ("what is ", "what's "),
    ("is there a way to ", "can i "),
    ("why does ", "why is it that "),
    (" the ", " "),
)


def near_duplicates(pairs: Sequence[LabelledPair]) -> list[LabelledPair]:
    """For each distinct trail question: the question itself and up to two light rewordings
    (plus " in python" when no rule applies), labelled positive, in the question's group."""
    out: list[LabelledPair] = []
    seen: set[str] = set()
    for p in pairs:
        if p.a in seen:
            continue
        seen.add(p.a)
        variants = [p.a]
        for old, new in _REWORDINGS:
            if old in f" {p.a} " and len(variants) < 3:
                variants.append(f" {p.a} ".replace(old, new, 1).strip())
        if len(variants) < 3 and "python" not in p.a:
            variants.append(f"{p.a} in python")
        for v in variants:
            out.append(LabelledPair(p.group, "near_duplicate", p.a, v, True, "near_duplicate", p.gold, p.passage))
    return out


def gold_texts(ids: set[str], root: Path = DOCS_ROOT) -> dict[str, str]:
    from docingest import split_tree

    return {s.id: s.text for s in split_tree(root) if s.id in ids}


def embed_pairs(pairs: list[LabelledPair], embed: Callable[[Sequence[str]], np.ndarray], *, coverage: bool) -> None:
    """Cosine of every pair; coverage too (from the same embedder) when asked."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = dict(zip(texts, embed(texts)))
    for p in pairs:
        p.cosine = float(vectors[p.a] @ vectors[p.b])
    if not coverage:
        return
    gold = gold_texts({g for p in pairs for g in p.gold})
    passages = {}
    for p in pairs:
        key = p.gold or (p.passage,)
        if key in passages or (not p.gold and not p.passage):
            continue
        body = [gold[g] for g in p.gold if g in gold] if p.gold else [p.passage]
        passages[key] = [c for text in body for c in split_chunks(text)]
    chunk_texts = sorted({c for cs in passages.values() for c in cs})
    chunk_vectors = dict(zip(chunk_texts, embed(chunk_texts)))
    for p in pairs:
        chunks = passages.get(p.gold or (p.passage,))
        if chunks:
            matrix = np.stack([chunk_vectors[c] for c in chunks])
            p.coverage = float(np.max(matrix @ vectors[p.b]))


# -- the learned scorer ------------------------------------------------------------------


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float = L2, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method (deterministic) on standardised features with an
    L2 penalty (not on the bias); returns weights and bias on the raw features."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(z.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    weights = w[:-1] / scale
    bias = float(w[-1] - np.sum(w[:-1] * mean / scale))
    return weights, bias


def _f_beta(tp: int, fp: int, n_pos: int, beta: float = BETA) -> float:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / n_pos if n_pos else 0.0
    b2 = beta * beta
    denom = b2 * precision + recall
    return (1 + b2) * precision * recall / denom if denom else 0.0


def best_threshold(
    scores: Sequence[float], labels: Sequence[bool], grid: Sequence[float], beta: float = BETA
) -> float:
    """The threshold of ``grid`` with the best F-beta (the lowest on ties)."""
    s = np.asarray(scores)
    y = np.asarray(labels, dtype=bool)
    best, best_f = grid[0], -1.0
    for t in grid:
        hit = s >= t
        f = _f_beta(int(np.sum(hit & y)), int(np.sum(hit & ~y)), int(y.sum()), beta)
        if f > best_f + 1e-12:
            best, best_f = t, f
    return float(best)


# The sign each weight must have: more overlap never lowers the score, a difference (negation,
# polarity, numbers, identifiers, words only one side has) never raises it. The labelled sets
# pair deliberate rewordings with same-template near misses, so an unconstrained fit learns the
# opposite (e.g. "more unshared words, more likely a paraphrase"); a feature whose fitted weight
# has the wrong sign is dropped and the rest refitted. length_ratio is free.
SIGNS = {
    "cosine": 1, "trigram": 1, "content_jaccard": 1, "content_containment": 1,
    "unshared_content": -1, "negation_differs": -1, "polarity_conflict": -1, "numbers_differ": -1,
    "identifiers_differ": -1,
}


def train_scorer(
    train: list[LabelledPair], *, first_stage: float = FIRST_STAGE, beta: float = BETA
) -> PairScorer:
    """Fit on the train pairs (labelled and near-duplicate) that pass a slightly lower first
    stage (what the scorer will see), then choose the decision threshold for the two-stage
    decision on the labelled train pairs (best F-beta)."""
    fit_on = [p for p in train if p.cosine >= first_stage - 0.1]
    x = np.array([pair_features(p.a, p.b, p.cosine) for p in fit_on])
    y = np.array([1.0 if p.positive else 0.0 for p in fit_on])
    active = list(range(len(FEATURES)))
    while True:
        w_active, bias = fit_logistic(x[:, active], y)
        wrong = {i: w * SIGNS[FEATURES[i]] for i, w in zip(active, w_active) if w * SIGNS.get(FEATURES[i], 0) < 0}
        if not wrong:
            break
        active.remove(min(wrong, key=wrong.__getitem__))
    weights = np.zeros(len(FEATURES))
    weights[active] = w_active
    provisional = PairScorer(tuple(float(w) for w in weights), bias, 0.5, first_stage, FEATURES, VERSION)
    labelled = [p for p in train if p.source != "near_duplicate"]
    scores = [provisional.score(p.a, p.b, p.cosine) if p.cosine >= first_stage else 0.0 for p in labelled]
    grid = [round(i / 100, 2) for i in range(5, 96)]
    threshold = best_threshold(scores, [p.positive for p in labelled], grid, beta)
    rounded = tuple(round(float(w), 6) for w in weights)
    return PairScorer(rounded, round(bias, 6), threshold, first_stage, FEATURES, VERSION)


# -- matchers and metrics ----------------------------------------------------------------


def _hybrid(p: LabelledPair, weight: float) -> float:
    return weight * p.cosine + (1 - weight) * trigram_similarity(p.a, p.b)


def _guarded(fn: Callable[[LabelledPair], bool]) -> Callable[[LabelledPair], bool]:
    return lambda p: fn(p) and polarity_conflict(p.a, p.b) is None


def evaluate(pairs: list[LabelledPair], hit: Callable[[LabelledPair], bool], floor: float = COVERAGE_FLOOR) -> dict:
    pos = [p for p in pairs if p.positive]
    neg = [p for p in pairs if not p.positive]
    tp = sum(1 for p in pos if hit(p))
    false_hits = [p for p in neg if hit(p)]
    known = [p for p in neg if p.coverage is not None]
    fh_known = [p for p in false_hits if p.coverage is not None]
    prefetch = sum(1 for p in fh_known if p.coverage >= floor)
    near = [p for p in neg if p.kind in ("near_miss", "distinct")]
    return {
        "paraphrase_hit": tp / len(pos) if pos else 0.0,
        "false_hit": len(false_hits) / len(neg) if neg else 0.0,
        "near_miss_false_hit": sum(1 for p in near if hit(p)) / len(near) if near else 0.0,
        "false_prefetch": prefetch / len(known) if known else 0.0,
        "false_hint": (len(fh_known) - prefetch) / len(known) if known else 0.0,
        "false_hits": len(false_hits),
        "false_prefetch_n": prefetch,
        "false_hint_n": len(fh_known) - prefetch,
        "false_hit_unknown_coverage_n": len(false_hits) - len(fh_known),
        "f0_5": _f_beta(tp, len(false_hits), len(pos)),
        "positives": len(pos),
        "negatives": len(neg),
    }


HIT_RATES = (0.4, 0.5, 0.6, 0.7, 0.8)


def false_hit_at_hit_rates(scores: np.ndarray, positive: np.ndarray) -> dict[str, float]:
    """The false-hit rate of a score at the threshold that lets each share of the paraphrases
    hit: compares matchers' discrimination independently of their operating points."""
    ranked = np.sort(scores[positive])[::-1]
    out = {}
    for rate in HIT_RATES:
        t = ranked[max(0, int(round(rate * len(ranked))) - 1)]
        out[f"{rate:.0%}"] = float(np.mean(scores[~positive] >= t))
    return out


def _timed_per_pair(fn: Callable[[LabelledPair], object], pairs: list[LabelledPair], repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        for p in pairs:
            fn(p)
        best = min(best, (time.perf_counter() - start) / len(pairs))
    return best * 1000.0


class OnnxMeanPoolEmbedder:
    """A sentence-transformers ONNX export (token embeddings out) with mean pooling and the
    BERT uncased tokenizer recall uses: for measuring an alternative model only."""

    def __init__(self, model_path: Path, tokenizer_path: Path | None = None, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from cachecore.embedding import _default_tokenizer_path

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        # The token-embedding output: the first 3-d one.
        self.output = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path or _default_tokenizer_path()))
        self.tokenizer.enable_truncation(max_length=256)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 32):
            enc = self.tokenizer.encode_batch(list(texts[start : start + 32]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run([self.output], feeds)[0]
            w = mask[..., None].astype(np.float32)
            pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
            out.append(pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None))
        return np.vstack(out).astype(np.float32)


def _query_latency_ms(embed: Callable[[Sequence[str]], np.ndarray], queries: list[str]) -> float:
    embed(queries[:3])
    start = time.perf_counter()
    for q in queries:
        embed([q])
    return (time.perf_counter() - start) / len(queries) * 1000.0


def _cached(embed: Callable[[Sequence[str]], np.ndarray], name: str) -> Callable[[Sequence[str]], np.ndarray]:
    """``embed`` memoised on disk under $MATCHER_STUDY_CACHE (a folder) when set: for
    iterating on the study; the real run embeds everything."""
    import os
    import pickle

    folder = os.environ.get("MATCHER_STUDY_CACHE")
    if not folder:
        return embed
    path = Path(folder) / f"{name}.pkl"
    memo: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}

    def wrapped(texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in memo]
        if missing:
            memo.update(zip(missing, embed(missing)))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(memo))
        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)

    return wrapped


def run(*, alt_models: Sequence[Path] = (), write: bool = True) -> dict:
    from cachecore.embedding import Embedder

    pairs = build_pairs()
    dups = near_duplicates(pairs)
    embedder = Embedder(threads=1)
    embed_pairs(pairs + dups, _cached(embedder.embed, "minilm-int8"), coverage=True)
    train = [p for p in pairs if p.train]
    test = [p for p in pairs if not p.train]
    dup_train = [p for p in dups if p.train]
    dup_test = [p for p in dups if not p.train]

    scorer = train_scorer(train + dup_train)
    scorer_f1 = train_scorer(train + dup_train, beta=1.0)
    y_train = [p.positive for p in train]
    t_emb = best_threshold([p.cosine for p in train], y_train, THRESHOLDS)
    t_emb_guard = best_threshold(
        [p.cosine if polarity_conflict(p.a, p.b) is None else 0.0 for p in train], y_train, THRESHOLDS
    )
    trgm = {id(p): trigram_similarity(p.a, p.b) for p in pairs + dups}
    t_lex = best_threshold(
        [trgm[id(p)] if polarity_conflict(p.a, p.b) is None else 0.0 for p in train], y_train, THRESHOLDS
    )
    hybrid_choice = None
    for w in HYBRID_WEIGHTS:
        scores = [_hybrid(p, w) if polarity_conflict(p.a, p.b) is None else 0.0 for p in train]
        t = best_threshold(scores, y_train, THRESHOLDS)
        hit = np.asarray(scores) >= t
        y = np.asarray(y_train)
        f = _f_beta(int(np.sum(hit & y)), int(np.sum(hit & ~y)), int(y.sum()))
        if hybrid_choice is None or f > hybrid_choice[2] + 1e-12:
            hybrid_choice = (w, t, f)
    w_hyb, t_hyb, _ = hybrid_choice

    candidates: dict[str, tuple[Callable[[LabelledPair], bool], str]] = {
        "embedding @0.51": (lambda p: p.cosine >= DEFAULT_THRESHOLD, "cosine >= 0.51"),
        f"embedding @{t_emb:.2f} (best F0.5 on train)": (lambda p: p.cosine >= t_emb, f"cosine >= {t_emb:.2f}"),
        "embedding + polarity guard @0.51 (current default)": (
            _guarded(lambda p: p.cosine >= DEFAULT_THRESHOLD), "cosine >= 0.51, guard"),
        f"embedding + guard @{t_emb_guard:.2f}": (
            _guarded(lambda p: p.cosine >= t_emb_guard), f"cosine >= {t_emb_guard:.2f}, guard"),
        f"lexical (trigram) + guard @{t_lex:.2f}": (
            _guarded(lambda p: trgm[id(p)] >= t_lex), f"similarity() >= {t_lex:.2f}, guard"),
        f"hybrid {w_hyb:.1f}*cos+{1 - w_hyb:.1f}*trgm + guard @{t_hyb:.2f}": (
            _guarded(lambda p: _hybrid(p, w_hyb) >= t_hyb), "weighted sum, guard"),
        f"learned (cos >= {scorer.first_stage_threshold:.2f}, then scorer >= {scorer.threshold:.2f})": (
            lambda p: scorer.matches(p.a, p.b, p.cosine), "two-stage, threshold for best F0.5 on train"),
        f"learned, recall-leaning (scorer >= {scorer_f1.threshold:.2f}, best F1 on train)": (
            lambda p: scorer_f1.matches(p.a, p.b, p.cosine), "two-stage, threshold for best F1 on train"),
    }
    feature_ms = _timed_per_pair(lambda p: scorer.score(p.a, p.b, p.cosine), test)
    trigram_ms = _timed_per_pair(lambda p: trigram_similarity(p.a, p.b), test)
    guard_ms = _timed_per_pair(lambda p: polarity_conflict(p.a, p.b), test)
    queries = sorted({p.b for p in test})[:200]
    base_query_ms = _query_latency_ms(embedder.embed, queries)
    latency = {
        "embedding @0.51": 0.0,
        "guard_per_candidate_ms": guard_ms,
        "trigram_per_candidate_ms": trigram_ms,
        "scorer_per_candidate_ms": feature_ms,
        "query_embedding_ms": base_query_ms,
    }
    rows = []
    for name, (fn, rule) in candidates.items():
        rows.append({"matcher": name, "rule": rule, "test": evaluate(test, fn), "train": evaluate(train, fn),
                     "near_duplicate_hit": sum(map(fn, dup_test)) / len(dup_test)})

    y_test = np.array([p.positive for p in test])
    unguarded = [polarity_conflict(p.a, p.b) is None for p in test]
    first = scorer.first_stage_threshold
    curves = {
        "embedding + guard": [p.cosine if ok else 0.0 for p, ok in zip(test, unguarded)],
        f"hybrid {w_hyb:.1f} + guard": [_hybrid(p, w_hyb) if ok else 0.0 for p, ok in zip(test, unguarded)],
        "learned": [scorer.score(p.a, p.b, p.cosine) if p.cosine >= first else 0.0 for p in test],
    }
    matched = {name: false_hit_at_hit_rates(np.array(sc), y_test) for name, sc in curves.items()}

    alternatives = []
    for model_path in alt_models:
        alt = OnnxMeanPoolEmbedder(model_path)
        alt_pairs = build_pairs()
        alt_dups = near_duplicates(alt_pairs)
        embed_pairs(alt_pairs + alt_dups, _cached(alt.embed, model_path.stem), coverage=False)
        for p, q in zip(alt_pairs, pairs):
            p.coverage = q.coverage  # recall's coverage stays with the production model
        alt_train = [p for p in alt_pairs if p.train]
        alt_test = [p for p in alt_pairs if not p.train]
        alt_dup_test = [p for p in alt_dups if not p.train]
        t_alt = best_threshold(
            [p.cosine if polarity_conflict(p.a, p.b) is None else 0.0 for p in alt_train],
            [p.positive for p in alt_train], THRESHOLDS,
        )
        alt_scorer = train_scorer(alt_train + [p for p in alt_dups if p.train])
        size_mb = model_path.stat().st_size / 1e6
        ms = _query_latency_ms(alt.embed, queries)
        name = model_path.stem
        for label, fn in (
            (f"{name} + guard @{t_alt:.2f}", _guarded(lambda p, t=t_alt: p.cosine >= t)),
            (f"{name} learned (cos >= {FIRST_STAGE}, scorer >= {alt_scorer.threshold:.2f})",
             lambda p, s=alt_scorer: s.matches(p.a, p.b, p.cosine)),
        ):
            rows.append({"matcher": label, "rule": "alternative model", "test": evaluate(alt_test, fn),
                         "train": evaluate(alt_train, fn),
                         "near_duplicate_hit": sum(map(fn, alt_dup_test)) / len(alt_dup_test)})
        alternatives.append({"model": name, "path": str(model_path), "size_mb": round(size_mb, 1),
                             "query_ms": round(ms, 2)})

    result = {
        "version": VERSION,
        "split": {"train_pairs": len(train), "test_pairs": len(test), "near_duplicates_train": len(dup_train),
                  "near_duplicates_test": len(dup_test),
                  "train_groups": len({p.group for p in train}), "test_groups": len({p.group for p in test}),
                  "test_positives": sum(p.positive for p in test), "test_negatives": sum(not p.positive for p in test)},
        "coverage_floor": COVERAGE_FLOOR,
        "rows": rows,
        "latency": latency,
        "false_hit_at_matched_paraphrase_hit": matched,
        "alternatives": alternatives,
        "scorer": _scorer_dict(scorer, hybrid=(w_hyb, t_hyb), lexical=t_lex),
    }
    if write:
        with open(WEIGHTS_PATH, "w", encoding="utf-8") as fh:
            json.dump(result["scorer"], fh, indent=2)
            fh.write("\n")
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        (REPORT_DIR / "study.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        (REPORT_DIR / "study.md").write_text(render_markdown(result), encoding="utf-8")
    return result


def _scorer_dict(scorer: PairScorer, *, hybrid: tuple[float, float], lexical: float) -> dict:
    return {
        "version": VERSION,
        "features": list(scorer.features),
        "weights": list(scorer.weights),
        "bias": scorer.bias,
        "threshold": scorer.threshold,
        "first_stage_threshold": scorer.first_stage_threshold,
        "trained_on": "tests/data: python_faq + paraphrase_pairs + matcher_pairs, train split (60% of groups)",
        "hybrid": {"cosine_weight": hybrid[0], "threshold": hybrid[1]},
        "lexical": {"threshold": lexical},
    }


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_markdown(result: dict) -> str:
    s = result["split"]
    lines = [
        "# Matcher study (issue 6)",
        "",
        f"Test split: {s['test_pairs']} pairs ({s['test_positives']} paraphrases, {s['test_negatives']} negatives) "
        f"from {s['test_groups']} question groups; train: {s['train_pairs']} pairs, {s['train_groups']} groups. "
        f"Coverage floor {result['coverage_floor']}: a false hit under it is escalated to a hint.",
        "",
        "| matcher | paraphrase hit | false hit | near-miss false hit | false prefetch | false hint | "
        "false hits, coverage unknown | F0.5 | near-duplicate hit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        t = row["test"]
        lines.append(
            f"| {row['matcher']} | {_pct(t['paraphrase_hit'])} | {_pct(t['false_hit'])} ({t['false_hits']}) | "
            f"{_pct(t['near_miss_false_hit'])} | {_pct(t['false_prefetch'])} ({t['false_prefetch_n']}) | "
            f"{_pct(t['false_hint'])} ({t['false_hint_n']}) | {t['false_hit_unknown_coverage_n']} | {t['f0_5']:.3f} | "
            f"{_pct(row['near_duplicate_hit'])} |"
        )
    lat = result["latency"]
    lines += ["", "## False hit at matched paraphrase hit (test split)", "",
              "| matcher | " + " | ".join(f"{r:.0%} hit" for r in HIT_RATES) + " |",
              "|---|" + "---|" * len(HIT_RATES)]
    for name, by_rate in result["false_hit_at_matched_paraphrase_hit"].items():
        lines.append(f"| {name} | " + " | ".join(_pct(v) for v in by_rate.values()) + " |")
    lines += [
        "",
        "False prefetch and false hint are shares of the negatives whose coverage is known (FAQ and "
        "paraphrase_pairs); hand-written matcher pairs have no passage.",
        "",
        "## Latency (2 cores, one thread)",
        "",
        f"* query embedding (all-MiniLM-L6-v2 int8): {lat['query_embedding_ms']:.2f} ms per query",
        f"* polarity guard: {lat['guard_per_candidate_ms'] * 1000:.0f} µs per candidate",
        f"* trigram similarity: {lat['trigram_per_candidate_ms'] * 1000:.0f} µs per candidate",
        f"* learned scorer (features + logistic): {lat['scorer_per_candidate_ms'] * 1000:.0f} µs per candidate "
        f"(at most 5 candidates per recall)",
    ]
    for alt in result["alternatives"]:
        lines.append(f"* {alt['model']}: {alt['size_mb']} MB, {alt['query_ms']:.2f} ms per query")
    sc = result["scorer"]
    lines += ["", "## Learned scorer", "", f"first stage cosine >= {sc['first_stage_threshold']}, "
              f"decision score >= {sc['threshold']}", "", "| feature | weight |", "|---|---|"]
    lines += [f"| {f} | {w:+.3f} |" for f, w in zip(sc["features"], sc["weights"])]
    lines += [f"| (bias) | {sc['bias']:+.3f} |", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--alt-model", action="append", default=[], type=Path,
                        help="an ONNX sentence-transformers export to compare (not used by recall)")
    args = parser.parse_args(argv)
    result = run(alt_models=args.alt_model, write=not args.no_write)
    sys.stdout.write(render_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
