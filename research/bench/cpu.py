"""CPU time spent by the processes a benchmark drives, per request: its own process, the web
workers, the database server's backends serving one database. Unlike latency, it does not
depend on what else the machine runs, and on a quiet machine a request that waits on nothing
takes about the CPU it spends: that is its floor until the work itself shrinks.

Read with psutil from the process table, so only for processes on this machine: a database
server elsewhere gives ``None`` for its share."""

from __future__ import annotations

import os
from collections.abc import Callable

import psutil


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of ``pids`` so far (a process gone meanwhile counts 0)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def database_backends(database: str) -> list[int]:
    """The local PostgreSQL backends connected to ``database`` (their title names it)."""
    pids = []
    for process in psutil.process_iter(["name", "cmdline"]):
        words = " ".join(process.info["cmdline"] or []).split()
        if "postgres" in (process.info["name"] or "") and database in words[1:3]:
            pids.append(process.pid)
    return pids


def this_process() -> list[int]:
    return [os.getpid()]


class CpuMeter:
    """CPU per item of named groups of processes between ``start`` and ``stop``. Each group is a
    callable naming its pids, asked again at ``stop`` (a backend opened meanwhile counts from 0,
    which is what it spent). A group with no process is ``None``: not measured here."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.before: dict[str, dict[int, float]] = {}

    def _read(self) -> dict[str, dict[int, float]]:
        return {name: {pid: cpu_seconds([pid]) for pid in pids()} for name, pids in self.groups.items()}

    def start(self) -> None:
        self.before = self._read()

    def stop(self, items: int) -> dict[str, float | None]:
        """Milliseconds of CPU per item, by group."""
        after = self._read()
        out: dict[str, float | None] = {}
        for name, now in after.items():
            if not now:
                out[name] = None
                continue
            spent = sum(seconds - self.before.get(name, {}).get(pid, 0.0) for pid, seconds in now.items())
            out[name] = round(max(0.0, spent) * 1000 / max(1, items), 2)
        return out
