"""``reasonwire fold plan``: drop / fold / keep / unknown per route and model, and the
settings file that implements it."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from reasonwire.errors import ConfigError
from reasonwire.fold.plan import (
    DEFAULT_THRESHOLD_PCT,
    make_plan,
    plan_settings,
    read_ledger,
    read_matrix,
    settings_toml,
)
from reasonwire.wire.fold import (
    DEFAULT_FLOOR_CHARS,
    DEFAULT_HEAD_CHARS,
    DEFAULT_TAIL_CHARS,
    FoldSettings,
)

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


@app.callback()
def _group() -> None:
    """Fold long replayed reasoning text: plan per route and model, write the settings."""


def _fail(message: str) -> typer.Exit:
    typer.echo(f"reasonwire fold plan: {message}", err=True)
    return typer.Exit(2)


@app.command("plan")
def plan(
    matrix: str = typer.Option(..., "--matrix", help="the harness's matrix.json (eval report)"),
    ledger: str = typer.Option(..., "--ledger", help="the probe ledger directory"),
    out: str = typer.Option("fold.toml", "--out", help="where to write the settings (TOML)"),
    threshold_pct: float = typer.Option(
        DEFAULT_THRESHOLD_PCT,
        "--threshold-pct",
        help="fold when re-sent reasoning is at least this % of billed input",
    ),
    floor_chars: int = typer.Option(DEFAULT_FLOOR_CHARS, "--floor-chars"),
    head_chars: int = typer.Option(DEFAULT_HEAD_CHARS, "--head-chars"),
    tail_chars: int = typer.Option(DEFAULT_TAIL_CHARS, "--tail-chars"),
    as_json: bool = typer.Option(False, "--json", help="print the plan as JSON"),
) -> None:
    """Print per route/model one of drop, fold, keep or unknown, and write the settings."""
    try:
        base = FoldSettings(floor_chars=floor_chars, head_chars=head_chars,
                            tail_chars=tail_chars)  # fmt: skip
        lines = make_plan(read_matrix(matrix), read_ledger(ledger), threshold_pct)
        settings = plan_settings(lines, base)
        header = (
            f"written by `reasonwire fold plan` from {matrix} and {ledger}\n"
            f"fold where re-sent reasoning >= {threshold_pct:g}% of billed input"
        )
        text = settings_toml(settings, header)
        Path(out).expanduser().write_text(text, encoding="utf-8")
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot write {out}: {exc.strerror}") from None
    if as_json:
        rows = [
            {"route": x.route, "model": x.model, "dialect": x.dialect, "decision": x.decision,
             "why": x.why, "share": x.share, "calls": x.calls}
            for x in lines
        ]  # fmt: skip
        typer.echo(json.dumps({"plan": rows, "settings": out}, indent=2))
        return
    width = max((len(x.key) for x in lines), default=0)
    for x in lines:
        typer.echo(f"{x.decision:<8} {x.key:<{width}}  {x.why}")
    typer.echo(f"settings written to {out}")
