"""Sections fetched from the tenant's resolver: a real local HTTP server started by the test."""

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cachecore import resolver

SECRET = "resolver-secret-for-tests"
TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
QUERY = "Where does Acme read its configuration from?"


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


class FakeResolver:
    """The tenant's side: verifies the signature, answers hashes and optionally text."""

    def __init__(self):
        self.docs = {"remote#config": TEXT}
        self.send_text = True
        self.wrong_text: dict[str, str] = {}  # id → text answered with the hash of the real text
        self.hold = threading.Event()  # while clear, a held call waits until the test sets it
        self.hold.set()
        self.fail = False
        self.calls = []
        self.bad_signatures = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                ts = self.headers.get("X-Trailcache-Timestamp", "")
                expected = "sha256=" + hmac.new(SECRET.encode(), ts.encode() + b"." + body,
                                                hashlib.sha256).hexdigest()
                if not hmac.compare_digest(expected, self.headers.get("X-Trailcache-Signature", "")) \
                        or abs(time.time() - int(ts or 0)) > 300:
                    owner.bad_signatures += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                ids = json.loads(body)["ids"]
                owner.calls.append(ids)
                owner.hold.wait(timeout=30)
                if owner.fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                sections = [
                    {"id": i, "hash": _sha(owner.docs[i]),
                     **({"text": owner.wrong_text.get(i, owner.docs[i])} if owner.send_text else {})}
                    for i in ids if i in owner.docs
                ]
                payload = json.dumps({"sections": sections}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/resolve"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def remote():
    resolver.breaker.reset()
    fake = FakeResolver()
    yield fake
    fake.close()
    resolver.breaker.reset()


@pytest.fixture
def rcaller(make_caller, remote):
    caller = make_caller(resolver_url=remote.url, resolver_secret=SECRET, resolver_timeout_ms=200)
    caller.upsert({"local#intro": "Acme is a sync tool."})
    return caller


def test_record_and_recall_through_a_signed_resolver(rcaller, remote):
    response = rcaller.record(query=QUERY, cited=["remote#config"])
    assert response.status_code == 201, response.content
    body = rcaller.recall(QUERY)
    assert body["outcome"] == "prefetch"
    assert body["sections"] == [{"id": "remote#config", "status": "valid", "text": TEXT}]
    assert remote.bad_signatures == 0 and ["remote#config"] in remote.calls


def test_resolver_without_text_gives_a_hint(rcaller, remote):
    remote.send_text = False
    rcaller.record(query=QUERY, cited=["remote#config"])
    body = rcaller.recall(QUERY)
    assert body["outcome"] == "hint" and body["sections"] == [{"id": "remote#config", "status": "valid"}]


def test_changed_remote_section_makes_the_trail_stale(rcaller, remote):
    rcaller.record(query=QUERY, cited=["remote#config"])
    remote.docs["remote#config"] = TEXT + " Changed."
    assert rcaller.recall(QUERY)["outcome"] == "miss"


def test_resolver_text_that_does_not_match_the_hash_it_answered_is_never_served(rcaller, remote):
    assert rcaller.record(query=QUERY, cited=["remote#config"]).status_code == 201
    remote.wrong_text["remote#config"] = "Acme reads its configuration from /tmp/evil.toml."
    body = rcaller.recall(QUERY)
    assert body["outcome"] == "hint"  # the hash is unchanged, but there is no text to trust
    assert body["sections"] == [{"id": "remote#config", "status": "valid"}]
    remote.wrong_text.clear()
    assert rcaller.recall(QUERY)["outcome"] == "prefetch"


def test_unknown_to_the_resolver_is_422(rcaller):
    response = rcaller.record(query=QUERY, cited=["remote#nope"])
    assert response.status_code == 422 and response.json()["unknown_ids"] == ["remote#nope"]


def test_slow_or_failing_resolver_gives_a_hint_never_a_prefetch(rcaller, remote):
    rcaller.record(query=QUERY, cited=["remote#config", "local#intro"])
    remote.hold.clear()  # the resolver now answers only when the test lets it
    calls_before = len(remote.calls)
    body = rcaller.recall(QUERY)
    # The recall came back while the resolver was still holding its answer: the 200 ms timeout
    # ended the wait (without it, this call would wait for the answer and prefetch).
    assert not remote.hold.is_set()
    for _ in range(100):  # the handler thread may log the call a moment later on a loaded machine
        if len(remote.calls) > calls_before:
            break
        time.sleep(0.1)
    assert len(remote.calls) == calls_before + 1
    remote.hold.set()
    assert body["outcome"] == "hint"
    assert {"id": "remote#config", "status": "unverified"} in body["sections"]
    assert all("text" not in s for s in body["sections"])
    remote.fail = True
    assert rcaller.recall(QUERY)["outcome"] == "hint"


def test_circuit_breaker_stops_calling_a_failing_resolver(rcaller, remote):
    rcaller.record(query=QUERY, cited=["remote#config"])
    remote.fail = True
    for _ in range(resolver.FAILURES_TO_OPEN):
        assert rcaller.recall(QUERY)["outcome"] == "hint"
    calls = len(remote.calls)
    for _ in range(3):
        assert rcaller.recall(QUERY)["outcome"] == "hint"
    assert len(remote.calls) == calls  # open: not called
    remote.fail = False
    resolver.breaker.reset()
    assert rcaller.recall(QUERY)["outcome"] == "prefetch"


def test_resolver_down_at_record_is_503_and_writes_nothing(rcaller, remote):
    from cachecore.models import Trail

    remote.fail = True
    response = rcaller.record(query=QUERY, cited=["remote#config"])
    assert response.status_code == 503 and response.json()["error"] == "unavailable"
    assert not Trail.objects.filter(tenant=rcaller.tenant).exists()


def test_resolver_url_must_be_https_outside_loopback(make_tenant):
    from django.core.exceptions import ValidationError

    tenant = make_tenant()
    tenant.resolver_url = "http://example.com/resolve"
    tenant.resolver_secret = SECRET
    with pytest.raises(ValidationError) as err:
        tenant.full_clean()
    assert "resolver_url" in err.value.message_dict
