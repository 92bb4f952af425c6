"""``reasonwire templates scan``: the offline chat-template consumption scan from the shell, with
its ``--cross-check`` on the real llama-server (so the group lives here, above both)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from reasonwire.crosscheck.check import Finding, findings_markdown, timed_cross_check, unserved
from reasonwire.errors import ConfigError, ReasonwireError
from reasonwire.method.verdicts import Verdict
from reasonwire.templates.fixture import FIELDS
from reasonwire.templates.report import server_mark
from reasonwire.templates.scan import (
    DEFAULT_RATIO,
    Row,
    ScanOptions,
    ScanResult,
    resolve_sources,
    scan,
    write_outputs,
)

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)

_STYLE = {
    Verdict.CONSUMES_ALL_TURNS: "bold green",
    Verdict.IN_LOOP_ONLY: "yellow",
    Verdict.CROSS_TURN_ONLY: "magenta",
    Verdict.ACCEPTED_IGNORED: "dim",
    Verdict.ERROR: "bold red",
}


@app.callback()
def _group() -> None:
    """Offline consumption scan of chat templates."""


@app.command("scan")
def scan_command(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help=".jinja files, tokenizer_config.json, model dirs or local HF cache model ids "
            "(default: the 70 llama.cpp corpus templates)",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="where templates.md/.json go")] = Path(
        "reasonwire-templates"
    ),
    ratio: Annotated[
        float, typer.Option(help="consumed when delta >= RATIO x trace tokens")
    ] = DEFAULT_RATIO,
    seed: Annotated[int | None, typer.Option(help="fixture seed")] = None,
    thinking: Annotated[
        bool, typer.Option("--thinking/--no-thinking", help="enable_thinking template kwarg")
    ] = True,
    chars: Annotated[
        bool, typer.Option("--chars", help="count chars/4 even where a vocabulary fits")
    ] = False,
    cross_check: Annotated[
        bool,
        typer.Option(
            "--cross-check",
            help="also run every scanned template on the real llama-server (must be built; "
            "about 8 s a template) and list where it differs from the plain render, with the "
            "cause, and where it differs from the llama-server prediction",
        ),
    ] = False,
) -> None:
    """Render every template with the harness fixture and report which fields it consumes."""
    console = Console()
    if not 0 < ratio <= 1:
        console.print("[red]error:[/] --ratio must be in (0, 1]")
        raise typer.Exit(2)
    opts = ScanOptions(ratio=ratio, seed=seed, enable_thinking=thinking, chars_only=chars)
    try:
        resolved = resolve_sources(sources or [])
        with console.status("scanning templates") as status:
            result = scan(resolved, opts, progress=lambda n: status.update(f"scanning {n}"))
        jpath, mpath = write_outputs(result, out)
        findings = _cross_check(result, out, console) if cross_check else None
    except ReasonwireError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    console.print(_table(result))
    errors = result.errors()
    console.print(
        f"{len(result.rows)} rows, {len({r.template for r in result.rows})} templates, "
        f"{len(errors)} all-error templates, {result.seconds:.1f} s. "
        f"Wrote {jpath} and {mpath}."
    )
    if findings is not None:
        found, seconds = findings
        refused = sorted({t for t, _ in unserved(found)})
        differ = [f for f in found if not f.agree and f.template not in refused]
        unexplained = [f for f in found if f.explained is False]
        console.print(
            f"cross-check: {len(found)} comparisons over {len({f.template for f in found})} "
            f"templates in {seconds:.1f} s; {len(differ)} differ from the plain render, "
            f"{len(unexplained)} not predicted by the llama-server profile; the server cannot "
            f"serve {len(refused)}: {', '.join(refused) or 'none'} (reasons in templates.md)"
        )
        for f in unexplained:
            console.print(
                f"  {f.template} / {f.field} ({f.setting}): plain {f.offline}, predicted "
                f"{f.predicted}, server {f.server}" + (f" ({f.note})" if f.note else "")
            )


def _cross_check(result: ScanResult, out: Path, console: Console) -> tuple[list[Finding], float]:
    """Run the server cross-check, write crosscheck.json and append to templates.md."""
    import json

    with console.status("cross-checking with llama-server") as status:
        findings, seconds = timed_cross_check(
            result.rows,
            result.fixture,
            ratio=result.options.ratio,
            progress=lambda n: status.update(f"llama-server: {n}"),
        )
    try:
        (out / "crosscheck.json").write_text(
            json.dumps([f.to_json() for f in findings], indent=2) + "\n", encoding="utf-8"
        )
        with (out / "templates.md").open("a", encoding="utf-8") as fh:
            fh.write("\n" + findings_markdown(findings, seconds))
    except OSError as exc:
        raise ConfigError(f"cannot write cross-check output to {out}: {exc}") from exc
    return findings, seconds


def _table(result: ScanResult) -> Table:
    table = Table(title="chat-template consumption (in_loop / cross_turn token deltas)")
    table.add_column("template")
    table.add_column("tokenizer", style="dim")
    table.add_column("T", justify="right")
    for f in FIELDS:
        table.add_column(f)
    by: dict[str, dict[str, Row]] = {}
    for r in result.rows:
        by.setdefault(r.template, {})[r.field] = r
    for name, fields in by.items():
        cells: list[str] = []
        for f in FIELDS:
            row = fields.get(f)
            if row is None:
                cells.append("")
            elif row.verdict == Verdict.ERROR:
                cells.append(f"[{_STYLE[Verdict.ERROR]}]error[/]")
            else:
                style = _STYLE.get(row.verdict, "")
                mark = server_mark(row)
                cells.append(
                    f"[{style}]{row.verdict}[/] {row.in_loop_delta}/{row.cross_turn_delta}"
                    + (f" [dim]({mark})[/]" if mark else "")
                )
        first = next(iter(fields.values()))
        table.add_row(name, first.tokenizer, str(first.trace_tokens), *cells)
    return table
