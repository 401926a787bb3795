# Trailcache: `make run` serves the service, `make test` runs every test. Both set up first.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export DJANGO_SETTINGS_MODULE := config.settings
# Every target here is a development one (run, test, bench, eval): development mode, explicitly.
# A deployment starts gunicorn and celery itself, in production mode (the default).
export TRAILCACHE_DEV := true

.PHONY: setup run test lint bench bench-growth eval refit cluster-demo clean-data chaos load results

$(VENV)/.installed: requirements.txt requirements-research.txt requirements-dev.txt requirements-nodeps.txt clients/python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $@

# The settings only read DATABASE_URL (or the embedded default's URL); the embedded server is started
# here (a no-op when DATABASE_URL is set or the server already runs).
setup: $(VENV)/.installed
	$(PY) -m config.embedded_db start >/dev/null
	$(PY) -m cachecore.embedding build >/dev/null
	$(PY) manage.py migrate --noinput

run: setup
	PORT=$(PORT) bash scripts/run.sh

test: setup
	bash scripts/test.sh

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

# The load generator sends more than a client should: no request-rate limits while it measures.
bench eval: export TRAILCACHE_RATE_PER_KEY_PER_MINUTE := 0
bench eval: export TRAILCACHE_RATE_PER_TENANT_PER_MINUTE := 0
bench eval: export TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS := 0
bench: setup
	$(PY) manage.py bench $(BENCH_ARGS)

# The growth curve: the bench at 10k and 100k trails (GROWTH_ARGS="--with-1m" adds 1M), one
# database per size; reports/bench/growth/growth.{json,md,png}.
bench-growth: setup
	$(PY) -m research.bench.growth $(GROWTH_ARGS)

# The replay (research/calibration_replay.py) on the five documentation corpora: per-round tables,
# reports/replay/<corpus>-noise<p>/{report.json,replay.png}; REPLAY_ARGS="--noise 0 --rounds 4".
# Then a recorded question asked again near-verbatim (research/near_repeats.py), and typed again
# with most of its words or changed in one (research/light_rewordings.py, all five corpora).
eval: setup
	$(PY) manage.py evaluate $(EVAL_ARGS)
	$(PY) -m research.match_calibration report $(MATCH_ARGS)
	$(PY) -m research.calibration_replay --corpus faq $(REPLAY_ARGS)
	$(PY) -m research.calibration_replay --corpus celery $(REPLAY_ARGS)
	$(PY) -m research.calibration_replay --corpus flask $(REPLAY_ARGS)
	$(PY) -m research.calibration_replay --corpus pytest $(REPLAY_ARGS)
	$(PY) -m research.calibration_replay --corpus click $(REPLAY_ARGS)
	$(PY) -m research.calibration_replay --corpus pytest --labels accepted $(REPLAY_ARGS)
	$(PY) -m research.near_repeats --corpus celery
	$(PY) -m research.light_rewordings

# The matching scorers fitted again on the shipped model (after a model or evidence change): the
# calibration rows of the FAQ, Celery and Flask sets and QQP's calibration side, then the document
# scorer's fit and the question scorer's cuts, written to cachecore/engine/*_scorer.json. pytest's and
# Click's sets are never fitted on. The tenant defaults then need a migration
# (tests/cachecore/test_match_scorer.py fails until they equal the file) - docs/matching.md.
refit: setup
	$(PY) -m research.match_calibration collect --corpus faq
	$(PY) -m research.match_calibration collect --corpus celery
	$(PY) -m research.match_calibration collect --corpus flask
	$(PY) -m research.qqp_cache --side calibration --explain --quiet --out reports/calibration/qqp-cal
	$(PY) -m research.match_calibration fit reports/calibration/faq-rows.jsonl reports/calibration/celery-rows.jsonl \
	  reports/calibration/flask-rows.jsonl --target-false 0.04 --write
	$(PY) -m research.match_calibration cuts reports/calibration/faq-rows.jsonl reports/calibration/qqp-cal/details.jsonl \
	  --regime question --target-false 0.03 --write

# Two web nodes and two Celery workers on free ports against one PostgreSQL (DATABASE_URL, else the
# embedded server; a database of the demo's own) and a throw-away redis-server: prints a table,
# exits 1 when something was lost or a worker ran nothing (docs/deploy.md).
cluster-demo: setup
	$(PY) scripts/cluster_demo.py $(CLUSTER_ARGS)

# Faults against a throw-away stack of its own (PostgreSQL, Redis, gunicorn, worker, beat; a tmpfs
# for the full disk when root): prints a table, fails on any failed check (research/chaos.py).
chaos: setup
	$(PY) -m research.chaos run $(CHAOS_ARGS)

# A bounded loopback load run on its own stack (2 minutes by default: LOAD_ARGS="--duration 30").
load: export TRAILCACHE_RATE_PER_KEY_PER_MINUTE := 0
load: export TRAILCACHE_RATE_PER_TENANT_PER_MINUTE := 0
load: export TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS := 0
load: setup
	$(PY) -m research.chaos load $(LOAD_ARGS)

# docs/results.md from docs/results/*.md, refreshed with the latest tables and plots under reports/
# (research/results_doc.py); needs no database.
results: $(VENV)/.installed
	$(PY) -m research.results_doc

clean-data:
	-$(PY) -m config.embedded_db stop
	rm -rf .data
