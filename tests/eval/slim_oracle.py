"""Oracle for the report's slimmed call records: the rows (and fold rows) of every
(route, model) built from the records as :func:`~reasonwire.eval._shards.read_range` keeps
them, against the rows built from the records as written, read whole by stdlib
``json.loads`` (apart from the reader under test; the other report tests read the records
as written through :func:`written_records` too). A field a row reads that the reader drops
changes some row: the two sides then differ."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reasonwire.eval._shards import read_range
from reasonwire.eval.matrix import key_rows, plan


def written_records(calls: Path, fid: str) -> Iterator[dict[str, Any]]:
    """Every complete line's call record of fixture ``fid``, whole, in file order (a torn
    last line is no record)."""
    raw = calls.read_bytes()
    for line in raw[: raw.rfind(b"\n") + 1].split(b"\n"):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("type") == "call" and rec.get("fixture_id") == fid:
            yield rec


def _written(calls: Path, fid: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """:func:`written_records` per (route, model), in file order."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rec in written_records(calls, fid):
        out.setdefault((str(rec.get("route")), str(rec.get("model"))), []).append(rec)
    return out


def rows_both_ways(out: Path) -> tuple[str, str, int]:
    """The rows of ``out``'s records as JSON text, built from the slimmed records and from
    the whole ones, and how many records there were."""
    p = plan(out)
    calls = out / "calls.jsonl"
    whole = _written(calls, p.ctx.fid)
    slim = read_range(calls, 0, calls.stat().st_size, p.ctx.fid).recs
    assert list(slim) == list(whole)
    order = {k: str(recs[0].get("dialect")) for k, recs in whole.items()}

    def text(own: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
        return json.dumps([[list(k), *v] for k, v in key_rows(own, order, p.ctx).items()])

    return text(slim), text(whole), sum(len(v) for v in whole.values())
