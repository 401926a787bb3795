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
from research.pairmodel.evaluate import cosine_scores, metrics
from research.pairmodel.export import load_checkpoint


@torch.no_grad()
def model_scores(ckpt: Path, pairs: list[Pair]) -> np.ndarray:
    model, meta = load_checkpoint(ckpt)
    model.eval()
    tok = load_tokenizer(meta["max_len"])
    out = []
    for i in range(0, len(pairs), 64):
        out.append(model(**encode_pairs(tok, [(p.a, p.b) for p in pairs[i:i + 64]]))[:, 0].numpy())
    return np.concatenate(out) if out else np.zeros(0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True, type=Path)
    ap.add_argument("--trained-on", required=True, help="comma-separated corpora the checkpoint saw")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    trained = set(args.trained_on.split(","))
    results = {}
    for name in sorted(CORPORA):
        sides = [HELD_OUT] if name in trained else [CALIBRATION, HELD_OUT, None]
        for side in sides:
            pairs = hard_set(name, side)
            y = [p.label for p in pairs]
            key = f"{name}:{side or 'all'}"
            results[key] = {
                "pairs": {"pos": int(sum(y)), "neg": len(y) - int(sum(y))},
                "cosine": metrics(y, cosine_scores(pairs)),
                "pair_model": metrics(y, model_scores(args.ckpt, pairs)),
            }
            r = results[key]
            print(f"{key:22s} pos {r['pairs']['pos']:4d} neg {r['pairs']['neg']:4d}  "
                  f"cosine {r['cosine']}  pair model {r['pair_model']}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"ckpt": str(args.ckpt), "trained_on": sorted(trained),
                                        "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
