"""Configuration comes from the environment only; a bad value stops the process with a
message naming the variable (no traceback), before anything else happens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A well-formed URL that nothing is asked to connect to: the embedded server is not started.
UNUSED_DATABASE = "postgresql://nobody@127.0.0.1:1/unused"


def _start(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    # Development mode unless a case says otherwise: each case is about its own variable.
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": UNUSED_DATABASE,
                  "TRAILCACHE_DEV": "true", **env})
    command = list(args) or ["-c", "import django; django.setup(); print('started')"]
    return subprocess.run([sys.executable, *command], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("env", "message"), [
    ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG must be a boolean (true/false/1/0), got 'maybe'"),
    ({"TRAILCACHE_DEV": "sometimes"}, "TRAILCACHE_DEV must be a boolean"),
    ({"TRAILCACHE_EMBEDDING_THREADS": "two"}, "TRAILCACHE_EMBEDDING_THREADS must be an integer, got 'two'"),
    ({"TRAILCACHE_EMBEDDING_THREADS": "0"}, "TRAILCACHE_EMBEDDING_THREADS must be >= 1, got 0"),
    ({"TRAILCACHE_SYNC_CHUNK_LIMIT": "-5"}, "TRAILCACHE_SYNC_CHUNK_LIMIT must be >= 0, got -5"),
    ({"DATABASE_URL": "mysql://root@localhost/trailcache"}, "DATABASE_URL must be a postgresql:// URL"),
    ({"DATABASE_URL": "postgresql://user@localhost:5432/"}, "DATABASE_URL must name a database"),
    ({"TRAILCACHE_DEV": "false", "DJANGO_SECRET_KEY": ""}, "DJANGO_SECRET_KEY is required when TRAILCACHE_DEV=false"),
])
def test_a_bad_environment_value_stops_the_process_with_a_clear_message(env, message):
    result = _start(env)
    assert result.returncode != 0 and "started" not in result.stdout
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_manage_py_stops_too_before_doing_anything():
    result = _start({"TRAILCACHE_EMBEDDING_THREADS": "many"}, "manage.py", "check")
    assert result.returncode != 0
    assert "TRAILCACHE_EMBEDDING_THREADS must be an integer, got 'many'" in result.stderr
    assert "Traceback" not in result.stderr


def test_good_values_start():
    result = _start({"DJANGO_DEBUG": "false", "TRAILCACHE_DEV": "false", "DJANGO_SECRET_KEY": "x" * 50,
                     "TRAILCACHE_EMBEDDING_THREADS": "2"})
    assert result.returncode == 0 and "started" in result.stdout, result.stderr
