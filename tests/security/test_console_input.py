"""The console's pages refuse a NUL or a lone surrogate in a query or path value with a plain
400, never a database error (its forms refuse them in bodies already)."""

from __future__ import annotations

import pytest

from tenants.models import Role
from tenants.services import operator_create

PASSWORD = "console-input-test-pass"


@pytest.fixture
def admin_client(client, make_tenant, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    tenant = make_tenant(slug="t1")
    operator_create(email="admin@t1.test", password=PASSWORD, tenant=tenant, role=Role.ADMIN)
    assert client.login(username="admin@t1.test", password=PASSWORD)
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize("url", [
    "/console/sections/?tenant=t1&q=a%00b",
    "/console/sections/detail/?tenant=t1&id=a%00b",
    "/console/trails/?tenant=t1&q=a%00b",
    "/console/audit/?tenant=t1&q=%00",
    "/console/trails/?tenant=t1&sc%00ope=x",
])
def test_nul_in_a_console_query_is_a_plain_400(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code == 400
    assert b"must not contain NUL" in response.content


def test_ordinary_console_queries_still_work(admin_client):
    assert admin_client.get("/console/sections/?tenant=t1&q=install").status_code == 200
