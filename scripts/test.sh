#!/usr/bin/env bash
# The whole test suite against the embedded PostgreSQL (or DATABASE_URL), the real model.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
