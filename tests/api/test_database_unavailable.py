"""While PostgreSQL cannot be reached every request answers 503 with Retry-After (the API and
/healthz in the error shape, the console a short plain page), never a 500 page; the next
request after the database is back answers normally, without a restart.

The database "goes away" for real: the connection is pointed at a local port where nothing
listens, so psycopg's own connect fails as it does while the server restarts. The chaos run
(research/chaos.py, tests/research/test_chaos.py) does the same against a server it stops."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.handlers.exception import convert_exception_to_response
from django.db import OperationalError, connection
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from api.middleware import DATABASE_RETRY_AFTER_SECONDS, DatabaseUnavailableMiddleware

pytestmark = pytest.mark.django_db(transaction=True)


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


@pytest.fixture
def database_down() -> Iterator[Any]:
    """A switch: ``down()`` points the connection at a dead port, ``up()`` back at the server."""
    real = dict(connection.settings_dict)

    class Switch:
        def down(self) -> None:
            connection.close()
            connection.settings_dict["HOST"], connection.settings_dict["PORT"] = "127.0.0.1", str(_dead_port())

        def up(self) -> None:
            connection.close()
            connection.settings_dict["HOST"], connection.settings_dict["PORT"] = real["HOST"], real["PORT"]

    switch = Switch()
    yield switch
    switch.up()


def _assert_api_503(response: Any) -> None:
    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)
    assert response["Content-Type"].startswith("application/json")
    body = json.loads(response.content)
    assert body["error"] == "database_unavailable" and body["fields"] == {} and body["detail"]


def test_every_kind_of_request_answers_503_with_retry_after_and_recovers(caller, database_down):
    caller.upsert({"doc#a": "Acme reads its configuration from /etc/acme/acme.toml."})
    operator = get_user_model().objects.create_superuser("op", "op@example.com", "x-long-password-1")
    console = Client()
    console.force_login(operator)
    record = {"scope": "default", "query": "Where is the configuration?", "cited": ["doc#a"],
              "steps": [{"tool": "search", "args": {"q": "configuration"}, "returned": ["doc#a"]}]}

    database_down.down()
    _assert_api_503(caller.post("/api/v1/trails", record))
    _assert_api_503(caller.post("/api/v1/recall", {"scope": "default", "query": "configuration"}))
    _assert_api_503(caller.get("/api/v1/sections/doc%23a"))
    _assert_api_503(caller.get("/api/v1/stats"))
    health = Client().get("/healthz")
    _assert_api_503(health)
    assert health.json()["database"]["status"] == "error"
    page = console.get("/console/")
    assert page.status_code == 503 and page["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)
    assert page["Content-Type"].startswith("text/plain") and b"database" in page.content

    database_down.up()  # the server is back: the very next requests answer, no restart
    assert Client().get("/healthz").status_code == 200
    assert caller.post("/api/v1/trails", record).status_code == 201
    assert caller.post("/api/v1/recall", {"scope": "default", "query": "Where is the configuration?"}).status_code \
        == 200
    assert console.get("/console/").status_code == 200


def test_a_database_fault_raised_by_a_middleware_is_a_503_too():
    """Django turns an exception raised in a middleware into a 500 before the outer middleware
    sees it; the got_request_exception mark makes that a 503 as well."""

    def inner(request: HttpRequest) -> HttpResponse:
        raise OperationalError("connection refused")

    outer = DatabaseUnavailableMiddleware(convert_exception_to_response(inner))
    _assert_api_503(outer(RequestFactory().get("/api/v1/stats")))
    console = outer(RequestFactory().get("/console/"))
    assert console.status_code == 503 and console["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)


def test_other_server_errors_stay_500():
    def inner(request: HttpRequest) -> HttpResponse:
        raise ValueError("a bug")

    outer = DatabaseUnavailableMiddleware(convert_exception_to_response(inner))
    response = outer(RequestFactory().get("/api/v1/stats"))
    assert response.status_code == 500 and "Retry-After" not in response


def test_the_schema_documents_the_503():
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    recall = json.loads(response.content)["paths"]["/api/v1/recall"]["post"]["responses"]
    assert "503" in recall and "Retry-After" in recall["503"]["headers"]
