"""A real PostgreSQL server for tests: initdb in a temp dir, ``postgres`` on a loopback port.

:func:`server` starts one per test process on first use (about a second) and stops it at
exit; :func:`fresh_dsn` creates an empty database on it for one test. Without the server
binaries (or psycopg) the caller is skipped with the install command. As root (CI runs as
root; PostgreSQL refuses to), the server runs as the ``postgres`` user, else ``nobody``.

Binaries: ``$REASONWIRE_PG_BIN``, else ``initdb`` on PATH, else the newest
``/usr/lib/postgresql/<n>/bin``. Debian's package is ``postgresql``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL = "apt-get install -y postgresql"
_USER = "rw"


def _bindir() -> Path | None:
    env = os.environ.get("REASONWIRE_PG_BIN")
    candidates = [Path(env)] if env else []
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).resolve().parent)
    base = Path("/usr/lib/postgresql")
    if base.is_dir():
        versions = sorted(
            (p for p in base.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
        )
        candidates += [v / "bin" for v in reversed(versions)]
    for c in candidates:
        if (c / "initdb").exists() and (c / "postgres").exists():
            return c
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    port: int
    datadir: Path
    proc: subprocess.Popen[bytes]

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{_USER}@127.0.0.1:{self.port}/{dbname}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.datadir, ignore_errors=True)


_server: Server | None = None
_failed: str | None = None


def _as_user() -> tuple[list[str], int | None, int | None]:
    """Command prefix and uid/gid to run the server under (root cannot run PostgreSQL). With
    setpriv the server also gets SIGTERM when this process dies (no orphan)."""
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--pdeathsig=TERM"] if setpriv else []
    if os.geteuid() != 0:
        return prefix, None, None
    if not setpriv:
        raise RuntimeError("running as root, and setpriv (util-linux) is missing")
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return (
            [*prefix, f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"],
            pw.pw_uid,
            pw.pw_gid,
        )
    raise RuntimeError("running as root and there is no 'postgres' or 'nobody' user")


def _start() -> Server:
    bindir = _bindir()
    if bindir is None:
        raise FileNotFoundError(f"PostgreSQL server binaries not found: {INSTALL}")
    prefix, uid, gid = _as_user()
    datadir = Path(tempfile.mkdtemp(prefix="rw-pg-"))  # /tmp: reachable by the server user
    if uid is not None and gid is not None:
        os.chown(datadir, uid, gid)
    pgdata = datadir / "data"
    init = subprocess.run(
        [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(pgdata),
            "-U",
            _USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        ],
        capture_output=True,
        timeout=120,
    )
    if init.returncode != 0:
        shutil.rmtree(datadir, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {init.stderr.decode(errors='replace')[-500:]}")
    port = _free_port()
    log = open(datadir / "server.log", "wb")  # noqa: SIM115  (kept open for the server's life)
    if uid is not None and gid is not None:
        os.chown(datadir / "server.log", uid, gid)
    proc = subprocess.Popen(
        [
            *prefix,
            str(bindir / "postgres"),
            "-D",
            str(pgdata),
            "-p",
            str(port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "unix_socket_directories=",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=100",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(port, datadir, proc)
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            tail = (datadir / "server.log").read_text(errors="replace")[-500:]
            shutil.rmtree(datadir, ignore_errors=True)
            raise RuntimeError(f"postgres exited: {tail}")
        try:
            with psycopg.connect(server.dsn(), connect_timeout=2):
                break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError("postgres did not accept connections in 30 s") from None
            time.sleep(0.1)
    return server


def server() -> Server:
    """The process's PostgreSQL server (started on first call); skips when unavailable."""
    global _server, _failed
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ModuleNotFoundError:
        pytest.skip("psycopg is not installed: pip install 'psycopg[binary]' psycopg-pool")
    if _server is not None and _server.proc.poll() is None:
        return _server
    if _failed is not None:
        pytest.skip(_failed)
    try:
        _server = _start()
    except FileNotFoundError as exc:
        _failed = str(exc)
        pytest.skip(_failed)
    atexit.register(_server.stop)
    return _server


def fresh_dsn() -> str:
    """A new, empty database on :func:`server` for one test."""
    import psycopg

    srv = server()
    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(srv.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return srv.dsn(name)


def drop(dsn: str) -> None:
    """Drop a database made by :func:`fresh_dsn` (after its pools are closed)."""
    import psycopg

    name = dsn.rsplit("/", 1)[1]
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(server().dsn(), autocommit=True) as conn,
    ):
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
