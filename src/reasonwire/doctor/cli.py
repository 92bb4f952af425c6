"""The commands over saved files: ``reasonwire inspect FILE`` (what a saved response or stream
carries, :mod:`reasonwire.doctor.inspect`) and ``reasonwire doctor FILE... [--format F] [--json]
[--out REPAIRED]``.

Doctor: exit 0 when every file is clean, 1 when something was found, 2 on unreadable input (one
line on stderr, no traceback). ``--out`` writes the repaired copy (a file for one input, a
folder for several) and re-checks it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from reasonwire.credentials import redact
from reasonwire.doctor import against, read
from reasonwire.doctor.inspect import inspect_bytes, render, summary
from reasonwire.doctor.model import Finding
from reasonwire.doctor.readers import FORMATS, parse
from reasonwire.doctor.repair import changes_json, repair, serialise
from reasonwire.doctor.report import findings
from reasonwire.errors import ReasonwireError, TruncatedStream, Unreadable
from reasonwire.wire.model import JsonObject
from reasonwire.wire.registry import get_dialect


def _text(found: list[Finding], repaired: list[JsonObject]) -> str:
    """Findings grouped by file and assistant turn, each with what to do."""
    lines: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in found:
        by_file.setdefault(f.file, []).append(f)
    for name, items in by_file.items():
        lines.append(f"{name}: {len(items)} finding(s)")
        turns: dict[int, list[Finding]] = {}
        for f in items:
            turns.setdefault(f.turn, []).append(f)
        for turn, group in turns.items():
            lines.append(f"  turn {turn}:" if turn else "  before the first turn:")
            for f in group:
                where = f"line {f.line} " if f.line is not None else ""
                lines.append(f"    [{f.severity}] {f.kind} ({f.provider}) {where}{f.path}")
                lines.append(f"      {f.detail}")
                lines.append(f"      fix: {f.fix}")
    for r in repaired:
        lines.append(f"repaired {r['file']} -> {r['out']}: {len(r['changes'])} change(s)")
        for c in r["changes"]:
            where = f"line {c['line']} " if c["line"] is not None else ""
            lines.append(f"  {where}{c['path']}: {c['action']} [{c['rule']}] ({c['source']})")
        lines.append(f"  re-check: {len(r['remaining'])} finding(s) left")
    if not found:
        lines.append("clean: no broken reasoning state found")
    return "\n".join(lines)


def _out_path(out: Path, src: Path, many: bool) -> Path:
    return out / src.name if many else out


_FILES = typer.Argument(..., help="Session files to check.")
_FORMAT = typer.Option(
    None,
    "--format",
    help=f"Session format (detected when omitted): {', '.join(FORMATS)}, or a dialect "
    "name for its request bodies.",
)
_JSON = typer.Option(False, "--json", help="Print findings as JSON.")
_OUT = typer.Option(None, "--out", help="Write repaired copies here (a folder for several files).")
_AGAINST = typer.Option(
    None,
    "--against",
    help="The originals: a digest file (JSON lines of sha256) or saved answers/sessions "
    "holding the carriers as returned; names every carrier that differs.",
)
_PROFILE = typer.Option(
    None, "--profile", help="Chat route profile (deepseek, kimi...) for request bodies."
)


def doctor_command(
    files: list[Path] = _FILES,
    fmt: str | None = _FORMAT,
    as_json: bool = _JSON,
    out: Path | None = _OUT,
    profile: str | None = _PROFILE,
    originals: list[Path] | None = _AGAINST,
) -> None:
    """Find (and with --out repair) broken reasoning state in saved agent sessions."""
    found: list[Finding] = []
    repaired: list[JsonObject] = []
    many = len(files) > 1
    try:
        known = against.load(originals, read) if originals else None
        for path in files:
            doc = read(path, fmt, profile)
            found.extend(findings(doc, str(path), known))
            if out is None:
                continue
            target = _out_path(out, path, many)
            if target.resolve() == path.resolve():
                raise Unreadable(f"--out {target} is the input: the doctor never writes in place")
            plan = repair(doc, known)
            data = serialise(doc)
            if many:
                target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            again = findings(parse(target, data, fmt or doc.format, profile), str(target), known)
            repaired.append(
                {
                    "file": str(path),
                    "out": str(target),
                    "changes": changes_json(plan.changes),
                    "unrepaired": [h.path for h in plan.unrepaired],
                    "remaining": [f.as_json() for f in again],
                }
            )
    except Unreadable as exc:
        print(f"reasonwire doctor: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    except OSError as exc:
        print(f"reasonwire doctor: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    if as_json:
        body = {
            "findings": [f.as_json() for f in found],
            "repaired": repaired if out is not None else None,
        }
        typer.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        typer.echo(_text(found, repaired))
    raise typer.Exit(1 if found else 0)


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"reasonwire inspect: {message}", err=True)
    return typer.Exit(code)


def inspect_command(
    file: str = typer.Argument(..., help="saved response body or SSE capture"),
    dialect: str | None = typer.Option(
        None, "--dialect", "-d", help="chat | responses | anthropic | gemini (default: detect)"
    ),
    replay: bool = typer.Option(False, "--replay", help="print the exact JSON to send back"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Show the reasoning carriers, usage and ids in a saved response body or stream."""
    path = Path(file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _fail(f"cannot read {file}: {exc.strerror or type(exc).__name__}", 2) from None
    try:
        ins = inspect_bytes(data, dialect)
        replayed = get_dialect(ins.dialect).replay(ins.turn) if replay else None
    except TruncatedStream as exc:
        raise _fail(f"{file}: truncated: {redact(str(exc))}", 1) from None
    except ReasonwireError as exc:
        raise _fail(f"{file}: {redact(str(exc))}", 1) from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        # A dialect met a shape it does not expect: still one line, never a traceback.
        raise _fail(
            f"{file}: unexpected shape ({type(exc).__name__}: {redact(str(exc))})", 1
        ) from None
    if replayed is not None:
        typer.echo(json.dumps(replayed, ensure_ascii=False, indent=2))
    elif as_json:
        typer.echo(json.dumps(summary(ins), ensure_ascii=False, indent=2))
    else:
        typer.echo(render(ins))
