#!/usr/bin/env bash
# Schemathesis, every check, against a running service for a bounded time (docs/security.md).
#
#   TRAILCACHE_API_KEY=tc_… bash scripts/schemathesis.sh [BASE_URL] [SECONDS]
#
# Start the service first with the rate limits and the per-tenant concurrency budget off (a fuzzer
# sends more than a client should), e.g.
#   TRAILCACHE_RATE_PER_KEY_PER_MINUTE=0 TRAILCACHE_RATE_PER_TENANT_PER_MINUTE=0 \
#   TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS=0 make run
# and use the key it prints. The JSON report goes to reports/schemathesis/.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_URL="${1:-http://127.0.0.1:${PORT:-8000}}"
BUDGET="${2:-240}"
: "${TRAILCACHE_API_KEY:?set TRAILCACHE_API_KEY to a key of the running service}"
# The hooks (rules across fields the schema states in prose) read api.inputs from the checkout.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" SCHEMATHESIS_HOOKS=scripts/schemathesis_hooks.py
exec nice -n 10 .venv/bin/st --config-file scripts/schemathesis.toml run "$BASE_URL/api/v1/schema/?format=json" \
  --checks all --header "Authorization: Bearer $TRAILCACHE_API_KEY" --max-time "$BUDGET" \
  --workers "${ST_WORKERS:-1}" --report json --report-dir reports/schemathesis ${ST_ARGS:-}
