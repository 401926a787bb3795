#!/usr/bin/env bash
# `make run`: demo data, then the web server (and, once present, the Celery worker and beat),
# all stopped together on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"
PY=.venv/bin/python
$PY manage.py seed_demo --port "$PORT"

pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

.venv/bin/gunicorn config.wsgi:application --bind "127.0.0.1:${PORT}" --workers "${WEB_WORKERS:-2}" \
  --access-logfile - --graceful-timeout 5 &
pids+=($!)
wait -n "${pids[@]}"
