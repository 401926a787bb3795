"""Match calibration on the Python docs FAQ set (and QQP rows from ``research.qqp_cache``).

``python -m research.match_calibration collect [--set FIELD=VALUE ...] [--out FILE]``
    Ingests the Python 3.11 docs into a throw-away tenant, records one trail per FAQ entry
    citing its gold sections (one search step with the question), then recalls every probe
    through the product's ``recall(..., explain=True)``: the paraphrases (the set's and the
    hard set's extra one), the close-but-different twins and the distinct questions. Writes one
    row per probe with the answer and every qualifying candidate's evidence features.

``python -m research.match_calibration fit ROWS... [--write]``
    Fits the logistic scorer on the calibration side only (groups from ``research.splits``),
    chooses the bands on the calibration side, prints calibration and held-out figures, and
    with ``--write`` stores weights and bands in ``cachecore/engine/match_scorer.json``.

Labels of a (probe, candidate) pair: the source entry's trail is the same need for a
paraphrase and for a twin the source section answers, a different need for other twins and
distinct questions; another entry's trail is a different need for a paraphrase and unknown
(left out) for twins and distinct questions, which often reword another FAQ question. A
trail recorded for the source entry's rewording (``collect --with-rewordings``) is labelled as
the source's own. With
``fit --answers``, the rows of a hard set whose close questions name the sections that answer
them (Celery's, Flask's) are labelled by those sections instead, every trail of them.
Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from research.corpora import CORPORA, ingest_corpus, record_items, small_tenant_sections
from research.splits import CALIBRATION, HELD_OUT, REPO_ROOT, faq_side

# A probe row's confidence under a fitted scorer (``score_with``).
Score = Callable[[dict[str, Any]], float]

FAQ = REPO_ROOT / "tests" / "data" / "eval" / "python_faq.jsonl"
FAQ_HARD = REPO_ROOT / "tests" / "data" / "eval" / "python_faq_hard.jsonl"
DOCS = Path("/usr/share/doc/python3.11/html/_sources")
SCORER_JSON = REPO_ROOT / "cachecore" / "engine" / "match_scorer.json"
ROWS_DIR = REPO_ROOT / "reports" / "calibration"


def default_rows(corpus: str) -> Path:
    """Where ``collect`` writes a corpus's rows unless ``--out`` says: ``<corpus>-rows.jsonl``."""
    return ROWS_DIR / f"{corpus}-rows.jsonl"


SCOPE = "faq"
# Collect with a low first-stage floor so the scorer sees (and learns) candidates the default
# floor would drop; the fit chooses the floor.
COLLECT_FLOOR = 0.3


@dataclass(frozen=True)
class Probe:
    group: str
    kind: str          # paraphrase / paraphrase_extra / twin / distinct
    query: str
    answered_by_source: bool


def load_probes() -> tuple[list[dict[str, Any]], list[Probe]]:
    entries = [json.loads(line) for line in FAQ.read_text(encoding="utf-8").splitlines() if line.strip()]
    hard = {}
    if FAQ_HARD.is_file():
        hard = {d["id"]: d for d in (json.loads(x) for x in FAQ_HARD.read_text(encoding="utf-8").splitlines()
                                     if x.strip())}
    probes: list[Probe] = []
    for e in entries:
        for p in e.get("paraphrases", []):
            probes.append(Probe(e["id"], "paraphrase", p, True))
        h = hard.get(e["id"], {})
        for p in h.get("paraphrases_extra", []):
            probes.append(Probe(e["id"], "paraphrase_extra", p, True))
        for t in h.get("twins", []):
            probes.append(Probe(e["id"], "twin", t["question"], bool(t["answered_by_source"])))
        for d in e.get("distinct", []):
            probes.append(Probe(e["id"], "distinct", d, False))
    return entries, probes


def _study_tenant(prefix: str, label: str, *, overrides: dict[str, Any], floor: float | None) -> Any:
    """A throw-away tenant for a collect: ``overrides`` applied, and with ``floor`` a low first
    stage and no hint band, so every candidate's evidence is logged."""
    from tenants.services import tenant_create

    started = datetime.now(UTC)
    tenant = tenant_create(slug=f"{prefix}-{started:%Y%m%d-%H%M%S}-{random.Random().randrange(16**4):04x}",
                           name=label)
    for field_name, value in overrides.items():
        setattr(tenant, field_name, value)
    if floor is not None:
        tenant.similarity_threshold = floor
        tenant.hint_confidence = 0.0
    tenant.full_clean()
    tenant.save()
    return tenant


def collect(overrides: dict[str, Any], out: Path, *, floor: float | None = COLLECT_FLOOR,
            keep_tenant: bool = False) -> Path:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from cachecore.services.recall import recall
    from cachecore.services.trails import trail_record
    from docingest.progress import Progress
    from research.evaluation.harness import parse_overrides  # noqa: F401 (same --set syntax)
    from tenants.caller import tenant_caller
    from tenants.models import Tenant

    entries, probes = load_probes()
    tenant = _study_tenant("calib", "Match calibration", overrides=overrides, floor=floor)
    try:
        ids = ingest_corpus(tenant, DOCS)
        gold = {e["id"]: [g for g in e["gold"] if g in ids] for e in entries}
        trail_of: dict[str, str] = {}
        with Progress("record trails", len(entries)) as bar:
            for e in entries:
                if gold[e["id"]]:
                    trail = trail_record(
                        caller=tenant_caller(tenant), scope=SCOPE, query=e["question"],
                        steps=[{"tool": "search", "args": {"q": e["question"]}, "returned": gold[e["id"]]}],
                        cited=gold[e["id"]], signal={"source": "caller", "accepted": True})
                    trail_of[e["id"]] = str(trail.pk)
                bar.step()
        entry_of_trail = {t: g for g, t in trail_of.items()}
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8") as fh, Progress("recall probes", len(probes)) as bar:
            for p in probes:
                t0 = time.perf_counter()
                result = recall(caller=tenant_caller(tenant), scope=SCOPE, query=p.query, explain=True)
                r = result.answer
                ms = (time.perf_counter() - t0) * 1000
                source = trail_of.get(p.group)
                row = {
                    "set": "faq", "group": p.group, "side": faq_side(p.group), "kind": p.kind, "query": p.query,
                    "answered_by_source": p.answered_by_source, "source_trail": source,
                    "outcome": str(r.outcome), "reason": str(r.reason), "confidence": r.confidence,
                    "trail_id": r.trail_id, "trails": r.trails, "similarity": r.similarity, "latency_ms": round(ms, 2),
                    "served_source": bool(source and r.trail_id == source),
                    "candidates": [
                        {**c, "entry": entry_of_trail.get(c["trail_id"]), "is_source": c["trail_id"] == source}
                        for c in (result.diagnostics.explain or [])
                    ],
                }
                fh.write(json.dumps(row) + "\n")
                bar.step()
    finally:
        if not keep_tenant:
            Tenant.objects.filter(pk=tenant.pk).delete()
    return out


def collect_corpus(name: str, out: Path, *, floor: float | None = COLLECT_FLOOR,
                   with_rewordings: bool = False, light: bool = False, sections: int = 0, seed: int = 0) -> Path:
    """``collect`` for a replay corpus of ``research.corpora`` (``celery``, ``flask``): one trail per item
    citing its gold section, then every same-need rewording (kind ``paraphrase``) and every
    close-but-different question (kind ``twin``, with ``answered_by_source``) recalled with
    ``explain``. Rows in ``collect``'s shape; the group is the item (its side: its topic's).

    ``with_rewordings``: the tenant also holds, for each item, a trail recorded for its first
    rewording (citing the gold, as an agent's accepted answer would), as a tenant whose cache
    grew with its users' words does; the probes are then the items' other rewordings and their
    close questions. Each row lists the item's trails (``item_trails``), and a candidate that
    is one of them has ``recorded_rewording`` set when it is not the item's own question.

    ``light``: the probes are instead the items' light rewordings (kind ``paraphrase_light``) and
    one-change near misses (kind ``twin_near``, which the gold section does not answer) of
    ``<set>_light.jsonl`` (``research.corpora``); the FAQ set too.

    ``sections``: a small tenant instead of the whole corpus, about that many sections
    (``research.corpora.small_tenant_sections`` with ``seed``: the gold of items drawn at random
    and other sections), and only those items' probes."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from cachecore.services.recall import recall
    from docingest.progress import Progress
    from tenants.caller import tenant_caller
    from tenants.models import Tenant

    corpus = CORPORA[name]
    tenant = _study_tenant(f"calib-{name}", f"Match calibration ({name})", overrides={}, floor=floor)
    try:
        chosen: list[Any] = []

        def keep(all_ids: list[str]) -> set[str]:
            kept, picked = small_tenant_sections(all_ids, corpus.items(), sections, seed=seed)
            chosen.extend(picked)
            return kept

        ids = ingest_corpus(tenant, corpus.docs, corpus.subtrees, keep=keep if sections else None)
        items = [i for i in (chosen if sections else corpus.items()) if all(g in ids for g in i.gold)]
        caller = tenant_caller(tenant)
        trail_of = record_items(tenant, corpus, items, ids)
        item_of_trail = {t: g for g, t in trail_of.items()}
        reworded = record_items(tenant, corpus, items, ids, rewordings=True) if with_rewordings else {}
        item_of_trail.update({t: g for g, t in reworded.items()})
        rewording_trails = set(reworded.values())
        skip = 1 if with_rewordings else 0
        probes = [(i, "paraphrase", q, True) for i in items for q in i.same_need[skip:]] + [
            (i, "twin", c.question, c.answered_by_source) for i in items for c in i.close]
        if light:
            probes = [(i, "paraphrase_light", q, True) for i in items for q in i.light] + [
                (i, "twin_near", m.question, False) for i in items for m in i.near_miss]
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8") as fh, Progress("recall probes", len(probes)) as bar:
            for item, kind, query, answered in probes:
                result = recall(caller=caller, scope=corpus.scope, query=query, explain=True)
                r = result.answer
                source = trail_of[item.id]
                fh.write(json.dumps({
                    "set": name, "group": item.id, "side": item.side, "kind": kind, "query": query,
                    "answered_by_source": answered, "source_trail": source,
                    "item_trails": [source, *([reworded[item.id]] if item.id in reworded else [])],
                    "outcome": str(r.outcome), "reason": str(r.reason), "confidence": r.confidence,
                    "trail_id": r.trail_id, "trails": r.trails, "similarity": r.similarity,
                    "served_source": r.trail_id == source,
                    "candidates": [
                        {**c, "entry": item_of_trail.get(c["trail_id"]), "is_source": c["trail_id"] == source,
                         "recorded_rewording": c["trail_id"] in rewording_trails}
                        for c in (result.diagnostics.explain or [])],
                }) + "\n")
                bar.step()
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    return out


# ---- fitting (pure numpy) ---------------------------------------------------------------------

OTHER_TRAIL_WEIGHT = 0.1
MIN_SET_PROBES = 30
FLOOR_KEEP = 0.93

def pair_label(row: dict[str, Any], cand: dict[str, Any]) -> int | None:
    """1 same need, 0 different need, None unknown (see the module docstring). A row that
    ``annotate_answers`` gave the entries whose section answers it is labelled by them, for
    every candidate."""
    if "right_entries" in row:
        return int(cand.get("entry") in row["right_entries"])
    if cand.get("is_source") or (cand.get("recorded_rewording") and cand.get("entry") == row.get("group")):
        return int(row["answered_by_source"]) if row["kind"] != "distinct" else 0
    if row["kind"].startswith("paraphrase"):
        return 0
    return None


def should_serve(row: dict[str, Any], trail_id: str | None) -> bool | None:
    """Whether serving ``trail_id`` to this probe is right (True), wrong (False) or unknown."""
    if trail_id is None:
        return None
    if trail_id in row.get("item_trails", [row.get("source_trail")]):
        return bool(row["answered_by_source"]) and row["kind"] != "distinct"
    return False if row["kind"].startswith("paraphrase") else None


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float = 1.0, iters: int = 200,
                 sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Newton's method on the L2-penalised, weighted log loss (bias not penalised)."""
    n, d = x.shape
    sw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (sw * (p - y)) + reg * w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w[:-1], float(w[-1])


# Evidence that can only speak for a match (more similar, better covered, more words shared)
# gets a non-negative weight, evidence against it a non-positive one: the scorer must not learn
# that *more* similarity means a different need from collinear features.
# Lexical overlap with the trail's question (trigram, shared words, the trail's words the query
# lacks) is left free: close-but-different questions reuse the trail question's words while
# paraphrases reword, so on the evidence overlap *beyond* the semantic match counts against a
# match (the very same question is confident by rule, whatever the scorer says).
SIGNS = {
    "cosine": 1, "coverage": 1, "unexplained": -1, "coverage_gap": -1,
    "polarity_conflict": -1, "negation_differs": -1, "numbers_differ": -1, "sentence_margin": 1,
    # A trail found through its section, not its question, is weaker evidence of the same need.
    "via_sections": -1,
}


def fit_signed(x: np.ndarray, y: np.ndarray, *, l2: float, sample_weight: np.ndarray,
               features: Sequence[str]) -> tuple[np.ndarray, float]:
    """``fit_logistic`` with the signs in ``SIGNS``: a feature whose weight comes out with the
    wrong sign is dropped (weight 0) and the rest refitted, until every sign holds."""
    active = [i for i in range(x.shape[1]) if np.std(x[:, i]) > 0]
    while True:
        w_active, bias = fit_logistic(x[:, active], y, l2=l2, sample_weight=sample_weight)
        wrong = [i for i, w in zip(active, w_active) if SIGNS.get(features[i], 0) * w < 0]
        if not wrong:
            weights = np.zeros(x.shape[1])
            weights[active] = w_active
            return weights, bias
        worst = max(wrong, key=lambda i: abs(w_active[active.index(i)]))
        active.remove(worst)


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    if not pos or not neg:
        return float("nan")
    scores = np.array(list(pos) + list(neg))
    ranks = scores.argsort().argsort() + 1.0
    r_pos = ranks[: len(pos)].sum()
    return float((r_pos - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def load_rows(paths: Sequence[Path], *, per_corpus: Sequence[str] = (),
              answers: bool = False) -> list[dict[str, Any]]:
    """The rows of ``paths``. ``per_corpus``: features standardised within each file, on the mean
    and spread of that file's own candidates over the collect floor (both sides, every probe
    kind, no label read): a tenant normalising its evidence on its own traffic, to measure
    whether the features' scale differs by corpus. ``answers``: rows of a hard set that names
    the sections answering each question are labelled by them (``annotate_answers``)."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            part = [json.loads(line) for line in fh if line.strip()]
        if per_corpus:
            _standardise(part, per_corpus)
        if answers:
            annotate_answers(part)
        rows.extend(part)
    return rows


def answered_as_recorded(row: dict[str, Any]) -> bool:
    """Whether one of the probe's candidates is a trail recorded for this very question
    (normalised): recall then serves that trail by rule and skips its second read, the sections
    covering the query (``decide.asked_as_recorded``), so every candidate's rival evidence is
    unknown (``rival_known`` 0) for that reason alone. 136 of the FAQ set's distinct questions are
    another entry's question word for word; rows collected before the skip (6 December) carried
    the rival evidence for them."""
    from cachecore.engine.text import normalise_query

    query = normalise_query(row["query"])
    return any(c.get("query_normalised") == query for c in row["candidates"])


def scored_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The probes the scorer decides: those ``answered_as_recorded`` left out (the rule answers
    them, and their candidates' evidence lacks what any other wording would carry). What a fit,
    its bands and a left-out corpus's check read."""
    return [r for r in rows if not answered_as_recorded(r)]


def annotate_answers(rows: list[dict[str, Any]]) -> None:
    """Give each row of a hard set (``Corpus.names_answers``: their close questions name the
    sections that answer them) ``right_entries``: the items whose trail's cited section answers
    the probe. A rewording is answered by its item's gold section, a close question by its
    ``answer`` sections; so another item's trail citing such a section is right to serve, and
    any other trail wrong. Rows of a set without answers (the FAQ, QQP) are left as they are."""
    by_set: dict[str, tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]] = {}
    for row in rows:
        name = row.get("set", "faq")
        if name not in CORPORA or not CORPORA[name].names_answers:
            continue
        if name not in by_set:
            items = CORPORA[name].items()
            gold = {i.id: set(i.gold) for i in items}
            close = {(i.id, c.question): set(c.answer) for i in items for c in i.close}
            by_set[name] = (gold, close)
        gold, close = by_set[name]
        wanted = gold[row["group"]] if row["kind"].startswith("paraphrase") else close[(row["group"], row["query"])]
        row["right_entries"] = sorted(e for e, sections in gold.items() if sections & wanted)


def _standardise(rows: list[dict[str, Any]], features: Sequence[str]) -> None:
    """``features`` of every candidate of ``rows`` as z-scores over the qualifying candidates."""
    seen = [c["features"] for r in rows for c in r["candidates"] if qualifies(c, COLLECT_FLOOR)]
    for name in features:
        values = np.array([f[name] for f in seen], dtype=float)
        mean, spread = float(values.mean()), float(values.std()) or 1.0
        for r in rows:
            for c in r["candidates"]:
                c["features"][name] = (c["features"][name] - mean) / spread


def qualifies(cand: dict[str, Any], floor: float) -> bool:
    """The first stage as recall applies it: the questions' cosine over the floor, or found
    through the sections covering the query (``via_sections``: their cosine passed it)."""
    return cand["similarity"] >= floor or (bool(cand.get("via_sections")) and (cand.get("coverage") or 0.0) >= floor)


def simulate(rows: list[dict[str, Any]], score: Score, *, floor: float, prefetch: float, hint: float) -> dict[str, Any]:
    """The decision offline (best confidence among candidates over the cosine floor; ambiguity
    and coverage rules left out, so prefetch counts are upper bounds) → counts per probe kind."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        cands = [c for c in row["candidates"] if qualifies(c, floor)]
        kind = "paraphrase_light" if row["kind"] == "paraphrase_light" else "paraphrase" if (
            row["kind"].startswith("paraphrase") or row["kind"] == "duplicate") else (
            "twin_answered" if row["kind"] == "twin" and row["answered_by_source"] else row["kind"])
        bucket = out.setdefault(f"{row.get('set', 'faq')}:{kind}",
                                {"n": 0, "own_prefetch": 0, "own_any": 0, "source_prefetch": 0, "prefetch": 0,
                                 "wrong_prefetch": 0})
        bucket["n"] += 1
        if not cands:
            continue
        confs = [score(c) for c in cands]
        i = int(np.argmax(confs))
        best, conf = cands[i], confs[i]
        if conf < hint:
            continue
        own = bool(best.get("is_source"))
        bucket["own_any"] += own
        if conf >= prefetch:
            bucket["prefetch"] += 1
            bucket["own_prefetch"] += own
            bucket["source_prefetch"] += own
            bucket["wrong_prefetch"] += pair_label(row, best) == 0
    return out


# The evidence of the cited section beside the query (its rivals, the specifics it lacks): the
# question scorer leaves it out, since for a text that restates the trail's question it only
# measures the question match again (cachecore/engine/scorer.py).
SECTION_EVIDENCE = ("rival_margin", "rival_known", "specifics_unexplained", "sentence_margin", "sentence_known")
REGIMES = ("document", "question")


def in_regime(cand: dict[str, Any], regime: str) -> bool:
    """Whether recall scores this candidate with the question scorer's regime (its cited text
    restates its question) or, for ``document``, with either (the document scorer was fitted on
    every candidate)."""
    from cachecore.engine.scorer import RESTATES_QUESTION

    if regime == "document":
        return True
    coverage = trail_coverage_of(cand)
    return coverage is not None and coverage >= RESTATES_QUESTION


def regime_rows(rows: list[dict[str, Any]], regime: str) -> list[dict[str, Any]]:
    """``rows`` with only the candidates ``regime`` scores; for ``question``, a probe without
    such a candidate is left out (it counts in no set's rates)."""
    kept = [{**r, "candidates": [c for c in r["candidates"] if in_regime(c, regime)]} for r in rows]
    return [r for r in kept if regime == "document" or r["candidates"]]


def choose_bands(cal: list[dict[str, Any]], score: Score, *, target_false: float) -> tuple[float, float]:
    """The cuts of a scorer on calibration rows: the lowest prefetch cut whose false prefetch
    (close-but-different questions the source does not answer, served the source trail as text,
    or with ``annotate_answers`` any trail that does not answer them) is at most
    ``target_false`` in every set, and the hint cut that keeps 95 % of each set's paraphrases'
    own trail in the hint band."""
    grid = [round(0.5 + 0.01 * i, 2) for i in range(50)]
    best_cut = grid[-1]
    for cut in grid:
        sim = simulate(cal, score, floor=0.0, prefetch=cut, hint=0.0)
        # The trail a close-but-different question differs from, served as text: the false
        # prefetch the labels know. Another trail served to it is unlabelled (on the Celery set
        # about half of those are that trail's own need, by reading them), as in pair_label,
        # unless the rows carry the sections that answer it (``annotate_answers``).
        # A set with fewer close probes than MIN_SET_PROBES cannot bound a rate of a few per cent
        # (one probe is more than the target); it does not choose the cut.
        # A light set's near misses (one change, never answered by the source) are close
        # questions of the same set too: the rate is over all of a set's close questions.
        wrong: dict[str, list[int]] = {}
        for k, b in sim.items():
            if k.endswith((":twin", ":twin_near")):
                counts = wrong.setdefault(k.split(":")[0], [0, 0])
                counts[0] += b["wrong_prefetch"]
                counts[1] += b["n"]
        rates = [k / n for k, n in wrong.values() if n >= MIN_SET_PROBES]
        if max(rates, default=0.0) <= target_false:
            best_cut = cut
            break
    hint_cut = best_cut
    for name in {r.get("set", "faq") for r in cal}:
        conf = sorted(score(c) for r in cal if r.get("set", "faq") == name
                      and (r["kind"].startswith("paraphrase") or r["kind"] == "duplicate")
                      for c in r["candidates"] if c.get("is_source"))
        if conf:
            hint_cut = min(hint_cut, math.floor(100 * conf[int(0.05 * len(conf))]) / 100)
    return best_cut, min(hint_cut, best_cut)


def recut(paths: Sequence[Path], *, regime: str, target_false: float, write: bool) -> dict[str, Any]:
    """The cuts of the shipped scorer of ``regime``, chosen again on the calibration side of
    ``paths`` with its weights kept (``choose_bands``): the rows carry the vectors of the model
    that ships now, which may not be the one the weights were fitted on. With ``write``, the
    scorer's file gets the new cuts and a note of where they were chosen."""
    from cachecore.engine.evidence import FEATURES
    from cachecore.engine.scorer import QUESTION_SCORER_PATH, MatchScorer

    path = QUESTION_SCORER_PATH if regime == "question" else SCORER_JSON
    scorer = MatchScorer.load(path)
    # The first stage as the tenant default has it (the document scorer's floor).
    floor = MatchScorer.load(SCORER_JSON).similarity_threshold
    cal = regime_rows([{**r, "candidates": [c for c in r["candidates"] if qualifies(c, floor)]}
                       for r in scored_rows(load_rows(paths)) if r["side"] == CALIBRATION], regime)

    def score(c: dict[str, Any]) -> float:
        return scorer.score([c["features"][f] for f in FEATURES])

    prefetch, hint = choose_bands(cal, score, target_false=target_false)
    result = {"regime": regime, "scorer": scorer.version,
              "before": {"prefetch_confidence": scorer.prefetch_confidence, "hint_confidence": scorer.hint_confidence},
              "prefetch_confidence": prefetch, "hint_confidence": hint,
              "calibration": simulate(cal, score, floor=0.0, prefetch=prefetch, hint=hint),
              "calibration_before": simulate(cal, score, floor=0.0, prefetch=scorer.prefetch_confidence,
                                             hint=scorer.hint_confidence)}
    if write:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["prefetch_confidence"], data["hint_confidence"] = prefetch, hint
        data["meta"]["cuts"] = {
            "chosen_on": [str(p) for p in paths], "side": CALIBRATION, "target_false": target_false,
            "before": result["before"], "date": f"{datetime.now(UTC):%Y-%m-%d}",
            "command": "python -m research.match_calibration cuts " + " ".join(str(p) for p in paths)
            + f" --regime {regime} --target-false {target_false}"}
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return result


def fit(paths: Sequence[Path], *, write: bool, target_false: float = 0.03, l2: float = 1.0,
        extra: Sequence[str] = (), regime: str = "document", without: Sequence[str] = (),
        per_corpus: Sequence[str] = (), answers: bool = False) -> dict[str, Any]:
    """``extra``: row features the product does not compute (``pair_model`` from ``pair-scores``),
    to measure what they would add; such a fit cannot be written. ``without``: product features
    left out (what the others do alone, on the same rows; the product scores a scorer of fewer
    features on its own). ``regime="question"`` fits the
    question scorer (``question_scorer.json``): the candidates whose cited text restates their
    question, on the evidence without ``SECTION_EVIDENCE``; a probe counts in its set's rates
    when it has such a candidate."""
    from cachecore.engine.evidence import FEATURES
    from cachecore.engine.scorer import QUESTION_SCORER_PATH

    if (extra or per_corpus) and write:
        raise ValueError("a fit with extra or per-corpus features cannot be shipped: the product does not "
                         "compute them")
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}")
    if regime == "question":
        FEATURES = tuple(f for f in FEATURES if f not in SECTION_EVIDENCE)  # noqa: N806
    FEATURES = (*(f for f in FEATURES if f not in without), *extra)  # noqa: N806 - the names this fit uses

    rows = regime_rows(scored_rows(load_rows(paths, per_corpus=per_corpus, answers=answers)), regime)
    cal = [r for r in rows if r["side"] == CALIBRATION]
    held = [r for r in rows if r["side"] == HELD_OUT]
    feats, labels, sample_weights, sets = [], [], [], []
    for r in cal:
        for c in r["candidates"]:
            label = pair_label(r, c)
            if label is not None:
                feats.append([c["features"][f] for f in FEATURES])
                labels.append(label)
                # The hard decision is the source trail for its paraphrase vs its twin; other
                # trails (easy negatives, mostly) would otherwise dominate the loss.
                sample_weights.append(1.0 if c.get("is_source") else OTHER_TRAIL_WEIGHT)
                sets.append(r.get("set", "faq"))
    x = np.array(feats, dtype=float)
    y = np.array(labels, dtype=float)
    # Each labelled set (FAQ, QQP) weighs the same in the loss, whatever its size.
    sw = np.array(sample_weights)
    for name in set(sets):
        mask = np.array([s == name for s in sets])
        sw[mask] *= len(sw) / (len(set(sets)) * sw[mask].sum())
    sample_weights = list(sw)
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales < 1e-6] = 1.0
    xs = (x - means) / scales
    weights, bias = fit_signed(xs, y, l2=l2, sample_weight=np.array(sample_weights), features=FEATURES)

    def score(c: dict[str, Any]) -> float:
        v = (np.array([c["features"][f] for f in FEATURES]) - means) / scales
        return float(1.0 / (1.0 + math.exp(-(v @ weights + bias))))

    # First-stage floor: the highest cosine that keeps ≥ 90 % of each set's calibration
    # paraphrases' own trail in consideration (the hint band needs them there).
    floor = 0.30
    for f in [round(0.30 + 0.01 * i, 2) for i in range(31)]:
        keeps = []
        for name in set(sets):
            para = [r for r in cal if r.get("set", "faq") == name
                    and (r["kind"].startswith("paraphrase") or r["kind"] == "duplicate")]
            kept = sum(1 for r in para if any(c.get("is_source") and qualifies(c, f) for c in r["candidates"]))
            keeps.append(kept / max(1, len(para)))
        if min(keeps) >= FLOOR_KEEP:
            floor = f
    cal = [{**r, "candidates": [c for c in r["candidates"] if qualifies(c, floor)]} for r in cal]
    held = [{**r, "candidates": [c for c in r["candidates"] if qualifies(c, floor)]} for r in held]
    best_cut, hint_cut = choose_bands(cal, score, target_false=target_false)
    report = {
        "features": list(FEATURES), "weights": [round(float(w), 6) for w in weights], "bias": round(bias, 6),
        "means": [round(float(m), 6) for m in means], "scales": [round(float(s), 6) for s in scales],
        "prefetch_confidence": best_cut, "hint_confidence": hint_cut, "similarity_threshold": floor,
        "pairs": {"calibration": len(y), "positive": int(y.sum())},
        "calibration": simulate(cal, score, floor=0.0, prefetch=best_cut, hint=hint_cut),
        "held_out_offline": simulate(held, score, floor=0.0, prefetch=best_cut, hint=hint_cut),
    }
    pos = [score(c) for r in held for c in r["candidates"] if pair_label(r, c) == 1]
    neg = [score(c) for r in held for c in r["candidates"] if pair_label(r, c) == 0]
    cos_pos = [c["similarity"] for r in held for c in r["candidates"] if pair_label(r, c) == 1]
    cos_neg = [c["similarity"] for r in held for c in r["candidates"] if pair_label(r, c) == 0]
    report["held_out_pair_auc"] = {"scorer": round(auc(pos, neg), 4), "cosine": round(auc(cos_pos, cos_neg), 4)}
    report["regime"] = regime
    if write:
        data = {
            "version": f"{'question' if regime == 'question' else 'match'}-scorer-{datetime.now(UTC):%Y%m%d}",
            **{k: report[k] for k in ("features", "weights", "bias", "means", "scales", "prefetch_confidence",
                                       "hint_confidence", "similarity_threshold")},
            "meta": {"fitted_on": [str(p) for p in paths], "side": CALIBRATION, "pairs": report["pairs"],
                     "held_out_pair_auc": report["held_out_pair_auc"], "l2": l2, "target_false": target_false,
                     "command": "python -m research.match_calibration fit " + " ".join(str(p) for p in paths)
                     + f" --target-false {target_false}" + (f" --regime {regime}" if regime != "document" else "")},
        }
        if regime == "question":
            data["meta"]["regime"] = ("candidates whose cited text restates the trail's question (the trail's "
                                      "question covered at cosine >= 0.9 by it: FAQ entries, question lists); "
                                      "scored on the evidence without the section's rivals and specifics")
        (QUESTION_SCORER_PATH if regime == "question" else SCORER_JSON).write_text(
            json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return report


def score_with(report: dict[str, Any]) -> Score:
    """The confidence function of a ``fit`` report (its weights, means and scales)."""
    features = report["features"]
    weights, means, scales = (np.array(report[k], dtype=float) for k in ("weights", "means", "scales"))
    bias = float(report["bias"])

    def score(c: dict[str, Any]) -> float:
        v = (np.array([c["features"][f] for f in features]) - means) / scales
        return float(1.0 / (1.0 + math.exp(-(v @ weights + bias))))

    return score


def leave_one_corpus_out(paths: Sequence[Path], *, target_false: float = 0.03, l2: float = 1.0,
                         extra: Sequence[str] = (), without: Sequence[str] = (),
                         per_corpus: Sequence[str] = (), answers: bool = False) -> dict[str, Any]:
    """For each corpus (one rows file each): fit on the calibration side of the others, then
    apply that scorer and its cuts to the left-out corpus's held-out side, as a new tenant on a
    corpus nothing was fitted on would see them (offline: ambiguity, boundaries and the
    coverage floor left out, so prefetch counts are upper bounds). The left-out rows are always
    labelled by the sections that answer them where the set names them, so ``wrong_prefetch``
    counts another item's trail that does not answer a probe, whichever labels the fit used."""
    out: dict[str, Any] = {}
    for left in paths:
        rest = [p for p in paths if p != left]
        rep = fit(rest, write=False, target_false=target_false, l2=l2, extra=extra, without=without,
                  per_corpus=per_corpus, answers=answers)
        floor = rep["similarity_threshold"]
        held = [{**r, "candidates": [c for c in r["candidates"] if qualifies(c, floor)]}
                for r in scored_rows(load_rows([left], per_corpus=per_corpus, answers=True))
                if r["side"] == HELD_OUT]
        out[left.name] = {
            "fitted_on": [p.name for p in rest],
            "cuts": {k: rep[k] for k in ("prefetch_confidence", "hint_confidence", "similarity_threshold")},
            "held_out": simulate(held, score_with(rep), floor=0.0, prefetch=rep["prefetch_confidence"],
                                 hint=rep["hint_confidence"]),
        }
    return out


# ---- the nearer-wording rule, offline -----------------------------------------------------------

def nearer_wording_decisions(rows: list[dict[str, Any]], *, gold: dict[str, dict[str, frozenset[str]]],
                             prefetch: float, hint: float, floor: float = COLLECT_FLOOR,
                             ambiguity: float = 0.05, rule: bool) -> dict[str, int]:
    """Counts over collected rows of the decision recomputed from the logged confidences at a
    prefetch cut, with or without the nearer-wording rule (``decide._nearer_wording_in_doubt``:
    no text when a candidate citing the same sections, worded at least as near the query, is
    under the cut). ``gold`` maps each set's items to the sections their trails cite, which
    says which candidates cite the same sections. The rows need ``right_entries``
    (``annotate_answers``). Counts: ``para_n``, ``para_own`` (rewordings served their item's
    trail as text), ``twin_n``, ``twin_prefetch`` (close questions the gold does not answer
    served any text), ``twin_wrong`` (… a trail whose section does not answer them)."""
    out = {"para_n": 0, "para_own": 0, "twin_n": 0, "twin_prefetch": 0, "twin_wrong": 0}
    for row in rows:
        if row["kind"] == "twin" and row["answered_by_source"]:
            continue
        kind = "para" if row["kind"].startswith("paraphrase") else "twin"
        out[f"{kind}_n"] += 1
        sections = gold.get(row.get("set", "faq"), {})
        live = [c for c in row["candidates"] if qualifies(c, floor)]
        ranked = sorted((c for c in live if c["confidence"] >= hint), key=lambda c: c["confidence"], reverse=True)
        if not ranked or ranked[0]["confidence"] < prefetch:
            continue
        best = ranked[0]
        if any(best["confidence"] - c["confidence"] <= ambiguity and not _cite_same(best, c, sections)
               for c in ranked[1:]):
            continue
        if rule and any(c is not best and c["similarity"] >= best["similarity"] and c["confidence"] < prefetch
                        and _cite_same(best, c, sections) for c in live):
            continue
        if kind == "para":
            out["para_own"] += best["trail_id"] in row.get("item_trails", [row.get("source_trail")])
        else:
            out["twin_prefetch"] += 1
            out["twin_wrong"] += best.get("entry") not in row.get("right_entries", [])
    return out


def _cite_same(a: dict[str, Any], b: dict[str, Any], sections: dict[str, frozenset[str]]) -> bool:
    """Neither logged candidate cites a section the other does not (by their items' gold)."""
    cites_a = sections.get(a.get("entry"), frozenset({a["trail_id"]}))
    cites_b = sections.get(b.get("entry"), frozenset({b["trail_id"]}))
    return cites_a <= cites_b or cites_b <= cites_a


def nearer_wording_study(paths: Sequence[Path], *, cuts: Sequence[float], hint: float | None = None) -> dict[str, Any]:
    """``nearer_wording_decisions`` for each rows file of a replay corpus at each cut, without
    and with the rule (docs/evaluation.md, "A nearer wording of the same sections"); ``hint``:
    the shipped scorer's hint cut unless given."""
    if hint is None:
        from cachecore.engine.scorer import MatchScorer

        hint = MatchScorer.load(SCORER_JSON).hint_confidence
    result: dict[str, Any] = {}
    for path in paths:
        rows = load_rows([path])
        annotate_answers(rows)
        gold = {name: {i.id: frozenset(i.gold) for i in CORPORA[name].items()}
                for name in {r.get("set", "faq") for r in rows} if name in CORPORA and name != "faq"}
        result[path.name] = {
            f"{cut:.2f}": {way: nearer_wording_decisions(rows, gold=gold, prefetch=cut, hint=hint, rule=way == "rule")
                           for way in ("shipped", "rule")}
            for cut in cuts}
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.match_calibration")
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--out", type=Path, default=None, help="default: reports/calibration/<corpus>-rows.jsonl")
    c.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    c.add_argument("--defaults", action="store_true", help="recall at the tenant's settings (no low floor)")
    c.add_argument("--keep-tenant", action="store_true")
    c.add_argument("--with-rewordings", action="store_true",
                   help="the tenant also holds a trail recorded for each item's first rewording (not the FAQ)")
    c.add_argument("--corpus", default="faq", choices=sorted(CORPORA),
                   help="faq: the Python docs FAQ set; celery, flask: the replay's hard sets")
    c.add_argument("--sections", type=int, default=0, metavar="N",
                   help="a small tenant of about N sections carved out of the corpus (corpus collect only)")
    c.add_argument("--seed", type=int, default=0, help="with --sections: which small tenant")
    c.add_argument("--light", action="store_true",
                   help="only the light rewordings and near misses of tests/data/eval/<set>_light.jsonl")
    rp = sub.add_parser("report")
    rp.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "matching" / "latest")
    rp.add_argument("--qqp-trails", type=int, default=10_000)
    rp.add_argument("--faq-only", action="store_true")
    ps = sub.add_parser("pair-scores", help="fill the pair_model feature of collected rows (in place)")
    ps.add_argument("rows", nargs="+", type=Path)
    ps.add_argument("--manifest", type=Path, default=None)
    ps.add_argument("--floor", type=float, default=0.51)
    ps.add_argument("--per-query", type=int, default=2, help="candidates scored per probe, nearest first")
    cu = sub.add_parser("cuts", help="choose the shipped scorer's cuts again on calibration rows, weights kept")
    cu.add_argument("rows", nargs="+", type=Path)
    cu.add_argument("--regime", default="question", choices=REGIMES)
    cu.add_argument("--target-false", type=float, default=0.03)
    cu.add_argument("--write", action="store_true")
    f = sub.add_parser("fit")
    f.add_argument("rows", nargs="+", type=Path)
    f.add_argument("--write", action="store_true")
    f.add_argument("--target-false", type=float, default=0.03)
    f.add_argument("--l2", type=float, default=1.0)
    f.add_argument("--extra", action="append", default=[], help="a row feature beyond the product's (pair_model)")
    f.add_argument("--without", action="append", default=[], help="a product feature left out (the fit without it)")
    f.add_argument("--regime", default="document", choices=REGIMES,
                   help="document: match_scorer.json, on every candidate; question: question_scorer.json, on "
                        "the candidates whose cited text restates their question")
    f.add_argument("--per-corpus", action="append", default=[], metavar="FEATURE",
                   help="standardise FEATURE within each rows file on its own candidates (no labels): "
                        "whether the evidence's scale differs by corpus; such a fit cannot be written")
    f.add_argument("--answers", action="store_true",
                   help="label the hard sets' rows by the sections that answer each question (another item's "
                        "trail citing one is right, any other wrong) instead of leaving other trails unlabelled")
    f.add_argument("--loco", action="store_true",
                   help="leave one corpus out: fit on the others, figures on the left-out one's held-out side")
    nw = sub.add_parser("nearer", help="the nearer-wording rule offline: decisions from collected rows at "
                                       "each cut, without and with it")
    nw.add_argument("rows", nargs="+", type=Path)
    nw.add_argument("--cuts", default="0.87,0.88,0.89,0.90,0.92,0.94")
    args = parser.parse_args(argv)
    if args.cmd == "nearer":
        study = nearer_wording_study(args.rows, cuts=[float(x) for x in args.cuts.split(",")])
        for name, by_cut in study.items():
            print(name)
            for cut, ways in by_cut.items():
                print(f"  cut {cut}: " + " | ".join(
                    f"{way}: own text {c['para_own']}/{c['para_n']}, close served {c['twin_prefetch']}/{c['twin_n']} "
                    f"({c['twin_wrong']} wrong)" for way, c in ways.items()))
        return 0
    if args.cmd == "collect":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        from research.evaluation.harness import parse_overrides

        if args.with_rewordings and args.corpus == "faq":
            parser.error("--with-rewordings: a replay corpus only (celery, flask, pytest, click), not the FAQ set")
        floor = None if args.defaults else COLLECT_FLOOR
        rows_out = args.out or default_rows(args.corpus + ("-rewordings" if args.with_rewordings else "")
                                            + ("-light" if args.light else "")
                                            + (f"-{args.sections}sections-seed{args.seed}" if args.sections else ""))
        if args.corpus != "faq" or args.light:
            out = collect_corpus(args.corpus, rows_out, floor=floor, with_rewordings=args.with_rewordings,
                                 light=args.light, sections=args.sections, seed=args.seed)
        else:
            out = collect(parse_overrides(args.set), rows_out, floor=floor, keep_tenant=args.keep_tenant)
        print(f"rows written to {out}")
        return 0
    if args.cmd == "pair-scores":
        for path in args.rows:
            rows = load_rows([path])
            n = add_pair_scores(rows, manifest=args.manifest, floor=args.floor, per_query=args.per_query)
            with open(path, "w", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r) + "\n")
            print(f"{path}: {n} pairs scored")
        return 0
    if args.cmd == "report":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        result = report(args.out, qqp_trails=args.qqp_trails, faq_only=args.faq_only)
        print(summary_markdown(result))
        print(f"report in {args.out}")
        return 0
    if args.cmd == "cuts":
        print(json.dumps(recut(args.rows, regime=args.regime, target_false=args.target_false, write=args.write),
                         indent=1))
        return 0
    if args.loco:
        print(json.dumps(leave_one_corpus_out(args.rows, target_false=args.target_false, l2=args.l2,
                                              extra=args.extra, without=args.without,
                                              per_corpus=args.per_corpus, answers=args.answers), indent=1))
        return 0
    fitted = fit(args.rows, write=args.write, target_false=args.target_false, l2=args.l2, extra=args.extra,
                 regime=args.regime, without=args.without, per_corpus=args.per_corpus, answers=args.answers)
    print(json.dumps({k: v for k, v in fitted.items() if k not in ("means", "scales")}, indent=1))
    return 0



# ---- pair model scores, offline ------------------------------------------------------------------

def add_pair_scores(rows: list[dict[str, Any]], *, manifest: Path | None = None, floor: float = 0.51,
                    per_query: int = 2) -> int:
    """Fill the ``pair_model`` feature of logged candidates as recall would: the ``per_query``
    nearest candidates with cosine ≥ ``floor`` that are not the very same question. Returns how
    many pairs were scored."""
    from cachecore.engine.text import normalise_query
    from research.pairmodel.infer import MANIFEST, PairModel

    model = PairModel(manifest or MANIFEST, threads=2)
    jobs: list[tuple[dict[str, Any], str, str]] = []
    for r in rows:
        query = normalise_query(r["query"])
        chosen = [c for c in sorted(r["candidates"], key=lambda c: -c["similarity"])
                  if c["similarity"] >= floor and c.get("query_normalised") and c["query_normalised"] != query]
        for c in r["candidates"]:
            c["features"]["pair_model"] = 0.5
        for c in chosen[:per_query]:
            jobs.append((c, query, c["query_normalised"]))
    for start in range(0, len(jobs), 64):
        batch = jobs[start:start + 64]
        for (c, _, _), p in zip(batch, model.score([(q, t) for _, q, t in batch])):
            c["features"]["pair_model"] = p
    return len(jobs)


# ---- held-out report at the shipped defaults ---------------------------------------------------

def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": round(k / n, 4) if n else 0.0, "ci95": [round(lo, 4), round(hi, 4)]}


def faq_figures(rows: list[dict[str, Any]], side: str = HELD_OUT) -> dict[str, Any]:
    """Outcome figures of FAQ probes collected at the defaults (``collect --defaults``)."""
    rows = [r for r in rows if r["side"] == side]
    para = [r for r in rows if r["kind"].startswith("paraphrase")]
    twins = [r for r in rows if r["kind"] == "twin" and not r["answered_by_source"]]
    answered = [r for r in rows if r["kind"] == "twin" and r["answered_by_source"]]
    distinct = [r for r in rows if r["kind"] == "distinct"]

    def own(r: dict[str, Any]) -> bool:
        return bool(r.get("source_trail")) and r.get("trail_id") == r["source_trail"]

    return {
        "paraphrases": len(para),
        "paraphrase_own_prefetch": _rate(sum(own(r) and r["outcome"] == "prefetch" for r in para), len(para)),
        "paraphrase_own_prefetch_or_hint": _rate(sum(own(r) and r["outcome"] != "miss" for r in para), len(para)),
        "paraphrase_other_prefetch": _rate(sum(not own(r) and r["outcome"] == "prefetch" for r in para), len(para)),
        "twins": len(twins),
        "twin_prefetch": _rate(sum(r["outcome"] == "prefetch" for r in twins), len(twins)),
        "twin_source_prefetch": _rate(sum(own(r) and r["outcome"] == "prefetch" for r in twins), len(twins)),
        "twin_hint": _rate(sum(r["outcome"] == "hint" for r in twins), len(twins)),
        "answered_twin_prefetch": _rate(sum(r["outcome"] == "prefetch" for r in answered), len(answered)),
        "distinct_source_prefetch": _rate(sum(own(r) and r["outcome"] == "prefetch" for r in distinct),
                                          len(distinct)),
        "reasons": _count(r["reason"] for r in rows),
        "latency_ms_p50": float(np.percentile([r["latency_ms"] for r in rows], 50)) if rows else None,
    }


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def trade_off(rows: list[dict[str, Any]], *, positive: str, negative: str) -> dict[str, list[list[float]]]:
    """Paraphrase own-trail prefetch vs negative prefetch as the cut moves, for the calibrated
    confidence (the best candidate by confidence) and for cosine alone (the nearest one)."""
    pos = [r for r in rows if r["kind"].startswith(positive)]
    neg = [r for r in rows if r["kind"] == negative and not r["answered_by_source"]]

    def best(r: dict[str, Any], key: str) -> tuple[float, bool]:
        if not r["candidates"]:
            return (-1.0, False)
        c = max(r["candidates"], key=lambda c: c[key])
        return (c[key], bool(c.get("is_source")))

    curves: dict[str, list[list[float]]] = {}
    for key in ("confidence", "similarity"):
        pb = [best(r, key) for r in pos]
        nb = [best(r, key) for r in neg]
        points = []
        for cut in np.linspace(0.0, 1.0, 101):
            tp = sum(1 for s, own in pb if own and s >= cut) / max(1, len(pb))
            fp = sum(1 for s, _ in nb if s >= cut) / max(1, len(nb))
            points.append([round(float(cut), 2), round(fp, 4), round(tp, 4)])
        curves[key] = points
    return curves


def plot_trade_off(curves: dict[str, dict[str, list[list[float]]]], points: dict[str, tuple[float, float]],
                   out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 4.5))
    axes = np.atleast_1d(axes)
    for ax, (name, c) in zip(axes, curves.items()):
        for key, label in (("confidence", "calibrated scorer (confidence cut)"), ("similarity", "cosine alone")):
            pts = np.array(c[key])
            ax.plot(pts[:, 1] * 100, pts[:, 2] * 100, label=label)
        if name in points:
            fp, tp = points[name]
            ax.scatter([fp * 100], [tp * 100], color="black", zorder=3, label="shipped defaults (end to end)")
        ax.axvline(5, color="grey", linestyle=":", linewidth=1)
        ax.axhline(60, color="grey", linestyle=":", linewidth=1)
        ax.set_xlim(0, 60)
        ax.set_ylim(0, 100)
        ax.set_xlabel("different-need questions served a prefetch (%)")
        ax.set_ylabel("paraphrases served their own trail as prefetch (%)")
        ax.set_title(f"{name} (held-out)")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def rescore(rows: list[dict[str, Any]]) -> None:
    """Confidence of every logged candidate by the shipped scorer (rows may have been collected
    under another one)."""
    from cachecore.engine.evidence import FEATURES
    from cachecore.engine.scorer import default_match_scorer, default_question_scorer, scorer_for

    for r in rows:
        query = " ".join(r["query"].lower().split())
        for c in r["candidates"]:
            same = c.get("query_normalised") and c["query_normalised"] == query
            scorer = scorer_for(trail_coverage_of(c), document=default_match_scorer(),
                                question=default_question_scorer())
            c["confidence"] = 1.0 if same else scorer.score([c["features"][f] for f in FEATURES])


def trail_coverage_of(cand: dict[str, Any]) -> float | None:
    """The trail's question's coverage by its cited text, as recall had it (rows collected before
    ``explain`` carried it: from the coverage features)."""
    if "trail_coverage" in cand:
        return cand["trail_coverage"]
    f = cand["features"]
    return f["coverage_gap"] + f["coverage"] if f.get("coverage_known") else None


def report(out: Path, *, qqp_trails: int = 10_000, faq_only: bool = False) -> dict[str, Any]:
    """Held-out figures at the shipped defaults, end to end through ``recall``, with the
    trade-off plot; writes ``report.json``, ``summary.md`` and ``trade-off.png`` to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    faq_defaults = collect({}, out / "faq-defaults.jsonl", floor=None)
    faq_wide = collect({}, out / "faq-wide.jsonl", floor=COLLECT_FLOOR)
    rows_defaults = load_rows([faq_defaults])
    rows_wide = [r for r in load_rows([faq_wide]) if r["side"] == HELD_OUT]
    rescore(rows_wide)
    faq = faq_figures(rows_defaults)
    curves = {"Documentation FAQ": trade_off(rows_wide, positive="paraphrase", negative="twin")}
    points = {"Documentation FAQ": (faq["twin_prefetch"]["rate"], faq["paraphrase_own_prefetch"]["rate"])}
    result: dict[str, Any] = {"faq": faq, "faq_calibration_side": faq_figures(rows_defaults, CALIBRATION)}
    if not faq_only:
        from research.qqp_cache import QQPConfig, run_qqp_cache

        qqp = run_qqp_cache(QQPConfig(trails=qqp_trails, explain=True))
        details = qqp.pop("details")
        with open(out / "qqp-details.jsonl", "w", encoding="utf-8") as fh:
            for d in details:
                fh.write(json.dumps(d) + "\n")
        rescore(details)
        dup = [d for d in details if d["label"] == "duplicate"]
        non = [d for d in details if d["label"] == "non_duplicate"]

        def own(d: dict[str, Any]) -> bool:
            return d.get("trail_id") == d["pair_trail_id"]

        result["qqp"] = {
            "trails": qqp["meta"]["sampled"]["trails"],
            "duplicate_own_prefetch": _rate(sum(own(d) and d["outcome"] == "prefetch" for d in dup), len(dup)),
            "duplicate_own_prefetch_or_hint": _rate(sum(own(d) and d["outcome"] != "miss" for d in dup), len(dup)),
            "non_duplicate_pair_prefetch": _rate(sum(own(d) and d["outcome"] == "prefetch" for d in non), len(non)),
            "non_duplicate_any_prefetch": _rate(sum(d["outcome"] == "prefetch" for d in non), len(non)),
            "latency_ms": qqp.get("latency_ms"),
        }
        for d in details:
            d["kind"] = "duplicate" if d["label"] == "duplicate" else "non_duplicate"
            d["answered_by_source"] = d["label"] == "duplicate"
        curves["QQP"] = trade_off(details, positive="duplicate", negative="non_duplicate")
        points["QQP"] = (result["qqp"]["non_duplicate_pair_prefetch"]["rate"],
                         result["qqp"]["duplicate_own_prefetch"]["rate"])
    from cachecore.engine.scorer import MatchScorer

    scorer = MatchScorer.load()
    result["defaults"] = {"scorer": scorer.version, "prefetch_confidence": scorer.prefetch_confidence,
                          "hint_confidence": scorer.hint_confidence}
    result["curves"] = curves
    plot_trade_off(curves, points, out / "trade-off.png")
    (out / "report.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(result), encoding="utf-8")
    return result


def _fmt(x: dict[str, Any]) -> str:
    return f"{x['k']}/{x['n']} = {100 * x['rate']:.1f} % [{100 * x['ci95'][0]:.1f}–{100 * x['ci95'][1]:.1f}]"


def summary_markdown(result: dict[str, Any]) -> str:
    faq = result["faq"]
    lines = [
        "| held-out, shipped defaults | measured (95 % interval) | target |",
        "|---|---|---|",
        f"| FAQ close-but-different served a prefetch | {_fmt(faq['twin_prefetch'])} | ≤ 5 % |",
        f"| FAQ paraphrases served their own trail, prefetch or hint | {_fmt(faq['paraphrase_own_prefetch_or_hint'])}"
        " | ≥ 80 % |",
        f"| FAQ paraphrases served their own trail as prefetch | {_fmt(faq['paraphrase_own_prefetch'])} | ≥ 60 % |",
        f"| FAQ paraphrases served another trail as prefetch | {_fmt(faq['paraphrase_other_prefetch'])} | |",
        f"| FAQ twins the source answers, served a prefetch | {_fmt(faq['answered_twin_prefetch'])} | |",
    ]
    if "qqp" in result:
        q = result["qqp"]
        lines += [
            f"| QQP non-duplicates served their pair's trail as prefetch | {_fmt(q['non_duplicate_pair_prefetch'])}"
            " | ≤ 5 % |",
            f"| QQP non-duplicates served any prefetch | {_fmt(q['non_duplicate_any_prefetch'])} | |",
            f"| QQP duplicates served their pair's trail (prefetch or hint) | "
            f"{_fmt(q['duplicate_own_prefetch_or_hint'])} | ≥ 60 % |",
            f"| QQP duplicates served their pair's trail as prefetch | {_fmt(q['duplicate_own_prefetch'])} | |",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
