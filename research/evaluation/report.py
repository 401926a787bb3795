"""Writing the report: ``report.json``, ``summary.md`` and PNG plots (threshold sweep,
staleness curve, calls and tokens with/without cache) into one folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

PLOTS = ("sweep.png", "staleness.png", "cost.png")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _num(x: Any) -> str:
    return "–" if x is None else str(x)


def markdown(report: dict[str, Any]) -> str:
    meta, corpus, m = report["meta"], report["corpus"], report["matching"]
    lines = [
        "# Trailcache evaluation",
        "",
        f"Run {meta['started_at']} · corpus `{meta['docs']}` ({', '.join(meta['subtrees'])}): "
        f"{corpus['sections']} sections · {meta['questions']} questions, {meta['paraphrases']} paraphrases, "
        f"{meta['distinct']} distinct questions · seed {meta['seed']} · {meta['timings_s'].get('total')} s.",
        "",
        f"Settings: similarity_threshold {meta['settings']['similarity_threshold']}, coverage_floor "
        f"{meta['settings']['coverage_floor']}, default_budget_tokens {meta['settings']['default_budget_tokens']}"
        + (f" (overrides: {meta['overrides']})" if meta["overrides"] else "") + ".",
        "",
        f"Search: {corpus['search']}. Agent: call limit {meta['call_limit']} (recall included).",
        "",
        "## Phase 1 (original questions, empty cache)",
        "",
        f"Success {_pct(report['phase1']['success_rate'])}; trails citing a gold section "
        f"{report['phase1']['correct_trails']}, citing none {report['phase1']['wrong_trails']}, "
        f"not recorded (nothing read) {report['phase1']['unrecorded']}.",
        "",
        "## Admission gates and phase 2 (paraphrases)",
        "",
        "| gate | admitted | wrong admitted | correct rejected | success without → with cache "
        "| calls/query without → with | tokens/query without → with | prefetch / hint / miss |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for gate, g in report["gates"].items():
        if g.get("skipped"):
            lines.append(f"| {gate} | skipped: {g['reason']} | | | | | | |")
            continue
        a, p = g["admission"], g["phase2"]
        wo, wi, o = p["without_cache"], p["with_cache"], p["recall_outcomes"]
        lines.append(
            f"| {gate} | {a['admitted']}/{a['recorded']} | {a['wrong_admitted']}/{a['wrong']} | "
            f"{a['correct_rejected']}/{a['correct']} | {_pct(wo['success_rate'])} → {_pct(wi['success_rate'])} | "
            f"{wo['calls']['mean']} → {wi['calls']['mean']} | {wo['tokens']['mean']} → {wi['tokens']['mean']} | "
            f"{o['prefetch']} / {o['hint']} / {o['miss']} |"
        )
    at = m.get("at_threshold") or {}
    lines += [
        "",
        "## Matching quality",
        "",
        f"At the tenant's threshold {m['threshold']}: paraphrase hit rate {_pct(m['paraphrase_hit_rate'])} "
        f"(the question's own trail: {_pct(m['paraphrase_correct_hit_rate'])}; prefetch {m['paraphrase_prefetch']}, "
        f"hint {m['paraphrase_hint']}, escalated {m['paraphrase_escalated']}).",
        "",
        f"False-hit rate on distinct questions {_pct(m['false_hit_rate'])} ({m['false_hits']}/{m['distinct']} "
        "recalled the trail of the question they are distinct from: "
        f"false prefetch {m['false_prefetch']}, false hint {m['false_hint']}; coverage escalation turned "
        f"{m['false_hits_escalated_to_hint']} of them into hints).",
        "",
        f"Distinct questions recalling any trail at all: {_pct(m['distinct_any_hit_rate'])} "
        f"({m['distinct_any_hits']}, over the {m['distinct'] - m['distinct_verbatim_questions']} that are not "
        "verbatim questions of the set). Many distinct questions reword another FAQ question, whose trail then "
        "legitimately answers them, so this is an upper bound, not a false-hit rate.",
        "",
        f"Threshold sweep (paraphrases: the best candidate's similarity; distinct: similarity to the source "
        f"question's trail): at {at.get('threshold')} hit rate {_pct(at.get('hit_rate'))}, "
        f"false-hit rate {_pct(at.get('false_hit_rate'))}. See `sweep.png`. The sweep is by cosine alone "
        f"(match mode {m.get('match_mode')}, polarity guard {m.get('polarity_guard')} are applied by recall only "
        "at the tenant's threshold).",
        "",
        "| threshold | paraphrase hit rate | distinct false-hit rate | distinct recalling any trail |",
        "|---|---|---|---|",
    ]
    for row in m["sweep"]:
        if round(row["threshold"] * 100) % 5 == 0:
            lines.append(f"| {row['threshold']:.2f} | {_pct(row['hit_rate'])} | {_pct(row['false_hit_rate'])} "
                         f"| {_pct(row.get('any_hit_rate'))} |")
    lines += [
        "",
        "## Staleness (cited sections edited after phase 1, paraphrases replayed)",
        "",
        "| edited | Trailcache: changed text served | prefetch / hint / miss | hints naming changed sections "
        "| text cache: changed text served | text-cache hits |",
        "|---|---|---|---|---|---|",
    ]
    for s in report["staleness"]:
        tc, nv = s["trailcache"], s["text_cache"]
        lines.append(
            f"| {_pct(s['edit_rate'])} ({s['edited_sections']}/{s['cited_sections']}) | {tc['changed_text_served']} | "
            f"{tc['prefetch']} / {tc['hint']} / {tc['miss']} | {tc['hint_with_changed_sections']} | "
            f"{nv['changed_text_served']} (in {nv['recalls_serving_changed']} answers) | {nv['hits']} |"
        )
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    lines += ["", f"Timings (s): {json.dumps(meta['timings_s'])}", ""]
    return "\n".join(lines)


def plots(report: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    m = report["matching"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = [r["threshold"] for r in m["sweep"]]
    ax.plot(xs, [r["hit_rate"] or 0 for r in m["sweep"]], label="paraphrase hit rate")
    ax.plot(xs, [r["false_hit_rate"] or 0 for r in m["sweep"]], label="distinct false-hit rate (source trail)")
    ax.plot(xs, [r.get("any_hit_rate") or 0 for r in m["sweep"]], linestyle=":",
            label="distinct recalling any trail (upper bound)")
    ax.axvline(m["threshold"], color="grey", linestyle="--", label=f"tenant threshold {m['threshold']}")
    ax.set_xlabel("similarity threshold")
    ax.set_ylabel("rate")
    ax.set_ylim(0, 1.02)
    ax.set_title("Threshold sweep")
    ax.legend()
    fig.tight_layout()
    written.append(_save(fig, out / "sweep.png"))

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    st = report["staleness"]
    rates = [100 * s["edit_rate"] for s in st]
    ax.plot(rates, [s["text_cache"]["changed_text_served"] for s in st], marker="o", label="text cache")
    ax.plot(rates, [s["trailcache"]["changed_text_served"] for s in st], marker="o", label="Trailcache")
    ax.plot(rates, [s["trailcache"]["prefetch"] for s in st], marker=".", linestyle=":", label="Trailcache prefetch")
    ax.plot(rates, [s["trailcache"]["hint"] for s in st], marker=".", linestyle=":", label="Trailcache hint")
    ax.set_xlabel("cited sections edited (%)")
    ax.set_ylabel("count over the paraphrase replay")
    ax.set_title("Changed text served")
    ax.legend()
    fig.tight_layout()
    written.append(_save(fig, out / "staleness.png"))

    fig, axes = plt.subplots(1, 2, figsize=(8.4, 4.0))
    gates = [(name, g) for name, g in report["gates"].items() if not g.get("skipped")]
    labels = ["no cache"] + [f"cache ({name})" for name, _ in gates]
    first = gates[0][1]["phase2"]["without_cache"] if gates else None
    for ax, key, title in ((axes[0], "calls", "tool calls / query"), (axes[1], "tokens", "tokens read / query")):
        values = ([first[key]["mean"] or 0] if first else [0]) + [g["phase2"]["with_cache"][key]["mean"] or 0
                                                                  for _, g in gates]
        ax.bar(range(len(values)), values, color=["grey"] + ["tab:blue"] * (len(values) - 1))
        ax.set_xticks(range(len(values)), labels, rotation=20, ha="right")
        ax.set_title(title)
    fig.suptitle("Paraphrases: cost with and without the cache")
    fig.tight_layout()
    written.append(_save(fig, out / "cost.png"))
    return written


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(report: dict[str, Any], out: Path, *, latest: Path | None = None) -> list[Path]:
    """Write everything into ``out`` (per-query rows to ``details.jsonl``); point ``latest``
    (a symlink) at it when given."""
    out.mkdir(parents=True, exist_ok=True)
    details = report.get("details") or []
    report = {k: v for k, v in report.items() if k != "details"}
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    with open(out / "details.jsonl", "w", encoding="utf-8") as fh:
        for row in details:
            fh.write(json.dumps(row, default=str) + "\n")
    (out / "summary.md").write_text(markdown(report), encoding="utf-8")
    files = [out / "report.json", out / "details.jsonl", out / "summary.md", *plots(report, out)]
    if latest is not None:
        tmp = latest.with_name(latest.name + ".tmp")
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(os.path.relpath(out.resolve(), latest.parent.resolve()), tmp)
        if latest.is_dir() and not latest.is_symlink():
            shutil.rmtree(latest)   # an old copy instead of a link
        os.replace(tmp, latest)
    return files
