"""The subject of ``DELETE /api/v1/subjects/{subject}`` never reaches a log line: Django's
request log (a 4xx on that path) and gunicorn's access log show its SHA-256 prefix instead."""

from __future__ import annotations

import datetime
import hashlib
import logging
import types

from gunicorn.config import Config
from rest_framework.test import APIClient

from config.logredact import AccessLogger

SUBJECT = "alice.marker-5529@example.com"
DIGEST = hashlib.sha256(SUBJECT.encode()).hexdigest()[:16]


def test_a_refused_erasure_logs_the_path_without_the_subject(db, caplog, capsys):
    with caplog.at_level(logging.WARNING):
        response = APIClient().delete(f"/api/v1/subjects/{SUBJECT}")
    assert response.status_code in (401, 403)
    logged = [r.getMessage() for r in caplog.records if r.name == "django.request"]
    assert logged and all(f"/api/v1/subjects/sha256:{DIGEST}" in m for m in logged)
    assert SUBJECT not in caplog.text
    out, err = capsys.readouterr()
    assert SUBJECT not in out + err


def test_gunicorns_access_log_shows_the_subjects_hash_not_the_subject(capsys):
    logger = AccessLogger(Config())
    path = f"/api/v1/subjects/{SUBJECT.replace('@', '%40')}"
    environ = {"REQUEST_METHOD": "DELETE", "RAW_URI": path, "PATH_INFO": f"/api/v1/subjects/{SUBJECT}",
               "SERVER_PROTOCOL": "HTTP/1.1", "QUERY_STRING": "", "REMOTE_ADDR": "127.0.0.1"}
    resp = types.SimpleNamespace(status="200 OK", sent=15, headers=[])
    atoms = logger.atoms(resp, types.SimpleNamespace(headers=[]), environ, datetime.timedelta(milliseconds=3))
    line = str(atoms)
    assert SUBJECT not in line and SUBJECT.replace("@", "%40") not in line
    assert atoms["r"] == f"DELETE /api/v1/subjects/sha256:{DIGEST} HTTP/1.1"
    assert atoms["U"] == f"/api/v1/subjects/sha256:{DIGEST}"
