"""Admission under the tenant's ``signal+verifier`` policy, through the API: the answer is
required for a trail to be served, a failed verdict leaves the trail pending with its reasons
in ``GET /api/v1/trails/{id}`` and on the console's trail page; the answer is never stored."""

import json

import pytest
from django.test import Client
from django.utils.html import escape

from tenants.models import Role
from tenants.services import operator_create

TEXT = "Acme reads its configuration from /etc/acme/acme.toml. It reloads the file on SIGHUP."
QUERY = "Where does Acme read its configuration from?"
GOOD = "Acme reads its configuration from /etc/acme/acme.toml, and it reloads that file on SIGHUP."
NON_ANSWER = "The provided documents do not say where Acme reads its configuration from."


@pytest.fixture
def vcaller(make_caller):
    caller = make_caller(admission_policy="signal+verifier")
    caller.upsert({"doc#config": TEXT})
    return caller


def _stored(caller, response):
    assert response.status_code == 201, response.content
    return caller.get(f"/api/v1/trails/{response.json()['trail_id']}").json()


def test_without_an_answer_the_trail_is_pending_with_the_reason_and_never_served(vcaller):
    stored = _stored(vcaller, vcaller.record(query=QUERY, cited=["doc#config"]))
    assert stored["status"] == "pending"
    assert stored["verdict"]["passed"] is False
    assert stored["verdict"]["reasons"] == ["no answer to verify (admission policy is signal + verifier)"]
    assert vcaller.recall(QUERY)["outcome"] == "miss"


def test_a_supported_answer_with_a_positive_signal_is_admitted_and_not_stored(vcaller):
    stored = _stored(vcaller, vcaller.record(query=QUERY, cited=["doc#config"], answer=GOOD))
    assert stored["status"] == "active" and stored["verdict"]["passed"] is True
    assert GOOD not in json.dumps(stored) and "answer" not in stored
    assert vcaller.recall(QUERY)["outcome"] == "prefetch"


def test_a_supported_answer_without_a_positive_signal_is_still_pending(vcaller):
    stored = _stored(vcaller, vcaller.record(query=QUERY, cited=["doc#config"], answer=GOOD, accepted=False))
    assert stored["status"] == "pending"


def test_a_failed_verdict_gives_a_pending_trail_with_its_reasons_in_the_api_and_the_console(vcaller, settings):
    stored = _stored(vcaller, vcaller.record(query=QUERY, cited=["doc#config"], answer=NON_ANSWER))
    assert stored["status"] == "pending"
    verdict = stored["verdict"]
    assert verdict["passed"] is False and verdict["non_answer"] is True and verdict["reasons"]
    assert NON_ANSWER not in json.dumps(stored)
    assert vcaller.recall(QUERY)["outcome"] == "miss"

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    console = Client()
    console.force_login(operator_create(email="s@acme.test", password="pw-123456789", tenant=vcaller.tenant,
                                        role=Role.SUPPORT))
    page = console.get(f"/console/trails/{stored['trail_id']}/?tenant={vcaller.tenant.slug}")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Verdict" in body and "Pending" in body
    for reason in verdict["reasons"]:
        assert escape(reason) in body  # each reason, as the API reports it
