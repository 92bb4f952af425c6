"""``reasonwire probe report``: the ledger per session, provider and model, as a table, JSON
or a self-contained HTML page with a chart per session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from reasonwire.probe.ledger import read_rows
from reasonwire.probe.report import NOTE, analyse, report_html, report_json
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
    html_out: str | None = typer.Option(
        None, "--html", help="also write an HTML report (a chart per session) to this file"
    ),
    archives: bool = typer.Option(True, "--archives/--no-archives", help="include archives"),
) -> None:
    """Calls, reasoning vs text bytes, reasoning tokens, billed input and the share of billed
    input that was re-sent reasoning (measured and estimated apart), per session, provider
    and model."""
    path = Path(ledger_dir(directory))
    if directory is not None and not path.is_dir():
        typer.echo(f"reasonwire probe report: no ledger directory at {path}", err=True)
        raise typer.Exit(2)
    read = read_rows(path, include_archives=archives)
    analysis = analyse(read.rows)
    if html_out is not None:
        Path(html_out).write_text(
            report_html(analysis, read.skipped, title=f"probe ledger {path}"), encoding="utf-8"
        )
    if as_json:
        typer.echo(json.dumps(report_json(analysis, read.skipped, read.files), indent=2))
        return
    groups = analysis.groups
    if not groups:
        typer.echo(f"no probe rows under {path}")
        return
    table = Table(title=f"probe ledger {path}")
    left = ("session", "provider", "model")
    for col in (
        *left,
        "calls",
        "reasoning KiB",
        "text KiB",
        "tool KiB",
        "reasoning tok",
        "billed input",
        "sent reasoning KiB (text/opaque)",
        "re-sent tok measured",
        "re-sent tok estimated",
        "re-sent share*",
    ):
        table.add_column(col, justify="left" if col in left else "right")
    for g in groups:
        share = g.resent_share
        usage = g.calls_with_usage > 0
        table.add_row(
            g.session,
            g.provider,
            g.model,
            f"{g.calls}" + (f" ({g.failed} not ok)" if g.failed else ""),
            _kb(g.reasoning_bytes),
            _kb(g.text_bytes),
            _kb(g.tool_bytes),
            str(g.reasoning_tokens),
            str(g.billed_input) if usage else "-",
            f"{_kb(g.sent_text_bytes)}/{_kb(g.sent_opaque_bytes)}",
            f"{g.resent_measured:.0f}" if usage else "-",
            f"{g.resent_estimated:.0f}" if usage else "-",
            f"{share:.1%}" if share is not None else "-",
        )
    console = Console(width=None if sys.stdout.isatty() else 200)
    console.print(table)
    note = f"* {NOTE}."
    unattributed = sum(g.unattributed_opaque_bytes for g in groups)
    if unattributed:
        note += f" Unattributed opaque carriers: {_kb(unattributed)} KiB."
    capped = sum(g.capped_calls for g in groups)
    if capped:
        note += f" {capped} call(s) capped at their billed input."
    if read.skipped:
        note += f" Skipped {read.skipped} unparseable line(s)."
    if html_out is not None:
        note += f" HTML report: {html_out}"
    console.print(note)


@app.command("otel")
def otel(
    endpoint: str = typer.Option(
        ..., "--endpoint", help="OTLP/HTTP base URL, e.g. http://127.0.0.1:4318"
    ),
    directory: str | None = typer.Option(
        None, "--dir", help="ledger directory (default: $REASONWIRE_HOME/probe)"
    ),
    session: str | None = typer.Option(None, "--session", help="only this session's rows"),
    service_name: str = typer.Option("reasonwire-probe", "--service-name"),
    timeout: float = typer.Option(10.0, "--timeout", help="seconds per export, retries included"),
    archives: bool = typer.Option(True, "--archives/--no-archives", help="include archives"),
) -> None:
    """Export the ledger's rows as OpenTelemetry spans (GenAI semantic conventions) over
    OTLP/HTTP; needs the 'otel' extra."""
    from reasonwire.errors import MissingExtra

    path = Path(ledger_dir(directory))
    if directory is not None and not path.is_dir():
        typer.echo(f"reasonwire probe otel: no ledger directory at {path}", err=True)
        raise typer.Exit(2)
    rows = read_rows(path, include_archives=archives).rows
    if session is not None:
        rows = [r for r in rows if r.get("sessionId") == session]
    try:
        from reasonwire.probe.otel import export_rows

        sent = export_rows(rows, endpoint, service_name=service_name, timeout=timeout)
    except MissingExtra as exc:
        typer.echo(f"reasonwire: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{sent} of {len(rows)} span(s) exported to {endpoint}")
    if sent != len(rows):
        raise typer.Exit(1)
