"""The API against its own OpenAPI schema, fuzzed by schemathesis in-process (the WSGI app):
data that fits the schema and data that does not, on every operation. No input gives a 5xx,
every answer's status, content type, headers and body match what the schema documents (the
error shape included), data that fits is accepted and data that does not is refused. At least
2,000 requests in all, checked by the last test."""

from __future__ import annotations

import logging
import runpy
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from config.wsgi import application
from tenants.models import ApiKey
from tenants.services import _digest, tenant_create

MIN_REQUESTS = 2000
# Per operation and generation mode; with the coverage phase this gives ~2,200 requests.
MAX_EXAMPLES = 130

ROOT = Path(__file__).resolve().parents[2]
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application)
# Unknown query parameters are ignored, as by most HTTP APIs: not counted as invalid data.
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True, allow_extra_parameters=True)
# What counts as accepted and as refused, and the rules across fields kept out of valid data: the
# same as scripts/schemathesis.sh against a running service (its toml and hooks, one place).
_LIVE = tomllib.loads((ROOT / "scripts" / "schemathesis.toml").read_text())["checks"]
schema.config.checks.positive_data_acceptance.expected_statuses = _LIVE["positive_data_acceptance"]["expected-statuses"]
schema.config.checks.negative_data_rejection.expected_statuses = _LIVE["negative_data_rejection"]["expected-statuses"]
runpy.run_path(str(ROOT / "scripts" / "schemathesis_hooks.py"))
# Cases are built at collection time, before the fixture makes the key: a fixed raw key.
RAW_KEY = "tc_f0220000_fuzzed-tenant-secret"


@schema.auth()
class FuzzedTenantKey:
    """The fixture's key, sent as schemathesis decides (it also tries requests without one)."""

    def get(self, case, context):
        return RAW_KEY

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

sent: Counter[str] = Counter()
statuses: Counter[int] = Counter()


@pytest.fixture
def bearer(db, settings):
    """A tenant's key. The WSGI app is called in-process inside the test's transaction, so the
    connection must outlive each request, as under Django's test client."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    # Exports accepted, not refused by the per-tenant cap (tests/security/test_limits.py pins that).
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 10_000
    # Thousands of refused requests: log only server errors.
    logging.getLogger("django.request").setLevel(logging.ERROR)
    tenant = tenant_create(slug="fuzzed")
    ApiKey.objects.create(tenant=tenant, name="fuzz", prefix="f0220000", digest=_digest(RAW_KEY))
    yield RAW_KEY
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)
    logging.getLogger("django.request").setLevel(logging.NOTSET)


@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None, database=None)
def test_no_input_gives_a_server_error_and_every_answer_matches_the_schema(case, bearer):
    response = case.call()
    sent[case.operation.label] += 1
    statuses[response.status_code] += 1
    assert response.status_code < 500, (case.as_curl_command(), response.text[:500])
    # Every check: data that fits the schema is accepted (a 4xx that depends on the tenant's data
    # aside: scripts/schemathesis.toml), data that does not is refused.
    case.validate_response(response)


STATEFUL_SCENARIOS = 40


def test_linked_calls_hold_up_too(bearer):
    """Stateful: a recall's id fed to its feedback, a recorded trail's id to its read and delete,
    an export's id to its status and download (the schema's links), in generated sequences."""
    machine = schema.as_state_machine()

    class Counted(machine):
        def call(self, case, **kwargs):
            response = super().call(case, **kwargs)
            sent[f"stateful {case.operation.label}"] += 1
            statuses[response.status_code] += 1
            assert response.status_code < 500, (case.as_curl_command(), response.text[:500])
            return response

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response)

    Counted.run(settings=settings(max_examples=STATEFUL_SCENARIOS, stateful_step_count=6, deadline=None,
                                  suppress_health_check=list(HealthCheck), database=None, derandomize=True))
    followed = {label for label in sent if label.startswith("stateful ") and "{" in label}
    assert followed, dict(sent)  # some linked operations were reached through their links


def test_the_fuzzing_sent_enough_requests_and_none_failed():
    total = sum(sent.values())
    print(f"schemathesis: {total} requests; statuses {dict(sorted(statuses.items()))}; {dict(sent)}")
    assert total >= MIN_REQUESTS, dict(sent)
    assert not [code for code in statuses if code >= 500], dict(statuses)
