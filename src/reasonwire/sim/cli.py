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
    """Serve all four dialects (chat, responses, anthropic, gemini) until interrupted."""
    import uvicorn

    from reasonwire.sim.app import build_app

    typer.echo(f"reasonwire sim: http://{host}:{port}/v1 (gemini: http://{host}:{port}/v1beta)")
    try:
        uvicorn.run(
            build_app(seed),
            host=host,
            port=port,
            log_level="warning",
            http="h11",
            access_log=False,
            lifespan="off",
        )
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command("models")
def models() -> None:
    """List the simulated model ids, their dialect and the WIRE.md rule each imitates."""
    from reasonwire.sim.behaviours import BEHAVIOURS

    for b in BEHAVIOURS.values():
        typer.echo(f"{b.model:22} {b.dialect:10} {b.description}")
