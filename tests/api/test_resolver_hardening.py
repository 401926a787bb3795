"""The resolver call is an outbound request to an address a tenant chose: fenced against local
servers that misbehave (trickle, redirect, huge body, not HTTP), names that resolve to internal
addresses (DNS is patched: no traffic ever leaves loopback), and it tells the caller nothing
about the target. Literal internal hosts are refused when the URL is saved."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.exceptions import ValidationError

from cachecore import resolver

SECRET = "resolver-secret-for-tests"
ANSWER = b'{"sections": []}'


class LocalServer:
    """A local HTTP server whose handler the test writes."""

    def __init__(self, handle):
        self.calls = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                owner.calls += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                handle(self)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/resolve"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(handle):
        server = LocalServer(handle)
        servers.append(server)
        return server

    resolver.breaker.reset()
    yield start
    for server in servers:
        server.close()
    resolver.breaker.reset()


@pytest.fixture
def tenant_for(make_tenant):
    def make(url, timeout_ms=500):
        return make_tenant(resolver_url=url, resolver_secret=SECRET, resolver_timeout_ms=timeout_ms)

    return make


def _ok(handler, body=ANSWER):
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_a_well_behaved_local_resolver_still_answers_in_development_mode(serve, tenant_for):
    server = serve(_ok)
    assert resolver.resolve(tenant=tenant_for(server.url), section_ids=["a"]) == {}


def test_a_trickling_answer_fails_at_the_calls_deadline_not_per_read(serve, tenant_for):
    def trickle(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(ANSWER)))
        handler.end_headers()
        try:
            for byte in ANSWER:  # each byte well within any per-read timeout; the whole far past the deadline
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass  # the client gave up at its deadline, as it should

    server = serve(trickle)
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant_for(server.url, timeout_ms=400), section_ids=["a"])


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_are_never_followed(serve, tenant_for, status):
    target = serve(_ok)

    def redirect(handler):
        handler.send_response(status)
        handler.send_header("Location", target.url)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    server = serve(redirect)
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant_for(server.url), section_ids=["a"])
    assert server.calls == 1 and target.calls == 0


@pytest.mark.parametrize("declared", [True, False])
def test_an_answer_over_the_size_cap_fails(serve, tenant_for, settings, declared):
    settings.TRAILCACHE_RESOLVER_MAX_BODY_BYTES = 64 * 1024
    huge = b'{"sections": [], "pad": "' + b"x" * (1024 * 1024) + b'"}'

    def flood(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if declared:
            handler.send_header("Content-Length", str(len(huge)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            handler.wfile.write(huge)
        except OSError:
            pass  # the client hung up, as it should

    server = serve(flood)
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant_for(server.url, timeout_ms=2000), section_ids=["a"])


def test_a_reply_that_is_not_http_fails(tenant_for):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def speak_ssh():
        conn, _ = listener.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        time.sleep(0.2)
        conn.close()

    threading.Thread(target=speak_ssh, daemon=True).start()
    try:
        with pytest.raises(resolver.ResolverUnavailable):
            resolver.resolve(tenant=tenant_for(f"http://127.0.0.1:{listener.getsockname()[1]}/"), section_ids=["a"])
    finally:
        listener.close()


def _fake_dns(monkeypatch, answers):
    """getaddrinfo answering ``answers`` (a list of IP strings) for every name; records lookups."""
    lookups = []

    def getaddrinfo(host, port, *args, **kwargs):
        lookups.append(host)
        current = answers(len(lookups)) if callable(answers) else answers
        out = []
        for ip in current:
            family = socket.AF_INET6 if ":" in ip else socket.AF_INET
            sockaddr = (ip, port, 0, 0) if family == socket.AF_INET6 else (ip, port)
            out.append((family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr))
        return out

    monkeypatch.setattr(resolver.socket, "getaddrinfo", getaddrinfo)
    return lookups


@pytest.fixture
def no_outbound_connections(monkeypatch):
    """Any connection attempt to a non-loopback address fails the test before it leaves."""
    attempts = []
    real_connect = socket.socket.connect

    def connect(self, address):
        attempts.append(address)
        assert address[0] in {"127.0.0.1", "::1"}, f"tried to connect to {address}"
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


@pytest.mark.parametrize("addresses", [
    ["10.1.2.3"], ["192.168.0.10"], ["172.16.5.4"], ["169.254.169.254"], ["100.64.0.1"], ["0.0.0.0"],
    ["224.0.0.1"], ["240.0.0.1"], ["fd00::1"], ["fe80::1"], ["::ffff:10.0.0.1"], ["64:ff9b::a00:1"],
    ["ff02::1"], ["::"], ["93.184.216.34", "10.0.0.1"],  # one public, one private: refused
])
def test_a_name_that_resolves_to_an_internal_address_is_refused_before_connecting(
        monkeypatch, tenant_for, no_outbound_connections, addresses):
    _fake_dns(monkeypatch, addresses)
    tenant = tenant_for("https://resolver.example.com/resolve")
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant, section_ids=["a"])
    assert no_outbound_connections == []


def test_loopback_names_are_refused_in_production_mode(monkeypatch, tenant_for, settings, no_outbound_connections):
    _fake_dns(monkeypatch, ["127.0.0.1"])
    tenant = tenant_for("https://resolver.example.com/resolve")
    settings.TRAILCACHE_DEV = False
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant, section_ids=["a"])
    assert no_outbound_connections == []


def test_the_connection_goes_to_the_address_that_was_checked(monkeypatch, serve, tenant_for):
    """DNS rebinding: a second lookup would answer an internal address; there is none."""
    server = serve(_ok)
    lookups = _fake_dns(monkeypatch, lambda n: ["127.0.0.1"] if n == 1 else ["10.0.0.1"])
    tenant = tenant_for(f"http://localhost:{server.port}/resolve")
    assert resolver.resolve(tenant=tenant, section_ids=["a"]) == {}
    assert lookups == ["localhost"] and server.calls == 1


def test_an_allowed_network_lets_an_internal_resolver_through(monkeypatch, serve, tenant_for, settings,
                                                              no_outbound_connections):
    server = serve(_ok)
    settings.TRAILCACHE_DEV = False
    tenant = tenant_for(f"https://resolver.example.com:{server.port}/resolve")
    _fake_dns(monkeypatch, ["127.0.0.1"])
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant, section_ids=["a"])
    assert no_outbound_connections == []  # refused: loopback in production mode
    settings.TRAILCACHE_RESOLVER_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    # Allowed now, so the call is made (https to a plain-HTTP test server: the TLS handshake fails).
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant, section_ids=["a"])
    assert no_outbound_connections == [("127.0.0.1", server.port)]


def test_a_failed_call_tells_the_caller_nothing_about_the_target(make_caller, serve):
    server = serve(lambda h: (h.send_response(500), h.end_headers()))
    caller = make_caller(resolver_url=server.url, resolver_secret=SECRET, resolver_timeout_ms=500)
    response = caller.record(query="Where is the config?", cited=["remote#config"])
    assert response.status_code == 503, response.content
    text = response.content.decode()
    for leak in ("127.0.0.1", str(server.port), "500", "HTTP", "Error", "status"):
        assert leak not in text, text


@pytest.mark.parametrize(("url", "words"), [
    ("https://10.0.0.5/resolve", "private"),
    ("https://192.168.1.1:8443/r", "private"),
    ("https://169.254.169.254/latest/meta-data", "link-local"),
    ("https://[fd12::1]/r", "private"),
    ("https://[::ffff:10.1.1.1]/r", "private"),
    ("https://0.0.0.0/r", "unspecified"),
    ("https://224.0.0.5/r", "multicast"),
    ("https://100.64.1.1/r", "carrier-grade"),
    ("http://example.com/resolve", "https://"),
    ("ftp://example.com/resolve", "https://"),
    ("https://user:pw@example.com/r", "user name"),
])
def test_a_literal_internal_or_non_https_url_is_refused_when_saved(make_tenant, url, words):
    tenant = make_tenant()
    tenant.resolver_url, tenant.resolver_secret = url, SECRET
    with pytest.raises(ValidationError) as err:
        tenant.full_clean()
    message = " ".join(err.value.message_dict["resolver_url"])
    assert words in message, message


@pytest.mark.parametrize("url", ["http://127.0.0.1:9000/r", "https://127.0.0.1/r", "https://[::1]/r",
                                 "http://localhost:9000/r", "https://localhost/r"])
def test_loopback_urls_are_refused_when_saved_in_production_mode(make_tenant, settings, url):
    tenant = make_tenant()
    settings.TRAILCACHE_DEV = False
    tenant.resolver_url, tenant.resolver_secret = url, SECRET
    with pytest.raises(ValidationError) as err:
        tenant.full_clean()
    assert "resolver_url" in err.value.message_dict


def test_public_https_urls_are_accepted_when_saved(make_tenant, settings):
    settings.TRAILCACHE_DEV = False
    tenant = make_tenant()
    tenant.resolver_url, tenant.resolver_secret = "https://resolver.example.com:8443/resolve", SECRET
    tenant.full_clean()


def _two_processes_breakers():
    """Two breakers as two processes hold them: nothing shared in memory."""
    return (resolver.SharedBreaker("resolver", failures_to_open=3, open_seconds=30),
            resolver.SharedBreaker("resolver", failures_to_open=3, open_seconds=30))


def test_the_breaker_is_shared_by_every_process_through_redis(own_broker):
    first, second = _two_processes_breakers()
    first.reset()
    first.failure("tenant-x")
    second.failure("tenant-x")
    assert first.allow("tenant-x") and second.allow("tenant-x")
    first.failure("tenant-x")  # the third failure in a row, counted across both
    assert not second.allow("tenant-x") and not first.allow("tenant-x")
    assert second.allow("tenant-y")
    second.success("tenant-x")
    assert first.allow("tenant-x")
    first.reset()


def test_the_breaker_falls_back_to_memory_when_redis_is_down(settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port}/0"
    breaker = resolver.SharedBreaker("resolver", failures_to_open=3, open_seconds=30)
    for _ in range(3):
        assert breaker.allow("tenant-z")
        breaker.failure("tenant-z")
    assert not breaker.allow("tenant-z")
