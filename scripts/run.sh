#!/usr/bin/env bash
# `make run`: demo data, then the web server, a Celery worker and the beat scheduler, all
# stopped together on Ctrl-C.
#
# Broker: CELERY_BROKER_URL when set. Otherwise Redis on 127.0.0.1:6379 when one answers there;
# else a local redis-server started here (when the binary exists); else kombu's SQLAlchemy
# transport on the embedded PostgreSQL (works anywhere, but slow: ~0.5-1 s per task).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"
PY=.venv/bin/python
# Development mode, explicitly: a built-in secret key, the demo login, http resolvers on loopback.
# Anything started otherwise runs in production mode and needs DJANGO_SECRET_KEY.
export TRAILCACHE_DEV=true
mkdir -p .data
# The settings only read DATABASE_URL (or the embedded default's URL): the embedded server starts here.
$PY -m config.embedded_db start >/dev/null
# /metrics sums the gunicorn workers' counters from these files (emptied at each start).
export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$PWD/.data/prometheus}"; mkdir -p "$PROMETHEUS_MULTIPROC_DIR"; rm -f "$PROMETHEUS_MULTIPROC_DIR"/*.db

pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  # A worker's warm shutdown waits for its running task; past 10 s it is stopped hard.
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

port_open() { $PY -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.3)" "$1" 2>/dev/null; }

if [[ -z "${CELERY_BROKER_URL:-}" ]]; then
  REDIS_PORT="${TRAILCACHE_REDIS_PORT:-6379}"
  if port_open "$REDIS_PORT"; then
    export CELERY_BROKER_URL="redis://127.0.0.1:${REDIS_PORT}/0"
    echo "broker: the Redis already running on 127.0.0.1:${REDIS_PORT}"
  elif command -v redis-server >/dev/null 2>&1; then
    # Job rows in PostgreSQL are the durable record, so this Redis keeps nothing on disk.
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning &
    pids+=($!)
    for _ in $(seq 50); do port_open "$REDIS_PORT" && break; sleep 0.1; done
    export CELERY_BROKER_URL="redis://127.0.0.1:${REDIS_PORT}/0"
    echo "broker: started redis-server on 127.0.0.1:${REDIS_PORT}"
  else
    db_url="${DATABASE_URL:-$($PY -m config.embedded_db url)}"
    export CELERY_BROKER_URL="sqla+${db_url/postgresql:\/\//postgresql+psycopg://}"
    echo "WARNING: no Redis found (no server on 127.0.0.1:${REDIS_PORT}, no redis-server binary)." >&2
    echo "WARNING: using kombu's SQLAlchemy transport on PostgreSQL as the broker: it works but is slow" >&2
    echo "WARNING: (about 0.5-1 s per task). Install Redis or set CELERY_BROKER_URL for normal speed." >&2
  fi
fi

$PY manage.py seed_demo --port "$PORT"

# Sync workers, one per core: measured against gthread and ASGI at concurrency 1/8/32
# (research/webpath.py, docs/results.md "Web path and worker model"; docs/deploy.md).
.venv/bin/gunicorn -c gunicorn.conf.py config.wsgi:application --bind "127.0.0.1:${PORT}" --worker-class sync --workers "${WEB_WORKERS:-2}" \
  --access-logfile - --logger-class config.logredact.AccessLogger --graceful-timeout 5 &
pids+=($!)
.venv/bin/celery -A config worker --loglevel INFO --concurrency "${CELERY_CONCURRENCY:-2}" \
  --without-gossip --without-mingle &
pids+=($!)
.venv/bin/celery -A config beat --loglevel INFO --schedule .data/celerybeat-schedule &
pids+=($!)
wait -n "${pids[@]}"
