"""``reasonwire eval report``: ``matrix.json``, ``matrix.md`` and ``report.html`` written
without the whole matrix in one process.

Why: a million call records make ~70,000 rows, a 330 MB ``matrix.json`` and a 20 MB
``matrix.md``, under a bar of less time than one plain ``json.loads`` pass over the records
(issue 28). Built as one document (:func:`~reasonwire.eval.matrix.build_matrix`), the second
process's rows would cross to the first as objects and be encoded and rendered there, alone.
Here each process (:mod:`reasonwire.eval._shards`) turns the rows of the keys it owns into
their finished text - each row's ``matrix.json`` text, indented as it sits in the document,
and its ``matrix.md`` line - and keeps as objects only the rows the page details and the
counts its summary needs; the first process then joins the pieces in key order. The files are
byte for byte those :func:`~reasonwire.eval._report_html.write_all` writes from the whole
document (a test compares them, sharded and not).

The rows' ``matrix.json`` text does not cross between the processes (over half of a
million-record report's 350 MB: pickling, sending and unpickling it cost the first process
~2 s while the second sat idle). The processes swap the length of each key's text (the first
adds the length of the document's text before the rows, which depends only on the file's
sums), so each knows where every key's text sits and writes its own keys' text there, both at
once; the first writes the document around the rows last and cuts the file to its length.
The text goes over the last report's bytes: emptied first (as before) or written beside it,
the file needs fresh pages, which on the bench's VM cost more than the writing (0.5-1 s of
system time for 350 MB). A report that fails midway leaves a broken file, as before (then cut
short; now new bytes over old ones). They swap each dialect's opaque pair columns
too, so each renders its own ``matrix.md`` lines: strings cross, not cells.
"""

from __future__ import annotations

import gc
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from reasonwire.eval._report_html import REPORT_HTML, DialectRows, page, row_cap, templates_section
from reasonwire.eval._rows import Rec
from reasonwire.eval._shards import Key, Shard
from reasonwire.eval._variants import TEXT_VARIANTS
from reasonwire.eval.matrix import (
    KeyRows,
    document,
    key_rows,
    md_document,
    md_extras,
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
_SEP = b",\n"
_OPEN = b"[\n"
_CLOSE = b"\n  ]"
"""Between the rows' text in ``matrix.json``, and around it."""


@dataclass
class _Pieces:
    """One process's keys as finished text (their ``matrix.json`` text is written already):
    per key its rows' ``matrix.md`` table lines, its fold rows and the rows the page may detail (per
    dialect, the first ones of this process's keys in key order: the page's first rows are
    among them); its rows counted per dialect and verdict; the (route, model)s with an unknown
    price."""

    md: dict[Key, list[str]] = field(default_factory=dict)  # table lines
    fold: dict[Key, list[JsonObject]] = field(default_factory=dict)
    shown: dict[Key, list[JsonObject]] = field(default_factory=dict)
    counts: dict[str, DialectRows] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)


@dataclass
class _Head:
    """The first process's document (rows and the fold section's rows still to come), its text
    before the rows and where the rows' text ends in ``matrix.json``."""

    doc: JsonObject
    before: bytes
    end: int = 0
    extras: dict[str, list[str]] = field(default_factory=dict)  # matrix.md's, per dialect


def _rows_json(built: dict[Key, KeyRows], order: dict[Key, str]) -> dict[Key, memoryview]:
    """Each built key's rows' text in ``matrix.json``, joined by ``,\n`` as there, in
    ``order``: encoded as the ``rows`` of a document of their own, one call per key, and
    gathered into one buffer per process that each key's text is a view of (a million
    records' rows are ~170 MB of text per process: kept as one object per key, they took
    ~280 MB of fresh pages, a page fault each, ~30,000 more than one buffer)."""
    buf = bytearray()
    spans: list[tuple[Key, int, int]] = []
    head, tail = len(_ROWS_HEAD), len(_ROWS_TAIL)
    for k in order:
        got = built.get(k)
        if got is None:
            continue
        start = len(buf)
        if got[0]:
            text = orjson.dumps({"rows": got[0]}, option=orjson.OPT_INDENT_2)
            assert text.startswith(_ROWS_HEAD) and text.endswith(_ROWS_TAIL)
            buf += memoryview(text)[head : len(text) - tail]
        spans.append((k, start, len(buf)))
    view = memoryview(buf)
    return {k: view[a:b] for k, a, b in spans}


def _pieces(
    built: dict[Key, KeyRows], order: dict[Key, str], extras: dict[str, list[str]]
) -> _Pieces:
    """The finished text of the keys ``built`` but their ``matrix.json`` text (``extras``:
    each dialect's opaque pair columns, over both processes' rows)."""
    out = _Pieces()
    cap = row_cap(len(set(order.values())))
    variants: dict[str, list[str]] = {}
    kept: dict[str, int] = {}  # rows in ``shown`` per dialect
    for k, dialect in order.items():
        got = built.get(k)
        if got is None:
            continue
        rows, fold = got
        if dialect not in variants:
            variants[dialect] = md_variants(TEXT_VARIANTS, dialect)
        out.md[k] = [md_row(r, variants[dialect]).line(extras[dialect]) for r in rows]
        if fold:
            out.fold[k] = fold
        room = cap - kept.get(dialect, 0)
        if room > 0:
            out.shown[k] = rows[:room]
            kept[dialect] = kept.get(dialect, 0) + len(out.shown[k])
        counts = out.counts.get(dialect)
        if counts is None:  # not setdefault: a DialectRows made per key, ~70,000 of them
            counts = out.counts[dialect] = DialectRows()
        for r in rows:
            counts.count(str(r.get("verdict") or "-"))
            if r.get("price") == "unknown":
                out.unknown.add(f"{r['route']}/{r['model']}")
    return out


def _place(path: Path, order: dict[Key, str], texts: dict[Key, memoryview],
           sizes: dict[Key, int], start: int) -> int:  # fmt: skip
    """Write ``texts`` (this process's keys) into ``path`` where they sit among every key's
    text (``sizes``: the length of each key's, in ``order``; the rows' text starts at
    ``start``, each key's after a ``,\n`` but the first's); a run of this process's keys is
    written as it is, one gathered write per :data:`_IOV_MAX` pieces (joined first, a run is
    a copy of up to all of this process's text). Returns where the rows' text ends."""
    fd = os.open(path, os.O_WRONLY)
    try:
        at = start
        run: list[bytes | memoryview] = []
        run_at = at
        for i, k in enumerate(order):
            text = texts.get(k)
            if text is None:
                if run:
                    _put(fd, run, run_at)
                    run = []
            else:
                if not run:
                    run_at = at
                run.extend((_SEP, text) if i else (text,))
            at += (len(_SEP) if i else 0) + sizes[k]
        if run:
            _put(fd, run, run_at)
    finally:
        os.close(fd)
    return at


_IOV_MAX = 1024
"""Pieces per ``pwritev`` (POSIX guarantees at least 16; Linux takes 1024)."""


def _put(fd: int, pieces: list[bytes | memoryview], at: int) -> None:
    """All of ``pieces``, one after the other, into ``fd`` from byte ``at``."""
    views = [memoryview(p) for p in pieces if len(p)]
    i = 0
    while i < len(views):
        n = os.pwritev(fd, views[i : i + _IOV_MAX], at)
        at += n
        while i < len(views) and n >= len(views[i]):  # the pieces written whole
            n -= len(views[i])
            i += 1
        if n:  # a piece written in part: its rest next
            views[i] = views[i][n:]


def write_report(out_dir: str | Path) -> None:
    """Write ``matrix.json``, ``matrix.md`` and ``report.html`` from the records under
    ``out_dir`` (see the module docstring)."""
    paused = gc.isenabled()
    gc.disable()  # plain acyclic records: see build_matrix
    out = Path(out_dir).expanduser()
    began: list[bool] = []  # set by the first process once it writes matrix.json in place
    try:
        _write(out, began)
    except BaseException:
        if began:  # the old report's bytes under some of the new ones: a file that reads as
            # JSON but mixes two reports would be worse than none; the records stay, so
            # `eval report` can write it again
            os.truncate(out / "matrix.json", 0)
        raise
    finally:
        if paused:
            gc.enable()


def _write(out: Path, began: list[bool]) -> None:
    p = plan(out)
    written = out / "matrix.json"
    hole = f"rows-{uuid.uuid4().hex}"
    heads: list[_Head] = []  # the first process's

    def finish(own: dict[Key, list[Rec]], order: dict[Key, str], shard: Shard) -> _Pieces:
        """Build the keys ``own``, write their ``matrix.json`` text in place (see the module
        docstring) and return the rest."""
        # each process frees its records as their rows are built, before the swap below
        # (the rows reuse their memory: see FIRST_SHARE)
        built = key_rows(own, order, p.ctx, free=True)
        texts = _rows_json(built, order)
        sizes = {k: len(t) for k, t in texts.items()}
        names: dict[str, set[str]] = {}  # opaque pairs per dialect: matrix.md's columns
        for k, (rows, _) in built.items():
            names.setdefault(order[k], set()).update(n for r in rows for n in r["opaque"])
        before = 0
        if shard.me == 0:
            doc = document(p, shard, hole, False, [])
            heads.append(_Head(doc, _split(doc, hole)[0]))
            before = len(heads[0].before)
            os.close(os.open(written, os.O_WRONLY | os.O_CREAT, 0o666))  # before the other
            began.append(True)
        if shard.processes > 1:  # the first sends the length before the rows too
            got = shard.swap((before, sizes, names))
            assert isinstance(got, tuple)
            if shard.me == 1:
                before = got[0]
            sizes.update(got[1])
            for dialect, more in got[2].items():
                names.setdefault(dialect, set()).update(more)
        extras = {dialect: md_extras([seen]) for dialect, seen in names.items()}
        # written on a thread while this one makes the matrix.md lines: the write spends its
        # time in the kernel, without the GIL (up to ~1 s for 190 MB of fresh page cache on
        # the bench's VM)
        with ThreadPoolExecutor(1) as pool:
            placed = pool.submit(_place, written, order, texts, sizes, before + len(_OPEN))
            pieces = _pieces(built, order, extras)
            end = placed.result()
        if shard.me == 0:
            heads[0].end = end
            heads[0].extras = extras
        return pieces

    s = scan_calls(p, finish)
    head = heads[0]
    where = {k: piece for piece in s.results for k in piece.md}  # every key of the order
    fold = [row for k in s.order for row in where[k].fold.get(k, ())]
    unknown = sorted(set().union(*(piece.unknown for piece in s.results)))
    doc = head.doc
    doc["spent_estimate"] = bool(unknown)
    if "fold" in doc:
        section = doc["fold"]
        assert isinstance(section, dict)
        section["rows"] = fold
    before, after = _split(doc, hole)
    assert before == head.before
    fd = os.open(written, os.O_WRONLY)
    try:
        _put(fd, [before], 0)
        if s.order:
            _put(fd, [_OPEN], len(before))
            tail, at = _CLOSE + after + b"\n", head.end
        else:
            tail, at = b"[]" + after + b"\n", len(before)
        _put(fd, [tail], at)
        os.ftruncate(fd, at + len(tail))
    finally:
        os.close(fd)
    tables: dict[str, list[str]] = {}
    by_dialect: dict[str, DialectRows] = {}
    cap = row_cap(len(set(s.order.values())))
    for k, dialect in s.order.items():
        table = tables.get(dialect)
        if table is None:  # as in _pieces: one DialectRows per dialect, not per key
            table, by_dialect[dialect] = tables.setdefault(dialect, []), DialectRows()
        table.extend(where[k].md[k])
        shown = by_dialect[dialect].shown
        shown.extend(where[k].shown.get(k, ())[: cap - len(shown)])
    for piece in s.results:
        for dialect, counts in piece.counts.items():
            by_dialect[dialect].merge(counts)
    md = [(dialect, head.extras[dialect], lines) for dialect, lines in tables.items()]
    (out / "matrix.md").write_text(md_document(doc, md, unknown))
    html = page(doc, by_dialect, unknown, templates_section(out))
    (out / REPORT_HTML).write_text(html, encoding="utf-8")


def _split(doc: JsonObject, hole: str) -> tuple[bytes, bytes]:
    """``doc``'s text (``matrix.json``'s layout) before and after its rows, which are
    ``hole``."""
    before, after = orjson.dumps(doc, option=orjson.OPT_INDENT_2).split(orjson.dumps(hole))
    return before, after


__all__ = ["write_report"]
