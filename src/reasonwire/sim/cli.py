"""``reasonwire sim serve``: run the reference provider simulator in the foreground."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, help="Reference provider simulator.")


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8765, help="TCP port (0 picks a free one)."),
    seed: int = typer.Option(0, help="Seed for seals, signatures and gateway lanes."),
) -> None:
    """Serve all four dialects (chat, responses, anthropic, gemini) until interrupted.

    The socket is bound before the URL is printed (so ``--port 0`` prints the port it got and
    a client reading the line can connect at once), and Ctrl-C or SIGTERM at any moment after
    that line stops the server the same orderly way, exit 0.
    """
    import uvicorn

    from reasonwire._running import StopSignals, authority, listen
    from reasonwire.sim.app import build_app

    config = uvicorn.Config(
        build_app(seed), log_level="warning", http="h11", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    try:
        sock = listen(host, port)
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc}", err=True)
        raise typer.Exit(2) from None
    with sock, StopSignals(on_stop=lambda: setattr(server, "should_exit", True)):
        url = f"http://{authority(host, sock.getsockname()[1])}"
        typer.echo(f"reasonwire sim: {url}/v1 (gemini: {url}/v1beta)")
        server.run(sockets=[sock])


@app.command("models")
def models() -> None:
    """List the simulated model ids, their dialect and the WIRE.md rule each imitates."""
    from reasonwire.sim.behaviours import BEHAVIOURS

    for b in BEHAVIOURS.values():
        typer.echo(f"{b.model:22} {b.dialect:10} {b.description}")
