"""``reasonwire qualify validate``: check a qualification evidence file (see validator)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reasonwire.errors import ConfigError
from reasonwire.govern.validator import DISCLAIMER, EvidenceError, validate_file

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


@app.callback()
def _group() -> None:
    """Evidence validator for adapter qualification."""


@app.command("validate")
def validate(
    evidence: Annotated[Path, typer.Option("--evidence", help="The evidence JSON file.")],
    repo: Annotated[Path, typer.Option("--repo", help="Source repo the evidence binds to.")] = Path(
        "."
    ),
) -> None:
    """Validate an evidence file: strict schema, commit binding, completeness."""
    try:
        ev = validate_file(evidence, repo)
    except EvidenceError as exc:
        typer.echo(f"FAIL: {evidence} is not acceptable evidence:", err=True)
        for p in exc.problems:
            typer.echo(f"  - {p}", err=True)
        typer.echo(DISCLAIMER, err=True)
        raise typer.Exit(1) from None
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    s = ev.subject
    typer.echo(
        f"PASS: {s.runtime_id} {s.runtime_version} on {s.route_id}, levels "
        f"{', '.join(ev.proposed_levels)}, commit {ev.source_commit}"
    )
    typer.echo(DISCLAIMER)
