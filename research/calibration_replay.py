"""Self-calibration replayed: the FAQ traffic in rounds, the simulated agent's citations as the
implicit labels (with label noise), and the tenant's operating point and per-trail boundaries
learning from them.

``python -m research.calibration_replay [--rounds 5] [--noise 0.1] [--seed 0] [--out DIR]``

Setup as ``research.match_calibration collect``: the Python docs, one trail per FAQ entry citing
its gold sections. Each round recalls every paraphrase and close-but-different question (shuffled)
through ``recall``; the simulated agent then records what it cited with the ``recall_id``: the
source's gold sections for a paraphrase (or a twin the source answers), another section for a
twin it does not answer — flipped with probability ``noise``. Those records are not accepted
(pending, never served), so the cache does not grow; they only label the recalls. After each
round the operating point is applied as a tenant with ``auto_calibrate`` would get it.
Per round: the false-prefetch rate (twins served a prefetch), the hit rate (paraphrases served
their own trail as prefetch), the prefetch cut. Writes ``report.json`` and ``replay.png``.
Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from research.match_calibration import DOCS, SCOPE, load_probes
from research.splits import REPO_ROOT


def replay(*, rounds: int, noise: float, seed: int, out: Path, start_prefetch: float | None = None) -> dict[str, Any]:
    from cachecore.services.calibration import operating_point_apply
    from cachecore.services.recall import recall
    from cachecore.services.trails import trail_record
    from docingest.ingest import chunks_ensure, collect_sections, ingest_sections
    from docingest.progress import Progress
    from tenants.models import Tenant
    from tenants.services import tenant_create

    rng = random.Random(seed)
    entries, probes = load_probes()
    probes = [p for p in probes if p.kind != "distinct"]
    started = datetime.now(UTC)
    tenant = tenant_create(slug=f"replay-{started:%Y%m%d-%H%M%S}-{rng.randrange(16**4):04x}", name="Replay")
    if start_prefetch is not None:
        # A tenant that starts permissive (as the defaults before calibration were).
        tenant.prefetch_confidence = start_prefetch
        tenant.hint_confidence = min(tenant.hint_confidence, start_prefetch)
        tenant.save(update_fields=["prefetch_confidence", "hint_confidence"])
    rows: list[dict[str, Any]] = []
    try:
        sections = collect_sections(DOCS)
        ids = sorted({s.id for s in sections})
        with Progress("ingest sections", len(sections)) as bar:
            ingest_sections(tenant=tenant, sections=sections, on_batch=bar.step, chunks="defer")
        gold = {e["id"]: [g for g in e["gold"] if g in set(ids)] for e in entries}
        chunks_ensure(tenant=tenant, section_ids={g for gs in gold.values() for g in gs})
        trail_of = {}
        for e in entries:
            if gold[e["id"]]:
                trail = trail_record(
                    tenant=tenant, scope=SCOPE, query=e["question"],
                    steps=[{"tool": "search", "args": {"q": e["question"]}, "returned": gold[e["id"]]}],
                    cited=gold[e["id"]], signal={"source": "caller", "accepted": True})
                trail_of[e["id"]] = str(trail.pk)
        for r in range(1, rounds + 1):
            order = list(probes)
            rng.shuffle(order)
            counts = {"paraphrases": 0, "own_prefetch": 0, "twins": 0, "twin_prefetch": 0, "labels": 0}
            with Progress(f"round {r}", len(order)) as bar:
                for p in order:
                    result = recall(tenant=tenant, scope=SCOPE, query=p.query)
                    source = trail_of.get(p.group)
                    same_need = p.answered_by_source
                    if p.kind.startswith("paraphrase"):
                        counts["paraphrases"] += 1
                        counts["own_prefetch"] += result.outcome == "prefetch" and result.trail_id == source
                    elif not p.answered_by_source:
                        counts["twins"] += 1
                        counts["twin_prefetch"] += result.outcome == "prefetch"
                    cites_source = same_need != (rng.random() < noise)
                    cited = gold[p.group] if cites_source and gold[p.group] else [
                        rng.choice([i for i in ids[:200] if i not in gold[p.group]])]
                    trail_record(tenant=tenant, scope=SCOPE + "-labels", query=p.query, steps=[],
                                          cited=cited, signal=None, recall_id=result.recall_id)
                    counts["labels"] += result.outcome != "miss"
                    bar.step()
            tenant.refresh_from_db()
            row = {
                "round": r, "prefetch_confidence": tenant.prefetch_confidence,
                "prefetch_paused": tenant.prefetch_paused,
                "false_prefetch_rate": round(counts["twin_prefetch"] / max(1, counts["twins"]), 4),
                "hit_rate": round(counts["own_prefetch"] / max(1, counts["paraphrases"]), 4), **counts,
            }
            applied = operating_point_apply(tenant=tenant, actor_label="research:replay", automatic=True)
            tenant.refresh_from_db()
            row["applied_next"] = tenant.prefetch_confidence if applied else None
            row["paused_next"] = tenant.prefetch_paused
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    report = {"rounds": rows, "noise": noise, "seed": seed, "target_false": 0.05, "start_prefetch": start_prefetch,
              "started_at": started.isoformat(timespec="seconds")}
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    plot(rows, out / "replay.png")
    return report


def plot(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["round"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(x, [100 * r["false_prefetch_rate"] for r in rows], marker="o",
            label="close-but-different served a prefetch")
    ax.plot(x, [100 * r["hit_rate"] for r in rows], marker="o", label="paraphrases served their own trail")
    ax.axhline(5, color="grey", linestyle=":", linewidth=1, label="target 5 %")
    ax.set_xlabel("round of replayed traffic (10 % label noise)")
    ax.set_ylabel("%")
    ax.set_xticks(x)
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    ax.set_title("Self-calibration from the agents' citations")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.calibration_replay")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "replay" / "latest")
    parser.add_argument("--start-prefetch", type=float, default=0.3,
                        help="the tenant's prefetch confidence before any label (a permissive start)")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    replay(rounds=args.rounds, noise=args.noise, seed=args.seed, out=args.out, start_prefetch=args.start_prefetch)
    print(f"report in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
