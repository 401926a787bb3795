"""Print the held-out results table (markdown) from results.json.

python -m research.pairmodel.table research/pairmodel/results.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NAMES = {
    "minilm_cosine": "MiniLM cosine (shipped Embedder)",
    "cross_encoder_int8": "cross-encoder int8",
    "cross_encoder_fp32": "cross-encoder fp32",
    "cosine_plus_cross_encoder": "cosine + cross-encoder int8 (logistic, fit on QQP calibration dev)",
}


def render(results: dict) -> str:
    rows = [
        "| set | pairs (pos/neg) | scorer | ROC AUC | TPR @ 5 % FPR | TPR @ 10 % FPR |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in results["metrics"].items():
        c = results["counts"][name]
        for scorer, label in NAMES.items():
            if scorer in m:
                v = m[scorer]
                rows.append(
                    f"| {name} | {c['pairs']} ({c['pos']}/{c['neg']}) | {label} | {v['auc']:.3f} | "
                    f"{v['tpr@fpr5']:.3f} | {v['tpr@fpr10']:.3f} |"
                )
    lat = results["latency_int8_intra_op_1"]
    rows += [
        "",
        "| int8, intra_op_num_threads=1 | calls | model min ms | model p50 ms | model p99 ms "
        "| with tokenisation p50 ms | with tokenisation p99 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, v in lat.items():
        rows.append(
            f"| {k.replace('batch', 'batch of ')} | {v['calls']} | {v.get('model_ms_min', float('nan')):.2f} | "
            f"{v['model_ms_p50']:.2f} | "
            f"{v['model_ms_p99']:.2f} | {v['with_tokenisation_ms_p50']:.2f} | {v['with_tokenisation_ms_p99']:.2f} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(render(json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else "research/pairmodel/results.json").read_text())))
