"""The cheap part of the chaos run, end to end on its own throw-away stack (PostgreSQL, Redis,
gunicorn, a Celery worker and beat, started by ``research.chaos`` as subprocesses): PostgreSQL
stopped hard under record load (nothing acknowledged lost, 503 + Retry-After while down, back
within 5 s), a full disk under an export, a tenant's resolver stalling (answers within its deadline
+ 1 s, another tenant unaffected), and a short load run with no errors. ``make chaos``
runs every scenario at full size; docs/results.md has its figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _chaos(tmp_path: Path, *args: str, timeout: float) -> list[dict[str, object]]:
    report = tmp_path / "rows.json"
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TRAILCACHE_INSTANCE"}}
    done = subprocess.run([sys.executable, "-m", "research.chaos", *args, "--json", str(report)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(report.read_text())
    assert done.returncode == 0, done.stdout[-4000:]
    return rows


def test_postgres_restart_under_load_a_full_disk_and_a_stalling_resolver(tmp_path: Path) -> None:
    rows = _chaos(tmp_path, "run", "--scenarios", "pg,disk,resolver", "--restarts", "1", "--down-seconds", "2",
                  "--up-seconds", "2", "--threads", "2", "--rows", "4000", "--stall-seconds", "6", timeout=400)
    checks = {row["check"]: row for row in rows}
    assert checks["acknowledged records lost"]["measured"].startswith("0 of ")
    assert checks["answers while down: 503 + Retry-After, error shape"]["passed"]
    assert checks["any other answer (500, HTML, no answer)"]["measured"] == "0"
    assert checks["the export fails with a clear error"]["measured"] == "failed: 'disk_full'"
    assert checks["another tenant's recalls and records meanwhile"]["passed"]
    assert all(row["passed"] for row in rows) and len(rows) == 11


def test_a_short_load_run_has_no_errors(tmp_path: Path) -> None:
    rows = _chaos(tmp_path, "load", "--duration", "5", "--concurrency", "2", "--trails", "20", timeout=180)
    checks = {row["check"]: row for row in rows}
    assert checks["errors"]["measured"] == "0"
    assert float(str(checks["recalls/s"]["measured"]).split()[0]) > 0
