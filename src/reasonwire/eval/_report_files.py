"""``reasonwire eval report``: ``matrix.json``, ``matrix.md`` and ``report.html`` written
without the whole matrix in one process.

Why: a million call records make ~70,000 rows, a 330 MB ``matrix.json`` and a 20 MB
``matrix.md``, under a bar of less time than one plain ``json.loads`` pass over the records
(issue 28). Built as one document (:func:`~reasonwire.eval.matrix.build_matrix`), the second
process's rows would cross to the first as objects and be encoded and rendered there, alone.
Here each process (:mod:`reasonwire.eval._shards`) turns the rows of the keys it owns into
their finished text - each row's ``matrix.json`` text, indented as it sits in the document,
and its ``matrix.md`` cells - and keeps as objects only the rows the page details and the
counts its summary needs; the first process then joins the pieces in key order. The files are
byte for byte those :func:`~reasonwire.eval._report_html.write_all` writes from the whole
document (a test compares them, sharded and not).
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from reasonwire.eval._report_html import REPORT_HTML, DialectRows, page, row_cap, templates_section
from reasonwire.eval._rows import Rec
from reasonwire.eval._shards import Key
from reasonwire.eval._variants import TEXT_VARIANTS
from reasonwire.eval.matrix import (
    MdRow,
    RowContext,
    document,
    key_rows,
    md_document,
    md_row,
    md_variants,
    plan,
    scan_calls,
)
from reasonwire.wire.model import JsonObject

_ROWS_HEAD = b'{\n  "rows": [\n'
_ROWS_TAIL = b"\n  ]\n}"
"""Around the rows of ``{"rows": rows}`` indented: what is between is their text in
``matrix.json``, where they sit at the same depth (orjson indents by depth alone)."""


@dataclass
class _Pieces:
    """One process's keys as finished text: per key its rows' ``matrix.json`` text, their
    ``matrix.md`` cells, its fold rows and the rows the page may detail (per dialect, the
    first ones of this process's keys in key order: the page's first rows are among them);
    its rows counted per dialect and verdict; the (route, model)s with an unknown price."""

    json: dict[Key, bytes] = field(default_factory=dict)
    md: dict[Key, list[MdRow]] = field(default_factory=dict)
    fold: dict[Key, list[JsonObject]] = field(default_factory=dict)
    shown: dict[Key, list[JsonObject]] = field(default_factory=dict)
    counts: dict[str, DialectRows] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)


def _rows_json(rows: list[JsonObject]) -> bytes:
    """Rows' text in ``matrix.json``, joined by ``,\n`` as there: encoded as the ``rows`` of
    a document of their own, one call for a key's rows, and cut out of it."""
    if not rows:
        return b""
    text = orjson.dumps({"rows": rows}, option=orjson.OPT_INDENT_2)
    assert text.startswith(_ROWS_HEAD) and text.endswith(_ROWS_TAIL)
    return text[len(_ROWS_HEAD) : -len(_ROWS_TAIL)]


def _pieces(own: dict[Key, list[Rec]], order: dict[Key, str], ctx: RowContext) -> _Pieces:
    """The finished text of the keys ``own`` (run in each process)."""
    built = key_rows(own, order, ctx)
    out = _Pieces()
    cap = row_cap(len(set(order.values())))
    variants: dict[str, list[str]] = {}
    kept: dict[str, int] = {}  # rows in ``shown`` per dialect
    for k, dialect in order.items():
        got = built.get(k)
        if got is None:
            continue
        rows, fold = got
        out.json[k] = _rows_json(rows)
        if dialect not in variants:
            variants[dialect] = md_variants(TEXT_VARIANTS, dialect)
        out.md[k] = [md_row(r, variants[dialect]) for r in rows]
        if fold:
            out.fold[k] = fold
        room = cap - kept.get(dialect, 0)
        if room > 0:
            out.shown[k] = rows[:room]
            kept[dialect] = kept.get(dialect, 0) + len(out.shown[k])
        counts = out.counts.setdefault(dialect, DialectRows())
        for r in rows:
            counts.count(str(r.get("verdict") or "-"))
            if r.get("price") == "unknown":
                out.unknown.add(f"{r['route']}/{r['model']}")
    return out


def write_report(out_dir: str | Path) -> None:
    """Write ``matrix.json``, ``matrix.md`` and ``report.html`` from the records under
    ``out_dir`` (see the module docstring)."""
    paused = gc.isenabled()
    gc.disable()  # plain acyclic records: see build_matrix
    try:
        _write(Path(out_dir).expanduser())
    finally:
        if paused:
            gc.enable()


def _write(out: Path) -> None:
    p = plan(out)
    s = scan_calls(p, lambda own, order: _pieces(own, order, p.ctx))
    where = {k: part for part in s.results for k in part.json}  # every key of the order
    fold = [row for k in s.order for row in where[k].fold.get(k, ())]
    unknown = sorted(set().union(*(part.unknown for part in s.results)))
    hole = f"rows-{uuid.uuid4().hex}"
    doc = document(p, s, hole, bool(unknown), fold)
    before, after = orjson.dumps(doc, option=orjson.OPT_INDENT_2).split(orjson.dumps(hole))
    with (out / "matrix.json").open("wb") as fh:  # the rows' text is written, never joined
        fh.write(before)
        if s.order:
            fh.write(b"[\n")
            fh.writelines(_joined((where[k].json[k] for k in s.order), b",\n"))
            fh.write(b"\n  ]")
        else:
            fh.write(b"[]")
        fh.write(after + b"\n")
    tables: dict[str, list[MdRow]] = {}
    by_dialect: dict[str, DialectRows] = {}
    cap = row_cap(len(set(s.order.values())))
    for k, dialect in s.order.items():
        tables.setdefault(dialect, []).extend(where[k].md[k])
        shown = by_dialect.setdefault(dialect, DialectRows()).shown
        shown.extend(where[k].shown.get(k, ())[: cap - len(shown)])
    for part in s.results:
        for dialect, counts in part.counts.items():
            by_dialect[dialect].merge(counts)
    (out / "matrix.md").write_text(md_document(doc, list(tables.items()), unknown))
    html = page(doc, by_dialect, unknown, templates_section(out))
    (out / REPORT_HTML).write_text(html, encoding="utf-8")


def _joined(pieces: Iterable[bytes], sep: bytes) -> Iterator[bytes]:
    """``pieces`` with ``sep`` between them."""
    for i, piece in enumerate(pieces):
        if i:
            yield sep
        yield piece


__all__ = ["write_report"]
