"""Self-calibration replayed on a documentation corpus: rounds of recall, the simulated agent's
record linked to each recall by ``recall_id`` (with label noise), and the tenant's suggested
operating point applied between rounds.

``python -m research.calibration_replay [--corpus faq|celery|flask] [--rounds 3] [--noise 0.1]
[--seed 0] [--limit N] [--via rest|services] [--keep-cut] [--labels pending|accepted] [--out DIR]``

The protocol of issue 24's test. By default over the REST API (``POST /api/v1/recall`` and
``POST /api/v1/trails`` through the WSGI application in this process, with an API key of the
tenant's own); ``--via services`` calls the services the views call instead (the same
decisions, without auth, throttling and serialisation):

0. A throw-away tenant at the shipped defaults ingests the corpus (``docingest``; chunk
   embeddings of the gold sections) and records one active trail per item: the item's
   question, citing its gold section(s).
1. Round r recalls every item's r-th same-need question (cycling over the item's two), then
   its r-th close-but-different question. After each recall the agent records what it cited,
   linked by ``recall_id``: the gold section for a same-need question (and for a close question
   the gold section answers anyway); for a close question that needs something else, the
   section(s) that answer it where the set names them (Celery's ``answer``), else another section
   of the gold's page. With probability ``noise`` that citation is flipped (gold ↔ the other).
   Records are pending (no positive signal): they label the recalls (and teach per-trail
   boundaries) but are never served, so the cache does not grow. With ``--labels accepted``
   they are recorded the way the README's loop records an accepted answer instead: in the
   recall's own scope with ``signal: {"source": "user", "accepted": true}``, so each becomes
   an active trail that later rounds may be served (the cache grows as a user's would).
2. After the round, the tenant's suggested operating point is applied
   (``operating_point_apply``, as ``auto_calibrate`` would); with ``--keep-cut`` it is not, and
   the per-trail boundaries alone learn from the labels.

Per round and side (calibration / held-out; the headline is held-out): same-need questions
served their own trail's text (prefetch), their own trail as prefetch or hint, close-but-different
questions (those the gold section does not answer) served any prefetch and how many of them the
very trail they differ from, how many of them a prefetch that carries none of the sections
that answer them (*wrong*; only where the set names those sections: any prefetch otherwise),
and the prefetch cut before and after the round, with 95 % Wilson
intervals. Writes ``report.json`` and ``replay.png`` under ``--out`` (default
``reports/replay/<corpus>-noise<p>``). Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from research.corpora import CORPORA, Corpus, Item
from research.splits import CALIBRATION, HELD_OUT, REPO_ROOT
from research.stats import proportion

SIDES = (HELD_OUT, CALIBRATION)
ACTOR = "research:replay"
# How the simulated agent's labelling records are sent: pending in a scope of their own (they
# label, they are never served), or accepted in the recall's scope (they become trails).
LABELS = ("pending", "accepted")


@dataclass
class RoundCounts:
    """The counts of one round on one side."""
    same_need: int = 0
    same_own_prefetch: int = 0
    same_own_prefetch_or_hint: int = 0
    same_gold_prefetch: int = 0      # ... served a prefetch carrying the gold section (any trail)
    close: int = 0                   # close-but-different the gold section does not answer
    close_prefetch: int = 0          # ... served any prefetch
    close_prefetch_own: int = 0      # ... served the very trail they differ from
    close_prefetch_wrong: int = 0    # ... served none of the sections that answer it
    close_answered: int = 0          # close questions the gold section answers anyway
    close_answered_own_prefetch: int = 0
    outcomes: Counter = field(default_factory=Counter)
    false_by_kind: Counter = field(default_factory=Counter)

    def figures(self) -> dict[str, Any]:
        return {
            "same_need_own_prefetch": proportion(self.same_own_prefetch, self.same_need),
            "same_need_own_prefetch_or_hint": proportion(self.same_own_prefetch_or_hint, self.same_need),
            "same_need_gold_prefetch": proportion(self.same_gold_prefetch, self.same_need),
            "close_any_prefetch": proportion(self.close_prefetch, self.close),
            "close_prefetch_own_trail": self.close_prefetch_own,
            "close_wrong_prefetch": proportion(self.close_prefetch_wrong, self.close),
            "close_answered_own_prefetch": proportion(self.close_answered_own_prefetch, self.close_answered),
            "outcomes": dict(self.outcomes), "false_prefetch_by_kind": dict(self.false_by_kind),
        }


@dataclass(frozen=True)
class Answer:
    """What the harness reads of a recall's answer."""
    recall_id: str
    outcome: str
    trail_id: str | None
    trails: tuple[str, ...]
    sections: tuple[str, ...] = ()   # the ids of the sections the answer names
    reason: str = ""
    confidence: float = 0.0

    def served(self) -> tuple[str, ...]:
        """Trails whose sections the answer carries (the best first)."""
        return self.trails or ((self.trail_id,) if self.trail_id else ())


class ServiceTransport:
    """The product's services, called directly (what the REST views call), as the whole tenant."""
    name = "services"

    def __init__(self, tenant: Any) -> None:
        from tenants.caller import tenant_caller

        self.caller = tenant_caller(tenant, actor_label=ACTOR)

    def recall(self, *, scope: str, query: str) -> Answer:
        from cachecore.services.recall import recall

        r = recall(caller=self.caller, scope=scope, query=query)
        return Answer(r.recall_id, str(r.answer.outcome), r.answer.trail_id, tuple(r.answer.trails or ()),
                      tuple(s["id"] for s in r.answer.sections or ()), str(r.answer.reason),
                      float(r.answer.confidence))

    def record(self, *, scope: str, query: str, steps: list[dict[str, Any]], cited: list[str],
               signal: dict[str, Any] | None, recall_id: str | None = None) -> str:
        from cachecore.services.trails import trail_record

        return str(trail_record(caller=self.caller, scope=scope, query=query, steps=steps, cited=cited,
                                signal=signal, recall_id=recall_id).pk)


class RestTransport:
    """``POST /api/v1/recall`` and ``POST /api/v1/trails`` through the WSGI application in this
    process (middleware, API-key auth, throttling, DRF validation and rendering), with a
    tenant-wide key of the default permissions (recall, record, feedback, sections:read)."""
    name = "rest"

    def __init__(self, tenant: Any) -> None:
        from django.test import Client

        from tenants.caller import tenant_caller
        from tenants.services import api_key_create

        _, raw = api_key_create(caller=tenant_caller(tenant, actor_label=ACTOR), name="replay")
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")

    def _post(self, url: str, body: dict[str, Any], expect: int) -> dict[str, Any]:
        response = self.client.post(url, json.dumps(body), content_type="application/json")
        if response.status_code != expect:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.content[:300]!r}")
        return response.json()

    def recall(self, *, scope: str, query: str) -> Answer:
        b = self._post("/api/v1/recall", {"scope": scope, "query": query}, 200)
        return Answer(b["recall_id"], b["outcome"], b.get("trail_id"), tuple(b.get("trails") or ()),
                      tuple(s["id"] for s in b.get("sections") or ()), str(b.get("reason", "")),
                      float(b.get("confidence") or 0.0))

    def record(self, *, scope: str, query: str, steps: list[dict[str, Any]], cited: list[str],
               signal: dict[str, Any] | None, recall_id: str | None = None) -> str:
        body: dict[str, Any] = {"scope": scope, "query": query, "steps": steps, "cited": cited, "signal": signal}
        if recall_id:
            body["recall_id"] = recall_id
        return self._post("/api/v1/trails", body, 201)["trail_id"]


TRANSPORTS = {"rest": RestTransport, "services": ServiceTransport}


def other_section(gold: Sequence[str], ids_by_page: dict[str, list[str]], all_ids: Sequence[str],
                  rng: random.Random) -> str:
    """Another section of the gold's page (any other section when the page has no other)."""
    page = gold[0].split("#", 1)[0]
    choices = [i for i in ids_by_page.get(page, []) if i not in gold]
    if not choices:
        choices = [i for i in all_ids[:500] if i not in gold]
    return rng.choice(choices)


def agent_citation(gold: Sequence[str], answer: Sequence[str], *, cites_gold: bool, known: set[str],
                   ids_by_page: dict[str, list[str]], all_ids: Sequence[str], rng: random.Random) -> list[str]:
    """What the simulated agent cites: the gold section(s), or else the sections that answer the
    question where the set names them (and the corpus holds them), or else another section of
    the gold's page."""
    if cites_gold:
        return list(gold)
    named = [a for a in answer if a in known]
    return named or [other_section(gold, ids_by_page, all_ids, rng)]


def pick_items(items: Sequence[Item], known: set[str], limit: int | None) -> list[Item]:
    """The items whose gold sections are in the corpus; with ``limit``, that many, alternating
    held-out and calibration items while both last (the tests' tiny run)."""
    present = [i for i in items if any(g in known for g in i.gold)]
    if limit is None:
        return present
    by_side = {s: [i for i in present if i.side == s] for s in SIDES}
    mixed = [x for pair in zip(by_side[HELD_OUT], by_side[CALIBRATION]) for x in pair]
    rest = [i for i in present if i not in mixed]
    return (mixed + rest)[:limit]


def replay(*, corpus: Corpus, rounds: int, noise: float, seed: int, out: Path | None,
           limit: int | None = None, start_prefetch: float | None = None, plot_png: bool = True,
           via: str = "rest", apply: bool = True, labels: str = "pending",
           carve: tuple[int, int] | None = None) -> dict[str, Any]:
    """Run the replay and return the report (written to ``out`` when given). ``carve``: (sections,
    seed), a small tenant carved out of the corpus instead of the whole of it
    (``research.corpora.small_tenant_sections``: the gold of items drawn at random and other
    sections, and only those items)."""
    from cachecore.services import calibration
    from docingest.ingest import collect_sections, ingest_sections
    from docingest.progress import Progress
    from research.corpora import chunks_ensure_cached, small_tenant_sections
    from tenants.caller import tenant_caller
    from tenants.models import Tenant
    from tenants.services import tenant_create

    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    if not 0.0 <= noise <= 1.0:
        raise ValueError("noise must be within [0, 1]")
    if via not in TRANSPORTS:
        raise ValueError(f"via must be one of {sorted(TRANSPORTS)}")
    if labels not in LABELS:
        raise ValueError(f"labels must be one of {LABELS}")
    rng = random.Random(seed)
    started = datetime.now(UTC)
    timings: dict[str, float] = {}
    tenant = tenant_create(slug=f"replay-{corpus.name}-{started:%Y%m%d-%H%M%S}-{rng.randrange(16**4):04x}",
                           name=f"Replay ({corpus.name})")
    if start_prefetch is not None:
        tenant.prefetch_confidence = start_prefetch
        tenant.hint_confidence = min(tenant.hint_confidence, start_prefetch)
        tenant.full_clean()
        tenant.save(update_fields=["prefetch_confidence", "hint_confidence"])
    as_tenant = tenant_caller(tenant, actor_label=ACTOR)  # operating_point_apply, as auto_calibrate does
    defaults = {"prefetch_confidence": tenant.prefetch_confidence, "hint_confidence": tenant.hint_confidence,
                "similarity_threshold": tenant.similarity_threshold,
                "target_false_prefetch": tenant.target_false_prefetch}
    rows: list[dict[str, Any]] = []
    # One line per recall: what was asked, answered and labelled (for the per-kind breakdown).
    log: list[dict[str, Any]] = []
    items: list[Item] = []
    all_ids: list[str] = []
    try:
        agent = TRANSPORTS[via](tenant)
        t0 = time.perf_counter()
        sections = collect_sections(corpus.docs, corpus.subtrees)
        pool = corpus.items()
        if carve is not None:
            kept, pool = small_tenant_sections([s.id for s in sections], pool, carve[0], seed=carve[1])
            sections = [s for s in sections if s.id in kept]
        all_ids = [s.id for s in sections]
        known = set(all_ids)
        ids_by_page: dict[str, list[str]] = defaultdict(list)
        for sid in all_ids:
            ids_by_page[sid.split("#", 1)[0]].append(sid)
        with Progress("ingest sections", len(sections)) as bar:
            ingest_sections(tenant=tenant, sections=sections, on_batch=bar.step, chunks="defer")
        timings["ingest_s"] = round(time.perf_counter() - t0, 1)
        items = pick_items(pool, known, limit)
        gold = {i.id: [g for g in i.gold if g in known] for i in items}
        t0 = time.perf_counter()
        # Every section's chunks, as the tenant's chunk job gives them: recall weighs the cited
        # text against the best-covering section of the whole corpus.
        with Progress("chunk embeddings", len(all_ids)) as bar:
            chunks_ensure_cached(tenant=tenant, section_ids=all_ids, on_batch=bar.step)
        timings["chunks_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        trail_of: dict[str, str] = {}
        for i in items:
            trail_of[i.id] = agent.record(
                scope=corpus.scope, query=i.question,
                steps=[{"tool": "search", "args": {"q": i.question}, "returned": gold[i.id]}],
                cited=gold[i.id], signal={"source": "caller", "accepted": True})
        timings["record_s"] = round(time.perf_counter() - t0, 1)

        # Which item's question each trail the cache may serve was recorded for: "<item>:question" for
        # the items' own trails, "<item>:<kind>" for the labels recorded as trails (--labels accepted).
        recorded = {t: f"{i}:question" for i, t in trail_of.items()}

        def label(query: str, recall_id: str, cites_gold: bool, item: Item, answer: Sequence[str] = (),
                  kind: str = "same_need") -> None:
            if rng.random() < noise:
                cites_gold = not cites_gold
            cited = agent_citation(gold[item.id], answer, cites_gold=cites_gold, known=known,
                                   ids_by_page=ids_by_page, all_ids=all_ids, rng=rng)
            if labels == "accepted":
                made = agent.record(scope=corpus.scope, query=query, steps=[], cited=cited,
                                    signal={"source": "user", "accepted": True}, recall_id=recall_id)
                recorded[made] = f"{item.id}:{kind}"
            else:
                agent.record(scope=corpus.scope + "-labels", query=query, steps=[], cited=cited, signal=None,
                             recall_id=recall_id)

        for r in range(1, rounds + 1):
            t0 = time.perf_counter()
            tenant.refresh_from_db()
            cut_before, in_force_before = tenant.prefetch_confidence, calibration.cut_in_force(tenant)[0]
            counts = {s: RoundCounts() for s in SIDES}
            order = list(items)
            rng.shuffle(order)
            with Progress(f"round {r} same-need", len(order)) as bar:
                for i in order:
                    res = agent.recall(scope=corpus.scope, query=i.same_need_at(r - 1))
                    c = counts[i.side]
                    own = trail_of[i.id] in res.served()
                    gold_named = bool(set(gold[i.id]) & set(res.sections))
                    c.same_need += 1
                    c.outcomes[f"same_need:{res.outcome}"] += 1
                    c.same_own_prefetch += res.outcome == "prefetch" and own
                    c.same_own_prefetch_or_hint += res.outcome in ("prefetch", "hint") and own
                    c.same_gold_prefetch += res.outcome == "prefetch" and gold_named
                    label(i.same_need_at(r - 1), res.recall_id, True, i)
                    log.append({"round": r, "side": i.side, "item": i.id, "kind": "same_need",
                                "outcome": res.outcome, "reason": res.reason, "confidence": res.confidence,
                                "own": own, "right": own or gold_named,
                                "served": [recorded.get(t, "?") for t in res.served()]})
                    bar.step()
            rng.shuffle(order)
            with Progress(f"round {r} close-but-different", len(order)) as bar:
                for i in order:
                    close = i.close_at(r - 1)
                    if close is None:
                        bar.step()
                        continue
                    res = agent.recall(scope=corpus.scope, query=close.question)
                    c = counts[i.side]
                    own = trail_of[i.id] in res.served()
                    c.outcomes[f"close:{res.outcome}"] += 1
                    if close.answered_by_source:
                        c.close_answered += 1
                        c.close_answered_own_prefetch += res.outcome == "prefetch" and own
                    else:
                        c.close += 1
                        if res.outcome == "prefetch":
                            c.close_prefetch += 1
                            c.close_prefetch_own += own
                            c.close_prefetch_wrong += not ({a for a in close.answer if a in known}
                                                           & set(res.sections))
                            c.false_by_kind[close.kind] += 1
                    label(close.question, res.recall_id, close.answered_by_source, i, close.answer,
                          kind=f"close:{close.kind}")
                    named = set(gold[i.id]) if close.answered_by_source else {a for a in close.answer if a in known}
                    log.append({"round": r, "side": i.side, "item": i.id, "kind": f"close:{close.kind}",
                                "answered_by_source": close.answered_by_source, "outcome": res.outcome,
                                "reason": res.reason, "confidence": res.confidence, "own": own,
                                "right": bool(named & set(res.sections)) if named else None,
                                "served": [recorded.get(t, "?") for t in res.served()]})
                    bar.step()
            tenant.refresh_from_db()
            suggestion = calibration.suggestion_as_dict(calibration.operating_point(caller=as_tenant), tenant=tenant)
            applied = calibration.operating_point_apply(caller=as_tenant, automatic=True) if apply else None
            tenant.refresh_from_db()
            # The setting, and the cut recall applies (higher in a small tenant, ``small_tenant_cut``).
            row = {"round": r, "prefetch_cut_before": cut_before, "prefetch_cut_after": tenant.prefetch_confidence,
                   "cut_in_force_before": in_force_before, "cut_in_force_after": calibration.cut_in_force(tenant)[0],
                   "paused_after": tenant.prefetch_paused,
                   "hint_confidence_after": tenant.hint_confidence, "applied": applied is not None,
                   "suggestion": suggestion, "seconds": round(time.perf_counter() - t0, 1),
                   "sides": {s: counts[s].figures() for s in SIDES}}
            rows.append(row)
            print(table([row], HELD_OUT, header=r == 1), flush=True)
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    report = {
        "corpus": corpus.name, "docs": str(corpus.docs), "sections": len(all_ids), "items": len(items),
        "items_by_side": dict(Counter(i.side for i in items)), "rounds": rows, "noise": noise, "seed": seed,
        "limit": limit, "start_prefetch": start_prefetch, "suggestion_applied": apply, "labels": labels,
        "carve": {"sections": carve[0], "seed": carve[1]} if carve else None,
        "defaults": defaults,
        "timings": timings,
        "via": via, "path": ("REST API in process (POST /api/v1/recall, /api/v1/trails)" if via == "rest" else
                             "services (cachecore.services.recall, trails.trail_record)")
        + "; operating_point_apply between rounds",
        "headline_side": HELD_OUT, "started_at": started.isoformat(timespec="seconds"), "recalls": log,
    }
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        if plot_png:
            plot(report, out / "replay.png")
    return report


def _pct(p: dict[str, Any]) -> str:
    if not p["n"]:
        return "0/0"
    lo, hi = p["ci95"]
    return f"{p['k']}/{p['n']} = {100 * p['rate']:.0f} % [{100 * lo:.0f}–{100 * hi:.0f}]"


def _cut(row: dict[str, Any], when: str) -> str:
    """The prefetch cut a round ran at (``before``) or left (``after``): the one recall applies,
    with the setting beside it where a small tenant raises it (older reports: the setting)."""
    setting = row[f"prefetch_cut_{when}"]
    in_force = row.get(f"cut_in_force_{when}", setting)
    return f"{setting:.2f}" if in_force == setting else f"{in_force:.3f} (setting {setting:.2f})"


def table(rows: Sequence[dict[str, Any]], side: str = HELD_OUT, *, header: bool = True) -> str:
    """The per-round table of one side (markdown)."""
    lines = []
    if header:
        lines += [f"{side}: | round | same-need own trail, prefetch | same-need own trail, prefetch or hint "
                  "| same-need gold text (any trail) | close-but-different any prefetch (own trail) "
                  "| close-but-different wrong prefetch | prefetch cut before → after |",
                  "|---|---|---|---|---|---|---|"]
    for row in rows:
        f = row["sides"][side]
        lines.append(f"| {row['round']} | {_pct(f['same_need_own_prefetch'])} | "
                     f"{_pct(f['same_need_own_prefetch_or_hint'])} | {_pct(f['same_need_gold_prefetch'])} | "
                     f"{_pct(f['close_any_prefetch'])} "
                     f"({f['close_prefetch_own_trail']}) | {_pct(f['close_wrong_prefetch'])} | "
                     f"{_cut(row, 'before')} → {_cut(row, 'after')}"
                     f"{' (hints only)' if row.get('paused_after') else ''} |")
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path, side: str = HELD_OUT) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rounds"]
    x = [r["round"] for r in rows]

    def series(key: str) -> list[float]:
        return [100 * (r["sides"][side][key]["rate"] or 0.0) for r in rows]

    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    ax.plot(x, series("same_need_own_prefetch"), marker="o", label="same-need: own trail as prefetch")
    ax.plot(x, series("same_need_own_prefetch_or_hint"), marker="o", linestyle="--",
            label="same-need: own trail, prefetch or hint")
    ax.plot(x, series("close_any_prefetch"), marker="o", label="close-but-different: any prefetch")
    if any("close_wrong_prefetch" in r["sides"][side] for r in rows):
        ax.plot(x, [100 * (r["sides"][side].get("close_wrong_prefetch", {}).get("rate") or 0.0) for r in rows],
                marker="o", linestyle="--", label="close-but-different: wrong prefetch")
    ax.axhline(5, color="grey", linestyle=":", linewidth=1, label="target 5 %")
    ax.set_xlabel(f"round ({report['noise']:.0%} label noise; suggestion applied after each)")
    ax.set_ylabel(f"% of {side.replace('_', '-')} questions")
    ax.set_xticks(x)
    ax.set_ylim(0, 100)
    cut = ax.twinx()
    cut.plot(x, [r.get("cut_in_force_after", r["prefetch_cut_after"]) for r in rows], color="black", marker="s",
             linewidth=1, label="prefetch cut after the round")
    cut.set_ylim(0, 1)
    cut.set_ylabel("prefetch confidence cut")
    handles = ax.get_legend_handles_labels()[0] + cut.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    ax.set_title(f"Replay on the {report['corpus']} corpus ({report['items']} items)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.calibration_replay")
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="faq")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--noise", type=float, default=0.1, help="probability of flipping each citation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="only this many items (both sides)")
    parser.add_argument("--out", type=Path, default=None,
                        help="default reports/replay/<corpus>-noise<p>")
    parser.add_argument("--via", choices=sorted(TRANSPORTS), default="rest",
                        help="recall and record over the REST API in process (default) or the services")
    parser.add_argument("--keep-cut", action="store_true",
                        help="never apply the suggestion: the per-trail boundaries alone learn from the labels")
    parser.add_argument("--labels", choices=LABELS, default="pending",
                        help="the agent's records: pending in a scope of their own (default), or accepted "
                        "in the recall's scope, as the README's loop records an answer (they become trails)")
    parser.add_argument("--start-prefetch", type=float, default=None,
                        help="the tenant's prefetch confidence before any label (default: the shipped one)")
    parser.add_argument("--sections", type=int, default=None,
                        help="a small tenant of about this many sections carved out of the corpus (the gold "
                        "of items drawn at random, other sections; only those items), seeded by --carve-seed")
    parser.add_argument("--carve-seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # The replay sends more than a client should: no request-rate limits (as ``make eval``).
    os.environ.setdefault("TRAILCACHE_RATE_PER_KEY_PER_MINUTE", "0")
    os.environ.setdefault("TRAILCACHE_RATE_PER_TENANT_PER_MINUTE", "0")
    import django

    django.setup()
    corpus = CORPORA[args.corpus]
    if not corpus.available():
        print(f"{corpus.docs} is missing: install Debian's {corpus.package}", file=sys.stderr)
        return 2
    suffix = "" if args.labels == "pending" else f"-{args.labels}"
    if args.sections is not None:
        suffix += f"-{args.sections}s{args.carve_seed}"
    out = args.out or REPO_ROOT / "reports" / "replay" / f"{corpus.name}-noise{args.noise:g}{suffix}"
    report = replay(corpus=corpus, rounds=args.rounds, noise=args.noise, seed=args.seed, out=out,
                    limit=args.limit, start_prefetch=args.start_prefetch, via=args.via, apply=not args.keep_cut,
                    labels=args.labels,
                    carve=(args.sections, args.carve_seed) if args.sections is not None else None)
    print()
    for side in SIDES:
        print(table(report["rounds"], side))
        print()
    print(f"timings {report['timings']}; report in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
