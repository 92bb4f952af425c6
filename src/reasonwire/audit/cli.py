# ruff: noqa: B008  (typer reads its options from argument defaults)
"""``reasonwire audit``: ``audit [options] -- <command...>`` and ``audit frameworks``."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from reasonwire.errors import ReasonwireError

HELP = (
    "Continuity audit: run a program (or each built-in framework scenario) against the "
    "recording simulator and report what happened to every reasoning carrier."
)


class _AuditGroup(TyperGroup):
    """``reasonwire audit [options] -- cmd ...`` is ``reasonwire audit run [options] -- cmd``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args and (not args or args[0] not in self.commands):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_AuditGroup, no_args_is_help=True, pretty_exceptions_enable=False, help=HELP)


def _matrix(console: Console, doc: dict[str, Any]) -> None:
    m = doc["matrix"]
    cells = {(c["row"], c["column"]): c for c in m["cells"]}
    table = Table(title="continuity audit (per kind: in loop / across turns)")
    table.add_column("program")
    for col in m["columns"]:
        table.add_column(col)
    for row in m["rows"]:
        vals = []
        for col in m["columns"]:
            c = cells.get((row, col))
            if c is None:
                vals.append("n/a")
                continue
            kinds = "\n".join(f"{name}: {k['loop']}/{k['cross']}" for name, k in c["kinds"].items())
            vals.append(f"[bold]{c['verdict']}[/bold] {c['accepted']}/{c['requests']}\n{kinds}")
        table.add_row(row, *vals)
    console.print(table)
    for u in doc["unavailable"]:
        where = f" ({u['column']})" if u.get("column") else ""
        console.print(f"not run: {u['framework']}{where}: {u['reason']}", markup=False)


@app.command("run")
def run_command(
    command: list[str] = typer.Argument(..., help="The program and its arguments, after --."),
    out: Path = typer.Option(Path("reasonwire-audit"), help="Output directory."),
    label: str | None = typer.Option(None, help="Row label (default: the program name)."),
    timeout: float = typer.Option(600.0, help="Seconds before the program is stopped."),
    seed: int = typer.Option(0, help="Simulator seed (keys of its seals)."),
) -> None:
    """Run COMMAND with the provider endpoint variables pointing at the recording simulator."""
    from reasonwire.audit.report import build_document, write_report
    from reasonwire.audit.run import audit_command

    console = Console(stderr=True)
    repro = f"reasonwire audit --out {shlex.quote(str(out))} -- {shlex.join(command)}"
    result = audit_command(command, label=label, timeout=timeout, seed=seed, reproduce=repro)
    if result.error:
        console.print(f"[red]error:[/red] {result.error}")
    doc = build_document([result])
    write_report(out, doc, [result])
    _matrix(console, doc)
    console.print(f"program exit {result.exit_code}; {len(result.exchanges)} request(s)")
    console.print(f"wrote {out / 'audit.json'}, audit.md, audit.html")
    if result.exit_code is None:
        raise typer.Exit(2)


@app.command("frameworks")
def frameworks_command(
    framework: list[str] = typer.Option([], "--framework", "-f", help="Framework (repeat)."),
    dialect: list[str] = typer.Option(
        [],
        "--dialect",
        "-d",
        help="Variant (repeat): chat, responses-store, responses-nostore, anthropic, gemini.",
    ),
    out: Path = typer.Option(Path("reasonwire-audit-frameworks"), help="Output directory."),
    timeout: float = typer.Option(300.0, help="Seconds per scenario run."),
    list_only: bool = typer.Option(False, "--list", help="List the frameworks and exit."),
) -> None:
    """The built-in scenario through each framework, in its own pinned venv."""
    from reasonwire.audit.frameworks import FRAMEWORKS, VARIANTS, run_frameworks, venv_root
    from reasonwire.audit.report import build_document, write_report

    console = Console(stderr=True)
    if list_only:
        for fw in FRAMEWORKS:
            pins = ", ".join(fw.requirements) or "this interpreter"
            console.print(f"{fw.name}: {pins}; {', '.join(fw.variants)}; {fw.how}", markup=False)
        console.print(f"venvs under {venv_root()}; variants: {', '.join(VARIANTS)}", markup=False)
        return
    try:
        res = run_frameworks(
            framework, dialect, timeout, log=lambda line: console.print(line, markup=False)
        )
    except ReasonwireError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    note = (
        "Built-in scenario: a user task with two tool rounds (lookup, then forecast), the "
        "answer, then a second user turn in the same conversation."
    )
    doc = build_document(res.runs, res.unavailable, res.versions, note)
    write_report(out, doc, res.runs)
    _matrix(console, doc)
    console.print(f"wrote {out / 'audit.json'}, audit.md, audit.html")
