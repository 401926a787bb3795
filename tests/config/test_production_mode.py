"""Production mode is the default and fails closed: no secret key, no start; cookies, HSTS and
the proxy header as a deployment needs them; development conveniences only when asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command

ROOT = Path(__file__).resolve().parents[2]
UNUSED_DATABASE = "postgresql://nobody@127.0.0.1:1/unused"
SECRET = "s" * 20 + "-a-long-random-production-secret"
PRINT_SETTINGS = """
import django, json; django.setup()
from django.conf import settings as s
print(json.dumps({k: getattr(s, k, None) for k in [
    "TRAILCACHE_DEV", "DEBUG", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY",
    "CSRF_COOKIE_HTTPONLY", "SESSION_COOKIE_SAMESITE", "CSRF_COOKIE_SAMESITE", "SECURE_HSTS_SECONDS",
    "SECURE_PROXY_SSL_HEADER", "SECURE_CONTENT_TYPE_NOSNIFF", "X_FRAME_OPTIONS", "TRAILCACHE_INSTANCE",
    "CELERY_TASK_DEFAULT_QUEUE", "CELERY_BROKER_TRANSPORT_OPTIONS", "TRAILCACHE_CSP", "INSTALLED_APPS"]}))
"""


def _start(env: dict[str, str], code: str = PRINT_SETTINGS) -> subprocess.CompletedProcess[str]:
    """A fresh process with only ``env`` of our variables (TRAILCACHE_DEV unset: the default)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": UNUSED_DATABASE, **env})
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=120)


def _settings(env: dict[str, str]) -> dict:
    result = _start(env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_without_any_setting_the_service_refuses_to_start_for_want_of_a_secret_key():
    result = _start({})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is required when TRAILCACHE_DEV=false (production mode, the default)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("env", "message"), [
    ({"DJANGO_SECRET_KEY": "short"}, "at least 32 characters"),
    ({"DJANGO_SECRET_KEY": "dev-insecure-trailcache-secret-key-change-me-in-production"}, "at least 32 characters"),
    ({"DJANGO_SECRET_KEY": SECRET, "DJANGO_DEBUG": "true"}, "DJANGO_DEBUG=true is only allowed with TRAILCACHE_DEV"),
    ({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_PROXY_SSL_HEADER": "X Forwarded"}, "must be a header name"),
    ({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_INSTANCE": "a b"}, "TRAILCACHE_INSTANCE must match"),
    ({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_RESOLVER_ALLOWED_NETWORKS": "10.0.0.0/8,nope"}, "IP networks"),
    ({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_OPTIONAL_APPS": "docingest,evil"}, "TRAILCACHE_OPTIONAL_APPS names"),
])
def test_unsafe_production_values_stop_the_process_with_a_clear_message(env, message):
    result = _start(env)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_production_mode_has_secure_cookies_hsts_and_no_debug():
    values = _settings({"DJANGO_SECRET_KEY": SECRET})
    assert values["TRAILCACHE_DEV"] is False and values["DEBUG"] is False
    assert values["SESSION_COOKIE_SECURE"] and values["CSRF_COOKIE_SECURE"]
    assert values["SESSION_COOKIE_HTTPONLY"] and values["CSRF_COOKIE_HTTPONLY"]
    assert values["SESSION_COOKIE_SAMESITE"] == "Lax" and values["CSRF_COOKIE_SAMESITE"] == "Lax"
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["SECURE_PROXY_SSL_HEADER"] is None
    assert values["SECURE_CONTENT_TYPE_NOSNIFF"] and values["X_FRAME_OPTIONS"] == "DENY"


COMMANDS = ("import django, json; django.setup(); from django.core.management import get_commands;"
            "print(json.dumps(sorted(get_commands())))")
DEVELOPMENT_COMMANDS = {"seed_demo", "embedded_db", "bench", "evaluate", "ingest_docs"}


def test_production_mode_installs_no_development_app_unless_one_is_named():
    installed = _settings({"DJANGO_SECRET_KEY": SECRET})["INSTALLED_APPS"]
    assert {"tenants", "cachecore", "api", "adminui", "ops"} <= set(installed)
    assert not {"devtools", "research", "docingest"} & set(installed)
    commands = _start({"DJANGO_SECRET_KEY": SECRET}, COMMANDS)
    assert commands.returncode == 0, commands.stderr
    assert not DEVELOPMENT_COMMANDS & set(json.loads(commands.stdout.strip().splitlines()[-1]))
    opted = _settings({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_OPTIONAL_APPS": "docingest"})["INSTALLED_APPS"]
    assert "docingest" in opted and not {"devtools", "research"} & set(opted)


def test_development_mode_installs_the_demo_research_and_ingestion():
    assert {"devtools", "research", "docingest"} <= set(_settings({"TRAILCACHE_DEV": "true"})["INSTALLED_APPS"])
    commands = _start({"TRAILCACHE_DEV": "true"}, COMMANDS)
    assert DEVELOPMENT_COMMANDS <= set(json.loads(commands.stdout.strip().splitlines()[-1])), commands.stderr


def test_the_proxy_ssl_header_is_trusted_only_when_configured():
    values = _settings({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_PROXY_SSL_HEADER": "X-Forwarded-Proto"})
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_development_mode_is_what_make_run_and_the_tests_ask_for():
    values = _settings({"TRAILCACHE_DEV": "true"})
    assert values["TRAILCACHE_DEV"] is True and values["SESSION_COOKIE_SECURE"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0
    for script in ("scripts/run.sh", "scripts/test.sh"):
        assert "export TRAILCACHE_DEV=true" in (ROOT / script).read_text()
    assert "export TRAILCACHE_DEV := true" in (ROOT / "Makefile").read_text()
    assert os.environ["TRAILCACHE_DEV"] == "true"  # config/testing.py, loaded by pytest before the settings


def test_security_headers_on_responses(client, settings):
    settings.TRAILCACHE_CSP = True  # on by default; the suite turns it off for Playwright (config/testing.py)
    response = client.get("/console/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src 'self'")[1].split(";")[0]  # no inline <script>
    assert "'unsafe-eval'" not in policy
    assert "cdn.jsdelivr.net" not in policy and "cdn.jsdelivr.net" not in client.get("/api/v1/docs/")[
        "Content-Security-Policy"]  # Swagger UI's assets are served here (tests/config/test_swagger_assets.py)


def test_the_policy_is_on_unless_switched_off():
    values = _settings({"DJANGO_SECRET_KEY": SECRET, "TRAILCACHE_CSP": ""})
    assert values["TRAILCACHE_CSP"] is True


def test_hsts_is_sent_on_https_behind_the_configured_proxy(client, settings):
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = client.get("/healthz", HTTP_X_FORWARDED_PROTO="https")
    assert response["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "Strict-Transport-Security" not in client.get("/healthz")


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.TRAILCACHE_DATA_DIR = tmp_path
    return tmp_path


def test_the_demo_login_has_a_random_password_made_once_per_data_folder(db, data_dir, settings, capsys, tmp_path):
    call_command("seed_demo", "--port", "8123", "--no-data")
    first = capsys.readouterr().out
    line = next(row for row in first.splitlines() if "login demo@trailcache.local / " in row)
    password = line.rsplit(" / ", 1)[1].strip()
    assert len(password) >= 16 and password != "trailcache-demo"
    assert authenticate(username="demo@trailcache.local", password=password) is not None
    files = list(data_dir.glob("demo-login-*.txt"))
    assert len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"

    call_command("seed_demo", "--port", "8123", "--no-data")
    assert f"login demo@trailcache.local / {password}" in capsys.readouterr().out

    settings.TRAILCACHE_DATA_DIR = tmp_path / "another-checkout"
    call_command("seed_demo", "--port", "8123", "--no-data")
    other = capsys.readouterr().out.split("login demo@trailcache.local / ")[1].split()[0]
    assert other != password
    assert authenticate(username="demo@trailcache.local", password=password) is None


def test_the_demo_is_refused_outside_development_mode(db, data_dir, settings):
    settings.TRAILCACHE_DEV = False
    with pytest.raises(CommandError, match="development convenience"):
        call_command("seed_demo", "--no-data")
    assert not list(data_dir.iterdir())
