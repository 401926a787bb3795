"""Small helpers for the research scripts that start local throw-away services (PostgreSQL,
Redis, gunicorn, Celery on 127.0.0.1): a free port, whether a port listens yet (to wait for a
service to come up), a database URL naming another database on the same server, and a study's
switch of ``DATABASE_URL`` to a named database before Django is set up.

Standard library only: ``scripts/cluster_demo.py`` imports it before Django is set up, and the
product never imports research."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit, urlunsplit


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (the OS's choice, free when asked)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port`` (within 0.2 s)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def with_database(url: str, name: str) -> str:
    """``url`` (a PostgreSQL URL) with its database replaced by ``name``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def use_database(name: str) -> str:
    """Point ``DATABASE_URL`` at the database ``name`` on the server it names (the embedded
    server, started when needed, when it names none), for a study run before ``django.setup()``;
    returns the new URL."""
    server = os.environ.get("DATABASE_URL", "")
    if not server:
        from config import embedded_db

        server = embedded_db.ensure_running()
    os.environ["DATABASE_URL"] = with_database(server, name)
    return os.environ["DATABASE_URL"]
