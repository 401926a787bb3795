"""CPU accounting of the benchmark's processes (research/bench/cpu.py), on real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
from django.db import connection

from research.bench.cpu import CpuMeter, backends_of, cpu_seconds, database_backends, server_of, this_process


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_meter_counts_cpu_spent_per_item_by_group() -> None:
    meter = CpuMeter({"process": this_process, "nobody": lambda: []})
    meter.start()
    _burn(0.2)
    out = meter.stop(items=4)
    assert out["nobody"] is None  # no process to read: not measured, never 0
    assert 40 <= out["process"] <= 80, out  # 200 ms over 4 items, with the clock's ticks


def test_a_process_started_meanwhile_counts_what_it_spent() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                              "while time.process_time()-t<0.3: pass\ninput()"], stdin=subprocess.PIPE, text=True)
    pids: list[int] = []
    meter = CpuMeter({"child": lambda: pids})
    meter.start()
    pids.append(child.pid)
    try:
        deadline = time.monotonic() + 20
        while cpu_seconds([child.pid]) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert meter.stop(items=1)["child"] >= 290
    finally:
        child.communicate("\n", timeout=20)
    assert cpu_seconds([child.pid]) == 0.0  # gone: counts nothing


def test_the_database_backends_of_the_test_database_are_found(db: None) -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    name = connection.settings_dict["NAME"]
    server = server_of(connection)
    assert server is not None and psutil.Process(server).pid == psutil.Process(pid).ppid()
    assert pid in database_backends(name, server=server) == backends_of(connection)()
    assert pid not in database_backends(name + "_other", server=server)
    # Only that server's: another postmaster (here: this process) has no such backend.
    assert database_backends(name, server=os.getpid()) == []
    assert database_backends(name, server=2**22 + 12345) == []  # no such process
