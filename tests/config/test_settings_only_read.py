"""Settings only read: without DATABASE_URL they name the embedded default's URL and start
nothing; `make`, scripts/ and `python -m config.embedded_db start` (or `manage.py embedded_db
start`) start the server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "TRAILCACHE_DEV": "true", **env})
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120)


def test_without_database_url_the_settings_name_the_embedded_url_and_start_nothing():
    port = _free_port()
    probe = ("import django; django.setup(); from django.conf import settings; d = settings.DATABASES['default'];"
             "print(d['HOST'], d['PORT'], d['NAME'], d['USER'])")
    result = _run({"TRAILCACHE_EMBEDDED_PG_PORT": str(port)}, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["127.0.0.1", str(port), "trailcache", "postgres"]
    with socket.socket() as s:  # nothing was started on that port
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_the_settings_module_never_calls_the_starter():
    source = (ROOT / "config" / "settings.py").read_text()
    assert "ensure_running" not in source


def test_start_does_nothing_when_database_url_is_set():
    port = _free_port()
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/unused", "TRAILCACHE_EMBEDDED_PG_PORT": str(port)}
    for command in (["-m", "config.embedded_db", "start"], ["manage.py", "embedded_db", "start"]):
        result = _run(env, *command)
        assert result.returncode == 0, result.stderr
        assert "DATABASE_URL is set" in result.stderr and result.stdout == ""


def test_url_prints_the_embedded_url():
    result = _run({"TRAILCACHE_EMBEDDED_PG_PORT": "54999"}, "-m", "config.embedded_db", "url")
    assert result.stdout.strip() == "postgresql://postgres@127.0.0.1:54999/trailcache"
