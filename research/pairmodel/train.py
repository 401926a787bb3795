"""Fine-tune MiniLM (all-MiniLM-L6-v2) as a cross-encoder pair scorer on CPU.

    python -m research.pairmodel.train --out .data/pairmodel/run1 --pairs 40000 --epochs 1 \
        --max-len 64 --seed 0

Training data (calibration side only; nothing held out is read):
- QQP calibration pairs minus a fixed ~8 % "dev" slice of calibration groups (used only to
  watch training and to choose the head); up to ``--pairs`` of them, sampled with the seed,
  at their natural duplicate ratio (or balanced with ``--qqp-balance balanced``).
- Python FAQ calibration positives/negatives (+ python_faq_hard.jsonl if present), or with
  ``--hard-sets faq,celery`` the same-need / close-but-different pairs of those corpora's
  calibration items, and the hand-written pairs (no split: training only), each repeated
  ``--small-repeat`` times per epoch because they are few and in-domain.
With ``--section-sets faq,celery`` the data are only those corpora's calibration items'
(question, section text) pairs (``research.pairmodel.sections``), question first.
Every question pair is used in both orders (a, b) and (b, a). BCE on one logit, AdamW, linear warmup
then linear decay. Progress goes to ``OUT/train.log``; the checkpoint to ``OUT/model.pt``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from research.pairmodel.bert import PairScorer, encode_pairs, load_base, load_tokenizer
from research.pairmodel.data import CALIBRATION, Pair, counts, faq, handwritten, hard_set, qqp
from research.pairmodel.metrics import roc_auc, tpr_at_fpr

if TYPE_CHECKING:
    from tokenizers import Tokenizer


class Log:
    def __init__(self, path: Path) -> None:
        self.fh = open(path, "a", encoding="utf-8")

    def __call__(self, msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        self.fh.write(line + "\n")
        self.fh.flush()


def build_training_pairs(args: argparse.Namespace, rng: random.Random) -> tuple[list[Pair], dict]:
    if args.section_sets:
        from research.pairmodel.sections import section_pairs

        pairs = [p for name in args.section_sets.split(",") for p in section_pairs(name, CALIBRATION)]
        info = {"section_pairs_calibration": counts(pairs), "small_repeat": args.small_repeat,
                "both_orders": False}
        return pairs * args.small_repeat, info
    q = qqp(CALIBRATION, dev=False)
    if args.qqp_balance == "balanced":
        pos = [p for p in q if p.label]
        neg = [p for p in q if not p.label]
        rng.shuffle(neg)
        q = pos + neg[: len(pos)]
    rng.shuffle(q)
    q = q[: args.pairs]
    if args.hard_sets:
        in_domain = [p for name in args.hard_sets.split(",") for p in hard_set(name, CALIBRATION)]
    else:
        in_domain = faq(CALIBRATION)
    small = in_domain + handwritten()
    info = {
        "qqp_calibration": counts(q).get("qqp", {"pos": 0, "neg": 0}),
        "in_domain_calibration": counts(in_domain),
        "handwritten": counts(handwritten())["handwritten"],
        "small_repeat": args.small_repeat,
        "both_orders": True,
    }
    return q + small * args.small_repeat, info


def batches(pairs: list[Pair], batch: int, rng: random.Random,
            both_orders: bool = True) -> list[list[tuple[str, str, int]]]:
    """Both orders (unless the pairs have a direction), shuffled, then length-bucketed within
    chunks of 50 batches to cut padding."""
    ex = [(p.a, p.b, p.label) for p in pairs]
    if both_orders:
        ex += [(p.b, p.a, p.label) for p in pairs]
    rng.shuffle(ex)
    out = []
    chunk = batch * 50
    for i in range(0, len(ex), chunk):
        part = sorted(ex[i : i + chunk], key=lambda e: len(e[0]) + len(e[1]))
        out.extend(part[j : j + batch] for j in range(0, len(part), batch))
    rng.shuffle(out)
    return out


@torch.no_grad()
def score(model: PairScorer, tok: Tokenizer, pairs: list[tuple[str, str]], batch: int = 64) -> np.ndarray:
    model.eval()
    out = []
    for i in range(0, len(pairs), batch):
        out.append(model(**encode_pairs(tok, pairs[i : i + batch]))[:, 0].numpy())
    model.train()
    return np.concatenate(out) if out else np.zeros(0)


def dev_eval(model: PairScorer, tok: Tokenizer, dev: list[Pair]) -> dict:
    s = score(model, tok, [(p.a, p.b) for p in dev])
    y = [p.label for p in dev]
    return {"auc": round(roc_auc(y, s), 4), "tpr@5": round(tpr_at_fpr(y, s, 0.05), 4)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--pairs", type=int, default=40000, help="max QQP calibration pairs")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--warmup", type=float, default=0.06, help="fraction of steps")
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--head", choices=["cls", "pooler", "mean"], default="cls")
    ap.add_argument("--qqp-balance", choices=["natural", "balanced"], default="natural")
    ap.add_argument("--small-repeat", type=int, default=4)
    ap.add_argument(
        "--hard-sets",
        default="",
        help="comma-separated corpora (faq, celery, flask) whose calibration items give the in-domain "
        "pairs (research.pairmodel.data.hard_set) instead of the FAQ's question pairs",
    )
    ap.add_argument(
        "--section-sets",
        default="",
        help="comma-separated corpora: train on their calibration items' (question, section text) pairs "
        "(research.pairmodel.sections) only, one order, instead of question pairs",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (timing / quick checks)")
    ap.add_argument(
        "--max-minutes",
        type=float,
        default=0,
        help="wall-clock budget: the LR schedule follows max(step fraction, time fraction) and training "
        "stops when either reaches 1 (the machine is shared, so step time varies)",
    )
    ap.add_argument("--dev-size", type=int, default=1500)
    ap.add_argument("--dev-every", type=int, default=500)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    log = Log(args.out / "train.log")
    log(f"args {vars(args)}")

    train_pairs, info = build_training_pairs(args, rng)
    dev = qqp(CALIBRATION, dev=True)
    random.Random(1234).shuffle(dev)
    dev = dev[: args.dev_size]
    orders = 2 if info["both_orders"] else 1
    log(f"data {json.dumps(info)} total_pairs={len(train_pairs)} examples/epoch={orders * len(train_pairs)} "
        f"dev={len(dev)}")

    tok = load_tokenizer(args.max_len)
    model = PairScorer(load_base(), head=args.head)
    model.train()
    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
            "weight_decay": args.weight_decay,
        },
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=args.lr)
    steps_per_epoch = (orders * len(train_pairs) + args.batch - 1) // args.batch
    total = int(steps_per_epoch * args.epochs)
    if args.max_steps:
        total = min(total, args.max_steps)
    warm = max(1, int(total * args.warmup))
    budget = args.max_minutes * 60.0
    t0 = time.time()

    def progress(s: int) -> float:
        """Fraction of the run done: by steps, or by wall clock when a budget is set."""
        frac = s / total
        if budget:
            frac = max(frac, (time.time() - t0) / budget)
        return min(frac, 1.0)

    warm_frac = warm / total

    def lr_factor(s: int) -> float:
        # Warmup and decay both follow progress(), so a time-limited run warms up over the same
        # fraction of its actual length. (run1 was trained at commit 757a39a, where the warmup ramp
        # counted steps against the planned step total: the time budget ended warmup at step ~46,
        # when the LR was at 27 % of peak, and it then jumped to the decay line.)
        f = progress(s)
        if f < warm_frac:
            return max((s + 1) / total, f) / warm_frac
        return max(0.0, (1.0 - f) / max(1e-9, 1.0 - warm_frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    log(f"steps_per_epoch={steps_per_epoch} total_steps={total} warmup={warm}")

    step, running = 0, []
    epoch = 0
    while step < total and progress(step) < 1.0:
        for b in batches(train_pairs, args.batch, rng, both_orders=info["both_orders"]):
            if step >= total or progress(step) >= 1.0:
                break
            feats = encode_pairs(tok, [(a, c) for a, c, _ in b])
            y = torch.tensor([[float(label)] for _, _, label in b])
            loss = loss_fn(model(**feats), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            running.append(loss.item())
            step += 1
            if step % 50 == 0 or step == total:
                el = time.time() - t0
                log(
                    f"epoch {epoch} step {step}/{total} progress {progress(step):.3f} "
                    f"loss {np.mean(running[-50:]):.4f} "
                    f"lr {sched.get_last_lr()[0]:.2e} {el / step:.3f}s/step elapsed {el / 60:.1f}min"
                )
            if step % args.dev_every == 0 and step < total:
                log(f"dev step {step} {dev_eval(model, tok, dev)}")
        epoch += 1

    train_seconds = time.time() - t0
    final_dev = dev_eval(model, tok, dev)
    log(f"done steps={step} train_seconds={train_seconds:.0f} dev {final_dev}")
    torch.save(
        {
            "state_dict": model.state_dict(),
            "head": args.head,
            "max_len": args.max_len,
            "args": {k: str(v) for k, v in vars(args).items()},
            "data": info,
            "steps": step,
            "examples_seen": step * args.batch,
            "train_seconds": train_seconds,
            "dev": final_dev,
        },
        args.out / "model.pt",
    )
    (args.out / "train_summary.json").write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "data": info,
                "steps": step,
                "examples_seen": step * args.batch,
                "planned_steps": total,
                "train_seconds": round(train_seconds, 1),
                "dev_qqp_calibration": final_dev,
            },
            indent=2,
        )
    )
    log(f"saved {args.out / 'model.pt'}")


if __name__ == "__main__":
    main()
