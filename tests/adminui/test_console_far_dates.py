"""The console's date filters answer a message, never a 500, for a date at the end of the
calendar (9999-12-31: the day after it does not exist), on the trail list, the audit log and
the export form."""

from __future__ import annotations

import pytest

from cachecore.models import Job
from tenants.models import Role

LAST = "9999-12-31"
MESSAGE = b"9999-12-30"  # the latest date a filter takes, named in the message


@pytest.mark.parametrize("field", ["created_to", "created_from", "last_hit_to", "last_hit_from"])
def test_the_trail_list_answers_a_message_for_the_last_day(world, field):
    response = world.client(Role.ADMIN).get(f"/console/trails/?tenant=acme&{field}={LAST}")
    assert response.status_code in {200, 400}
    assert MESSAGE in response.content


@pytest.mark.parametrize("field", ["since", "until"])
def test_the_audit_log_answers_a_message_for_the_last_day(world, field):
    response = world.client(Role.COMPLIANCE).get(f"/console/audit/?tenant=acme&{field}={LAST}")
    assert response.status_code in {200, 400}
    assert MESSAGE in response.content


@pytest.mark.parametrize("field", ["since", "until"])
def test_the_export_form_answers_a_message_for_the_last_day(world, field):
    response = world.client(Role.COMPLIANCE).post("/console/exports/?tenant=acme", {"format": "csv", field: LAST})
    assert response.status_code == 400
    assert MESSAGE in response.content
    assert not Job.objects.filter(kind="export").exists()


def test_the_api_export_answers_400_for_the_last_day(caller):
    response = caller.post("/api/v1/exports", {"format": "csv", "until": LAST})
    assert response.status_code == 400, response.content
    assert "until" in response.json()["fields"]
