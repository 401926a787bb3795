"""Does a pair model trained on some documentation corpora's calibration items separate same-need
from close-but-different questions on a corpus it never saw?

    python -m research.pairmodel.transfer --ckpt .data/pairmodel/hard-fc/model.pt \
        --trained-on faq,celery [--out research/pairmodel/transfer.json]

For each corpus (``research.corpora``) and side, the pairs of ``research.pairmodel.data.hard_set``
(every two same-need questions of an item: positive; a same-need question against a close
question its gold section does not answer: negative) are scored by the MiniLM cosine (the shipped
``Embedder``) and by the checkpoint (fp32, torch). Prints ROC AUC and the share of positives kept
at 5 % and 10 % of negatives passed. A corpus named in ``--trained-on`` is reported on its
held-out side only; another corpus on all its items (no constant was fitted on any of them).

With ``--sections`` the pairs are ``research.pairmodel.sections.section_pairs`` (question,
section text), the baseline is the cosine of the question and the section's embedding, and a
second table puts the model beside the shipped evidence scorer on the decision the scorer makes:
each probe of a corpus's ``collect`` rows (``reports/calibration/<corpus>-rows.jsonl``) against
its source trail, a rewording (should serve) or a close question the source does not answer
(should not). The scorer is the fit on the FAQ's and Celery's calibration rows; the combination
(scorer logit + model logit) is fitted on Celery's held-out rows, which neither was fitted on.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from research.corpora import CORPORA
from research.pairmodel.bert import encode_pairs, load_tokenizer
from research.pairmodel.data import CALIBRATION, HELD_OUT, Pair, hard_set
from research.pairmodel.evaluate import cosine_scores, fit_logistic, metrics
from research.pairmodel.export import load_checkpoint
from research.pairmodel.sections import section_pairs, section_texts
from research.splits import REPO_ROOT


class PairModel:
    """A checkpoint loaded once, scoring pairs (fp32, torch)."""

    def __init__(self, ckpt: Path) -> None:
        self.model, meta = load_checkpoint(ckpt)
        self.model.eval()
        self.tok = load_tokenizer(meta["max_len"])

    @torch.no_grad()
    def scores(self, pairs: list[Pair]) -> np.ndarray:
        out = []
        for i in range(0, len(pairs), 64):
            batch = [(p.a, p.b) for p in pairs[i:i + 64]]
            out.append(self.model(**encode_pairs(self.tok, batch))[:, 0].numpy())
        return np.concatenate(out) if out else np.zeros(0)


def beside_the_scorer(model: PairModel, rows_dir: Path) -> dict:
    """The model and the shipped evidence scorer on each probe's source trail (see the module
    docstring)."""
    from research import match_calibration as mc

    fitted = mc.fit([rows_dir / "faq-rows.jsonl", rows_dir / "celery-rows.jsonl"], write=False,
                    target_false=0.04)
    score = mc.score_with(fitted)
    items = {name: {i.id: i for i in CORPORA[name].items()} for name in ("faq", "celery", "flask")}

    def decisions(name: str, side: str | None) -> tuple[list[Pair], list[float]]:
        texts = section_texts(name)
        pairs, scorer = [], []
        for r in mc.load_rows([rows_dir / f"{name}-rows.jsonl"]):
            if side is not None and r["side"] != side:
                continue
            if r["kind"].startswith("paraphrase"):
                label = 1
            elif r["kind"] == "twin" and not r["answered_by_source"]:
                label = 0
            else:
                continue
            gold = items[name][r["group"]].gold[0]
            if gold not in texts:
                continue
            source = [c for c in r["candidates"] if c.get("is_source")]
            scorer.append(score(source[0]) if source else 0.0)
            pairs.append(Pair(r["query"], texts[gold], label, name))
        return pairs, scorer

    def logit(p: np.ndarray) -> np.ndarray:
        p = np.clip(p, 1e-6, 1 - 1e-6)
        return np.log(p / (1 - p))

    pairs, sc = decisions("celery", HELD_OUT)
    y = [p.label for p in pairs]
    m = model.scores(pairs)
    w = fit_logistic(np.column_stack([logit(np.array(sc)), m]), np.array(y, dtype=float))
    out = {"combination_weights (bias, scorer logit, model logit)": [round(float(v), 4) for v in w]}
    for name, side in (("flask", None), ("flask", HELD_OUT), ("celery", HELD_OUT), ("faq", HELD_OUT)):
        pairs, sc = decisions(name, side)
        y = [p.label for p in pairs]
        m = model.scores(pairs)
        combo = w[0] + w[1] * logit(np.array(sc)) + w[2] * m
        key = f"{name}:{side or 'all'}"
        out[key] = {"pairs": {"pos": int(sum(y)), "neg": len(y) - int(sum(y))},
                    "scorer": metrics(y, np.array(sc)), "model": metrics(y, m), "combined": metrics(y, combo)}
        print(f"{key:16s} {out[key]}", flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True, type=Path)
    ap.add_argument("--trained-on", required=True, help="comma-separated corpora the checkpoint saw")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--sections", action="store_true", help="(question, section text) pairs; see above")
    ap.add_argument("--rows-dir", type=Path, default=REPO_ROOT / "reports" / "calibration")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    trained = set(args.trained_on.split(","))
    model = PairModel(args.ckpt)
    results = {}
    for name in sorted(CORPORA):
        sides = [HELD_OUT] if name in trained else [CALIBRATION, HELD_OUT, None]
        for side in sides:
            pairs = section_pairs(name, side) if args.sections else hard_set(name, side)
            y = [p.label for p in pairs]
            key = f"{name}:{side or 'all'}"
            results[key] = {
                "pairs": {"pos": int(sum(y)), "neg": len(y) - int(sum(y))},
                # section texts are long: smaller batches
                "cosine": metrics(y, cosine_scores(pairs)),
                "pair_model": metrics(y, model.scores(pairs)),
            }
            r = results[key]
            print(f"{key:22s} pos {r['pairs']['pos']:4d} neg {r['pairs']['neg']:4d}  "
                  f"cosine {r['cosine']}  pair model {r['pair_model']}", flush=True)
    beside = beside_the_scorer(model, args.rows_dir) if args.sections else None
    if args.out:
        args.out.write_text(json.dumps({"ckpt": str(args.ckpt), "trained_on": sorted(trained),
                                        "results": results, "beside_the_scorer": beside}, indent=2) + "\n")


if __name__ == "__main__":
    main()
