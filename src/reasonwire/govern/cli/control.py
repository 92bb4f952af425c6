"""``reasonwire control sign``: project a conversation's effort into a signed binding.

``--policy`` names the module defining ``REGISTRY`` and ``POLICY`` (as for ``gateway serve``);
``--keys`` is a directory holding a private key (``<kid>.key.pem``; the newest signs). The
requested level is the product's ``Auto``, ``Low``, ``Medium`` or ``High``: ``Auto`` resolves
to the organisation's maximum within what the runtime and route qualified. The binding is
printed on stdout (nothing else is), or written to ``--out`` with mode 0600; what it resolves
to goes to stderr. A refusal is one line and exit code 1; a bad option, module or keys
directory is one line and exit code 2.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from reasonwire.errors import ConfigError, PolicyRefusal
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.cli import fail, group
from reasonwire.govern.cli.gateway import load_policy
from reasonwire.govern.control import project
from reasonwire.govern.levels import parse_requested
from reasonwire.govern.policy import resolve

app = group("Control: signed per-turn bindings.")


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (a binding is a bearer token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o600)


@app.command("sign")
def sign(
    policy: Annotated[str, typer.Option(help="Module defining REGISTRY and POLICY.")],
    keys: Annotated[Path, typer.Option(help="Directory with the signing key (*.key.pem).")],
    conversation: Annotated[str, typer.Option(help="Conversation id the binding is for.")],
    runtime: Annotated[str, typer.Option(help="Runtime id (an adapter of the registry).")],
    runtime_version: Annotated[str, typer.Option(help="Exact runtime version.")],
    route: Annotated[str, typer.Option(help="Route id (a route of the registry).")],
    level: Annotated[str, typer.Option(help="Requested effort: Auto, Low, Medium or High.")],
    task: Annotated[str, typer.Option(help="Task id (default: the conversation id).")] = "",
    ttl: Annotated[int, typer.Option(help="Seconds the binding stays valid.")] = 900,
    out: Annotated[Path | None, typer.Option(help="Write the binding here (mode 0600).")] = None,
) -> None:
    """Resolve the requested level and sign a binding for one turn."""
    try:
        requested = parse_requested(level)
    except ValueError as exc:
        raise fail(f"error: {exc}", 2) from None
    if not 1 <= ttl <= 86_400:
        raise fail("error: --ttl must be between 1 and 86400 seconds", 2)
    try:
        registry, org = load_policy(policy)
        ring = KeyRing.load_dir(keys)
        if not ring.active:
            raise ConfigError(f"no private key (*.key.pem) in {keys} to sign with")
        res = resolve(
            registry,
            org,
            runtime_id=runtime,
            runtime_version=runtime_version,
            route_id=route,
            requested=requested,
        )
        token = project(
            registry,
            org,
            ring,
            conversation_id=conversation,
            task_id=task or conversation,
            runtime_id=runtime,
            runtime_version=runtime_version,
            route_id=route,
            requested=requested,
            ttl_seconds=ttl,
        )
    except PolicyRefusal as exc:
        raise fail(f"refused: {exc.reason}: {exc.detail}", 1) from None
    except ConfigError as exc:
        raise fail(f"error: {exc}", 2) from None
    if out is not None:
        try:
            _write_private(out, token + "\n")
        except OSError as exc:
            raise fail(f"error: cannot write {out}: {type(exc).__name__}", 2) from None
    else:
        typer.echo(token)
    typer.echo(
        f"signed: conversation {conversation}, {runtime} {runtime_version} on {route}, "
        f"requested {requested} -> {res.resolved} (ceiling {res.ceiling}), key {ring.active}, "
        f"valid {ttl}s" + (f", written to {out}" if out is not None else ""),
        err=True,
    )
