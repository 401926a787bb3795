"""Inference with an exported pair model (int8 ONNX + manifest), for the studies: scores
(query, trail question) pairs as recall would have. Measured, not shipped: see RESULTS.md and
docs/results.md (Matching quality) — it did not beat the evidence scorer enough to pay its latency.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MANIFEST = Path(__file__).resolve().parents[2] / ".data" / "pairmodel" / "pair-scorer-v1.json"


class PairModelError(RuntimeError):
    pass


class PairModel:
    """P(same need) of (query, trail question) pairs, both normalised."""

    def __init__(self, manifest: Path = MANIFEST, *, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from cachecore.embedding import _default_tokenizer_path

        with open(manifest, encoding="utf-8") as fh:
            meta = json.load(fh)
        model_path = manifest.parent / meta.get("file", manifest.with_suffix(".onnx").name)
        if not model_path.is_file():
            raise PairModelError(f"pair model file not found: {model_path}")
        digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
        if digest != meta["sha256"]:
            raise PairModelError(f"pair model {model_path} has sha256 {digest}, the manifest says {meta['sha256']}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(_default_tokenizer_path()))
        self.max_len = int(meta.get("max_len", 64))
        tokenizer.enable_truncation(max_length=self.max_len)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self.version = str(meta.get("version", model_path.stem))

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Probabilities, one per (query, trail question) pair."""
        if not pairs:
            return []
        encodings = self._tokenizer.encode_batch([(a, b) for a, b in pairs])
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float64).reshape(len(pairs), -1)[:, 0]
        return [float(p) for p in 1.0 / (1.0 + np.exp(-logits))]
