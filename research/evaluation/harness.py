"""The evaluation run: a dedicated tenant, the corpus, the simulated agent with and without
the cache, three admission gates, the staleness experiment and matching quality.

Everything goes through the service functions the API uses (``sections_upsert``,
``trail_record``, ``recall``). The run is deterministic given the corpus, the questions and
the seed. The tenant (``eval-<timestamp>``) is deleted at the end unless asked to keep it.
"""

from __future__ import annotations

import importlib.util
import json
import platform
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from django.db import models, transaction

from cachecore.embedding import get_embedder
from cachecore.engine.text import normalise_query
from cachecore.models import Trail, TrailStatus
from cachecore.services.recall import RecallResult, recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from docingest.ingest import chunks_ensure, chunks_pending, collect_sections, ingest_sections, upsert_synchronously
from docingest.progress import Progress
from research.evaluation.agent import CALL_LIMIT, NON_ANSWER, AgentRun, run_agent
from research.evaluation.corpus import FullTextSearch, edit_sentence
from research.evaluation.metrics import (
    edit_sample_size,
    gate_accounting,
    rate,
    summary,
    sweep_point,
    threshold_sweep,
)
from research.evaluation.naive import NaiveTextCache, changed_served
from tenants.caller import tenant_caller
from tenants.models import AdmissionPolicy, Tenant
from tenants.services import SETTINGS_FIELDS, tenant_create

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_QUESTIONS = REPO_ROOT / "tests" / "data" / "eval" / "python_faq.jsonl"
DEFAULT_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
GATES = ("none", "oracle", "verifier")
EDIT_RATES = (0.05, 0.10, 0.25, 0.50)


def answer_dict(result: RecallResult) -> dict[str, Any]:
    """A recall as the API answers it (its serializer renders the service's result)."""
    from api.serializers import RecallResultSerializer

    return dict(RecallResultSerializer(result).data)


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    gold: tuple[str, ...]
    paraphrases: tuple[str, ...]
    distinct: tuple[str, ...]


def load_questions(path: Path, limit: int | None = None) -> list[Question]:
    rows: list[Question] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            rows.append(Question(d["id"], d["question"], tuple(d["gold"]), tuple(d.get("paraphrases", ())),
                                 tuple(d.get("distinct", ()))))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` pairs → typed tenant settings (validated against the model field)."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or name not in SETTINGS_FIELDS:
            raise ValueError(f"--set expects FIELD=VALUE with FIELD one of {', '.join(SETTINGS_FIELDS)}; got {item!r}")
        field = Tenant._meta.get_field(name)
        value = raw.strip()
        if isinstance(field, models.BooleanField):
            value = {"true": "True", "false": "False"}.get(value.lower(), value)
        out[name] = field.to_python(value)
    return out


@dataclass
class EvalConfig:
    docs: Path = DEFAULT_DOCS
    questions: Path = DEFAULT_QUESTIONS
    limit: int | None = None
    subtrees: tuple[str, ...] = ()
    gates: tuple[str, ...] = GATES
    seed: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)
    edit_rates: tuple[float, ...] = EDIT_RATES
    call_limit: int = CALL_LIMIT
    keep_tenant: bool = False
    progress: bool = True
    tenant_slug: str | None = None


class Run:
    """State of one evaluation run against one tenant."""

    def __init__(self, config: EvalConfig, tenant: Tenant) -> None:
        self.config, self.tenant = config, tenant
        self.embedder = get_embedder()
        self._tokens: dict[str, int] = {}
        self._queries: dict[str, Any] = {}
        self.fts: FullTextSearch | None = None
        self.notes: list[str] = []
        self.timings: dict[str, float] = {}
        self.details: list[dict[str, Any]] = []   # per query, written to details.jsonl

    def embed_query(self, query: str) -> np.ndarray:
        """The query embedding as recall computes it (normalised, then embedded), memoised."""
        key = normalise_query(query)
        vector = self._queries.get(key)
        if vector is None:
            vector = self._queries[key] = self.embedder.embed_one(key)
        return vector

    # -- tools ------------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        n = self._tokens.get(text)
        if n is None:
            n = self._tokens[text] = self.embedder.count_tokens(text)
        return n

    def recall_fn(self, scope: str) -> Callable[[str], dict[str, Any]]:
        def call(query: str) -> dict[str, Any]:
            return answer_dict(recall(caller=tenant_caller(self.tenant), scope=scope, query=query))
        return call

    def agent(self, query: str, gold: Sequence[str], *, scope: str | None = None) -> AgentRun:
        assert self.fts is not None
        return run_agent(query, gold=gold, search=self.fts.search, read=self.fts.read, count_tokens=self.count_tokens,
                         recall=self.recall_fn(scope) if scope else None, call_limit=self.config.call_limit)

    def progress(self, label: str, total: int) -> Progress:
        return Progress(label, total, enabled=self.config.progress)

    def timed(self, name: str, started: float) -> None:
        self.timings[name] = round(time.perf_counter() - started, 2)

    # -- trails -----------------------------------------------------------------------------------
    def record(self, *, scope: str, run: AgentRun, accepted: bool | None, answer: str | None = None) -> Trail | None:
        if not run.cited:
            return None
        signal = {"source": "caller", "accepted": accepted} if accepted is not None else None
        return trail_record(caller=tenant_caller(self.tenant), scope=scope, query=run.query, steps=run.steps,
                                     cited=run.cited, signal=signal, answer=answer)

    def set_policy(self, policy: str) -> None:
        self.tenant.admission_policy = policy
        self.tenant.save(update_fields=["admission_policy"])


def verifier_probe(run: Run, section_id: str) -> dict[str, Any]:
    """Is the built-in verifier there? The module imports, and a trail recorded under
    ``signal+verifier`` with an obvious non-answer comes back pending with a verdict."""
    importable = importlib.util.find_spec("cachecore.engine.verifier") is not None
    before = run.tenant.admission_policy
    run.set_policy(AdmissionPolicy.SIGNAL_VERIFIER)
    try:
        with transaction.atomic():
            trail = trail_record(
                caller=tenant_caller(run.tenant), scope="eval-probe", query="probe: what does this section say?",
                steps=[], cited=[section_id], signal={"source": "caller", "accepted": True}, answer=NON_ANSWER)
            status, verdict = trail.status, trail.verdict
            trail.delete()
    finally:
        run.set_policy(before)
    available = status == TrailStatus.PENDING and verdict is not None
    return {"importable": importable, "available": available, "probe_status": str(status), "probe_verdict": verdict}


def verdict_label(verdict: dict[str, Any] | None) -> str:
    """A short label of a verifier verdict for counting: passed / non-answer / unsupported / …"""
    if not verdict:
        return "no verdict"
    if verdict.get("passed"):
        return "passed"
    if verdict.get("non_answer"):
        return "rejected: non-answer"
    if verdict.get("supported_ratio") is not None:
        return "rejected: unsupported sentences"
    return "rejected: " + "; ".join(str(r) for r in verdict.get("reasons") or [])[:80]


def agent_summary(runs: Sequence[AgentRun]) -> dict[str, Any]:
    return {
        "n": len(runs),
        "success_rate": rate(sum(r.success for r in runs), len(runs)),
        "calls": summary([r.calls for r in runs]),
        "tokens": summary([r.tokens for r in runs]),
        "hit_call_limit": sum(1 for r in runs if not r.success),
        "found_by": dict(Counter(r.found_by or "not found" for r in runs)),
    }


def cache_summary(with_cache: Sequence[AgentRun], without: Sequence[AgentRun]) -> dict[str, Any]:
    outcomes = Counter(r.recall_outcome for r in with_cache)
    prefetch_no_gold = sum(1 for r in with_cache if r.recall_outcome == "prefetch" and r.found_by != "prefetch")
    return {
        "without_cache": agent_summary(without),
        "with_cache": agent_summary(with_cache),
        "recall_outcomes": {k: outcomes.get(k, 0) for k in ("prefetch", "hint", "miss")},
        "escalated": sum(1 for r in with_cache if r.recall_escalated),
        "prefetch_without_gold": prefetch_no_gold,
        "tokens_saved_total": sum(b.tokens for b in without) - sum(a.tokens for a in with_cache),
        "calls_saved_total": sum(b.calls for b in without) - sum(a.calls for a in with_cache),
        "queries_with_more_tokens": sum(1 for a, b in zip(with_cache, without) if a.tokens > b.tokens),
    }


def run_evaluation(config: EvalConfig) -> dict[str, Any]:
    """The whole run; returns the report (JSON-serialisable)."""
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    questions = load_questions(config.questions, config.limit)
    if not questions:
        raise ValueError(f"no questions in {config.questions}")
    unknown_gates = set(config.gates) - set(GATES)
    if unknown_gates:
        raise ValueError(f"unknown gates {sorted(unknown_gates)}; choose from {', '.join(GATES)}")
    slug = config.tenant_slug or f"eval-{started_at:%Y%m%d-%H%M%S}-{random.Random().randrange(16**4):04x}"
    tenant = tenant_create(slug=slug, name=f"Evaluation run {started_at:%Y-%m-%d %H:%M:%S} UTC")
    for name, value in config.overrides.items():
        setattr(tenant, name, value)
    tenant.full_clean()
    tenant.save()
    run = Run(config, tenant)
    try:
        return _evaluate(run, questions, started_at, t0)
    finally:
        if run.fts is not None:
            run.fts.close()
        if not config.keep_tenant:
            Tenant.objects.filter(pk=tenant.pk).delete()


def _evaluate(run: Run, questions: list[Question], started_at: datetime, t0: float) -> dict[str, Any]:
    config, tenant = run.config, run.tenant

    # -- corpus -----------------------------------------------------------------------------------
    t = time.perf_counter()
    sections = collect_sections(config.docs, config.subtrees)
    if not sections:
        raise ValueError(f"no sections under {config.docs} (subtrees: {list(config.subtrees) or 'all'})")
    with run.progress("ingest sections", len(sections)) as bar:
        ingest = ingest_sections(tenant=tenant, sections=sections, on_batch=bar.step, chunks="defer")
    section_ids = {s.id for s in sections}
    run.fts = FullTextSearch(tenant)
    run.timed("ingest", t)
    missing_gold = [q.id for q in questions if not any(g in section_ids for g in q.gold)]
    if missing_gold:
        shown = ", ".join(missing_gold[:10]) + (" …" if len(missing_gold) > 10 else "")
        run.notes.append(f"{len(missing_gold)} questions have no gold section in the ingested corpus "
                         f"(they can never succeed): {shown}")

    paraphrases = [(qi, p) for qi, q in enumerate(questions) for p in q.paraphrases]

    # -- phase 1: originals, empty cache; phase 2 baseline: paraphrases without cache ---------------
    t = time.perf_counter()
    with run.progress("phase 1 (originals)", len(questions)) as bar:
        phase1 = []
        for q in questions:
            phase1.append(run.agent(q.question, q.gold))
            bar.step()
    with run.progress("phase 2 (no cache)", len(paraphrases)) as bar:
        baseline = []
        for qi, p in paraphrases:
            baseline.append(run.agent(p, questions[qi].gold))
            bar.step()
    run.timed("agent_without_cache", t)
    correct = [r.success for r in phase1]   # a trail is correct when it cites a gold section
    for kind, runs, queries in (("phase1", phase1, [(qi, q.question) for qi, q in enumerate(questions)]),
                                ("phase2-no-cache", baseline, paraphrases)):
        for (qi, _q), r in zip(queries, runs):
            run.details.append({"kind": kind, "question_id": questions[qi].id, **r.as_dict()})

    # Chunk embeddings (coverage, verifier) for every section a trail will cite, and the gold.
    t = time.perf_counter()
    needed = {sid for r in phase1 for sid in r.cited} | {g for q in questions for g in q.gold} | {sections[0].id}
    needed &= section_ids
    with run.progress("chunk embeddings (cited)", len(chunks_pending(tenant=tenant, section_ids=needed))) as bar:
        computed = chunks_ensure(tenant=tenant, section_ids=needed, on_batch=bar.step)
    run.timed("chunks", t)

    # -- gates -------------------------------------------------------------------------------------
    t = time.perf_counter()
    verifier = verifier_probe(run, sections[0].id) if "verifier" in config.gates else None
    gates: dict[str, Any] = {}
    for gate in config.gates:
        if gate == "verifier" and not (verifier and verifier["available"]):
            # Never a silent skip: a non-answer recorded under signal+verifier that is not held
            # pending with a verdict means verifier admission is broken.
            raise RuntimeError(f"verifier admission is broken: a non-answer recorded under signal+verifier was "
                               f"not held pending with a verdict (probe: {verifier})")
        scope = f"gate-{gate}"
        policy_before = tenant.admission_policy
        if gate == "verifier":
            run.set_policy(AdmissionPolicy.SIGNAL_VERIFIER)
        admitted_rows: list[tuple[bool, bool]] = []
        verdicts: Counter[str] = Counter()
        try:
            with run.progress(f"gate {gate}: record", len(phase1)) as bar:
                for r, ok in zip(phase1, correct):
                    accepted = True if gate in ("none", "verifier") else ok
                    trail = run.record(scope=scope, run=r, accepted=accepted,
                                       answer=r.answer if gate == "verifier" else None)
                    bar.step()
                    if trail is None:
                        continue
                    admitted_rows.append((trail.status == TrailStatus.ACTIVE, ok))
                    if gate == "verifier":
                        verdicts[verdict_label(trail.verdict)] += 1
        finally:
            if gate == "verifier":
                run.set_policy(policy_before)
        with run.progress(f"gate {gate}: phase 2", len(paraphrases)) as bar:
            with_cache = []
            for qi, p in paraphrases:
                with_cache.append(run.agent(p, questions[qi].gold, scope=scope))
                bar.step()
        for (qi, _p), r in zip(paraphrases, with_cache):
            run.details.append({"kind": f"phase2-{gate}", "question_id": questions[qi].id, **r.as_dict()})
        gates[gate] = {
            "admission": gate_accounting(admitted_rows),
            "phase2": cache_summary(with_cache, baseline),
        }
        if gate == "verifier":
            gates[gate]["verdicts"] = dict(verdicts)
            gates[gate]["probe"] = verifier
    run.timed("gates", t)

    # -- matching quality --------------------------------------------------------------------------
    t = time.perf_counter()
    matching = _matching(run, questions, phase1, paraphrases)
    run.timed("matching", t)

    # -- staleness ---------------------------------------------------------------------------------
    t = time.perf_counter()
    staleness = [_staleness(run, questions, phase1, paraphrases, fraction) for fraction in config.edit_rates]
    run.timed("staleness", t)

    run.timings["total"] = round(time.perf_counter() - t0, 2)
    return {
        "meta": {
            "started_at": started_at.isoformat(timespec="seconds"),
            "tenant": tenant.slug,
            "docs": str(config.docs),
            "subtrees": list(config.subtrees) or ["(all)"],
            "questions_file": str(config.questions),
            "questions": len(questions),
            "paraphrases": len(paraphrases),
            "distinct": sum(len(q.distinct) for q in questions),
            "seed": config.seed,
            "gates": list(config.gates),
            "edit_rates": list(config.edit_rates),
            "call_limit": config.call_limit,
            "settings": {f: getattr(tenant, f) for f in SETTINGS_FIELDS if "secret" not in f},
            "overrides": {k: v for k, v in config.overrides.items() if "secret" not in k},
            "python": platform.python_version(),
            "timings_s": run.timings,
        },
        "corpus": {**ingest.as_dict(), "chunked_sections": computed,
                   "search": "PostgreSQL full-text: to_tsvector('english'), heading weighted A, OR of the query "
                   f"words via websearch_to_tsquery, ts_rank_cd normalisation {FullTextSearch.RANK_NORMALISATION}, "
                   "top 5", "questions_without_gold_in_corpus": len(missing_gold)},
        "phase1": {**agent_summary(phase1), "correct_trails": sum(correct),
                   "wrong_trails": sum(1 for r, ok in zip(phase1, correct) if r.cited and not ok),
                   "unrecorded": sum(1 for r in phase1 if not r.cited)},
        "gates": gates,
        "matching": matching,
        "staleness": staleness,
        "notes": run.notes,
        "details": run.details,
    }


def _record_all(run: Run, scope: str, phase1: Sequence[AgentRun]) -> dict[int, str]:
    """Record every phase-1 trail as accepted in ``scope``; question index → trail id."""
    trails: dict[int, str] = {}
    for qi, r in enumerate(phase1):
        trail = run.record(scope=scope, run=r, accepted=True)
        if trail is not None:
            trails[qi] = str(trail.pk)
    return trails


def _matching(run: Run, questions: list[Question], phase1: Sequence[AgentRun],
              paraphrases: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """Every phase-1 trail accepted in one scope. A paraphrase of Q should recall Q's trail.
    A distinct question of Q must not recall Q's trail (Q's gold does not answer it): that is
    a false hit. Many distinct questions reword *another* question of the set, so recalling
    some other trail is not counted as false; the literal "recalled anything" rate is
    reported too, over the distinct questions that are not verbatim questions of the set."""
    scope = "match"
    with run.progress("matching: record", len(phase1)) as bar:
        trails = _record_all(run, scope, phase1)
        bar.step(len(phase1))
    own = {tid: qi for qi, tid in trails.items()}
    ask = run.recall_fn(scope)

    def contributing(r: dict[str, Any]) -> list[str]:
        return list(r.get("trails") or ([r["trail_id"]] if r.get("trail_id") else []))

    def sim_to_source(query: str, qi: int) -> float:
        # What recall compares with the threshold for Q's trail: cosine of the normalised queries.
        return round(float(run.embed_query(query) @ run.embed_query(questions[qi].question)), 4)

    para_rows = []
    with run.progress("matching: paraphrases", len(paraphrases)) as bar:
        for qi, p in paraphrases:
            para_rows.append((qi, {**ask(p), "query": p, "sim_to_source": sim_to_source(p, qi)}))
            bar.step()
    asked = {normalise_query(q.question) for q in questions}
    distinct = [(qi, d) for qi, q in enumerate(questions) for d in q.distinct]
    dist_rows = []
    with run.progress("matching: distinct", len(distinct)) as bar:
        for qi, d in distinct:
            dist_rows.append((qi, {**ask(d), "query": d, "sim_to_source": sim_to_source(d, qi),
                                   "verbatim": normalise_query(d) in asked}))
            bar.step()

    def hit(r: dict[str, Any]) -> bool:
        return r["outcome"] != "miss"

    for kind, rows in (("paraphrase", para_rows), ("distinct", dist_rows)):
        for qi, r in rows:
            tq = own.get(r["trail_id"]) if r["trail_id"] else None
            run.details.append({
                "kind": f"matching-{kind}", "question_id": questions[qi].id, "query": r["query"],
                "outcome": r["outcome"], "similarity": r["similarity"], "sim_to_source": r["sim_to_source"],
                "coverage": r["coverage"], "escalated": r["escalated"],
                "source_trail_recalled": trails.get(qi) in contributing(r),
                "trail_question": questions[tq].question if tq is not None else None,
            })
    para_hits = [(qi, r) for qi, r in para_rows if hit(r)]
    false = [(qi, r) for qi, r in dist_rows if hit(r) and trails.get(qi) in contributing(r)]
    non_verbatim = [(qi, r) for qi, r in dist_rows if not r["verbatim"]]
    any_hit = [(qi, r) for qi, r in non_verbatim if hit(r)]
    n_p, n_d = len(para_rows), len(dist_rows)
    sweep = threshold_sweep([r["similarity"] for _, r in para_rows], [r["sim_to_source"] for _, r in dist_rows])
    any_sweep = threshold_sweep([], [r["similarity"] for _, r in non_verbatim])
    for row, other in zip(sweep, any_sweep):
        row["any_hit_rate"] = other["false_hit_rate"]
    threshold = run.tenant.similarity_threshold
    return {
        "threshold": threshold,
        "coverage_floor": run.tenant.coverage_floor,
        "match_mode": getattr(run.tenant, "match_mode", "embedding"),
        "polarity_guard": getattr(run.tenant, "polarity_guard", None),
        "merge_trails": getattr(run.tenant, "merge_trails", None),
        "trails": len(trails),
        "paraphrases": n_p,
        "paraphrase_hit_rate": rate(len(para_hits), n_p),
        "paraphrase_correct_hit_rate": rate(sum(1 for qi, r in para_hits if trails.get(qi) in contributing(r)), n_p),
        "paraphrase_prefetch": sum(1 for _, r in para_hits if r["outcome"] == "prefetch"),
        "paraphrase_hint": sum(1 for _, r in para_hits if r["outcome"] == "hint"),
        "paraphrase_escalated": sum(1 for _, r in para_hits if r["escalated"]),
        "distinct": n_d,
        "false_hit_rate": rate(len(false), n_d),
        "false_hits": len(false),
        "false_prefetch": sum(1 for _, r in false if r["outcome"] == "prefetch"),
        "false_hint": sum(1 for _, r in false if r["outcome"] == "hint"),
        "false_hits_escalated_to_hint": sum(1 for _, r in false if r["escalated"]),
        "distinct_verbatim_questions": n_d - len(non_verbatim),
        "distinct_any_hit_rate": rate(len(any_hit), len(non_verbatim)),
        "distinct_any_hits": len(any_hit),
        "sweep": sweep,
        "at_threshold": sweep_point(sweep, threshold),
    }


EDIT_WAVES = 4


def _edit_deferring_invalidation(run: Run, sections: list[dict[str, str]]) -> None:
    """Edit sections as a large upsert does: the fan-out that marks citing trails stale is a
    background job (never run here), chunk embeddings are left for later."""
    if not sections:
        return
    from django.test.utils import override_settings

    with override_settings(TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS=0, TRAILCACHE_SYNC_CHUNK_LIMIT=0):
        sections_upsert(caller=tenant_caller(run.tenant), sections=sections)
    assert run.fts is not None
    run.fts.refresh([s["id"] for s in sections])


def _active_citing(run: Run, scope: str, section_ids: set[str]) -> int:
    return (Trail.objects.filter(tenant=run.tenant, scope=scope, status=TrailStatus.ACTIVE,
                                 citations__section_id__in=section_ids).distinct().count())


def _was_edited(run: Run, section_id: str, originals: dict[str, str | None]) -> bool:
    """Whether the section's current text differs from the text the trails recorded."""
    assert run.fts is not None
    return run.fts.texts([section_id]).get(section_id) != originals.get(section_id)


def _staleness(run: Run, questions: list[Question], phase1: Sequence[AgentRun],
               paraphrases: Sequence[tuple[int, str]], fraction: float) -> dict[str, Any]:
    """Record every phase-1 trail (and the naive cache's copy of the cited text), edit
    ``fraction`` of the cited sections, replay the paraphrases against both, restore."""
    assert run.fts is not None
    pct = round(fraction * 100)
    scope = f"stale-{pct}"
    trails = _record_all(run, scope, phase1)
    cited = sorted({sid for qi in trails for sid in phase1[qi].cited})
    recorded_text = run.fts.texts(cited)
    naive = NaiveTextCache(threshold=run.tenant.similarity_threshold)
    for qi in trails:
        r = phase1[qi]
        naive.store(str(qi), run.embed_query(r.query),
                    {sid: recorded_text[sid] or "" for sid in r.cited})
    rng = random.Random(f"{run.config.seed}:{fraction}")
    edited = sorted(rng.sample(cited, edit_sample_size(len(cited), fraction)))
    edited_set = set(edited)
    originals = {sid: recorded_text[sid] for sid in edited if recorded_text[sid] is not None}
    # The edits land *between* the recalls, in EDIT_WAVES waves, and their invalidation fan-out is
    # left to a background job that does not run here: trails citing edited sections stay
    # `active`, so only read-time validation stands between a recall and changed text.
    waves = [edited[i::EDIT_WAVES] for i in range(EDIT_WAVES)]
    replay_at = {round(i * len(paraphrases) / EDIT_WAVES): wave for i, wave in enumerate(waves)}
    ask = run.recall_fn(scope)
    tc = Counter()
    nv = Counter()
    try:
        with run.progress(f"staleness {pct}%: replay", len(paraphrases)) as bar:
            for i, (_qi, p) in enumerate(paraphrases):
                wave = replay_at.get(i)
                if wave:
                    _edit_deferring_invalidation(run, [{"id": s, "text": edit_sentence(originals[s])}
                                                       for s in wave if s in originals])
                    tc["active_trails_citing_edited"] = max(
                        tc["active_trails_citing_edited"], _active_citing(run, scope, edited_set))
                r = ask(p)
                tc[r["outcome"]] += 1
                served = {s["id"]: s["text"] for s in r["sections"] if s.get("text") is not None}
                current = run.fts.texts(served)
                changed = [sid for sid in served if sid in edited_set and _was_edited(run, sid, originals)]
                outdated = changed_served(served, current)
                tc["changed_text_served"] += len(changed)
                tc["outdated_text_served"] += len(outdated)
                tc["recalls_serving_changed"] += bool(changed or outdated)
                if r["outcome"] == "hint" and any(s["status"] != "valid" for s in r["sections"]):
                    tc["hint_with_changed_sections"] += 1
                hit = naive.lookup(run.embed_query(p))
                if hit is not None:
                    nv["hits"] += 1
                    n_current = run.fts.texts(hit.sections)
                    n_outdated = changed_served(hit.sections, n_current)
                    nv["changed_text_served"] += len(n_outdated)
                    nv["recalls_serving_changed"] += bool(n_outdated)
                bar.step()
    finally:
        for start in range(0, len(edited), 100):
            batch = [s for s in edited[start:start + 100] if s in originals]
            upsert_synchronously(tenant=run.tenant, sections=[{"id": s, "text": originals[s]} for s in batch])
    n = len(paraphrases)
    return {
        "edit_rate": fraction,
        "cited_sections": len(cited),
        "edited_sections": len(edited),
        "trails": len(trails),
        "replays": n,
        "trailcache": {
            "changed_text_served": tc["changed_text_served"],
            "outdated_text_served": tc["outdated_text_served"],
            "recalls_serving_changed": tc["recalls_serving_changed"],
            "prefetch": tc["prefetch"], "hint": tc["hint"], "miss": tc["miss"],
            "hint_with_changed_sections": tc["hint_with_changed_sections"],
            "active_trails_citing_edited": tc["active_trails_citing_edited"],
            "hit_rate": rate(tc["prefetch"] + tc["hint"], n),
        },
        "text_cache": {
            "changed_text_served": nv["changed_text_served"],
            "recalls_serving_changed": nv["recalls_serving_changed"],
            "hits": nv["hits"],
            "hit_rate": rate(nv["hits"], n),
        },
    }
