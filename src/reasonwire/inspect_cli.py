"""``reasonwire inspect``: show the reasoning carriers in a saved response or stream."""

from __future__ import annotations

import typer


def inspect_command(file: str = typer.Argument(..., help="saved response body or SSE capture")) -> None:
    """Placeholder until the inspect command lands."""
    raise typer.Exit(2)
