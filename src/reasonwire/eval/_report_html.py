"""``report.html``: the consumption matrix as one self-contained page.

One table per dialect, one row per (route, model, lane), rendered from the matrix dict of
:mod:`reasonwire.eval.matrix` alone. No script, no external asset: inline CSS, and details in
``title`` tooltips. Everything that comes from a provider or a record (model ids, error texts,
replies) is redacted with :func:`reasonwire.credentials.redact` where it is free text and
HTML-escaped everywhere, so a hostile model id or error body renders as text.

Each position of a cell (``in_loop`` / ``cross_turn``) is a chip coloured by its delta
relative to the threshold that applies (``consume_ratio * T`` for text carriers,
``opaque_min`` for opaque ones); see :data:`LEGEND`. The page ends with the thresholds, the
run metadata and, when ``templates.json`` sits in the same directory, the offline
chat-template section of :mod:`reasonwire.templates.scan`.

Built with string joins, not a template engine: a million-record run has ~70,000 rows and the
whole report has a 10 s bar. The page has a bounded size whatever the run: a summary matrix
(row verdicts per dialect, over every row) and at most :data:`HTML_ROW_CAP` detailed rows; the
rest is in ``matrix.md`` / ``matrix.json`` next to it, linked from the page. A 200 MB page is not
a report: no browser opens it. Errors and notes sit in a line under their row, not in a column
of their own, so at a laptop's width no column is squeezed to a few characters per line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import Final

from reasonwire.credentials import redact
from reasonwire.errors import ConfigError
from reasonwire.eval.matrix import (
    build_matrix,
    spent_text,
    unknown_priced,
    write_matrix_json,
    write_matrix_md,
)
from reasonwire.fold.report import fold_html
from reasonwire.method.fixture import POSITIONS
from reasonwire.method.verdicts import Outcome
from reasonwire.wire.model import JsonObject

REPORT_HTML: Final = "report.html"
TEMPLATES_JSON: Final = "templates.json"
HTML_ROW_CAP: Final = 1000
"""At most this many matrix rows are detailed in ``report.html`` (shared evenly between the
dialects); about 3 KB each, the page stays a few MB and opens in a browser in well under 2 s."""
NOISE: Final = 0.1
"""A delta below this share of the threshold (in absolute value) shows as ~0."""

LEGEND: Final[tuple[tuple[str, str, str], ...]] = (
    ("o-consumed", "consumed", "delta >= threshold; req = the request fails without it"),
    ("o-partial", "partial", "delta between 10% of the threshold and the threshold"),
    ("o-zero", "~0", "|delta| < 10% of the threshold: dropped"),
    ("o-rejected", "rejected", "4xx to the request carrying the reasoning"),
    ("o-error", "error", "baseline failed or the call errored: nothing to compare"),
    ("o-missing", "not measured", "no record (budget stop, skipped)"),
)
"""(css class, label, meaning) of every chip colour."""

_CSS: Final = """
body{font:13px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px;color:#1a202c;
background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}
p.sub{color:#4a5568;margin:0 0 10px}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid #cbd5e0;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#edf2f7;position:sticky;top:0}
td.id{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:nowrap}
.badge{display:inline-block;padding:0 5px;border-radius:3px;color:#fff;font-size:11px;
white-space:nowrap;background:#4a5568}
.v-consumes-all-turns{background:#1b7f3b}.v-in-loop-only{background:#2b6cb0}
.v-cross-turn-only{background:#6b46c1}.v-accepted-ignored{background:#718096}
.v-rejected{background:#c53030}.v-baseline-failed{background:#975a16}
.v-direct-lane-not-reached{background:#805ad5}.v-incomplete{background:#a0aec0}
.v-baseline{background:#e2e8f0;color:#2d3748}
.chips{display:flex;gap:3px;margin-top:2px}
.chip{display:inline-block;min-width:34px;padding:0 4px;border-radius:3px;font-size:11px;
text-align:right;font-variant-numeric:tabular-nums;border:1px solid transparent}
.o-consumed{background:#c6f6d5;border-color:#38a169}.o-partial{background:#fefcbf;
border-color:#d69e2e}.o-zero{background:#edf2f7;border-color:#a0aec0}
.o-rejected{background:#fed7d7;border-color:#e53e3e}.o-error{background:#feebc8;
border-color:#dd6b20}.o-missing{background:#fff;border-color:#e2e8f0;color:#a0aec0}
.o-base{background:#fff;border-color:#cbd5e0}
.hit{font-weight:700}.err{color:#c53030;cursor:help}.note{color:#4a5568;cursor:help}
tr.detail td{border-top:none;padding:0 6px 4px 18px;background:#fafafa}
tr.has-detail td{border-bottom:none}
td.flags{white-space:nowrap}.flag{display:inline-block;padding:0 4px;border-radius:3px;
font-size:11px;margin-right:2px}.flag-e{background:#fed7d7;color:#9b2c2c}
.flag-n{background:#edf2f7;color:#4a5568}
p.cap{background:#fffbea;border:1px solid #d69e2e;padding:4px 8px;display:inline-block}
.legend span.chip{min-width:0;margin-right:4px}.legend td{border:none;padding:1px 8px 1px 0}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0}
dl.meta dt{color:#4a5568}dl.meta dd{margin:0;font-family:ui-monospace,Menlo,monospace}
small{color:#4a5568}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


@lru_cache(maxsize=4096)
def _ec(value: str) -> str:
    """:func:`_e` for the small vocabulary that repeats on every row (verdicts, lanes...)."""
    return escape(value, quote=True)


@lru_cache(maxsize=16384)
def _freec(value: str) -> str:
    return escape(redact(value), quote=True)


def _free(value: object) -> str:
    """Free text from a provider or a record: redacted, then escaped (errors repeat: cached)."""
    return _freec(str(value))


def _n(value: object) -> str:
    """A number from a record, escaped unless it is one (records are data, not trusted)."""
    return str(value) if type(value) is int else _e(value)


def chip_class(
    outcome: str | None, delta: int | None, threshold: float, errored: bool = False
) -> str:
    """The colour class of one position from its outcome and its delta (see :data:`LEGEND`).

    ``errored``: the position's record carries an error (a failed call that is not a 4xx
    verdict, e.g. a transport error), shown as error rather than as not measured.
    """
    if outcome in (Outcome.CONSUMED, Outcome.REQUIRED):
        return "o-consumed"
    if outcome == Outcome.REJECTED:
        return "o-rejected"
    if outcome == Outcome.BASELINE_FAILED:
        return "o-error"
    if outcome == Outcome.BASELINE:
        return "o-base"
    if delta is None:
        return "o-error" if errored else "o-missing"
    if threshold > 0 and abs(delta) >= NOISE * threshold:
        return "o-partial"
    return "o-zero"


_INPUTS: Final = ("input", "baseline_input", "verbatim_input", "stripped_input", "stand_in_input")


def _pos_tip(position: str, pos: JsonObject, threshold: float, T: int) -> str:
    """The chip's tooltip, already escaped."""
    parts = [f"{position}: {_ec(str(pos.get('outcome')))}"]
    delta = pos.get("delta")
    if delta is not None:
        rel = f", {delta / T:.2f} T" if T and type(delta) is int else ""
        parts.append(f"delta {_n(delta)}{rel} (threshold {threshold:g})")
    for key in _INPUTS:
        v = pos.get(key)
        if v is not None:
            parts.append(f"{key} {_n(v)}")
    canary = pos.get("canary")
    if canary is not None:
        parts.append("canary recalled" if canary else "canary not recalled")
    wording = pos.get("wording")
    if wording and wording != "probe":
        parts.append(f"{_ec(str(wording))} wording")
    if pos.get("error"):
        parts.append(f"status {_n(pos.get('status'))}: {_free(pos['error'])}")
    for mode, err in (pos.get("errors") or {}).items():
        parts.append(f"{_ec(str(mode))}: status {_n(err.get('status'))}: {_free(err.get('error'))}")
    return "; ".join(parts)


def _cell(entry: JsonObject | None, threshold: float, T: int) -> str:
    if not entry:
        return "<td></td>"
    verdict = _ec(str(entry.get("verdict")))
    chips = []
    for position in POSITIONS:
        pos = entry.get(position) or {}
        delta = pos.get("delta")
        outcome = pos.get("outcome")
        cls = chip_class(outcome, delta, threshold, bool(pos.get("error") or pos.get("errors")))
        if outcome == Outcome.REJECTED:
            verbatim = (pos.get("errors") or {}).get("verbatim") or {}
            label = _n(pos.get("status") or verbatim.get("status") or "4xx")
        elif outcome == Outcome.REQUIRED:
            label = "req"
        else:
            label = "-" if delta is None else _n(delta)
        if pos.get("canary"):
            cls += " hit"
            label += "&#10003;"
        chips.append(
            f'<span class="chip {cls}" data-pos="{position}" '
            f'title="{_pos_tip(position, pos, threshold, T)}">{label}</span>'
        )
    return (
        f'<td data-verdict="{verdict}"><span class="badge v-{verdict}">{verdict}'
        f'</span><div class="chips">{"".join(chips)}</div></td>'
    )


def _carriers(turn1: JsonObject | None) -> str:
    if not turn1:
        return "<td><small>none</small></td>"
    carriers = turn1.get("carriers") or []
    kinds: dict[str, int] = {}
    for c in carriers:
        kinds[str(c.get("kind"))] = kinds.get(str(c.get("kind")), 0) + 1
    tip = "; ".join(
        f"{c.get('kind')} at {c.get('path')}: {c.get('size')} bytes"
        + (" (opaque)" if c.get("opaque") else "")
        for c in carriers
    )
    tip += f"; effort {turn1.get('effort')}, lane {turn1.get('lane')}"
    tip += f", {turn1.get('tool_calls')} tool call(s), response id {turn1.get('response_id')}"
    text = ", ".join(f"{k}" + (f" x{n}" if n > 1 else "") for k, n in kinds.items()) or "none"
    return f'<td class="carriers" title="{_e(tip)}">{_e(text)}</td>'


def _canary(row: JsonObject) -> str:
    hits, asked = [], 0
    for group in (row["text"], row["opaque"]):
        for name, entry in group.items():
            for position in POSITIONS:
                c = (entry.get(position) or {}).get("canary")
                if c is None or name == "none":
                    continue
                asked += 1
                if c:
                    hits.append(f"{name} {position}")
    if not asked:
        return "<td><small>-</small></td>"
    tip = "recalled: " + (", ".join(hits) if hits else "none")
    return f'<td class="canary" title="{_e(tip)}">{len(hits)}/{asked}</td>'


def _errors(row: JsonObject) -> tuple[str, str]:
    """The row's errors and notes: a narrow cell of flags (``N err``, ``note``) and the words
    for the line under the row ("" when there is nothing to say).

    The words: the failed calls (red: the count and the first one's status and words) and,
    apart, the notes (plain: what the method did or could not do, e.g. a dialect without text
    variants, a parameter fix, an estimated cost): a note is not an error. They go under the
    row, not in a column: a column of long text is the one a narrow window squeezes."""
    notes = [*row.get("notes", []), *row.get("params_fix", [])]
    if row.get("price") == "unknown":
        notes.append(f"cost ${float(row.get('cost_usd') or 0):.4f} is an estimate (price unknown)")
    errs = row.get("errors") or []
    parts, flags = [], []
    if errs:
        tip = "&#10;".join(
            f"{_ec(str(e.get('step')))} {_ec(str(e.get('variant')))} "
            f"{_ec(str(e.get('position')))}: status {_n(e.get('status'))}: {_free(e.get('error'))}"
            for e in errs
        )
        first = errs[0]
        why = _free(_first_words(first.get("error")))
        parts.append(
            f'<span class="err" title="{tip}">{len(errs)} error(s): '
            f"{_n(first.get('status'))} {why}</span>"
        )
        flags.append(f'<span class="flag flag-e">{len(errs)} err</span>')
    if notes:
        text = "; ".join(str(n) for n in notes)
        short = text if len(text) <= 160 else text[:158] + "..."
        parts.append(f'<small class="note" title="{_free(text)}">note: {_free(short)}</small>')
        flags.append('<span class="flag flag-n">note</span>')
    return f'<td class="flags">{"".join(flags)}</td>', " &middot; ".join(parts)


def _first_words(text: object, words: int = 8) -> str:
    """The first ``words`` words of an error message (the rest is in the tooltip)."""
    parts = str(text or "").split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _row_verdict(row: JsonObject) -> str:
    """The method's verdict of the row (matrices written before it have none: ``-``)."""
    verdict = row.get("verdict")
    if not verdict:
        return '<td class="row-verdict">-</td>'
    v = _ec(str(verdict))
    badge = f'<span class="badge v-{v}">{v}</span>'
    return f'<td class="row-verdict" data-row-verdict="{v}">{badge}</td>'


def _table(dialect: str, shown: list[JsonObject], total: int, matrix: JsonObject) -> str:
    """The detailed table of ``dialect``: its first rows (``shown`` of ``total``), each with
    its line of errors and notes under it when it has some."""
    th = matrix["thresholds"]
    variants = [v for v in matrix["variants"].get(dialect, []) if v != "none"]
    extras = sorted({e for r in shown for e in r["opaque"]})
    head = ["route", "model", "lane", "verdict", *variants, *extras, "turn-1 carriers",
            "canary", "errors"]  # fmt: skip
    out = [f'<h2 id="d-{_e(dialect)}">{_e(dialect)}</h2>']
    if dialect in matrix["no_text_variants"]:
        out.append(
            f'<p class="sub">Text variants: none ({_e(matrix["no_text_variants"][dialect])}).</p>'
        )
    if total > len(shown):
        out.append(
            f'<p class="cap" data-shown="{len(shown)}" data-rows="{total}">The first '
            f"{len(shown)} of {total} rows; every row is in "
            '<a href="matrix.md">matrix.md</a> and <a href="matrix.json">matrix.json</a>.</p>'
        )
    out.append(f'<table class="matrix" data-dialect="{_e(dialect)}"><thead><tr>')
    out.append("".join(f"<th>{_e(h)}</th>" for h in head))
    out.append("</tr></thead><tbody>")
    for r in shown:
        T = int(r.get("T") or matrix["run"]["T"] or 0)
        text_thr = float(th["consume_ratio"]) * T
        opaque_thr = float(th["opaque_min"])
        route, model, lane = _ec(str(r["route"])), _e(r["model"]), _ec(str(r["lane"]))
        flags, detail = _errors(r)
        more = ' class="has-detail"' if detail else ""
        cells = [
            f'<tr{more} data-route="{route}" data-model="{model}" data-lane="{lane}">'
            f'<td class="id">{route}</td><td class="id">{model}</td><td>{lane}</td>'
            + _row_verdict(r)
        ]
        cells.extend(_cell(r["text"].get(v), text_thr, T) for v in variants)
        cells.extend(_cell(r["opaque"].get(x), opaque_thr, T) for x in extras)
        cells.append(_carriers(r.get("turn1")))
        cells.append(_canary(r))
        cells.append(flags)
        cells.append("</tr>")
        if detail:
            cells.append(f'<tr class="detail"><td colspan="{len(head)}">{detail}</td></tr>')
        out.append("".join(cells))
    out.append("</tbody></table>")
    return "".join(out)


@dataclass
class DialectRows:
    """The rows of one dialect as the page shows them: the first ones in detail, and how
    many there are by row verdict (the summary counts every row)."""

    shown: list[JsonObject] = field(default_factory=list)
    total: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)

    def add(self, row: JsonObject, cap: int) -> None:
        """Count ``row``; keep it while fewer than ``cap`` are shown."""
        if len(self.shown) < cap:
            self.shown.append(row)
        self.count(str(row.get("verdict") or "-"))

    def count(self, verdict: str, n: int = 1) -> None:
        self.total += n
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + n

    def merge(self, other: DialectRows) -> None:
        """Add ``other``'s counts (its rows are not shown)."""
        for verdict, n in other.verdicts.items():
            self.count(verdict, n)


def row_cap(dialects: int) -> int:
    """Detailed rows per dialect: :data:`HTML_ROW_CAP` shared evenly."""
    return max(1, HTML_ROW_CAP // max(1, dialects))


def _summary(by_dialect: dict[str, DialectRows]) -> str:
    """Rows per dialect and row verdict, over every row (the detailed tables may be capped)."""
    verdicts = sorted({v for d in by_dialect.values() for v in d.verdicts})
    head = "".join(f'<th><span class="badge v-{_ec(v)}">{_ec(v)}</span></th>' for v in verdicts)
    body = "".join(
        f'<tr data-dialect="{_e(d)}"><td><a href="#d-{_e(d)}">{_e(d)}</a></td>'
        f"<td>{rows.total}</td>"
        + "".join(f"<td>{rows.verdicts.get(v, 0)}</td>" for v in verdicts)
        + "</tr>"
        for d, rows in by_dialect.items()
    )
    return (
        '<section id="summary"><h2>Summary</h2><table class="summary"><thead><tr>'
        f"<th>dialect</th><th>rows</th>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )


def _legend(matrix: JsonObject) -> str:
    th = matrix["thresholds"]
    T = matrix["run"]["T"]
    chips = "".join(
        f'<tr><td><span class="chip {cls}">{_e(label)}</span></td><td>{_e(meaning)}</td></tr>'
        for cls, label, meaning in LEGEND
    )
    return (
        '<section id="legend"><h2>How to read it</h2>'
        f"<p>Each cell: the verdict, then the token delta in the loop / across turns. Text "
        f"carriers are measured against the same request without them (threshold "
        f"{_e(th['consume_ratio'])} &times; T = {_e(th['consume_ratio'])} &times; {_e(T)}); "
        f"opaque carriers (turn-1 reasoning replayed verbatim vs stripped) against the "
        f"stripped request (threshold {_e(th['opaque_min'])} tokens). &#10003; = the canary "
        "word was recalled (a miss is not conclusive). Hover a chip for figures and errors.</p>"
        f'<table class="legend">{chips}</table></section>'
    )


def _meta(matrix: JsonObject, unknown: list[str]) -> str:
    run, th = matrix["run"], matrix["thresholds"]
    versions = ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items())
    items = [
        ("seed", run.get("seed")),
        ("canary word", run.get("canary")),
        (
            "trace",
            f"{run.get('trace_chars')} chars, T = {run.get('T')} tokens ({run.get('T_source')})",
        ),
        ("text threshold", f"delta >= {th['consume_ratio']} x T"),
        ("opaque threshold", f"delta > {th['opaque_min']} tokens"),
        ("lane attempts", th.get("lane_attempts")),
        ("effort / max tokens", f"{run.get('effort')} / {run.get('max_tokens')}"),
        ("budget", f"${run.get('budget_usd')}, {spent_text(matrix, unknown)}"),
        ("calls", matrix.get("calls")),
        ("runs", f"{run.get('runs')} ({', '.join(str(i) for i in run.get('run_ids') or [])})"),
        ("fixture", run.get("fixture_id")),
        ("versions", versions),
        ("generated", matrix.get("generated_at")),
    ]
    if matrix.get("budget_stops"):
        items.append(("budget stop", f"{len(matrix['budget_stops'])} record(s); cells left empty"))
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_free(v)}</dd>" for k, v in items)
    return f'<section id="run"><h2>Run</h2><dl class="meta">{body}</dl></section>'


def render_html(matrix: JsonObject, templates_section: str | None = None) -> str:
    """The whole page for ``matrix``; ``templates_section`` is trusted HTML appended as is."""
    dialects = list(dict.fromkeys(str(row["dialect"]) for row in matrix["rows"]))
    cap = row_cap(len(dialects))
    by_dialect = {d: DialectRows() for d in dialects}
    for row in matrix["rows"]:
        by_dialect[str(row["dialect"])].add(row, cap)
    return page(matrix, by_dialect, unknown_priced(matrix["rows"]), templates_section)


def page(
    matrix: JsonObject,
    by_dialect: dict[str, DialectRows],
    unknown: list[str],
    templates_section: str | None = None,
) -> str:
    """The page from the matrix's head, its rows per dialect (in order) and the (route,
    model)s whose price is unknown (:func:`~reasonwire.eval.matrix.unknown_priced`)."""
    nrows = sum(d.total for d in by_dialect.values())
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>reasonwire consumption matrix</title>"
        f"<style>{_CSS}</style></head><body>",
        "<h1>reasonwire consumption matrix</h1>",
        f'<p class="sub">{nrows} row(s), one per (route, model, lane); {_e(matrix.get("calls"))} '
        f"calls. Does the provider read replayed reasoning? Measured by billed prompt tokens.</p>",
        _legend(matrix),
    ]
    parts.append(_summary(by_dialect))
    parts.extend(_table(d, rows.shown, rows.total, matrix) for d, rows in by_dialect.items())
    parts.append(fold_html(matrix))
    parts.append(_meta(matrix, unknown))
    if templates_section:
        parts.append(templates_section)
    parts.append("</body></html>\n")
    return "".join(parts)


def templates_section(out_dir: str | Path) -> str | None:
    """The offline template-scan section from ``templates.json`` in ``out_dir``, if present."""
    path = Path(out_dir).expanduser() / TEMPLATES_JSON
    if not path.exists():
        return None
    from reasonwire.templates.report import html_section
    from reasonwire.templates.rows import read_rows

    try:
        rows = read_rows(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ConfigError) as exc:
        return (
            '<section id="templates"><h2>Chat-template consumption (offline)</h2>'
            f"<p>{_e(TEMPLATES_JSON)} could not be read: {_free(exc)}</p></section>"
        )
    return html_section(rows)


_FORK_ROWS = 5000
"""From this many rows ``matrix.md`` and the HTML are rendered in a forked child while the
parent writes ``matrix.json`` (the two cores halve the output time of a large report; the
capped HTML is small, ``matrix.md`` is the larger half)."""


def write_all(out_dir: str | Path) -> JsonObject:
    """Build the matrix from the records and write ``matrix.json``, ``matrix.md`` and
    ``report.html``; return the matrix."""
    out = Path(out_dir).expanduser()
    matrix = build_matrix(out)
    child = os.fork() if len(matrix["rows"]) >= _FORK_ROWS and hasattr(os, "fork") else -1
    if child == 0:
        code = 1
        try:
            write_matrix_md(out, matrix)
            write_html(out, matrix)
            code = 0
        finally:
            os._exit(code)  # the child never returns into the caller's code
    write_matrix_json(out, matrix)
    if child > 0:
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            return matrix
    write_matrix_md(out, matrix)  # no fork, or the child failed: here its error surfaces
    write_html(out, matrix)
    return matrix


def write_html(out_dir: str | Path, matrix: JsonObject) -> Path:
    """Write ``report.html`` under ``out_dir`` (with the templates section when available)."""
    out = Path(out_dir).expanduser()
    path = out / REPORT_HTML
    path.write_text(render_html(matrix, templates_section(out)), encoding="utf-8")
    return path


__all__: Sequence[str] = [
    "HTML_ROW_CAP",
    "LEGEND",
    "REPORT_HTML",
    "DialectRows",
    "chip_class",
    "page",
    "render_html",
    "row_cap",
    "templates_section",
    "write_all",
    "write_html",
]
