"""``audit.json``, ``audit.md`` and ``audit.html`` from audited runs.

The matrix has one row per audited program (a framework, or the label of a command) and one
column per dialect variant (the dialect, with its ``store`` switch where it has one). A cell
sums the observations of its requests per carrier kind and scope (see
:mod:`reasonwire.audit.trace`), names a verdict, keeps the evidence behind it (request index,
JSON paths, byte diff) and the one command that reproduces it. Free text from programs and
the simulator is redacted; the HTML is self-contained (inline CSS, no script) and escapes
everything it shows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Final

from reasonwire.audit.run import RunResult
from reasonwire.audit.trace import SCOPES, STATUSES
from reasonwire.credentials import redact, redact_obj
from reasonwire.wire.model import JSON, JsonObject

SCHEMA: Final = "reasonwire.audit/1"
AUDIT_JSON: Final = "audit.json"
AUDIT_MD: Final = "audit.md"
AUDIT_HTML: Final = "audit.html"
EVIDENCE_CAP: Final = 200

_ORDER = {"kept": 0, "server": 0, "re-encoded": 1, "dropped": 2, "moved": 3, "altered": 4}
VERDICTS: Final[tuple[tuple[str, str], ...]] = (
    ("kept", "every carrier came back exact at its place (or is held by the server)"),
    ("dropped", "a carrier was not sent back (across turns this may be by design)"),
    ("moved", "a carrier came back exact but at another JSON path or on another message"),
    ("re-encoded", "a carrier came back as other base64 text of the same bytes"),
    ("altered", "a carrier came back with different bytes (edited, truncated, replaced)"),
    ("rejected", "the simulator refused a request of this cell (4xx/5xx)"),
    ("incomplete", "the program failed before the scenario ended, without a refusal"),
    ("no-carriers", "no carrier was handed out and traced in a later request"),
)


def _worst(counts: Mapping[str, int]) -> str | None:
    present = [s for s, n in counts.items() if n]
    return max(present, key=lambda s: _ORDER.get(s, 0)) if present else None


def _word(status: str | None) -> str:
    return "kept" if status == "server" else status or "-"


def _column(run: RunResult, req: Mapping[str, JSON]) -> str:
    return run.variant or str(req.get("variant"))


def build_cells(run: RunResult, run_index: int) -> list[JsonObject]:
    """The matrix cells of one run (one per column its requests fall in)."""
    reqs = [r.as_dict() for r in run.trace.requests if r.dialect is not None]
    by_col: dict[str, list[JsonObject]] = {}
    for r in reqs:
        by_col.setdefault(_column(run, r), []).append(r)
    if not by_col and run.variant:
        by_col[run.variant] = []
    cells = []
    for col, rs in by_col.items():
        kinds: dict[str, JsonObject] = {}
        evidence: list[JsonObject] = []
        grouped: dict[str, JsonObject] = {}
        examples: set[tuple[str, str]] = set()
        reencoded: dict[tuple[str, str], int] = {}
        resent = 0
        for r in rs:
            refused_request = not r["accepted"]
            for o in r["observations"]:
                k = kinds.setdefault(
                    o["kind"],
                    {
                        **{s: dict.fromkeys(STATUSES, 0) for s in SCOPES},
                        "rejected": 0,
                    },
                )
                k[o["scope"]][o["status"]] += 1
                if refused_request:
                    k["rejected"] += 1
                resent += int(o.get("resent_bytes") or 0)
                if o["status"] == "altered" and (o.get("diff") or {}).get("reencoded"):
                    reencoded[(o["kind"], o["scope"])] = (
                        reencoded.get((o["kind"], o["scope"]), 0) + 1
                    )
                kept = o["status"] in ("kept", "server")
                if kept and (o["kind"], o["scope"]) in examples:
                    continue
                examples.add((o["kind"], o["scope"]))
                same = {k: v for k, v in o.items() if k not in ("bytes", "resent_bytes")}
                key = json.dumps(same, sort_keys=True)
                if key in grouped:
                    grouped[key]["requests"].append(r["index"])
                    grouped[key]["http_statuses"].append(r["status"])
                elif len(evidence) < EVIDENCE_CAP:
                    grouped[key] = {"requests": [r["index"]], "http_statuses": [r["status"]], **o}
                    evidence.append(grouped[key])
        for name, k in kinds.items():
            for scope, key in (("in_loop", "loop"), ("cross_turn", "cross")):
                word = _word(_worst(k[scope]))
                if word == "altered" and reencoded.get((name, scope)) == k[scope]["altered"]:
                    word = "re-encoded"  # every alteration decodes to the same bytes
                k[key] = word
        refused = [r for r in rs if not r["accepted"]]
        loop_words = [k["loop"] for k in kinds.values() if k["loop"] != "-"]
        if refused:
            verdict = "rejected"
        elif loop_words and any(w != "kept" for w in loop_words):
            verdict = max(loop_words, key=lambda w: _ORDER.get(w, 0))
        elif run.exit_code not in (0, None) or run.error:
            verdict = "incomplete"
        elif not loop_words:
            verdict = "no-carriers"
        else:
            verdict = "kept"
        first = refused[0] if refused else None
        cells.append(
            {
                "row": run.label,
                "column": col,
                "run": run_index,
                "verdict": verdict,
                "requests": len(rs),
                "accepted": sum(1 for r in rs if r["accepted"]),
                "rejected": len(refused),
                "first_rejection": None
                if first is None
                else {
                    "request": first["index"],
                    "status": first["status"],
                    "error": first["error"],
                },
                "wire_variants": sorted({str(r["variant"]) for r in rs}),
                "statuses": [r["status"] for r in rs],
                "kinds": kinds,
                "resent_bytes": resent,
                "evidence": evidence,
                "reproduce": run.reproduce,
                "exit_code": run.exit_code,
                "error": run.error,
            }
        )
    return cells


def build_document(
    runs: Sequence[RunResult],
    unavailable: Sequence[Mapping[str, JSON]] = (),
    versions: Mapping[str, JSON] | None = None,
    note: str = "",
) -> JsonObject:
    """The whole ``reasonwire.audit/1`` document (see :mod:`reasonwire.audit`)."""
    from reasonwire.version import version

    cells: list[JsonObject] = []
    for i, run in enumerate(runs):
        cells.extend(build_cells(run, i))
    rows = list(dict.fromkeys(c["row"] for c in cells))
    cols = list(dict.fromkeys(c["column"] for c in cells))
    doc = {
        "schema": SCHEMA,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "reasonwire": version(),
        "note": note,
        "versions": dict(versions or {}),
        "runs": [
            {
                "label": r.label,
                "variant": r.variant,
                "argv": r.argv,
                "reproduce": r.reproduce,
                "exit_code": r.exit_code,
                "seconds": r.seconds,
                "error": r.error,
                "output_tail": r.output_tail,
                "meta": r.meta,
                **r.trace.as_dict(),
            }
            for r in runs
        ],
        "matrix": {"rows": rows, "columns": cols, "cells": cells},
        "unavailable": [dict(u) for u in unavailable],
    }
    out: JsonObject = redact_obj(doc)
    return out


def write_exchanges(out_dir: Path, runs: Sequence[RunResult]) -> None:
    """Every recorded exchange as JSONL (``exchanges/<run>.jsonl``), redacted."""
    folder = out_dir / "exchanges"
    folder.mkdir(parents=True, exist_ok=True)
    for i, run in enumerate(runs):
        name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run.label)
        col = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in (run.variant or ""))
        path = folder / f"{i:02d}-{name}{'-' + col if col else ''}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for ex in run.exchanges:
                rec = {
                    "index": ex.index,
                    "method": ex.method,
                    "path": ex.url_path,
                    "request_headers": ex.request_headers,
                    "request_body": ex.request_body.decode("utf-8", "replace"),
                    "status": ex.status,
                    "response_headers": ex.response_headers,
                    "response_body": ex.response_body.decode("utf-8", "replace"),
                    "elapsed_ms": ex.elapsed_ms,
                }
                fh.write(json.dumps(redact_obj(rec), ensure_ascii=False) + "\n")


def write_report(
    out_dir: str | Path, doc: Mapping[str, JSON], runs: Sequence[RunResult] = ()
) -> Path:
    """Write ``audit.json``, ``audit.md``, ``audit.html`` (and the exchanges) under ``out_dir``."""
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    (out / AUDIT_JSON).write_text(json.dumps(doc, indent=1, ensure_ascii=False), "utf-8")
    (out / AUDIT_MD).write_text(render_md(doc), "utf-8")
    (out / AUDIT_HTML).write_text(render_html(doc), "utf-8")
    if runs:
        write_exchanges(out, runs)
    return out


# ------------------------------------------------------------------------------------------
# markdown
# ------------------------------------------------------------------------------------------


def _kinds_line(cell: Mapping[str, JSON]) -> str:
    parts = []
    for name, k in cell["kinds"].items():
        parts.append(f"{name}: {k['loop']}/{k['cross']}" + (" (refused)" if k["rejected"] else ""))
    return "; ".join(parts) or "no carriers traced"


def _reqs(ev: Mapping[str, JSON]) -> str:
    """``3 (200), 4 (400)``: the requests an evidence line stands for, with their status."""
    return ", ".join(
        f"{i} ({s})" for i, s in zip(ev["requests"], ev["http_statuses"], strict=False)
    )


def _diff_text(ev: Mapping[str, JSON]) -> str:
    d = ev.get("diff")
    if not d:
        return str(ev.get("note") or "")
    s = (
        f"first differing byte {d['offset']} ({d['expected_bytes']} -> {d['got_bytes']} bytes): "
        f"{d['expected']!r} -> {d['got']!r}"
    )
    if d.get("reencoded"):
        s += " [same bytes after base64 decoding: re-encoded]"
    if ev.get("note"):
        s += f"; {ev['note']}"
    return s


def matrix_table_md(doc: Mapping[str, JSON]) -> str:
    m = doc["matrix"]
    cells = {(c["row"], c["column"]): c for c in m["cells"]}
    head = "| framework | " + " | ".join(m["columns"]) + " |"
    sep = "|---" * (len(m["columns"]) + 1) + "|"
    lines = [head, sep]
    for row in m["rows"]:
        vals = []
        for col in m["columns"]:
            c = cells.get((row, col))
            if c is None:
                u = next(
                    (
                        u
                        for u in doc["unavailable"]
                        if u.get("framework") == row and u.get("column") in (col, None)
                    ),
                    None,
                )
                vals.append("n/a" if u is None else "not run")
                continue
            vals.append(f"**{c['verdict']}** ({_kinds_line(c)})")
        lines.append(f"| {row} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def render_md(doc: Mapping[str, JSON]) -> str:
    out = ["# reasonwire continuity audit", ""]
    if doc.get("note"):
        out += [str(doc["note"]), ""]
    out += [
        "Per cell: the verdict, then per carrier kind `in-loop/cross-turn` (kept, dropped, "
        "moved, altered). Evidence below each cell's heading.",
        "",
        matrix_table_md(doc),
        "",
    ]
    if doc["unavailable"]:
        out += ["## Not run", ""]
        for u in doc["unavailable"]:
            where = f" ({u['column']})" if u.get("column") else ""
            out.append(f"- {u['framework']}{where}: {u['reason']}")
        out.append("")
    if doc["versions"]:
        out += ["## Versions", ""]
        for name, v in doc["versions"].items():
            out.append(f"- {name}: {json.dumps(v, ensure_ascii=False)}")
        out.append("")
    for c in doc["matrix"]["cells"]:
        out += [f"## {c['row']} x {c['column']}: {c['verdict']}", ""]
        out.append(f"Reproduce: `{c['reproduce']}`")
        out.append("")
        out.append(
            f"Requests: {c['requests']} ({c['accepted']} accepted), statuses "
            f"{c['statuses']}; re-sent across turns: {c['resent_bytes']} bytes."
        )
        if c["first_rejection"]:
            fr = c["first_rejection"]
            out.append(f"First refusal: request {fr['request']}, {fr['status']}: {fr['error']}")
        if c.get("error") or c.get("exit_code") not in (0, None):
            out.append(f"Program: exit {c.get('exit_code')} {c.get('error') or ''}".rstrip())
        out.append("")
        if c["evidence"]:
            out.append("| req | carrier | kind | scope | verdict | expected | found | detail |")
            out.append("|---|---|---|---|---|---|---|---|")
            for ev in c["evidence"]:
                out.append(
                    f"| {_reqs(ev)} | {ev['carrier']} | {ev['kind']} | "
                    f"{ev['scope']} | {ev['status']} | {ev['expected_path'] or '-'} | "
                    f"{ev['found_path'] or '-'} | {_diff_text(ev).replace('|', '/')} |"
                )
            out.append("")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------
# html
# ------------------------------------------------------------------------------------------

_CSS: Final = """
body{font:13px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px;color:#1a202c;
background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}h3{font-size:14px;
margin:16px 0 4px}
p.sub{color:#4a5568;margin:0 0 10px}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid #cbd5e0;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#edf2f7;position:sticky;top:0}
td.id,code{font-family:ui-monospace,Menlo,Consolas,monospace}
td.id{white-space:nowrap}
code{font-size:11px;background:#f7fafc;padding:0 2px;word-break:break-all}
.badge{display:inline-block;padding:0 5px;border-radius:3px;color:#fff;font-size:11px;
white-space:nowrap;background:#4a5568}
.v-kept{background:#1b7f3b}.v-dropped{background:#975a16}.v-moved{background:#6b46c1}
.v-altered{background:#c05621}.v-re-encoded{background:#b7791f}.v-rejected{background:#c53030}.v-incomplete{background:#a0aec0}
.v-no-carriers{background:#e2e8f0;color:#2d3748}.v-not-run{background:#fff;color:#a0aec0;
border:1px solid #e2e8f0}
.kinds{margin:3px 0;border:none}.kinds td{border:none;padding:0 4px 0 0}
.chip{display:inline-block;min-width:34px;padding:0 4px;border-radius:3px;font-size:11px;
text-align:center;border:1px solid transparent}
.o-kept{background:#c6f6d5;border-color:#38a169}.o-dropped{background:#feebc8;
border-color:#dd6b20}.o-moved{background:#e9d8fd;border-color:#805ad5}
.o-altered{background:#fed7d7;border-color:#e53e3e}.o-re-encoded{background:#fefcbf;
border-color:#d69e2e}.o-none{background:#fff;
border-color:#e2e8f0;color:#a0aec0}.o-refused{outline:2px solid #c53030}
.err{color:#c53030}.legend span.badge{margin-right:4px}.legend td{border:none;
padding:1px 8px 1px 0}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0}
dl.meta dt{color:#4a5568}dl.meta dd{margin:0;font-family:ui-monospace,Menlo,monospace}
small{color:#4a5568}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _free(value: object) -> str:
    return escape(redact(str(value)), quote=True)


def _chip(word: str, counts: Mapping[str, int], scope: str, refused: bool) -> str:
    cls = "o-none" if word == "-" else f"o-{word}"
    if refused:
        cls += " o-refused"
    figures = ", ".join(f"{s} {n}" for s, n in counts.items() if n)
    tip = f"{scope}: {figures or '-'}"
    return f'<span class="chip {cls}" title="{_e(tip)}">{_e(word)}</span>'


def _cell_html(c: Mapping[str, JSON], anchor: str) -> str:
    rows = []
    for name, k in c["kinds"].items():
        refused = bool(k["rejected"])
        rows.append(
            f"<tr><td><small>{_e(name)}</small></td>"
            f"<td>{_chip(k['loop'], k['in_loop'], 'in loop', refused)}</td>"
            f"<td>{_chip(k['cross'], k['cross_turn'], 'across turns', refused)}</td></tr>"
        )
    kinds = f'<table class="kinds">{"".join(rows)}</table>' if rows else ""
    extra = []
    if c["first_rejection"]:
        fr = c["first_rejection"]
        extra.append(
            f'<div class="err" title="{_free(fr["error"])}">request {_e(fr["request"])}: '
            f"{_e(fr['status'])}</div>"
        )
    if c["resent_bytes"]:
        extra.append(f"<small>re-sent across turns: {_e(c['resent_bytes'])} B</small>")
    return (
        f'<td data-verdict="{_e(c["verdict"])}"><span class="badge v-{_e(c["verdict"])}">'
        f"{_e(c['verdict'])}</span> <small>{_e(c['accepted'])}/{_e(c['requests'])} accepted"
        f"</small>{kinds}{''.join(extra)}<div><code>{_free(c['reproduce'])}</code></div>"
        f'<a href="#{anchor}"><small>evidence</small></a></td>'
    )


def _evidence_html(c: Mapping[str, JSON], anchor: str) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ("req", "carrier", "kind", "scope", "verdict", "expected", "found", "detail")
    )
    body = []
    for ev in c["evidence"]:
        status = ev["status"]
        detail = ev.get("diff")
        if detail:
            text = (
                f"byte {detail['offset']}: {detail['expected']!r} &rarr; {detail['got']!r} "
                f"({detail['expected_bytes']} &rarr; {detail['got_bytes']} B)"
            )
            text = _free(text).replace("&amp;rarr;", "&rarr;")
            if detail.get("reencoded"):
                text += " <b>re-encoded</b> (same bytes after base64 decoding)"
        else:
            text = ""
        if ev.get("note"):
            text += (" " if text else "") + _free(ev["note"])
        body.append(
            f"<tr><td>{_e(_reqs(ev))}</td>"
            f'<td class="id">{_e(ev["carrier"])}</td><td>{_e(ev["kind"])}</td>'
            f"<td>{_e(ev['scope'])}</td>"
            f'<td><span class="chip o-{_e(_word(status))}">{_e(status)}</span></td>'
            f"<td><code>{_e(ev['expected_path'] or '-')}</code></td>"
            f"<td><code>{_e(ev['found_path'] or '-')}</code></td><td>{text}</td></tr>"
        )
    fr = c["first_rejection"]
    refusal = (
        f'<p class="err">Refused: request {_e(fr["request"])}, status {_e(fr["status"])}: '
        f"{_free(fr['error'])}</p>"
        if fr
        else ""
    )
    prog = ""
    if c.get("error") or c.get("exit_code") not in (0, None):
        prog = f"<p>Program exit {_e(c.get('exit_code'))} {_free(c.get('error') or '')}</p>"
    return (
        f'<section id="{anchor}"><h3>{_e(c["row"])} &times; {_e(c["column"])}: '
        f'<span class="badge v-{_e(c["verdict"])}">{_e(c["verdict"])}</span></h3>'
        f"<p><code>{_free(c['reproduce'])}</code></p>"
        f'<p class="sub">HTTP statuses per request: {_e(c["statuses"])}; wire variant(s) '
        f"{_e(', '.join(c['wire_variants']))}; re-sent across turns {_e(c['resent_bytes'])} "
        f"bytes. Kept carriers show one example per kind and scope.</p>{refusal}{prog}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></section>"
    )


def render_html(doc: Mapping[str, JSON]) -> str:
    """The whole page (self-contained)."""
    m = doc["matrix"]
    cells = {(c["row"], c["column"]): (i, c) for i, c in enumerate(m["cells"])}
    out = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>reasonwire continuity audit</title>"
        f"<style>{_CSS}</style></head><body>",
        "<h1>reasonwire continuity audit</h1>",
        f'<p class="sub">{_e(len(m["rows"]))} program(s) &times; {_e(len(m["columns"]))} '
        "dialect variant(s), measured on the wire against the simulator. Per carrier kind: "
        "in the tool loop | across user turns.</p>",
    ]
    if doc.get("note"):
        out.append(f'<p class="sub">{_free(doc["note"])}</p>')
    legend = "".join(
        f'<tr><td><span class="badge v-{_e(v)}">{_e(v)}</span></td><td>{_e(t)}</td></tr>'
        for v, t in VERDICTS
    )
    out.append(f'<table class="legend">{legend}</table>')
    out.append('<table class="matrix"><thead><tr><th>program</th>')
    out.append("".join(f"<th>{_e(col)}</th>" for col in m["columns"]))
    out.append("</tr></thead><tbody>")
    for row in m["rows"]:
        out.append(f'<tr data-row="{_e(row)}"><td class="id">{_e(row)}</td>')
        for col in m["columns"]:
            found = cells.get((row, col))
            if found is None:
                reason = next(
                    (
                        u["reason"]
                        for u in doc["unavailable"]
                        if u.get("framework") == row and u.get("column") in (col, None)
                    ),
                    "not supported by this program",
                )
                out.append(
                    f'<td><span class="badge v-not-run" title="{_free(reason)}">n/a</span></td>'
                )
            else:
                out.append(_cell_html(found[1], f"ev-{found[0]}"))
        out.append("</tr>")
    out.append("</tbody></table>")
    if doc["unavailable"]:
        items = "".join(
            f"<li><b>{_e(u['framework'])}</b>"
            + (f" ({_e(u['column'])})" if u.get("column") else "")
            + f": {_free(u['reason'])}</li>"
            for u in doc["unavailable"]
        )
        out.append(f'<section id="unavailable"><h2>Not run</h2><ul>{items}</ul></section>')
    out.append('<section id="evidence"><h2>Evidence</h2>')
    out.extend(_evidence_html(c, f"ev-{i}") for i, c in enumerate(m["cells"]))
    out.append("</section>")
    meta = [("generated", doc.get("generated_at")), ("reasonwire", doc.get("reasonwire"))]
    meta += [(k, json.dumps(v, ensure_ascii=False)) for k, v in doc["versions"].items()]
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_free(v)}</dd>" for k, v in meta)
    out.append(f'<section id="run"><h2>Run</h2><dl class="meta">{body}</dl></section>')
    out.append("</body></html>\n")
    return "".join(out)


__all__ = [
    "AUDIT_HTML",
    "AUDIT_JSON",
    "AUDIT_MD",
    "SCHEMA",
    "VERDICTS",
    "build_cells",
    "build_document",
    "render_html",
    "render_md",
    "write_report",
]
