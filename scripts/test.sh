#!/usr/bin/env bash
# The whole test suite against the embedded PostgreSQL (or DATABASE_URL), the real model.
# System packages the tests need come from Debian's archive when missing: the Python docs
# Celery's, Flask's, pytest's and Click's (the evaluation corpora), chromium (browser tests drive it; no browser is downloaded) and
# redis-server (the live broker tests start and stop their own).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
test -d /usr/share/doc/python3.11/html/_sources || missing+=(python3.11-doc)
test -d /usr/share/doc/python-celery-doc/html || missing+=(python-celery-doc)  # the second evaluation corpus
test -d /usr/share/doc/python-flask-doc/html || missing+=(python-flask-doc)  # the third
test -d /usr/share/doc/python-pytest-doc/html || missing+=(python-pytest-doc)  # the fourth
test -d /usr/share/doc/python-click-doc/html || missing+=(python-click-doc)  # the fifth
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)  # live broker tests start their own
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "installing ${missing[*]} from Debian's archive"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "ERROR: the tests need Debian packages: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

.venv/bin/ruff check .
# The settings only read DATABASE_URL (or the embedded default's URL): start the embedded server here.
.venv/bin/python -m config.embedded_db start >/dev/null
export TRAILCACHE_DEV=true  # the tests run in development mode (config/testing.py sets it for plain pytest too)
exec .venv/bin/python -m pytest "$@"
