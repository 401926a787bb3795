"""QQP replayed as a cache sees it, through the product's own service functions.

``python -m research.qqp_cache [--side held_out] [--trails 10000] [--duplicates 500]
[--non-duplicates 500] [--seed 0] [--set FIELD=VALUE ...] [--out reports/qqp/latest] [--keep-tenant]``

A throw-away tenant gets one section per trail question (``qqp/<n>``, the question itself,
chunk embeddings computed in the call) and one active trail per trail question citing it
(``trail_record``, positive caller signal). The trail questions are the ``a`` questions of a
seeded sample of duplicate and non-duplicate pairs of one side of the split
(``research.splits``), topped up with other distinct questions of the same side. Then the
``b`` question of every sampled pair is recalled (``recall``) and classified: served its pair's
trail (prefetch / hint), another trail (prefetch / hint), or a miss — each rate with a Wilson
95 % interval. A sweep of the raw cosine between the normalised ``a`` and ``b`` shows the
cosine-only trade-off. Writes ``report.json``, ``summary.md`` and ``details.jsonl``.

Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from research.splits import HELD_OUT, QQP_PATH, REPO_ROOT, QQPPair, qqp_pairs
from research.stats import percentile, proportion

DEFAULT_OUT = REPO_ROOT / "reports" / "qqp" / "latest"
SCOPE = "qqp"
UPSERT_BATCH = 1000
SWEEP = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))   # 0.50 … 0.95
OUTCOMES = ("prefetch", "hint", "miss")
SUMMARY_SETTINGS = ("similarity_threshold", "coverage_floor", "prefetch_confidence", "hint_confidence", "match_mode",
                    "polarity_guard", "merge_trails")
# Exclusive categories of one recalled query (strict: "own" = the pair's trail is the best).
CATEGORIES = ("own_prefetch", "own_hint", "other_prefetch", "other_hint", "miss", "unexpected")
CATEGORY_LABELS = {
    "own_prefetch": "served its pair's trail as prefetch",
    "own_hint": "served its pair's trail as hint",
    "other_prefetch": "served another trail as prefetch",
    "other_hint": "served another trail as hint",
    "miss": "miss",
    "unexpected": "unexpected outcome",
}


@dataclass
class QQPConfig:
    side: str = HELD_OUT
    seed: int = 0
    trails: int = 10_000
    duplicates: int = 500
    non_duplicates: int = 500
    overrides: dict[str, Any] = field(default_factory=dict)
    keep_tenant: bool = False
    progress: bool = True
    tenant_slug: str | None = None
    qqp_path: Path = QQP_PATH
    # Log every qualifying candidate's evidence (recall(explain=True)) in the details, in the
    # row shape research.match_calibration fits on.
    explain: bool = False


@dataclass(frozen=True)
class Sampled:
    pair: QQPPair
    label: str          # "duplicate" / "non_duplicate"


@dataclass
class Sample:
    pairs: list[Sampled]
    trail_questions: list[str]          # distinct by normalised text; every sampled a is in
    available: dict[str, int]           # pairs of the side usable for sampling, by label
    skipped: dict[str, int]             # sampled-pair candidates rejected, by reason


# ---- sampling (pure) --------------------------------------------------------------------------

def sample_pairs(pairs: Sequence[QQPPair], *, side: str, duplicates: int, non_duplicates: int, trails: int,
                 seed: int, norm: Callable[[str], str]) -> Sample:
    """Seeded sample of one side: the duplicate / non-duplicate pairs whose ``b`` is recalled
    (distinct ``a`` trails, distinct ``b`` queries, no question both a trail and a query, no
    pair whose two questions normalise the same), then trail questions up to ``trails`` from
    the other pairs of the side (their ``a`` and ``b``), never a recalled question."""
    rng = random.Random(seed)
    side_pairs = [(i, p) for i, p in enumerate(pairs) if p.side == side]
    pools = {
        "duplicate": [ip for ip in side_pairs if ip[1].duplicate],
        "non_duplicate": [ip for ip in side_pairs if not ip[1].duplicate],
    }
    trail_q: dict[str, str] = {}      # normalised → text, in order of choice
    recalled: set[str] = set()
    chosen: list[Sampled] = []
    used: set[int] = set()
    skipped: Counter[str] = Counter()
    for label, want in (("duplicate", duplicates), ("non_duplicate", non_duplicates)):
        pool = list(pools[label])
        rng.shuffle(pool)
        taken = 0
        for i, p in pool:
            if taken >= want:
                break
            na, nb = norm(p.a), norm(p.b)
            if not na or not nb:
                skipped["empty question"] += 1
            elif na == nb:
                skipped["a and b normalise the same"] += 1
            elif na in trail_q or na in recalled or nb in trail_q or nb in recalled:
                skipped["question already sampled"] += 1
            else:
                trail_q[na] = p.a
                recalled.add(nb)
                used.add(i)
                chosen.append(Sampled(p, label))
                taken += 1
    fill: list[str] = [q for i, p in side_pairs if i not in used for q in (p.a, p.b)]
    rng.shuffle(fill)
    for q in fill:
        if len(trail_q) >= trails:
            break
        nq = norm(q)
        if nq and nq not in trail_q and nq not in recalled:
            trail_q[nq] = q
    questions = list(trail_q.values())
    rng.shuffle(questions)   # sampled a's are not all recorded first
    return Sample(chosen, questions, {k: len(v) for k, v in pools.items()}, dict(skipped))


def duplicate_clusters(pairs: Sequence[QQPPair], norm: Callable[[str], str]) -> dict[str, str]:
    """Normalised question → representative of its component over duplicate-labelled edges
    (so "another trail" can be told apart when it is itself a labelled duplicate)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        if p.duplicate:
            ra, rb = find(norm(p.a)), find(norm(p.b))
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {q: find(q) for q in list(parent)}


def classify(result: dict[str, Any], pair_trail: str) -> tuple[str, str]:
    """(strict, loose) category of one recall: strict compares the best trail (``trail_id``),
    loose asks whether the pair's trail is among the contributing ``trails``."""
    outcome = result.get("outcome")
    if outcome == "miss":
        return "miss", "miss"
    if outcome not in ("prefetch", "hint"):
        return "unexpected", "unexpected"
    strict = ("own_" if result.get("trail_id") == pair_trail else "other_") + outcome
    loose = ("own_" if pair_trail in (result.get("trails") or []) else "other_") + outcome
    return strict, loose


def tally(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    counts = Counter(r[key] for r in rows)
    return {c: proportion(counts.get(c, 0), len(rows)) for c in CATEGORIES}


def cosine_sweep(details: Sequence[dict[str, Any]], thresholds: Sequence[float] = SWEEP) -> list[dict[str, Any]]:
    dup = [d["pair_cosine"] for d in details if d["label"] == "duplicate"]
    non = [d["pair_cosine"] for d in details if d["label"] == "non_duplicate"]
    out = []
    for t in thresholds:
        kd, kn = sum(c >= t for c in dup), sum(c >= t for c in non)
        out.append({"threshold": t, "duplicates": proportion(kd, len(dup)), "non_duplicates": proportion(kn, len(non)),
                    "precision": round(kd / (kd + kn), 4) if kd + kn else None})
    return out


def _summary_stats(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "mean": round(sum(values) / len(values), 4),
            "p10": round(percentile(values, 10), 4), "p50": round(percentile(values, 50), 4),
            "p90": round(percentile(values, 90), 4)}


def summarise(details: Sequence[dict[str, Any]], latencies_ms: Sequence[float]) -> dict[str, Any]:
    """The report's figures from the per-query details (pure)."""
    out: dict[str, Any] = {}
    for label in ("duplicate", "non_duplicate"):
        rows = [d for d in details if d["label"] == label]
        n = len(rows)
        other = [d for d in rows if d["category"] in ("other_prefetch", "other_hint")]
        block: dict[str, Any] = {
            "n": n,
            "strict": tally(rows, "category"),
            "loose": tally(rows, "category_loose"),
            "any_prefetch": proportion(sum(d["outcome"] == "prefetch" for d in rows), n),
            "escalated": sum(bool(d.get("escalated")) for d in rows),
            "other_trail_labelled_duplicate": {
                c: sum(1 for d in other if d["category"] == c and d["served_labelled_duplicate"])
                for c in ("other_prefetch", "other_hint")
            },
            "similarity_served": _summary_stats([d["similarity"] for d in rows if d["similarity"] is not None]),
            "pair_cosine": _summary_stats([d["pair_cosine"] for d in rows]),
        }
        reasons = Counter(f"{d['outcome']}: {d['reason']}" for d in rows if d.get("reason"))
        if reasons:
            block["reasons"] = dict(reasons.most_common())
        confidences = {c: [d["confidence"] for d in rows if d["category"] == c and d.get("confidence") is not None]
                       for c in CATEGORIES}
        if any(confidences.values()):
            block["confidence"] = {c: _summary_stats(v) for c, v in confidences.items() if v}
        out[label] = block
    out["latency_ms"] = {"n": len(latencies_ms),
                         "p50": round(percentile(latencies_ms, 50), 2) if latencies_ms else None,
                         "p99": round(percentile(latencies_ms, 99), 2) if latencies_ms else None,
                         "mean": round(sum(latencies_ms) / len(latencies_ms), 2) if latencies_ms else None}
    out["cosine_sweep"] = cosine_sweep(details)
    return out


# ---- the run (Django) -----------------------------------------------------------------------------

def run_qqp_cache(config: QQPConfig) -> dict[str, Any]:
    """The whole replay; returns the report (JSON-serialisable; per-query rows under
    ``details``, which ``write_report`` writes to ``details.jsonl``)."""
    from cachecore.engine.text import normalise_query
    from tenants.models import Tenant
    from tenants.services import tenant_create

    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    if config.side not in ("calibration", "held_out"):
        raise ValueError(f"--side must be calibration or held_out; got {config.side!r}")
    if min(config.trails, config.duplicates, config.non_duplicates) < 0:
        raise ValueError("--trails, --duplicates and --non-duplicates must be >= 0")
    t = time.perf_counter()
    pairs = qqp_pairs(config.qqp_path)
    sample = sample_pairs(pairs, side=config.side, duplicates=config.duplicates,
                          non_duplicates=config.non_duplicates, trails=config.trails, seed=config.seed,
                          norm=normalise_query)
    clusters = duplicate_clusters([p for p in pairs if p.side == config.side], normalise_query)
    timings["sample"] = round(time.perf_counter() - t, 2)

    slug = config.tenant_slug or f"qqp-{started_at:%Y%m%d-%H%M%S}-{random.Random().randrange(16**4):04x}"
    tenant = tenant_create(slug=slug, name=f"QQP cache replay {started_at:%Y-%m-%d %H:%M:%S} UTC")
    for name, value in config.overrides.items():
        setattr(tenant, name, value)
    tenant.full_clean()
    tenant.save()
    try:
        report = _replay(config, tenant, sample, clusters, timings)
    finally:
        if not config.keep_tenant:
            Tenant.objects.filter(pk=tenant.pk).delete()
    timings["total"] = round(time.perf_counter() - t0, 2)
    labels = Counter(s.label for s in sample.pairs)
    report["meta"] = {
        "started_at": started_at.isoformat(timespec="seconds"),
        "command": "python -m research.qqp_cache",
        "side": config.side,
        "seed": config.seed,
        "requested": {"trails": config.trails, "duplicates": config.duplicates,
                      "non_duplicates": config.non_duplicates},
        "sampled": {"trails": len(sample.trail_questions), "duplicates": labels.get("duplicate", 0),
                    "non_duplicates": labels.get("non_duplicate", 0)},
        "available_pairs": sample.available,
        "skipped_candidates": sample.skipped,
        "tenant": slug,
        "tenant_kept": config.keep_tenant,
        "overrides": {k: str(v) for k, v in config.overrides.items()},
        "settings": report.pop("_settings"),
        "qqp_path": str(config.qqp_path),
        "timings_s": timings,
    }
    return report


def populate_tenant(tenant: Any, questions: Sequence[str], *, progress: bool = True
                    ) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """One section per question (``qqp/<n>``, chunk embeddings computed in the call) and one
    active trail per question citing it, recorded through ``trail_record``. Returns the trail
    id by normalised question, the question by trail id, and the sections whose chunks came late."""
    from cachecore.engine.text import normalise_query
    from cachecore.services.trails import trail_record
    from docingest.ingest import chunks_ensure, upsert_synchronously
    from docingest.progress import Progress
    from tenants.caller import tenant_caller

    section_ids = [f"qqp/{n}" for n in range(len(questions))]
    with Progress("sections + chunks", len(questions), enabled=progress) as b:
        for start in range(0, len(questions), UPSERT_BATCH):
            batch = [{"id": sid, "text": q} for sid, q in
                     zip(section_ids[start:start + UPSERT_BATCH], questions[start:start + UPSERT_BATCH])]
            upsert_synchronously(tenant=tenant, sections=batch, chunks="sync")
            b.step(len(batch))
    late_chunks = chunks_ensure(tenant=tenant, section_ids=section_ids)
    trail_of: dict[str, str] = {}        # normalised question → trail id
    question_of: dict[str, str] = {}     # trail id → question
    with Progress("record trails", len(questions), enabled=progress) as b:
        for sid, q in zip(section_ids, questions):
            trail = trail_record(
                caller=tenant_caller(tenant), scope=SCOPE, query=q,
                steps=[{"tool": "search", "args": {"q": q}, "returned": [sid]}],
                cited=[sid], signal={"source": "caller", "accepted": True})
            trail_of[normalise_query(q)] = str(trail.pk)
            question_of[str(trail.pk)] = q
            b.step()
    return trail_of, question_of, late_chunks


def _replay(config: QQPConfig, tenant: Any, sample: Sample, clusters: dict[str, str],
            timings: dict[str, float]) -> dict[str, Any]:
    from cachecore.embedding import get_embedder
    from cachecore.engine.text import normalise_query
    from cachecore.services.recall import recall
    from docingest.progress import Progress
    from research.evaluation.harness import answer_dict
    from tenants.caller import tenant_caller
    from tenants.services import SETTINGS_FIELDS

    def bar(label: str, total: int) -> Progress:
        return Progress(label, total, enabled=config.progress)

    t = time.perf_counter()
    trail_of, question_of, late_chunks = populate_tenant(tenant, sample.trail_questions, progress=config.progress)
    timings["sections_and_trails"] = round(time.perf_counter() - t, 2)

    # -- recall every sampled b -------------------------------------------------------------------
    t = time.perf_counter()
    details: list[dict[str, Any]] = []
    latencies: list[float] = []
    with bar("recall", len(sample.pairs)) as b:
        for s in sample.pairs:
            t_call = time.perf_counter()
            answered = recall(caller=tenant_caller(tenant), scope=SCOPE, query=s.pair.b, explain=config.explain)
            result = answer_dict(answered)
            latencies.append((time.perf_counter() - t_call) * 1000)
            pair_trail = trail_of[normalise_query(s.pair.a)]
            strict, loose = classify(result, pair_trail)
            served = result.get("trail_id")
            served_q = question_of.get(str(served)) if served else None
            query_cluster = clusters.get(normalise_query(s.pair.b))
            details.append({
                "query": s.pair.b, "label": s.label, "category": strict, "category_loose": loose,
                "outcome": result.get("outcome"), "reason": result.get("reason"),
                "confidence": result.get("confidence"), "similarity": result.get("similarity"),
                "coverage": result.get("coverage"), "escalated": result.get("escalated"),
                "trail_id": served, "trails": result.get("trails") or [], "pair_trail_id": pair_trail,
                "served_question": served_q, "pair_question": s.pair.a, "group": s.pair.group,
                "served_labelled_duplicate": bool(
                    served_q and served != pair_trail and query_cluster is not None
                    and clusters.get(normalise_query(served_q)) == query_cluster),
                "latency_ms": round(latencies[-1], 3),
            })
            if config.explain:
                duplicate = s.label == "duplicate"
                details[-1].update({
                    "set": "qqp", "side": config.side, "kind": "duplicate" if duplicate else "twin",
                    "answered_by_source": duplicate, "source_trail": pair_trail,
                    "candidates": [{**c, "is_source": c["trail_id"] == pair_trail}
                                   for c in answered.diagnostics.explain or []],
                })
            b.step()
    timings["recall"] = round(time.perf_counter() - t, 2)

    # -- raw cosine of the normalised pair (the cosine-only trade-off) ----------------------------
    t = time.perf_counter()
    embedder = get_embedder()
    if details:
        va = embedder.embed([normalise_query(d["pair_question"]) for d in details])
        vb = embedder.embed([normalise_query(d["query"]) for d in details])
        for d, x, y in zip(details, va, vb):
            d["pair_cosine"] = round(float((x * y).sum()), 4)
    timings["cosine"] = round(time.perf_counter() - t, 2)

    report = summarise(details, latencies)
    report["details"] = details
    report["late_chunk_sections"] = late_chunks
    report["reason_confidence_available"] = any(d.get("reason") for d in details)
    report["_settings"] = {f: str(getattr(tenant, f)) for f in SETTINGS_FIELDS if f != "resolver_secret"}
    return report


# ---- output ---------------------------------------------------------------------------------------

def _pct(p: dict[str, Any]) -> str:
    if p["rate"] is None:
        return f"{p['k']}/{p['n']} | – | –"
    lo, hi = p["ci95"]
    return f"{p['k']}/{p['n']} | {100 * p['rate']:.1f} % | {100 * lo:.1f}–{100 * hi:.1f} %"


def summary_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    s = meta["sampled"]
    lines = [
        f"# QQP as a cache sees it — {meta['side']} side",
        "",
        f"{s['trails']} trails (one cited section each), {s['duplicates']} duplicate and {s['non_duplicates']} "
        f"non-duplicate `b` questions recalled; seed {meta['seed']}; tenant settings "
        + ", ".join(f"{k}={meta['settings'][k]}" for k in SUMMARY_SETTINGS if k in meta["settings"])
        + (f"; overrides {meta['overrides']}" if meta["overrides"] else "") + ".",
        "",
        "Strict: the pair's trail is the best (`trail_id`). Loose: it is among the contributing `trails`. "
        "95 % Wilson intervals.",
        "",
    ]
    for label, title in (("duplicate", "Duplicates"), ("non_duplicate", "Non-duplicates")):
        block = report[label]
        lines += [f"## {title} (n = {block['n']})", "",
                  "| served | strict k/n | rate | 95 % CI | loose k/n | rate | 95 % CI |",
                  "|---|---|---|---|---|---|---|"]
        for c in CATEGORIES:
            if c == "unexpected" and not block["strict"][c]["k"]:
                continue
            name = CATEGORY_LABELS[c]
            if label == "non_duplicate" and c == "own_prefetch":
                name += " (false prefetch)"
            lines.append(f"| {name} | {_pct(block['strict'][c])} | {_pct(block['loose'][c])} |")
        lines.append(f"| any prefetch | {_pct(block['any_prefetch'])} | | | |")
        od = block["other_trail_labelled_duplicate"]
        lines += ["", f"Another trail served that is itself a labelled duplicate of the query: "
                      f"{od['other_prefetch']} as prefetch, {od['other_hint']} as hint. "
                      f"Escalated (prefetch → hint by coverage): {block['escalated']}.", ""]
        if "reasons" in block:
            lines += ["Reasons: " + ", ".join(f"{k} ×{v}" for k, v in block["reasons"].items()), ""]
        if "confidence" in block:
            lines += ["Confidence (median by category): " + ", ".join(
                f"{c} {v['p50']}" for c, v in block["confidence"].items()), ""]
    lat = report["latency_ms"]
    lines += [f"Recall latency: p50 {lat['p50']} ms, p99 {lat['p99']} ms (n = {lat['n']}).", "",
              "## Cosine-only trade-off (raw cosine of the normalised pair)", "",
              "| cosine ≥ | duplicates | 95 % CI | non-duplicates | 95 % CI | precision (at this sample's mix) |",
              "|---|---|---|---|---|---|"]
    for row in report["cosine_sweep"]:
        d, n = row["duplicates"], row["non_duplicates"]

        def cell(p: dict[str, Any]) -> str:
            if p["rate"] is None:
                return "– | –"
            return f"{100 * p['rate']:.1f} % | {100 * p['ci95'][0]:.1f}–{100 * p['ci95'][1]:.1f} %"

        lines.append(f"| {row['threshold']:.2f} | {cell(d)} | {cell(n)} | "
                     f"{row['precision'] if row['precision'] is not None else '–'} |")
    lines += ["", f"Timings (s): {meta['timings_s']}", ""]
    return "\n".join(lines)


def write_report(report: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    details = report.get("details", [])
    body = {k: v for k, v in report.items() if k != "details"}
    files = [out / "report.json", out / "summary.md", out / "details.jsonl"]
    files[0].write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    files[1].write_text(summary_markdown(report), encoding="utf-8")
    with open(files[2], "w", encoding="utf-8") as fh:
        for d in details:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.qqp_cache", description=__doc__.split("\n\n")[1])
    parser.add_argument("--side", default=HELD_OUT, choices=("calibration", "held_out"))
    parser.add_argument("--trails", type=int, default=10_000)
    parser.add_argument("--duplicates", type=int, default=500)
    parser.add_argument("--non-duplicates", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                        help="tenant setting for this run (repeatable), e.g. --set similarity_threshold=0.85")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--keep-tenant", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--explain", action="store_true",
                        help="log each candidate's evidence in details.jsonl (rows for research.match_calibration)")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from research.evaluation.harness import parse_overrides

    try:
        overrides = parse_overrides(args.overrides)
    except ValueError as exc:
        parser.error(str(exc))
    config = QQPConfig(side=args.side, seed=args.seed, trails=args.trails, duplicates=args.duplicates,
                       non_duplicates=args.non_duplicates, overrides=overrides, keep_tenant=args.keep_tenant,
                       progress=not args.quiet, explain=args.explain)
    report = run_qqp_cache(config)
    files = write_report(report, args.out)
    print(summary_markdown(report))
    print(f"Report in {args.out}: " + ", ".join(f.name for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
