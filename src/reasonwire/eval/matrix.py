"""The matrix: verdicts per (route, model, lane), computed from the records alone.

:func:`build_matrix` reads ``runs.jsonl`` and ``calls.jsonl`` of an output directory (so a
resumed or repeated run gives the same matrix) and returns the JSON form of a
:class:`reasonwire.method.matrix.Matrix` (schema ``reasonwire.eval.matrix/1``: the rows, their
fields and their layouts are defined and documented there), which ``matrix.json``,
``matrix.md`` and the HTML report are rendered from. Outcomes and verdicts are the words of
:mod:`reasonwire.method.verdicts`.

Call records are read as JSON, not as :class:`~reasonwire.eval._records.CallRecord`: the report
reads a million of them under a 10 s bar, and decoding each into objects would cost more than
the whole report. A large file is read by two processes, a byte range each
(:mod:`reasonwire.eval._shards`); each (route, model) is built by one of them. The rows
(:mod:`reasonwire.eval._rows`) are typed; the process that builds them encodes them too.
``eval report`` writes the files without this whole document (:mod:`reasonwire.eval.
_report_files`); :func:`render_md` and the HTML page share its row cells and page parts.
"""

from __future__ import annotations

import gc
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import orjson

from reasonwire.errors import ConfigError
from reasonwire.eval._fold_rows import fold_rows_of
from reasonwire.eval._records import (
    CALLS,
    COST,
    RUNS,
    BudgetStop,
    Note,
    Record,
    RunStart,
    TRecord,
    read_jsonl,
    read_records,
)
from reasonwire.eval._rows import Rec, rows_of
from reasonwire.eval._shards import Finish, Key, Scanned, scan
from reasonwire.eval._variants import BASELINE, NO_TEXT_VARIANTS_REASON, TEXT_VARIANTS
from reasonwire.eval.budget import likely_cost
from reasonwire.fold.report import fold_md
from reasonwire.method.codec import to_json
from reasonwire.method.fixture import POSITIONS
from reasonwire.method.matrix import SCHEMA, FoldSection, FoldSetup, Matrix, MatrixRun
from reasonwire.method.verdicts import Thresholds
from reasonwire.wire.model import JSON, JsonObject

R = TypeVar("R")


@dataclass(frozen=True)
class RowContext:
    """What row building needs besides the call records (all from ``runs.jsonl``)."""

    fid: str
    notes: dict[Key, list[str]]
    t_of: dict[Key, TRecord]
    T: int
    canary: str
    th: Thresholds
    lane_defaults: dict[str, str]
    want_direct: frozenset[str]
    fold: FoldSetup | None = None  # the last ``--fold`` run's setup: its records make the section


def _in_flight(out: Path) -> tuple[int, float, float]:
    """Calls in flight at an interruption (``cost.jsonl`` settlements marked ``interrupted``,
    written by the run that resumed): how many, their reservations (counted as spent), and
    what they likely cost (:func:`~reasonwire.eval.budget.likely_cost`). Over the whole
    directory, as the budget counts them (a settlement names no fixture)."""
    flight: list[tuple[str, float]] = []
    billed_by: dict[str, tuple[int, float]] = {}
    for rec in read_jsonl(out / COST):
        if rec.get("type") != "settle":
            continue
        model, usd = str(rec.get("model")), float(rec.get("cost_usd") or 0.0)
        if rec.get("interrupted") is True:
            flight.append((model, usd))
        elif rec.get("estimate") is False:
            n, total = billed_by.get(model, (0, 0.0))
            billed_by[model] = (n + 1, total + usd)
    return len(flight), sum(u for _, u in flight), likely_cost(flight, billed_by)


_SHARD_MIN_BYTES = 64 << 20
"""Below this a calls file is read in one process: forking costs more than it saves."""


def _shards(calls: Path) -> int:
    """Two processes on a large file where fork exists (the report bar: 1M records < 10 s)."""
    try:
        big = calls.stat().st_size >= _SHARD_MIN_BYTES
    except OSError:
        return 1
    return min(2, os.cpu_count() or 1) if big and hasattr(os, "fork") else 1


def _key_rows(k: Key, dialect: str, recs: list[Rec], ctx: RowContext) -> list[JsonObject]:
    """The rows of one (route, model), in their JSON form (a shard's rows cross a process
    boundary as their text)."""
    t_rec = ctx.t_of.get(k)
    t_row: tuple[int, str, str | None] = (ctx.T, "chars/4", None)
    if t_rec is not None:
        t_row = (t_rec.T or ctx.T, t_rec.T_source or "chars/4", t_rec.T_note or None)
    return rows_of(k, dialect, recs, ctx.notes.get(k, []), t_row, ctx.canary, ctx.th,
                   ctx.lane_defaults.get(k[0], "direct"), k[1] in ctx.want_direct)  # fmt: skip


KeyRows = tuple[list[JsonObject], list[JsonObject]]
"""The encoded matrix rows and fold rows of one (route, model)."""


def key_rows(
    own: dict[Key, list[Rec]], order: Mapping[Key, str], ctx: RowContext, *, free: bool = False
) -> dict[Key, KeyRows]:
    """The rows of each (route, model) of ``own`` (its records in file order; none for a
    target without a record), encoded; ``order`` gives its dialect. Fold rows only for keys
    with records, when a ``--fold`` run set them up. ``free``: each key's records are taken
    out of ``own`` once its rows are built (``own`` ends empty), so they are freed then (when
    nothing else holds them) and the rows reuse their memory."""
    out: dict[Key, KeyRows] = {}
    for k in list(own) if free else own:
        recs = own.pop(k) if free else own[k]
        dialect = order[k]
        fold: list[JsonObject] = []
        if ctx.fold is not None and recs:
            fold = [to_json(r) for r in fold_rows_of(k, dialect, recs, ctx.fold, ctx.th)]
        out[k] = (_key_rows(k, dialect, recs, ctx), fold)
    return out


def build_matrix(out_dir: str | Path) -> JsonObject:
    """The matrix of the records under ``out_dir``, in its JSON form (see the module
    docstring).

    The cyclic GC is paused while the records are loaded: they are plain acyclic dicts, and
    with it running, a million of them trigger full collections that cost several times the
    JSON parsing (the report bar is 1,000,000 records in under 10 s).
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build_matrix(out_dir)
    finally:
        if paused:
            gc.enable()


@dataclass(frozen=True)
class Plan:
    """What ``runs.jsonl`` says of a report: the row-building context, the last run of the
    fixture (the matrix speaks for it), every run of it, the targets' keys in order."""

    out: Path
    ctx: RowContext
    runs: list[Record]
    last: RunStart
    mine: list[RunStart]
    targets: dict[Key, str]  # in order, with their dialects


def plan(out_dir: str | Path) -> Plan:
    """Read ``runs.jsonl`` under ``out_dir``; a :class:`ConfigError` when it has no run."""
    out = Path(out_dir).expanduser()
    runs = list(read_records(out / RUNS))
    starts = [r for r in runs if isinstance(r, RunStart)]
    if not starts:
        raise ConfigError(f"no run records under {out} (expected {RUNS}); run `eval run` first")
    last = starts[-1]
    fid = last.fixture_id
    mine = [r for r in starts if r.fixture_id == fid]
    th_run = last.thresholds
    th = Thresholds(float(th_run.consume_ratio), int(th_run.opaque_min), th_run.lane_attempts)
    want_direct: set[str] = set()
    lane_defaults: dict[str, str] = {}
    dialects: dict[Key, str] = {}
    for start in mine:
        want_direct.update(start.want_direct)
        lane_defaults.update(start.lane_defaults)
        for t in start.targets:
            dialects[(t.route, t.model)] = t.dialect
    notes: dict[Key, list[str]] = defaultdict(list)
    t_of: dict[Key, TRecord] = {}
    for r in runs:
        if isinstance(r, TRecord) and r.fixture_id == fid:
            t_of[(r.route, r.model)] = r  # the last measurement wins
    for r in runs:
        if isinstance(r, Note) and r.fixture_id == fid:
            msg = f"{r.step}: {r.reason}"
            k = (r.route, r.model)
            if msg not in notes[k]:
                notes[k].append(msg)
    fold_setup = next((r.fold for r in reversed(mine) if r.fold), None)
    ctx = RowContext(fid, dict(notes), t_of, last.T or 1, last.canary, th, lane_defaults,
                   frozenset(want_direct), fold_setup)  # fmt: skip
    return Plan(out, ctx, runs, last, mine, dialects)


def scan_calls(p: Plan, finish: Finish[R]) -> Scanned[R]:
    """The call records under ``p.out``, each (route, model) handed to ``finish`` once, in one
    or two processes (:mod:`reasonwire.eval._shards`)."""
    calls = p.out / CALLS
    return scan(calls, p.ctx.fid, _shards(calls), p.targets, finish)


class Sums(Protocol):
    """The file's call records summed: a :class:`Scanned`, or while the processes still work
    a :class:`~reasonwire.eval._shards.Shard`."""

    @property
    def spent(self) -> float: ...
    @property
    def billed(self) -> float: ...
    @property
    def ncalls(self) -> int: ...


def document(p: Plan, s: Sums, rows: JSON, unknown_price: bool,
             fold_rows: list[JsonObject]) -> JsonObject:  # fmt: skip
    """The matrix document around ``rows`` (``unknown_price``: a row's price is unknown;
    ``fold_rows``: the fold section's rows, when a ``--fold`` run set it up)."""
    in_flight, in_flight_usd, in_flight_likely = _in_flight(p.out)
    last, ctx = p.last, p.ctx
    head = Matrix(
        schema=SCHEMA,
        generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        out=str(p.out),
        run=MatrixRun(
            seed=last.seed,
            canary=ctx.canary,
            T=ctx.T,
            T_source="chars/4",
            trace_chars=last.trace_chars,
            fixture_id=ctx.fid,
            effort=last.effort,
            max_tokens=last.max_tokens,
            budget_usd=last.budget_usd,
            versions=last.versions,
            runs=len(p.mine),
            run_ids=tuple(start.run_id for start in p.mine),
        ),
        thresholds=ctx.th,
        variants={d: tuple(v) for d, v in TEXT_VARIANTS.items() if v},
        no_text_variants={str(d): reason for d, reason in NO_TEXT_VARIANTS_REASON.items()},
        spent_usd=round(s.spent + in_flight_usd, 8),
        calls=s.ncalls,
        budget_stops=tuple(r.to_json() for r in p.runs if isinstance(r, BudgetStop)),
        rows=(),
    )
    matrix = to_json(head)
    matrix["rows"] = rows
    matrix["spent_estimate"] = unknown_price
    matrix["spent_billed_usd"] = round(s.billed, 8)
    matrix["spent_estimated_usd"] = round(s.spent - s.billed + in_flight_usd, 8)
    matrix["in_flight"] = {
        "calls": in_flight,
        "usd": round(in_flight_usd, 8),
        "likely_usd": round(in_flight_likely, 8),
    }
    if ctx.fold is not None:
        section = to_json(FoldSection(ctx.fold, ()))
        section["rows"] = fold_rows
        matrix["fold"] = section
    return matrix


def _build_matrix(out_dir: str | Path) -> JsonObject:
    p = plan(out_dir)
    s = scan_calls(p, lambda own, order, _: key_rows(own, order, p.ctx))
    by_key: dict[Key, KeyRows] = {}
    for part in s.results:
        by_key.update(part)
    rows = [row for k in s.order for row in by_key[k][0]]
    fold = [row for k in s.order for row in by_key[k][1]]
    unknown = any(r.get("price") == "unknown" for r in rows)
    return document(p, s, rows, unknown, fold)


@dataclass(frozen=True)
class MdRow:
    """One row of a ``matrix.md`` table before its dialect's opaque columns are known (they
    are every opaque pair of the dialect's rows): the cells before them, joined; its own
    opaque cells; the cells after them, joined."""

    head: str
    opaque: dict[str, str]
    tail: str

    def line(self, extras: list[str]) -> str:
        """The table line, with a cell for each of the dialect's opaque pairs ``extras``."""
        return " | ".join([self.head, *(self.opaque.get(x, "") for x in extras), self.tail])


def md_variants(variants: Mapping[str, Iterable[str]], dialect: str) -> list[str]:
    """The text variant columns of ``dialect``'s table (the baseline has none), from the
    variants per dialect (the matrix's, or :data:`~reasonwire.eval._variants.TEXT_VARIANTS`
    it is written from)."""
    return [v for v in variants.get(dialect, []) if v != BASELINE]


def md_row(r: JsonObject, variants: list[str]) -> MdRow:
    """The ``matrix.md`` cells of one encoded row."""
    cells = [r["route"], r["model"], r["lane"], r.get("verdict") or "-"]
    for v in variants:
        e = r["text"].get(v)
        cells.append(_fmt(e, "delta") if e else "")
    opaque = {x: _fmt(e, "delta") if e else "" for x, e in r["opaque"].items()}
    kinds = sorted({c["kind"] for c in (r["turn1"] or {}).get("carriers") or []})
    extra = list(r["notes"]) + list(r["params_fix"])
    if r.get("T_source") == "count-endpoint":
        extra.insert(0, f"T = {r['T']} (count endpoint)")
    if r.get("price") == "unknown":
        extra.append(f"cost ${r['cost_usd']:.4f} is an estimate (price unknown)")
    if r["errors"]:
        e = r["errors"][0]
        extra.append(
            f"{len(r['errors'])} error(s), first: {e['step']} {e['variant']} "
            f"{e['position']}: {e['status'] or 'no status'} {first_words(e['error'])}"
        )
    tail = [", ".join(kinds) or "-", "; ".join(extra).replace("|", "/")[:300]]
    return MdRow("| " + " | ".join(map(str, cells)), opaque, " | ".join(tail) + " |")


def render_md(matrix: JsonObject) -> str:
    """``matrix.md``: one table per dialect, then the thresholds and run metadata."""
    by_dialect: dict[str, list[JsonObject]] = defaultdict(list)
    for row in matrix["rows"]:
        by_dialect[row["dialect"]].append(row)
    tables = []
    for dialect, rows in by_dialect.items():
        cells = [md_row(r, md_variants(matrix["variants"], dialect)) for r in rows]
        extras = md_extras(c.opaque for c in cells)
        tables.append((dialect, extras, [c.line(extras) for c in cells]))
    return md_document(matrix, tables, unknown_priced(matrix["rows"]))


def md_extras(opaque: Iterable[Iterable[str]]) -> list[str]:
    """The opaque pair columns of a dialect's table: every pair named by its rows' ``opaque``
    (an encoded row's, or its cells' :attr:`MdRow.opaque`: the same names)."""
    return sorted({name for names in opaque for name in names})


def md_document(
    matrix: JsonObject, tables: list[tuple[str, list[str], list[str]]], unknown: list[str]
) -> str:
    """``matrix.md`` from the matrix's head, per dialect (in order) its opaque pair columns
    (:func:`md_extras`) and its rows' table lines (:meth:`MdRow.line`), and the (route,
    model)s whose price is unknown (:func:`unknown_priced`)."""
    lines = ["# reasonwire consumption matrix", ""]
    th = matrix["thresholds"]
    run = matrix["run"]
    lines.append(
        f"T = {run['T']} tokens ({run['T_source']}, trace {run['trace_chars']} chars; a row "
        "whose route has a token count endpoint uses its measured T); "
        f"consumed when delta >= {th['consume_ratio']} * T (text) or > {th['opaque_min']} "
        f"tokens (opaque, verbatim vs stripped). Canary word: `{run['canary']}`. Seed "
        f"{run['seed']}, {run['runs']} run(s), {matrix['calls']} calls, "
        f"{spent_text(matrix, unknown)}."
    )
    lines.append("")
    for dialect, extras, rows in tables:
        variants = md_variants(matrix["variants"], dialect)
        lines.append(f"## {dialect}")
        if dialect in matrix["no_text_variants"]:
            lines.append(f"Text variants: none ({matrix['no_text_variants'][dialect]}).")
        lines.append("")
        head = ["route", "model", "lane", "verdict", *variants, *extras, "turn-1 carriers",
                "notes"]  # fmt: skip
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines.extend(rows)
        lines.append("")
    lines.extend(fold_md(matrix))
    if matrix["budget_stops"]:
        lines.append(f"Budget stop: {len(matrix['budget_stops'])} record(s); cells left empty.")
    return "\n".join(lines) + "\n"


def unknown_priced(rows: list[JsonObject]) -> list[str]:
    """``route/model`` of every row whose price is unknown, sorted, once each."""
    return sorted({f"{r['route']}/{r['model']}" for r in rows if r.get("price") == "unknown"})


def spent_text(matrix: JsonObject, unknown: list[str] | None = None) -> str:
    """``$X spent ($B billed by the provider, $E estimated ...)``: the providers' own figures
    apart from the estimates, these labelled by why (an unknown price, calls in flight at an
    interruption). Matrices written before the split show the total alone. ``unknown``: the
    rows' :func:`unknown_priced` when known, else read from the matrix's rows."""
    text = f"${matrix['spent_usd']:.4f} spent"
    if "spent_billed_usd" not in matrix:
        return text
    text += (
        f" (${matrix['spent_billed_usd']:.4f} billed by the provider, "
        f"${matrix['spent_estimated_usd']:.4f} estimated"
    )
    if matrix.get("spent_estimate"):
        if unknown is None:
            unknown = unknown_priced(matrix["rows"])
        text += f"; estimate: price unknown for {', '.join(unknown)}"
    flight = matrix.get("in_flight") or {}
    if flight.get("calls"):
        text += (
            f"; ${flight['usd']:.4f} reserved for {flight['calls']} call(s) in flight at an "
            f"interruption, likely ${flight.get('likely_usd', flight['usd']):.4f} at their "
            "models' mean bill"
        )
    return text + ")"


_FAILED = ("rejected", "baseline-failed")


def first_words(text: object, words: int = 8) -> str:
    """The first ``words`` words of a provider's message, for a table cell."""
    parts = str(text or "").replace("|", "/").split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _fmt(entry: JsonObject, key: str) -> str:
    """``verdict (in-loop/cross-turn deltas)``; a refused or failed position adds its status
    and the first words of the provider's error (the first such position that has either).
    One pass over the positions: a million-record report formats ~300,000 cells."""
    deltas = []
    why = ""
    for p in POSITIONS:
        pos = entry[p]
        x = pos.get(key)
        deltas.append("-" if x is None else str(x))
        if why or pos.get("outcome") not in _FAILED:
            continue
        status, error = pos.get("status"), pos.get("error")
        for err in (pos.get("errors") or {}).values():  # opaque: per mode
            if status is None and error is None:
                status, error = err.get("status"), err.get("error")
        if status is not None or error:
            why = f": {status if status is not None else 'no status'} {first_words(error)}"
    return f"{entry['verdict']} ({'/'.join(deltas)}){why}"


def write_reports(out_dir: str | Path) -> JsonObject:
    """Write ``matrix.json`` and ``matrix.md`` under ``out_dir``; return the matrix."""
    out = Path(out_dir).expanduser()
    matrix = build_matrix(out)
    write_matrix_files(out, matrix)
    return matrix


def write_matrix_files(out: Path, matrix: JsonObject) -> None:
    """``matrix.json`` and ``matrix.md`` for a built matrix."""
    write_matrix_json(out, matrix)
    write_matrix_md(out, matrix)


def write_matrix_json(out: Path, matrix: JsonObject) -> None:
    """``matrix.json`` for a built matrix."""
    # orjson: the stdlib's indented encoder is pure Python (~8x slower on a large matrix)
    (out / "matrix.json").write_bytes(orjson.dumps(matrix, option=orjson.OPT_INDENT_2) + b"\n")


def write_matrix_md(out: Path, matrix: JsonObject) -> None:
    """``matrix.md`` for a built matrix."""
    (out / "matrix.md").write_text(render_md(matrix))
