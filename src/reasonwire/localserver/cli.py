"""``reasonwire localserver``: build llama-server, write tiny models, serve one on loopback."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from types import FrameType

import typer

from reasonwire._running import StopSignals
from reasonwire.errors import ReasonwireError
from reasonwire.localserver import build as build_mod
from reasonwire.localserver import model as model_mod
from reasonwire.localserver.server import LocalServer

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


def _fail(exc: ReasonwireError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


@app.command("build")
def build_command(
    jobs: int = typer.Option(0, help="Parallel compile jobs (0: all cores)."),
) -> None:
    """Build llama-server from the cached llama.cpp tree once; print the binary path."""
    try:
        path = build_mod.build_server(jobs=jobs or None)
    except ReasonwireError as exc:
        raise _fail(exc) from None
    typer.echo(str(path))


@app.command("model")
def model_command(
    template: str = typer.Option(..., help="Bundled template stem (Qwen-Qwen3-0.6B) or a path."),
    vocab: str | None = typer.Option(None, help="Bundled vocab name (qwen2) or a path."),
    list_templates: bool = typer.Option(False, "--list", help="List bundled templates."),
) -> None:
    """Write (or find cached) a tiny model for a template; print its path."""
    try:
        if list_templates:
            for name in model_mod.template_names():
                choice = model_mod.vocab_for_template(name)
                fit = "exact" if choice.exact else "approximate"
                typer.echo(f"{name}\t{choice.vocab}\t{fit}: {choice.note}")
            return
        stem = Path(template).stem
        choice = model_mod.vocab_for_template(stem)
        if vocab is None and not choice.exact:
            typer.echo(f"note: vocab {choice.vocab} is approximate ({choice.note})", err=True)
        path = model_mod.model_path(template, vocab)
    except ReasonwireError as exc:
        raise _fail(exc) from None
    typer.echo(str(path))


@app.command("serve")
def serve_command(
    template: str = typer.Option("Qwen-Qwen3-0.6B", help="Bundled template stem or a path."),
    vocab: str | None = typer.Option(None, help="Bundled vocab name or a path."),
    port: int | None = typer.Option(None, help="Loopback port (default: a free one)."),
) -> None:
    """Serve a tiny real-template model on loopback until Ctrl-C; print the base URL.

    Ctrl-C while the model or the server is being built interrupts that; once the URL is
    printed, Ctrl-C or SIGTERM at any moment stops the server the one orderly way, exit 0.
    """

    def _interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)  # while starting, SIGTERM is a Ctrl-C
    try:
        with LocalServer(template, vocab=vocab, port=port, quiet=False) as server:
            with StopSignals() as stop:
                typer.echo(server.base_url)
                sys.stdout.flush()
                while server.alive() and not stop.requested:
                    time.sleep(0.2)
                if stop.requested:
                    typer.echo("stopping", err=True)
                    return
            server.raise_if_dead()
    except ReasonwireError as exc:
        raise _fail(exc) from None
