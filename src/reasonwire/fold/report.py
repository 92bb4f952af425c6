"""The fold section of ``matrix.md`` and ``report.html`` (``eval run --fold``).

One line per (route, model, lane, field): is the folded carrier still consumed (its delta
against the folded text's own T), what the fold saved (unfolded minus folded billed input,
and that as a share of the unfolded delta next to the share of characters folded), and which
canary each replay's reply named (head and tail expected, the folded middle not). Rendered
from the matrix dict alone; free text is redacted and escaped like the rest of the report.
Why here and not in ``eval``: it knows the fold's evidence (the matrix's ``fold`` section, as
:class:`reasonwire.method.matrix.FoldSection` writes it) and nothing of eval's machinery;
eval's ``matrix`` and ``_report_html`` call it.
"""

from __future__ import annotations

from html import escape

from reasonwire.credentials import redact
from reasonwire.wire.model import JsonObject


def _recall(r: JsonObject) -> str:
    """``word: unfolded→folded (expected)`` with y / n / - for recalled / missed / no answer."""

    def yn(v: object) -> str:
        return "-" if v is None else ("y" if v else "n")

    return f"{r['region']} {yn(r['unfolded'])}>{yn(r['folded'])} (want {yn(r['expected'])})"


def _delta(row: JsonObject, mode: str) -> str:
    d = row[f"{mode}_delta"]
    T = row[f"T_{mode}"]
    return f"{row[f'{mode}_outcome']} ({'-' if d is None else d} / T {T})"


def _saved(row: JsonObject) -> str:
    if row["saved_tokens"] is None:
        return "-"
    share = "-" if row["saved_share"] is None else f"{row['saved_share']:.0%}"
    return f"{row['saved_tokens']} ({share}; {row['folded_share']:.0%} of chars folded)"


def _cells(row: JsonObject) -> list[str]:
    errors = "; ".join(
        f"{e['variant']} {e['position']}: {e['status'] or 'no status'} {e['error'] or ''}"
        for e in row["errors"]
    )
    return [
        row["route"], row["model"], row["lane"], row["field"], str(row["action"] or "-"),
        _delta(row, "unfolded"), _delta(row, "folded"), _saved(row),
        ", ".join(_recall(r) for r in row["recall"]),
        {True: "yes", False: "no", None: "-"}[row["recall_as_expected"]],
        redact(errors)[:200],
    ]  # fmt: skip


HEAD = ["route", "model", "lane", "field", "action", "unfolded", "folded", "saved",
        "canaries (unfolded>folded)", "recall as expected", "errors"]  # fmt: skip


def _intro(setup: JsonObject, ratio: object) -> str:
    words = ", ".join(f"{c['region']} `{c['word']}` ({c['kept']})" for c in setup["canaries"])
    return (
        f"Fold settings: floor {setup['floor_chars']}, head {setup['head_chars']}, tail "
        f"{setup['tail_chars']} chars. Trace {setup['trace_chars']} chars (T_unfolded "
        f"{setup['T_unfolded']}), sent folded {setup['folded_chars']} chars (T_folded "
        f"{setup['T_folded']}, chars/4); consumed when delta >= {ratio} x T of the text sent. "
        f"Canaries: {words}. In the loop, against a byte-identical baseline without the "
        "carrier; a missed canary is not conclusive."
    )


def fold_md(matrix: JsonObject) -> list[str]:
    """The ``## fold`` lines of ``matrix.md`` (none when the matrix has no fold section)."""
    section = matrix.get("fold")
    if not section:
        return []
    lines = ["## fold", "", _intro(section["setup"], matrix["thresholds"]["consume_ratio"]), ""]
    lines.append("| " + " | ".join(HEAD) + " |")
    lines.append("|" + "---|" * len(HEAD))
    for row in section["rows"]:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in _cells(row)) + " |")
    if not section["rows"]:
        lines.append("| " + " | ".join(["-"] * len(HEAD)) + " |")
    lines.append("")
    return lines


def fold_html(matrix: JsonObject) -> str:
    """The ``<section id="fold">`` of ``report.html`` ("" without a fold section)."""
    section = matrix.get("fold")
    if not section:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEAD)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(redact(c))}</td>" for c in _cells(row)) + "</tr>"
        for row in section["rows"]
    )
    intro = escape(_intro(section["setup"], matrix["thresholds"]["consume_ratio"]))
    return (
        '<section id="fold"><h2>Fold evidence</h2>'
        f"<p>{intro}</p><table><tr>{head}</tr>{body}</table></section>"
    )


__all__ = ["HEAD", "fold_html", "fold_md"]
