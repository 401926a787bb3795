"""A production server (gunicorn, config.wsgi) on a free local port, started and stopped by the
bench, and a bounded load generator: threads, one HTTP connection per request (gunicorn's
sync workers close connections), a fixed number of requests and a time limit."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from research.bench.timing import percentiles
from research.localstack import free_port, port_open

BASE_DIR = Path(__file__).resolve().parent.parent.parent


@dataclass
class Server:
    port: int
    process: subprocess.Popen
    workers: int
    worker_class: str
    threads: int
    rss_peak: dict[int, int] = field(default_factory=dict)

    def worker_pids(self) -> list[int]:
        try:
            return [c.pid for c in psutil.Process(self.process.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def sample_rss(self) -> None:
        """Per worker: the kernel's high-water mark (VmHWM) where readable, else current RSS."""
        for pid in self.worker_pids():
            peak = 0
            try:
                with open(f"/proc/{pid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            peak = int(line.split()[1]) * 1024
                if not peak:
                    peak = psutil.Process(pid).memory_info().rss
            except (OSError, psutil.Error):
                continue
            self.rss_peak[pid] = max(self.rss_peak.get(pid, 0), peak)


@contextmanager
def gunicorn(*, database_url: str, workers: int = 2, worker_class: str = "sync", threads: int = 1,
             timeout_s: float = 60.0, app: str = "config.wsgi:application",
             extra_env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Server]:
    """gunicorn serving ``app`` on a free port (from ``cwd``, this checkout by default)."""
    port = free_port()
    env = dict(os.environ, DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings", **(extra_env or {}))
    args = [str(Path(sys.executable).parent / "gunicorn"), app,
            "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--worker-class", worker_class,
            "--threads", str(threads), "--log-level", "warning", "--graceful-timeout", "5", "--timeout", "60"]
    process = subprocess.Popen(args, cwd=cwd or BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server = Server(port, process, workers, worker_class, threads)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {process.stderr.read().decode()[-2000:]}")
            if port_open(port):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not start listening")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if process.stderr:
            process.stderr.close()


def request(port: int, method: str, path: str, body: bytes | None, key: str,
            timeout: float = 30.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def run_load(server: Server, jobs: list[tuple[str, str, bytes, str]], *, concurrency: int,
             time_limit_s: float, expect: int = 200) -> dict:
    """Send ``jobs`` (method, path, body, key) with ``concurrency`` threads until done or the
    time limit; latency percentiles, requests/s, errors, outcomes of recall answers."""
    lock = threading.Lock()
    next_index = [0]
    samples: list[float] = []
    errors: list[str] = []
    outcomes: dict[str, int] = {}
    deadline = time.monotonic() + time_limit_s

    def worker() -> None:
        while time.monotonic() < deadline:
            with lock:
                i = next_index[0]
                if i >= len(jobs):
                    return
                next_index[0] += 1
            method, path, body, key = jobs[i]
            t0 = time.perf_counter()
            try:
                status, payload = request(server.port, method, path, body, key)
            except OSError as exc:
                with lock:
                    errors.append(type(exc).__name__)
                continue
            ms = (time.perf_counter() - t0) * 1000
            with lock:
                if status != expect:
                    errors.append(f"{status}: {payload[:200]!r}")
                else:
                    samples.append(ms)
                    if path.endswith("/recall"):
                        outcome = json.loads(payload).get("outcome", "?")
                        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    sampler_stop = threading.Event()

    def sampler() -> None:
        while not sampler_stop.wait(0.5):
            server.sample_rss()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    rss_thread = threading.Thread(target=sampler, daemon=True)
    started = time.perf_counter()
    rss_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    sampler_stop.set()
    rss_thread.join()
    server.sample_rss()
    done = len(samples)
    return {**percentiles(samples), "concurrency": concurrency, "per_s": round(done / elapsed, 1),
            "seconds": round(elapsed, 2), "errors": len(errors), "error_samples": errors[:3],
            "outcomes": outcomes}
