"""The scan's outputs: ``templates.json``, ``templates.md`` and the HTML report's section."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from reasonwire.errors import ConfigError
from reasonwire.method.verdicts import Verdict
from reasonwire.templates.fixture import FIELDS
from reasonwire.templates.rows import Row, ScanResult
from reasonwire.templates.server_profile import PROFILES
from reasonwire.wire.model import ABSENT


def write_outputs(result: ScanResult, out_dir: Path) -> tuple[Path, Path]:
    """Write ``templates.json`` and ``templates.md`` into ``out_dir``."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        jpath, mpath = out_dir / "templates.json", out_dir / "templates.md"
        jpath.write_text(
            json.dumps([r.to_json() for r in result.rows], indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        mpath.write_text(markdown(result), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write scan output to {out_dir}: {exc}") from exc
    return jpath, mpath


def _grouped(rows: Sequence[Row]) -> list[tuple[str, dict[str, Row]]]:
    by: dict[str, dict[str, Row]] = {}
    for r in rows:
        by.setdefault(r.template, {})[r.field] = r
    return list(by.items())


def server_differs(r: Row) -> bool:
    """Whether the row's server verdict (its render profile) is not the plain one."""
    return r.server is not ABSENT and r.server.verdict != r.verdict


def server_mark(r: Row) -> str:
    """``llama-server: consumes-all-turns, clear_thinking`` where the server's verdict differs
    from the plain render (the switch variables the template reads after it), else ``""``."""
    if not server_differs(r):
        return ""
    return ", ".join((f"{r.server.profile}: {r.server.verdict}", *r.server.switches))


def _cell(r: Row | None) -> str:
    if r is None:
        return ""
    plain = (
        "error"
        if r.verdict == Verdict.ERROR
        else (f"{r.verdict} ({r.in_loop_delta}/{r.cross_turn_delta})")
    )
    mark = server_mark(r)
    return f"{plain} ({mark})" if mark else plain


def markdown(result: ScanResult) -> str:
    """The human summary: one line per template, verdict and deltas (in_loop/cross_turn)."""
    opts, fx = result.options, result.fixture
    lines = [
        "# Chat-template consumption scan",
        "",
        f"Fixture seed {fx.seed}, trace {len(fx.trace)} chars; a field is consumed when its "
        f"token delta against `none` is >= {opts.ratio} x T (T = trace tokens with the same "
        f"tokenizer). enable_thinking={opts.enable_thinking}. Cells: verdict "
        "(in_loop delta / cross_turn delta).",
        "",
        "| template | tokenizer | T | " + " | ".join(FIELDS) + " |",
        "|---|---|---|" + "---|" * len(FIELDS),
    ]
    errors: list[str] = []
    for name, fields in _grouped(result.rows):
        any_row = next(iter(fields.values()))
        lines.append(
            f"| {name} | {any_row.tokenizer} | {any_row.trace_tokens} | "
            + " | ".join(_cell(fields.get(f)) for f in FIELDS)
            + " |"
        )
        errors.extend(
            f"- {name} / {f}: {r.error}" for f, r in fields.items() if r.verdict == Verdict.ERROR
        )
    differ = [
        f"- {r.template} / {r.field}: plain {r.verdict}, {server_mark(r)}"
        + (f" (with {_switch_off(r)}: {r.server.switch_off_verdict})" if r.server.switches else "")
        + f"; cause: {'; '.join(r.server.causes)}"
        for r in result.rows
        if server_differs(r)
    ]
    if differ:
        lines += ["", "## Where llama-server renders differently (cause)", "", *differ]
    if errors:
        lines += ["", "## Errors (the template's own message)", "", *errors]
    lines += ["", f"Scan time: {result.seconds:.1f} s.", ""]
    return "\n".join(lines)


def _switch_off(r: Row) -> str:
    profile = PROFILES.get(r.server.profile)
    return profile.switch.off_flag if profile is not None else "the switch off"


_COLOURS: Final = {
    Verdict.CONSUMES_ALL_TURNS: "#1b7f3b",
    Verdict.IN_LOOP_ONLY: "#b7791f",
    Verdict.CROSS_TURN_ONLY: "#6b46c1",
    Verdict.ACCEPTED_IGNORED: "#718096",
    Verdict.ERROR: "#c53030",
}


def html_section(rows: Sequence[Row]) -> str:
    """A self-contained ``<section>`` (inline styles) for the HTML report."""
    esc = html.escape
    head = "".join(f"<th>{esc(f)}</th>" for f in FIELDS)
    body: list[str] = []
    for name, fields in _grouped(rows):
        any_row = next(iter(fields.values()))
        cells = []
        for f in FIELDS:
            r = fields.get(f)
            if r is None:
                cells.append("<td></td>")
                continue
            colour = _COLOURS.get(r.verdict, "#000")
            tip = (
                r.error
                if r.verdict == Verdict.ERROR
                else (
                    f"in_loop {r.in_loop_delta}, cross_turn {r.cross_turn_delta}, "
                    f"T {r.trace_tokens}"
                )
            )
            deltas = (
                ""
                if r.verdict == Verdict.ERROR
                else (f"<br><small>{r.in_loop_delta} / {r.cross_turn_delta}</small>")
            )
            if server_differs(r):
                tip = f"{tip}; {server_mark(r)}: {'; '.join(r.server.causes)}"
                deltas += (
                    f'<br><small data-server="{esc(r.server.verdict)}">'
                    f"{esc(server_mark(r))}</small>"
                )

            cells.append(
                f'<td title="{esc(tip or "", quote=True)}" data-verdict="{esc(r.verdict)}">'
                f'<span style="color:#fff;background:{colour};padding:1px 5px;'
                f'border-radius:3px">{esc(r.verdict)}</span>{deltas}</td>'
            )
        body.append(
            f"<tr><td>{esc(name)}</td><td>{esc(any_row.tokenizer)}</td>"
            f"<td>{any_row.trace_tokens}</td>{''.join(cells)}</tr>"
        )
    return (
        '<section id="templates"><h2>Chat-template consumption (offline)</h2>'
        "<p>Token delta of each replayed field against no field, in the loop / across turns; "
        "consumed when the delta reaches half the trace's tokens; a second line gives the "
        "llama-server verdict where the server renders the template differently.</p>"
        '<table class="templates"><thead><tr><th>template</th><th>tokenizer</th><th>T</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></section>"
    )
