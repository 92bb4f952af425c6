"""``reasonwire gateway serve`` (the loopback gateway) and ``gateway keygen``.

The registry and policy are code, reviewed like code: ``--policy`` names an importable module
that defines ``REGISTRY`` (a :class:`~reasonwire.govern.registry.Registry`) and ``POLICY`` (an
:class:`~reasonwire.govern.policy.OrgPolicy`). ``--keys`` is a directory of Ed25519 PEM
files; the gateway needs only the public ones. The gateway follows that directory: a deleted
``<kid>.pub.pem`` or a key id listed in ``revoked.txt`` there is refused from the next request
on, and ``SIGHUP`` forces a re-read. ``--fold`` is the operator's fold settings file (see
:mod:`reasonwire.govern.upstream_fold`). Every error is one line on stderr and exit code 2.

``serve`` binds its socket first, then prints ``reasonwire gateway: http://HOST:PORT`` (so
``--port 0`` prints the port it got, and whoever reads the line can connect at once); SIGINT
or SIGTERM at any moment after that stops it the one orderly way (requests in flight
finished, the outbox written), exit 0. ``--server`` picks the HTTP server: the built-in
HTTP/1.1 server (:mod:`reasonwire.govern.http1`, the default when ``httptools`` is installed,
as the ``govern`` extra does: it costs the gateway less CPU per call) or uvicorn.
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import re
import signal
import sqlite3
from pathlib import Path
from typing import Annotated

import typer

from reasonwire.credentials import redact
from reasonwire.errors import ConfigError
from reasonwire.fold import load_fold_settings
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import EvidenceStore
from reasonwire.govern.gateway import (
    DEFAULT_RETRY_AFTER,
    DEFAULT_STORE_TIMEOUT,
    Gateway,
    StoreSettings,
)
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry
from reasonwire.govern.stores import open_evidence_store, open_vault

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


def _loopback(host: str) -> None:
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"the gateway serves on loopback only, not {host!r}")


def _one_line(exc: BaseException) -> str:
    """``exc`` as one line (type and first line of its message), redacted."""
    first = str(exc).strip().splitlines()[:1]
    return redact(f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__)


def load_policy(module: str) -> tuple[Registry, OrgPolicy]:
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # the module is code: a syntax error or any failure at import
        raise ConfigError(f"cannot import policy module {module!r}: {_one_line(exc)}") from None
    registry, policy = getattr(mod, "REGISTRY", None), getattr(mod, "POLICY", None)
    if not isinstance(registry, Registry) or not isinstance(policy, OrgPolicy):
        raise ConfigError(f"{module} must define REGISTRY (Registry) and POLICY (OrgPolicy)")
    return registry, policy


def _open_store(target: str) -> EvidenceStore:
    """SQLite at a path, or PostgreSQL for a ``postgresql://`` URL (shared by replicas)."""
    try:
        return open_evidence_store(target)
    except ConfigError:
        raise
    except (sqlite3.Error, OSError) as exc:
        raise ConfigError(f"cannot open evidence database: {_one_line(exc)}") from None


@app.command("serve")
def serve(
    policy: Annotated[str, typer.Option(help="Module defining REGISTRY and POLICY.")],
    keys: Annotated[Path, typer.Option(help="Directory of Ed25519 *.pub.pem keys.")],
    evidence: Annotated[
        str, typer.Option(help="Evidence database: a SQLite path or a postgresql:// URL.")
    ] = "reasonwire-evidence.sqlite",
    vault: Annotated[
        str | None,
        typer.Option(
            help="Vault of hidden reasoning: a SQLite path or postgresql:// URL shared by "
            "replicas (default: in memory, this process only)."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Loopback address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8787,
    fold: Annotated[
        Path | None,
        typer.Option(
            help="Fold settings (TOML [fold] table, as `reasonwire fold plan` writes): shorten "
            "long replayed reasoning text upstream on the routes its providers name (route "
            "ids or upstream hosts). Default: no fold but where a route sets one."
        ),
    ] = None,
    store_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds of store waiting a request may spend before its upstream call; past "
            "them it is refused with 503 and Retry-After, and nothing goes upstream."
        ),
    ] = DEFAULT_STORE_TIMEOUT,
    retry_after: Annotated[
        int, typer.Option(help="Retry-After seconds of a 503 when the store cannot commit.")
    ] = DEFAULT_RETRY_AFTER,
    server: Annotated[
        str,
        typer.Option(
            help="HTTP server: 'builtin' (HTTP/1.1 on httptools, less CPU per call), "
            "'uvicorn', or 'auto' (builtin when httptools is installed, else uvicorn)."
        ),
    ] = "auto",
) -> None:
    """Serve the governed-effort gateway on loopback until interrupted."""
    try:
        _loopback(host)
        kind = _server_kind(server)
        registry, org = load_policy(policy)
        folding = load_fold_settings(fold) if fold is not None else None
        ring = KeyRing.load_dir(keys)
        try:
            settings = StoreSettings(timeout=store_timeout, retry_after=retry_after)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        shared = open_vault(vault) if vault else None
        gw = Gateway(
            registry,
            org,
            ring,
            _open_store(evidence),
            vault=shared,
            fold=folding,
            store_settings=settings,
        )
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if hasattr(signal, "SIGHUP"):  # re-read the keys directory now (it is also watched)
        signal.signal(signal.SIGHUP, lambda _sig, _frame: ring.reload_soon())
    _serve_gateway(gw, host, port, kind)


def _server_kind(name: str) -> str:
    """``builtin`` or ``uvicorn`` for ``--server``; ConfigError for anything else, or for
    ``builtin`` without httptools."""
    import importlib.util

    has_httptools = importlib.util.find_spec("httptools") is not None
    if name == "auto":
        return "builtin" if has_httptools else "uvicorn"
    if name not in ("builtin", "uvicorn"):
        raise ConfigError(f"--server must be builtin, uvicorn or auto, not {name!r}")
    if name == "builtin" and not has_httptools:
        raise ConfigError("--server builtin needs httptools (pip install 'reasonwire[govern]')")
    return name


def _serve_gateway(gw: Gateway, host: str, port: int, kind: str) -> None:
    """Bind, print the URL line, serve until SIGINT/SIGTERM (exit 0); a port that cannot be
    bound is one line and exit 2."""
    from reasonwire._running import StopSignals, authority, listen

    try:
        sock = listen(host, port)
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc}", err=True)
        raise typer.Exit(2) from None
    url = f"http://{authority(host, sock.getsockname()[1])}"
    if kind == "uvicorn":
        import uvicorn

        # No proxy-header rewriting (the gateway is on loopback and reads no client
        # address), no Server header; uvicorn picks uvloop and httptools when installed.
        config = uvicorn.Config(
            gw.app,
            log_level="warning",
            access_log=False,
            proxy_headers=False,
            server_header=False,
        )
        server = uvicorn.Server(config)
        with sock, StopSignals(on_stop=lambda: setattr(server, "should_exit", True)):
            typer.echo(f"reasonwire gateway: {url}")
            server.run(sockets=[sock])
        return
    from reasonwire.govern import http1

    stopper = http1.Stopper()
    with sock, StopSignals(on_stop=stopper.stop):
        typer.echo(f"reasonwire gateway: {url}")
        http1.run(gw.app, sock, stopper, on_close=gw.aclose)


_KID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,63}")


@app.command("keygen")
def keygen(
    out: Annotated[Path, typer.Option(help="Directory to write <kid>.key.pem / .pub.pem.")],
    kid: Annotated[str, typer.Option(help="Key id.")] = "k1",
) -> None:
    """Create an Ed25519 signing key for control (the gateway needs the .pub.pem only)."""
    if not _KID.fullmatch(kid):
        typer.echo(f"error: key id {kid!r} must be letters, digits, '_', '-' or '.'", err=True)
        raise typer.Exit(2)
    files = (out / f"{kid}.key.pem", out / f"{kid}.pub.pem")
    try:
        if any(f.exists() for f in files):
            typer.echo(f"error: key id {kid} already exists in {out}", err=True)
            raise typer.Exit(2)
        KeyRing.generate(kid).save_dir(out)
    except OSError as exc:
        for f in files:  # no half-written key pair
            with contextlib.suppress(OSError):
                f.unlink(missing_ok=True)
        typer.echo(f"error: cannot write keys to {out}: {_one_line(exc)}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {files[0]} and {files[1]}")
