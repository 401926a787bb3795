"""The baseline: a naive text cache that stores the cited sections' text when a trail is
recorded and serves that stored text on a match. Same matching as Trailcache (cosine of the
normalised-query embeddings against the same threshold), no provenance check. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class NaiveHit:
    key: str
    similarity: float
    sections: dict[str, str]   # id → text as stored at record time


@dataclass
class NaiveTextCache:
    threshold: float
    _keys: list[str] = field(default_factory=list)
    _vectors: list[np.ndarray] = field(default_factory=list)
    _texts: list[dict[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self._keys)

    def store(self, key: str, embedding: np.ndarray, sections: dict[str, str]) -> None:
        vector = np.asarray(embedding, dtype=np.float32)
        self._keys.append(key)
        self._vectors.append(vector / (np.linalg.norm(vector) or 1.0))
        self._texts.append(dict(sections))

    def best(self, embedding: np.ndarray) -> tuple[int, float] | None:
        if not self._vectors:
            return None
        q = np.asarray(embedding, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        sims = np.stack(self._vectors) @ q
        i = int(np.argmax(sims))   # first of equal maxima: deterministic
        return i, float(sims[i])

    def lookup(self, embedding: np.ndarray) -> NaiveHit | None:
        """The stored text of the nearest entry at or above the threshold, else None."""
        found = self.best(embedding)
        if found is None or found[1] < self.threshold:
            return None
        i, sim = found
        return NaiveHit(key=self._keys[i], similarity=sim, sections=dict(self._texts[i]))


def changed_served(served: dict[str, str], current: dict[str, str | None]) -> list[str]:
    """Ids of served sections whose served text is not their current text (changed or gone)."""
    return [sid for sid, text in served.items() if current.get(sid) != text]
