"""``calls.jsonl`` read in byte ranges, one process per range, each (route, model) built once.

Why: the report's bar is a million call records in less time than one plain ``json.loads``
pass over them, on two cores. Reading the whole file in each process and keeping only some
keys (the earlier design) decodes or peeks every line twice; here each process decodes only
its half of the bytes. A (route, model)'s rows need all of its records, which may sit in both
halves (two runs sharing ``--out``, a resumed run): the two processes swap their per-key
counts, each key goes to the process that holds more of its records (the first on a tie),
and only the records of keys owned by the other process cross (pickled, so every value read,
NaN and ints beyond 64 bits included, arrives as it was). Records of one key stay in file
order: the first range's before the second's. A run written in one go leaves each key's
records in one place, and almost nothing crosses.

Each process's ``finish`` also gets a :class:`Shard`: the file's sums (known to both once the
counts are swapped) and a ``swap`` with the other process, so the two can settle what depends
on both (the report: where each key's text sits in ``matrix.json``) without sending it all.

The ranges split at a line start, so no line is cut; a torn last line (a killed writer's,
without its newline) ends the file and is skipped, as :func:`~reasonwire.eval._records.
jsonl_lines` does. Lines that do not parse, records of another type or fixture are skipped.
"""

from __future__ import annotations

import os
import pickle
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Generic, TypeVar, cast

import orjson

from reasonwire.eval._records import parse_line
from reasonwire.eval._rows import Rec
from reasonwire.wire.model import JSON

Key = tuple[str, str]
"""(route, model)."""
R = TypeVar("R")

_READ = frozenset(
    ("step", "position", "variant", "wording", "extra", "attempt", "params_sig", "fix_notes",
     "status", "ok", "lane", "billed_input", "reply", "error", "error_kind", "cost_usd",
     "price", "t1_lane", "t1_run", "fold_id", "fold_mode", "fold")
)  # fmt: skip
"""The fields of a call record other than turn 1's that a row reads (:mod:`reasonwire.eval.
_rows`, :mod:`reasonwire.eval._fold_rows`): such a record keeps only these, in a dict of its
own (a key-sharing one: :class:`_Kept`), and each of its str and int values is one object per
distinct value in the range (not floats: ``0.0 == -0.0 == 0`` would hand one for another; not
bools, which equal 1 and 0).

Why (the report bar, a million records in < 10 s): as parsed, a record is a dict of ~30
fields, each string value an object of its own: 2.4 KB a record, 2.4 GB for the bench's
million, and every new page of it is a page fault, which on the bench's VM cost 2-40 us
(the host backs the guest's memory lazily: the same report read 9 s and 34 s on one day).
Kept this way a record is ~0.5 KB (~0.8 KB as a plain dict; ~20 fields of a few dozen
distinct values: lanes, steps, wordings, replies); the rebuild and lookups cost ~2 us a
record. A field a row starts to read must be added here: a test builds the rows of recorded
runs from the records as read and from the records as written and compares them."""
_TURN1_READ = _READ | {"run_id", "t", "effort", "response_id", "tool_calls", "carriers",
                       "reasoning_excerpt"}  # fmt: skip
"""What a row reads of a turn-1 record besides :data:`_READ`: the capture it replays (the
newest by ``t``; its run, effort, response, tool calls, carriers and reasoning excerpt)."""
_EMPTY_AS_TUPLE = frozenset(("fix_notes",))
"""Fields whose empty list a record keeps as the one empty tuple: a row only tests them for
truth and iterates them (``fix_notes``: empty in nearly every record, ~60 bytes each as a
list of its own)."""


class _Kept:
    """A record's kept fields, set as attributes: the record is then this object's
    ``__dict__``, a plain dict that CPython (3.11) lays out as a key-sharing instance dict,
    one key table for every record and only a values array of its own: ~0.3 KB where a dict
    made by a comprehension takes ~0.47 KB (measured: a million-record report's peak 0.70 ->
    0.60 GB a process, ~10% fewer page faults). The dict behaves as any other (the rows read
    it with ``get`` and ``[]``, the other process receives it pickled); only its memory
    differs, and on an interpreter without key sharing it is an ordinary dict."""


def _primed() -> _Kept:
    keys = _Kept()
    for name in sorted(_TURN1_READ):
        setattr(keys, name, None)
    return keys


_KEYS = _primed()
"""Every field a record may keep, set once in a fixed order: the shared key table holds
them all from the start (a record's own fields in any order then fit it)."""
_CHUNK = 8 << 20
"""Bytes read at a time (lines are split out of each chunk in C)."""


@dataclass
class Groups:
    """One byte range's call records of the fixture, slimmed, by (route, model); the keys in
    the order of their first record in the range, with that record's dialect."""

    recs: dict[Key, list[Rec]] = field(default_factory=dict)
    dialects: dict[Key, str] = field(default_factory=dict)
    spent: float = 0.0
    billed: float = 0.0  # of ``spent``: the providers' own figures (``cost_estimate`` false)
    ncalls: int = 0


FIRST_SHARE = 0.5
"""The first process's share of the file's bytes (measured on the report bench's million
records): 0.45 while the first received the second's ``matrix.json`` text and wrote all of
it; since each writes its own text and makes its own ``matrix.md`` lines, halves reach the
swap together (read and built in 2.9 s each), and the first's work left after the second is
done (the page, ``matrix.md``) is a fraction of a second either way. Each process frees its
records as their rows are built, before the swap: the rows reuse their memory (the first's
peak 2.0 -> 1.5 GB, ~120,000 fewer page faults; the second, which once exited without freeing
them, ~50,000-75,000 fewer of its ~250,000 with slimmed records, at the same wall time), and
the freeing no longer keeps the other waiting after the last swap (0.485 measured: no
better)."""


def cut(path: Path, share: float) -> int:
    """The start of the line holding byte ``share`` x the size of ``path`` (after its last
    newline when there is none: the file's end)."""
    size = path.stat().st_size
    at = int(size * share)
    if at <= 0:
        return 0
    with path.open("rb") as fh:
        fh.seek(at - 1)
        fh.readline()  # to the end of the line holding byte at-1: the next line's start
        return min(fh.tell(), size)


def _lines(path: Path, start: int, end: int) -> Iterator[memoryview]:
    """The complete lines of ``path[start:end]`` (without their newline); the bytes after the
    last newline (a torn last line) are dropped. Each line is a view into one buffer, read
    into in place and good until the next line is asked for: no bytes object per chunk or
    per line (splitting chunks into bytes cost ~0.35 s of a process's ~3.8 s read)."""
    buf = bytearray(_CHUNK)
    have = 0  # bytes in buf: the start of a line not yet complete
    with path.open("rb", buffering=0) as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            if have == len(buf):  # one line fills the buffer: a larger one
                buf = buf + bytes(len(buf))
            view = memoryview(buf)
            got = fh.readinto(view[have : have + min(len(buf) - have, left)])
            if not got:
                break
            left -= got
            have += got
            pos = 0
            find = buf.find
            nl = find(b"\n", 0, have)
            while nl >= 0:
                yield view[pos:nl]
                pos = nl + 1
                nl = find(b"\n", pos, have)
            buf[: have - pos] = buf[pos:have]  # the same length: the buffer is not resized
            have -= pos
            view.release()


def read_range(path: Path, start: int, end: int, fid: str) -> Groups:
    """The call records of fixture ``fid`` in ``path[start:end]`` (see the module docstring)."""
    g = Groups()
    if not path.exists():
        return g
    recs, dialects = g.recs, g.dialects
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    spent = billed = 0.0
    ncalls = 0
    values: dict[JSON, JSON] = {}  # one object per distinct str and int value read: _READ
    shared = values.setdefault
    for raw in _lines(path, start, end):
        try:
            rec = loads(raw)
        except decode_error:
            rec = parse_line(bytes(raw))  # the writer's stdlib json: NaN, big ints
        if type(rec) is not dict:
            continue
        get = rec.get
        if get("type") != "call" or get("fixture_id") != fid:
            continue
        k = (str(get("route")), str(get("model")))
        group = recs.get(k)
        if group is None:
            group = recs[k] = []
            dialects[k] = str(get("dialect"))
        cost = float(get("cost_usd") or 0.0)
        spent += cost
        if get("cost_estimate") is False:
            billed += cost
        keep = _READ if get("position") != "turn1" else _TURN1_READ
        kept = _Kept()
        for f, v in rec.items():
            if f in keep:
                c = v.__class__
                if c is str or c is int:
                    v = shared(v, v)
                elif c is list and not v and f in _EMPTY_AS_TUPLE:
                    v = ()
                setattr(kept, f, v)
        group.append(kept.__dict__)
        ncalls += 1
    g.spent, g.billed, g.ncalls = spent, billed, ncalls
    return g


@dataclass(frozen=True)
class Scanned(Generic[R]):
    """What the scan found over the whole file, and what ``finish`` made of each process's
    keys (the first process's result first)."""

    order: dict[Key, str]  # the targets, then every other key with a record in file order:
    # each key's dialect (its target's, else its first record's)
    discovered: dict[Key, str]  # every key with a record, in file order: its first dialect
    spent: float
    billed: float
    ncalls: int
    results: list[R]


@dataclass(frozen=True)
class Shard:
    """What ``finish`` knows of the whole scan besides its own keys: which process it runs in
    (0 the first, 1 the second) of how many, the file's sums, and ``swap``: ``swap(x)`` sends
    ``x`` to the other process and returns what the other sent with its own ``swap`` call
    (with two processes, both call it the same number of times; alone, never). A failure of
    the other process is raised from it."""

    me: int
    processes: int
    spent: float
    billed: float
    ncalls: int
    swap: Callable[[object], object]


Finish = Callable[[dict[Key, list[Rec]], dict[Key, str], Shard], R]
"""Run in each process over the keys it owns (each with all of its records, in file order; a
key of ``order`` without a record is the first process's, with none), every key in order
with its dialect (:attr:`Scanned.order`) and its :class:`Shard`; its result comes back to the
caller (pickled from the second process)."""


def _alone(x: object) -> object:
    raise RuntimeError("swap called in a scan of one process")


def owner(n_first: int, n_second: int) -> int:
    """The process that builds a key with ``n_first`` records in the first range and
    ``n_second`` in the second: the one holding more (the fewer cross), the first on a tie."""
    return 0 if n_first >= n_second else 1


def _order(targets: Mapping[Key, str], discovered: dict[Key, str]) -> dict[Key, str]:
    order = dict(targets)
    for k, dialect in discovered.items():
        order.setdefault(k, dialect)
    return order


def scan(
    path: Path, fid: str, processes: int, targets: Mapping[Key, str], finish: Finish[R]
) -> Scanned[R]:
    """Read ``path`` in ``processes`` (1 or 2) byte ranges and run ``finish`` in each (see
    :data:`Finish` and the module docstring)."""
    if processes < 2:
        g = read_range(path, 0, path.stat().st_size if path.exists() else 0, fid)
        order = _order(targets, g.dialects)
        own = {**g.recs, **{k: [] for k in order if k not in g.recs}}
        alone = Shard(0, 1, g.spent, g.billed, g.ncalls, _alone)
        return Scanned(order, g.dialects, g.spent, g.billed, g.ncalls, [finish(own, order, alone)])
    import multiprocessing

    b, end = cut(path, FIRST_SHARE), path.stat().st_size
    fork = multiprocessing.get_context("fork")
    here, there = fork.Pipe(duplex=True)
    args = (there, here, path, b, end, fid, targets, finish)
    child = fork.Process(target=_second, args=args, daemon=True)
    child.start()
    there.close()
    try:
        mine = read_range(path, 0, b, fid)
        theirs = _receive(here)
        assert isinstance(theirs, _Counts)
        here.send_bytes(pickle.dumps(_Counts.of(mine), pickle.HIGHEST_PROTOCOL))
        own = _owned(0, mine, theirs.counts, _receive(here))
        here.send_bytes(pickle.dumps(_leaving(0, mine, theirs.counts), pickle.HIGHEST_PROTOCOL))
        mine.recs.clear()  # what left is sent; what stays is in ``own``, for ``finish`` to free
        discovered = _discovered(mine.dialects, theirs.dialects)
        order = _order(targets, discovered)
        own.update((k, []) for k in order if k not in discovered)
        shard = Shard(0, 2, mine.spent + theirs.spent, mine.billed + theirs.billed,
                      mine.ncalls + theirs.ncalls, lambda x: _swap(here, x, True))  # fmt: skip
        result: R = finish(own, order, shard)
        del own  # the records go while the second process still works, not after
        other = cast(R, _receive(here))  # what ``finish`` returned there
    finally:
        here.close()
        child.join()
    return Scanned(order, discovered, shard.spent, shard.billed, shard.ncalls, [result, other])


def _discovered(first: dict[Key, str], second: dict[Key, str]) -> dict[Key, str]:
    """Every key with a record in file order (the first range's, then the second's new ones),
    with its first record's dialect."""
    out = dict(first)
    for k, d in second.items():
        out.setdefault(k, d)
    return out


@dataclass(frozen=True)
class _Counts:
    """A range's keys (first-record order, dialect), their record counts and its sums."""

    dialects: dict[Key, str]
    counts: dict[Key, int]
    spent: float
    billed: float
    ncalls: int

    @classmethod
    def of(cls, g: Groups) -> _Counts:
        counts = {k: len(v) for k, v in g.recs.items()}
        return cls(g.dialects, counts, g.spent, g.billed, g.ncalls)


@dataclass(frozen=True)
class _Failed:
    """The second process raised: the exception (when it pickles) and its traceback."""

    exc: BaseException | None
    trace: str


def _receive(conn: Connection) -> object:
    """The next object from the other process; its failure raised here."""
    got = pickle.loads(conn.recv_bytes())
    if isinstance(got, _Failed):
        if got.exc is not None:
            raise got.exc
        raise RuntimeError(f"report shard failed:\n{got.trace}")
    return got


def _swap(conn: Connection, x: object, first: bool) -> object:
    """Send ``x``, get the other process's: the first process receives first, so a failure
    the second sent instead is raised here, and neither waits on a full pipe for the other."""
    if first:
        got = _receive(conn)
        conn.send_bytes(pickle.dumps(x, pickle.HIGHEST_PROTOCOL))
        return got
    conn.send_bytes(pickle.dumps(x, pickle.HIGHEST_PROTOCOL))
    return _receive(conn)


def _mine(me: int, n: int, m: int) -> bool:
    """Does process ``me``, holding ``n`` records of a key the other holds ``m`` of, own it?"""
    return owner(n, m) == 0 if me == 0 else owner(m, n) == 1


def _leaving(me: int, g: Groups, other: dict[Key, int]) -> dict[Key, list[Rec]]:
    """This range's records of the keys the other process owns."""
    return {k: v for k, v in g.recs.items() if not _mine(me, len(v), other.get(k, 0))}


def _owned(me: int, g: Groups, other: dict[Key, int], arriving: object) -> dict[Key, list[Rec]]:
    """The keys this process owns, each with all of its records in file order (the first
    range's first). Records arrive only for keys this range holds too (a key the other
    range alone holds is the other's)."""
    assert isinstance(arriving, dict)
    own: dict[Key, list[Rec]] = {}
    for k, recs in g.recs.items():
        if _mine(me, len(recs), other.get(k, 0)):
            more = arriving.get(k)
            own[k] = recs if not more else (recs + more if me == 0 else more + recs)
    return own


def _second(
    conn: Connection,
    theirs_end: Connection,
    path: Path,
    start: int,
    end: int,
    fid: str,
    targets: Mapping[Key, str],
    finish: Finish[R],
) -> None:
    """The second process: read its range, swap counts and records, build (freeing its
    records as their rows are made: see :data:`FIRST_SHARE`), send, exit."""
    code = 1
    theirs_end.close()  # forked open: kept, the first process's end would never read as closed
    try:
        mine = read_range(path, start, end, fid)
        conn.send_bytes(pickle.dumps(_Counts.of(mine), pickle.HIGHEST_PROTOCOL))
        theirs = _receive(conn)
        assert isinstance(theirs, _Counts)
        conn.send_bytes(pickle.dumps(_leaving(1, mine, theirs.counts), pickle.HIGHEST_PROTOCOL))
        own = _owned(1, mine, theirs.counts, _receive(conn))
        mine.recs.clear()  # as in the first process: ``finish`` frees what ``own`` holds
        order = _order(targets, _discovered(theirs.dialects, mine.dialects))
        shard = Shard(1, 2, theirs.spent + mine.spent, theirs.billed + mine.billed,
                      theirs.ncalls + mine.ncalls, lambda x: _swap(conn, x, False))  # fmt: skip
        conn.send_bytes(pickle.dumps(finish(own, order, shard), pickle.HIGHEST_PROTOCOL))
        code = 0
    except BaseException as exc:
        try:
            blob = pickle.dumps(_Failed(exc, traceback.format_exc()))
        except Exception:
            blob = pickle.dumps(_Failed(None, traceback.format_exc()))
        conn.send_bytes(blob)
    finally:
        os._exit(code)


__all__ = ["FIRST_SHARE", "Groups", "Key", "Scanned", "Shard", "cut", "owner", "read_range", "scan"]
