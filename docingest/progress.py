"""A tiny progress printer on stderr (no tqdm dependency)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``with Progress("phase 1", total) as p: p.step()`` prints ``phase 1  12/178  3.1s``,
    rewriting one line on a terminal and printing every ~10 % otherwise."""

    def __init__(self, label: str, total: int, *, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.label, self.total, self.done = label, max(total, 0), 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.started = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._next_pct = 0

    def __enter__(self) -> Progress:
        self._print()
        return self

    def __exit__(self, *exc: object) -> None:
        self._print(final=True)

    def step(self, n: int = 1) -> None:
        self.done += n
        self._print()

    def _print(self, final: bool = False) -> None:
        if not self.enabled:
            return
        pct = int(100 * self.done / self.total) if self.total else 100
        if not (self._tty or final or pct >= self._next_pct):
            return
        self._next_pct = pct + 10
        line = f"{self.label:<28} {self.done:>5}/{self.total:<5} {time.perf_counter() - self.started:7.1f}s"
        if self._tty:
            self.stream.write("\r" + line + ("\n" if final else ""))
        elif final or self.done == 0 or pct < 100:
            self.stream.write(line + "\n")
        self.stream.flush()
