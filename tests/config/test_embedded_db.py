"""The embedded database serves one data folder: a port held by another checkout's server, or by
anything that is not our PostgreSQL, is refused with a message, never used."""

from __future__ import annotations

import socket
import threading

import pytest

from config import embedded_db


@pytest.fixture
def listener(monkeypatch):
    """Something that is not PostgreSQL listening on a spare port, set as our port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    server.settimeout(0.1)

    def accept_and_hang_up():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                conn.close()
            except OSError:
                pass

    thread = threading.Thread(target=accept_and_hang_up, daemon=True)
    thread.start()
    monkeypatch.setenv("TRAILCACHE_EMBEDDED_PG_PORT", str(server.getsockname()[1]))
    yield server
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_a_port_held_by_something_else_is_refused(listener):
    with pytest.raises(SystemExit) as err:
        embedded_db.ensure_running()
    assert "is held by something that is not this checkout's embedded PostgreSQL" in str(err.value)
    assert "TRAILCACHE_EMBEDDED_PG_PORT" in str(err.value)


def test_a_port_held_by_another_data_folders_server_is_refused(listener, monkeypatch):
    monkeypatch.setattr(embedded_db, "_server_data_directory", lambda: "/srv/other-checkout/.data/pg")
    with pytest.raises(SystemExit) as err:
        embedded_db.ensure_running()
    message = str(err.value)
    assert "another data folder (/srv/other-checkout/.data/pg)" in message and str(embedded_db.PGDATA) in message


def test_our_own_server_is_used(listener, monkeypatch):
    monkeypatch.setattr(embedded_db, "_server_data_directory", lambda: str(embedded_db.PGDATA))
    assert embedded_db.ensure_running() == embedded_db.database_url()


def test_the_buffer_cache_is_a_quarter_of_memory_within_bounds_or_what_the_setting_says(monkeypatch):
    monkeypatch.delenv("TRAILCACHE_EMBEDDED_PG_SHARED_BUFFERS", raising=False)
    pages = {"SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(embedded_db.os, "sysconf", lambda name: pages[name])
    for memory, expected in ((24 * 2**30, "4096MB"), (8 * 2**30, "2048MB"), (256 * 2**20, "128MB")):
        pages["SC_PHYS_PAGES"] = memory // 4096
        assert embedded_db.shared_buffers() == expected
    monkeypatch.setenv("TRAILCACHE_EMBEDDED_PG_SHARED_BUFFERS", "1GB")
    assert embedded_db.shared_buffers() == "1GB"
    monkeypatch.setenv("TRAILCACHE_EMBEDDED_PG_SHARED_BUFFERS", "1GB; DROP")
    with pytest.raises(SystemExit, match="must look like 512MB or 2GB"):
        embedded_db.shared_buffers()
