"""One deadline for the whole resolver call: DNS, connect, TLS handshake, status line, headers and
body. Local servers on loopback misbehave on purpose (trickled headers, an endless ``100 Continue``,
a TLS handshake that never gets an answer, a slow name lookup, a huge header block); every call
fails within its deadline (plus scheduling slack on a loaded machine) and counts as a failure for
the circuit breaker."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from cachecore import resolver

SECRET = "resolver-secret-for-tests"
SLACK = 1.0  # the answer is back within the deadline + 1 s, as the chaos scenario asks


class RawServer:
    """A TCP server on loopback; ``speak(conn)`` runs in a thread per connection."""

    def __init__(self, speak: Callable[[socket.socket], None]) -> None:
        self.accepted = 0
        self.stop = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.speak = speak
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(0.2)
            try:
                conn.recv(65536)  # the request (or the ClientHello): read, never answered properly
            except OSError:
                pass
            self.speak(conn)
        except OSError:
            pass  # the client hung up at its deadline, as it should
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture
def raw_server():
    servers: list[RawServer] = []

    def start(speak):
        server = RawServer(speak)
        servers.append(server)
        return server

    resolver.breaker.reset()
    yield start
    for server in servers:
        server.close()
    resolver.breaker.reset()


@pytest.fixture
def tenant_for(make_tenant):
    def make(url, timeout_ms=600):
        return make_tenant(resolver_url=url, resolver_secret=SECRET, resolver_timeout_ms=timeout_ms)

    return make


def _until_stopped(server_stop: threading.Event, conn: socket.socket, pieces, pause: float) -> None:
    for piece in pieces:
        if server_stop.is_set():
            return
        conn.sendall(piece)
        time.sleep(pause)


def _forever(piece: bytes):
    while True:
        yield piece


def _fails_within_deadline(tenant, **kwargs) -> float:
    started = time.monotonic()
    with pytest.raises(resolver.ResolverUnavailable):
        resolver.resolve(tenant=tenant, section_ids=["a"], **kwargs)
    elapsed = time.monotonic() - started
    assert elapsed < tenant.resolver_timeout_ms / 1000 + SLACK, f"took {elapsed:.2f} s"
    return elapsed


def test_headers_trickled_one_byte_every_200_ms_fail_at_the_calls_deadline(raw_server, tenant_for):
    def trickle(conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        _until_stopped(server.stop, conn, _forever(b"x"), 0.2)

    server = raw_server(trickle)
    _fails_within_deadline(tenant_for(f"http://127.0.0.1:{server.port}/r"))


def test_an_endless_100_continue_fails_at_the_calls_deadline(raw_server, tenant_for):
    def continue_forever(conn):
        _until_stopped(server.stop, conn, _forever(b"HTTP/1.1 100 Continue\r\n\r\n"), 0.05)

    server = raw_server(continue_forever)
    _fails_within_deadline(tenant_for(f"http://127.0.0.1:{server.port}/r"))


def test_a_tls_handshake_that_is_never_answered_fails_at_the_calls_deadline(raw_server, tenant_for):
    def silent(conn):
        server.stop.wait(10)  # accepts, reads the ClientHello, never answers

    server = raw_server(silent)
    _fails_within_deadline(tenant_for(f"https://127.0.0.1:{server.port}/r"))
    assert server.accepted == 1


def test_a_slow_name_lookup_fails_at_the_calls_deadline(raw_server, tenant_for):
    server = raw_server(lambda conn: None)
    lookups = []

    def slow_lookup(host, port, *args, **kwargs):
        lookups.append(host)
        time.sleep(3)  # a DNS server that takes its time; the answer comes far past the deadline
        return socket.getaddrinfo("127.0.0.1", port, *args, **kwargs)

    _fails_within_deadline(tenant_for(f"http://localhost:{server.port}/r"), lookup=slow_lookup)
    assert lookups == ["localhost"] and server.accepted == 0


def test_a_lookup_that_answers_in_time_is_used(tenant_for):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"sections": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    looked_up = []

    def lookup(host, port, *args, **kwargs):
        looked_up.append(host)
        return socket.getaddrinfo("127.0.0.1", port, *args, **kwargs)

    try:
        tenant = tenant_for(f"http://localhost:{httpd.server_address[1]}/r")
        assert resolver.resolve(tenant=tenant, section_ids=["a"], lookup=lookup) == {}
        assert looked_up == ["localhost"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_header_block_over_the_size_cap_fails(raw_server, tenant_for):
    def big_headers(conn):
        pad = b"y" * 4000
        conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, pad) for i in range(90))
                     + b"Content-Length: 16\r\n\r\n" + b'{"sections": []}')
        server.stop.wait(2)

    server = raw_server(big_headers)
    _fails_within_deadline(tenant_for(f"http://127.0.0.1:{server.port}/r", timeout_ms=2000))


def test_too_many_headers_fail(raw_server, tenant_for):
    def many_headers(conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(resolver.MAX_HEADERS + 1))
                     + b"Content-Length: 16\r\n\r\n" + b'{"sections": []}')
        server.stop.wait(2)

    server = raw_server(many_headers)
    _fails_within_deadline(tenant_for(f"http://127.0.0.1:{server.port}/r", timeout_ms=2000))


def test_stalled_calls_open_the_circuit_breaker(raw_server, tenant_for):
    def trickle(conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        _until_stopped(server.stop, conn, _forever(b"X"), 0.2)

    server = raw_server(trickle)
    tenant = tenant_for(f"http://127.0.0.1:{server.port}/r", timeout_ms=300)
    for _ in range(resolver.FAILURES_TO_OPEN):
        _fails_within_deadline(tenant)
    elapsed = _fails_within_deadline(tenant)  # the breaker is open: no call at all
    assert elapsed < 0.1 and server.accepted == resolver.FAILURES_TO_OPEN
