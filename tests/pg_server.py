"""A private PostgreSQL 15 server for the tests (postgres.md §7), never the system cluster.

``pg_server`` (session scope) runs initdb and ``pg_ctl start`` in a 0700 temporary directory,
through ``runuser -u postgres`` when the tests run as root (the server refuses root), listening on
a Unix socket in that directory and on 127.0.0.1 at a free port; it is stopped when the session
ends. ``pg_database`` gives each test a fresh database. Local socket connections are trusted (the
superuser's); TCP needs a scram password, so tests of credentials go over 127.0.0.1.

Missing binaries fail the tests loudly; only DSH_QUERY_SKIP_POSTGRES=1 turns that into a skip,
for a machine where the developer knowingly has no PostgreSQL.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

BINDIR = Path(os.environ.get("DSH_QUERY_PG_BINDIR", "/usr/lib/postgresql/15/bin"))
SKIP_ENV = "DSH_QUERY_SKIP_POSTGRES"
SUPERUSER = "postgres"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PgServer:
    base: Path
    data: Path
    socket_dir: Path
    port: int
    run_as: str | None  # the OS user the server runs as, when the tests run as root

    def command(self, *argv: str) -> list[str]:
        return ["runuser", "-u", self.run_as, "--", *argv] if self.run_as else list(argv)

    def pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(str(BINDIR / "pg_ctl"), "-D", str(self.data), *args),
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """A superuser autocommit connection over the Unix socket."""
        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user=SUPERUSER,
            dbname=dbname,
            autocommit=True,
        )

    def restart(self, mode: str = "fast") -> None:
        self.pg_ctl("restart", "-w", "-m", mode, "-l", str(self.base / "server.log"))

    def halt(self) -> None:
        """Stop the server, keeping its directory, for an outage that ``start`` ends."""
        self.pg_ctl("stop", "-w", "-m", "fast")

    def start(self) -> None:
        """Start the halted server; it returns once the server accepts connections."""
        self.pg_ctl("start", "-w", "-l", str(self.base / "server.log"))

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        self.pg_ctl("stop", "-w", "-m", "fast", check=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def create_database(self, name: str) -> PgDatabase:
        with self.admin() as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(
                    sql.Identifier(name)
                )
            )
        return PgDatabase(self, name)


@dataclass(frozen=True)
class PgDatabase:
    server: PgServer
    name: str

    def socket_uri(self, user: str = SUPERUSER, **params: str) -> str:
        """``postgres://`` over the Unix socket (trusted: no password)."""
        query = {"host": str(self.server.socket_dir), "port": str(self.server.port), **params}
        return f"postgres://{quote(user, safe='')}@/{self.name}?" + "&".join(
            f"{k}={quote(v, safe='')}" for k, v in query.items()
        )

    def tcp_uri(self, user: str, password: str, **params: str) -> str:
        """``postgresql://`` over 127.0.0.1 with a password in the user-info."""
        tail = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
        return (
            f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}@127.0.0.1:"
            f"{self.server.port}/{self.name}" + (f"?{tail}" if tail else "")
        )

    def connect(self, user: str = SUPERUSER) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=str(self.server.socket_dir),
            port=self.server.port,
            user=user,
            dbname=self.name,
            autocommit=True,
        )


def _start() -> PgServer:
    if not (BINDIR / "pg_ctl").is_file():
        message = (
            f"PostgreSQL 15 is not installed ({BINDIR}/pg_ctl is missing): run"
            f" `make postgres-deps`, or set {SKIP_ENV}=1 to skip these tests locally"
        )
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(message)
        pytest.fail(message)
    return start_server()


def start_server() -> PgServer:
    """initdb and ``pg_ctl start`` in a fresh private directory (the fixture's server, and the
    benchmark's: bench/postgres.py); ``PgServer.stop`` removes it."""
    if not (BINDIR / "pg_ctl").is_file():
        raise RuntimeError(f"PostgreSQL 15 is not installed ({BINDIR}/pg_ctl is missing)")
    run_as = SUPERUSER if os.geteuid() == 0 else None
    base = Path(tempfile.mkdtemp(prefix="dsh-pg-"))  # 0700
    data, socket_dir = base / "data", base / "sock"
    socket_dir.mkdir(mode=0o700)
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        for path in (base, socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    server = PgServer(base, data, socket_dir, _free_port(), run_as)
    subprocess.run(
        server.command(
            str(BINDIR / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write(
            f"listen_addresses = '127.0.0.1'\nport = {server.port}\n"
            f"unix_socket_directories = '{socket_dir}'\nmax_connections = 100\n"
        )
    started = server.pg_ctl("start", "-w", "-l", str(base / "server.log"), check=False)
    if started.returncode != 0:
        log_file = base / "server.log"
        log = log_file.read_text(errors="replace") if log_file.exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(f"pg_ctl start failed: {started.stderr}\n{log}")
    return server


@pytest.fixture(scope="session", name="pg_server")
def pg_server_fixture() -> Iterator[PgServer]:
    server = _start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="pg_database")
def pg_database_fixture(pg_server: PgServer) -> Iterator[PgDatabase]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield pg_server.create_database(name)
    with pg_server.admin() as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def hold_table_lock(db: PgDatabase, table: str, release: threading.Event) -> threading.Thread:
    """A thread holding ACCESS EXCLUSIVE on ``dsh_query.<table>`` until ``release`` is set (at
    most 30 s); returns once the lock is held."""
    locked = threading.Event()

    def hold() -> None:
        with db.connect() as conn, conn.transaction():
            conn.execute(
                sql.SQL("LOCK TABLE dsh_query.{} IN ACCESS EXCLUSIVE MODE").format(
                    sql.Identifier(table)
                )
            )
            locked.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(10)
    return thread
