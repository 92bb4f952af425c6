"""``reasonwire gateway serve`` (the loopback gateway) and ``gateway keygen``.

The registry and policy are code, reviewed like code: ``--policy`` names an importable module
that defines ``REGISTRY`` (a :class:`~reasonwire.govern.registry.Registry`) and ``POLICY`` (an
:class:`~reasonwire.govern.policy.OrgPolicy`). ``--keys`` is a directory of Ed25519 PEM
files; the gateway needs only the public ones.
"""

from __future__ import annotations

import importlib
import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from reasonwire.errors import ConfigError
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


def _loopback(host: str) -> None:
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"the gateway serves on loopback only, not {host!r}")


def load_policy(module: str) -> tuple[Registry, OrgPolicy]:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"cannot import policy module {module!r}: {exc}") from None
    registry, policy = getattr(mod, "REGISTRY", None), getattr(mod, "POLICY", None)
    if not isinstance(registry, Registry) or not isinstance(policy, OrgPolicy):
        raise ConfigError(f"{module} must define REGISTRY (Registry) and POLICY (OrgPolicy)")
    return registry, policy


@app.command("serve")
def serve(
    policy: Annotated[str, typer.Option(help="Module defining REGISTRY and POLICY.")],
    keys: Annotated[Path, typer.Option(help="Directory of Ed25519 *.pub.pem keys.")],
    evidence: Annotated[Path, typer.Option(help="SQLite evidence database.")] = Path(
        "reasonwire-evidence.sqlite"
    ),
    host: Annotated[str, typer.Option(help="Loopback address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8787,
) -> None:
    """Serve the governed-effort gateway on loopback until interrupted."""
    import uvicorn

    try:
        _loopback(host)
        registry, org = load_policy(policy)
        ring = KeyRing.load_dir(keys)
        gw = Gateway(registry, org, ring, SQLiteStore(evidence))
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    uvicorn.run(gw.app, host=host, port=port, log_level="warning", access_log=False)


@app.command("keygen")
def keygen(
    out: Annotated[Path, typer.Option(help="Directory to write <kid>.key.pem / .pub.pem.")],
    kid: Annotated[str, typer.Option(help="Key id.")] = "k1",
) -> None:
    """Create an Ed25519 signing key for control (the gateway needs the .pub.pem only)."""
    if (out / f"{kid}.key.pem").exists() or (out / f"{kid}.pub.pem").exists():
        typer.echo(f"error: key id {kid} already exists in {out}", err=True)
        raise typer.Exit(2)
    KeyRing.generate(kid).save_dir(out)
    typer.echo(f"wrote {out / (kid + '.key.pem')} and {out / (kid + '.pub.pem')}")
