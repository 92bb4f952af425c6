"""``reasonwire probe report``: the ledger per session and model, as a table or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from reasonwire.probe.ledger import read_rows
from reasonwire.probe.report import BYTES_PER_TOKEN, aggregate, report_json
from reasonwire.probe.settings import ledger_dir

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


@app.callback()
def _group() -> None:
    """Read-only stream probe ledger and report."""


def _kb(n: int) -> str:
    return f"{n / 1024:.1f}"


@app.command("report")
def report(
    directory: str | None = typer.Option(
        None, "--dir", help="ledger directory (default: $REASONWIRE_HOME/probe)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
    archives: bool = typer.Option(True, "--archives/--no-archives", help="include archives"),
) -> None:
    """Calls, reasoning vs text bytes, reasoning tokens, billed input and the estimated share
    of billed input that was re-sent reasoning, per session and model."""
    path = Path(ledger_dir(directory))
    if directory is not None and not path.is_dir():
        typer.echo(f"reasonwire probe report: no ledger directory at {path}", err=True)
        raise typer.Exit(2)
    read = read_rows(path, include_archives=archives)
    groups = aggregate(read.rows)
    if as_json:
        typer.echo(json.dumps(report_json(groups, read.skipped, read.files), indent=2))
        return
    if not groups:
        typer.echo(f"no probe rows under {path}")
        return
    table = Table(title=f"probe ledger {path}")
    for col in (
        "session",
        "model",
        "calls",
        "reasoning KiB",
        "text KiB",
        "tool KiB",
        "reasoning tok",
        "billed input",
        "sent reasoning KiB (text/opaque)",
        "re-sent share*",
    ):
        table.add_column(col, justify="left" if col in ("session", "model") else "right")
    for g in groups:
        share = g.resent_share
        table.add_row(
            g.session,
            g.model,
            f"{g.calls}" + (f" ({g.failed} not ok)" if g.failed else ""),
            _kb(g.reasoning_bytes),
            _kb(g.text_bytes),
            _kb(g.tool_bytes),
            str(g.reasoning_tokens),
            str(g.billed_input) if g.calls_with_usage else "-",
            f"{_kb(g.sent_text_bytes)}/{_kb(g.sent_opaque_bytes)}",
            f"{share:.1%}" if share is not None else "-",
        )
    console = Console(width=None if sys.stdout.isatty() else 200)
    console.print(table)
    note = (
        f"* estimate: sent reasoning text bytes / {BYTES_PER_TOKEN:g} bytes per token, over "
        "billed input (uncached + cache read + cache write). Opaque carriers: bytes only."
    )
    if read.skipped:
        note += f" Skipped {read.skipped} unparseable line(s)."
    console.print(note)
