"""CPU time spent by the processes a benchmark drives, per request: its own process, the web
workers, the database server's backends serving one database. Unlike latency, it does not
depend on what else the machine runs, and on a quiet machine a request that waits on nothing
takes about the CPU it spends: that is its floor until the work itself shrinks.

Read with psutil from the process table, so only for processes on this machine: a database
server elsewhere gives ``None`` for its share."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

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


def database_backends(database: str, *, server: int) -> list[int]:
    """The backends of the local PostgreSQL server whose postmaster is ``server`` connected to
    ``database`` (their title names it); another server on this machine serving a database of
    the same name (a second checkout) does not count."""
    try:
        children = psutil.Process(server).children()
    except psutil.Error:
        return []
    pids = []
    for process in children:
        try:
            words = " ".join(process.cmdline()).split()
        except psutil.Error:
            continue
        if database in words[1:3]:
            pids.append(process.pid)
    return pids


def server_of(connection: Any) -> int | None:
    """The postmaster of the server a Django ``connection`` talks to, when it runs on this
    machine (the parent of the connection's backend), else None."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        backend = cur.fetchone()[0]
    try:
        return psutil.Process(backend).ppid()
    except psutil.Error:
        return None  # a backend on another machine: its pid means nothing here


def backends_of(connection: Any) -> Callable[[], list[int]]:
    """The pids of the backends serving ``connection``'s database on its server, asked anew at
    each call (none when the server is not on this machine)."""
    server = server_of(connection)
    database = connection.settings_dict["NAME"]
    return lambda: [] if server is None else database_backends(database, server=server)


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
