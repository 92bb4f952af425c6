"""Append-only JSONL records under ``--out``: ``calls.jsonl``, ``cost.jsonl``, ``runs.jsonl``.

One JSON object per line. Each record is written with a single ``os.write`` on a descriptor
opened with ``O_APPEND``, so concurrent writers (several processes sharing ``--out``) never
interleave bytes inside a line, and a record is on disk (in the page cache) as soon as the
call returns. A process killed mid-write leaves at most a torn last line: readers skip any
line that does not parse. Every record passes :func:`reasonwire.credentials.redact_obj`.

Every record is a frozen dataclass below, written and read by :mod:`reasonwire.method.codec`
(keys in field order; a key only some records carry defaults to ``ABSENT``):

- ``calls.jsonl``: :class:`CallRecord`, one per answered or failed call;
- ``cost.jsonl``: :class:`Reserve` before a call, :class:`Intent` as it is sent,
  :class:`Settle` after it;
- ``runs.jsonl``: :class:`RunStart`, :class:`TRecord`, :class:`Note`, :class:`BudgetStop`,
  :class:`RunEnd`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, TypeAlias

import orjson

from reasonwire.credentials import redact_obj
from reasonwire.errors import ConfigError
from reasonwire.method.codec import FLAT, JSONRecord, from_json, key, rest
from reasonwire.method.matrix import CarrierSummary, FoldSetup
from reasonwire.method.verdicts import Thresholds
from reasonwire.wire.model import ABSENT, JSON, JsonObject

CALLS = "calls.jsonl"
COST = "cost.jsonl"
RUNS = "runs.jsonl"


# -- calls.jsonl -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CellLabels(JSONRecord):
    """What identifies a cell (see :mod:`reasonwire.eval._cells`); ``t1_lane`` and ``t1_run``
    (turn 2 only): the lane and the run id of the turn-1 capture whose carriers it replays
    (records written before ``t1_run`` existed lack it); ``params_sig`` the parameter fixes;
    ``fold_mode`` / ``fold_id`` (fold step only, ``eval run --fold``): ``baseline``,
    ``unfolded`` or ``folded``, and the fold setup the cell belongs to."""

    route: str
    model: str
    dialect: str
    step: str
    position: str
    variant: str
    wording: str
    effort: str | None
    extra: str
    attempt: int
    t1_lane: str = ABSENT
    t1_run: str = ABSENT
    params_sig: str
    fix_notes: tuple[str, ...]
    fold_mode: str = ABSENT
    fold_id: str = ABSENT


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldFacts(JSONRecord):
    """What the fold did to a ``folded`` cell's request (from its FoldReport): the action,
    how many text carriers it changed, and the first one's characters before (``chars``),
    kept of them (``kept``) and as sent (``sent``: kept plus the marker)."""

    action: str
    texts: int
    chars: int
    kept: int
    sent: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered(JSONRecord):
    """A call whose answer parsed into a turn. ``ok``: it is usable (billed input figures
    present, no safety filter), else ``error`` says why not. Turn 1 keeps its ``raw`` body
    (the opaque step replays its carriers, a resumed run re-parses it)."""

    status: int
    elapsed_s: float
    ok: bool
    filtered: bool
    lane: str
    response_id: str | None
    billed_input: int | None
    usage: JSON
    finish_reason: str | None
    reply: str
    tool_calls: int
    carriers: tuple[CarrierSummary, ...]
    error: str = ABSENT
    raw: JSON = ABSENT
    reasoning_excerpt: str = ABSENT

    @classmethod
    def _claims(cls, data: Mapping[str, JSON]) -> bool:
        return "filtered" in data


@dataclass(frozen=True, slots=True, kw_only=True)
class Unparsed(JSONRecord):
    """A call that got an HTTP status, then failed (its body did not parse): the status is
    written first, as it arrived first."""

    status: int | None
    ok: bool
    error_kind: str
    error: str | None
    error_body: str = ABSENT
    elapsed_s: float

    @classmethod
    def _claims(cls, data: Mapping[str, JSON]) -> bool:
        return next((k for k in data if k in ("status", "ok")), None) == "status"


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed(JSONRecord):
    """A call that failed before any answer. ``error_kind``: ``provider`` (a 4xx/5xx, with
    the ``error_body``), ``auth`` (401 after the key was re-read), ``transport``,
    ``malformed`` or ``other``; ``transport`` and ``auth`` are sent again on resume."""

    ok: bool
    status: int | None = ABSENT
    error_kind: str
    error: str | None
    error_body: str = ABSENT
    elapsed_s: float


CallResult: TypeAlias = Answered | Unparsed | Failed


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord(JSONRecord):
    """One call: the cell, T (the trace's tokens and how they were measured), the result,
    what it cost (``cost_estimate``: from the price list, not the provider's figure; ``price``:
    which price)."""

    type: Literal["call"] = "call"
    key: str
    run_id: str
    fixture_id: str
    cell: CellLabels = field(metadata=FLAT)
    T: int
    T_source: str
    result: CallResult = field(metadata=FLAT)
    cost_usd: float
    cost_estimate: bool
    t: float
    price: str = ABSENT
    """Where ``cost_usd`` came from: ``billed`` (the provider's figure), ``listed`` (a known
    price: catalog, route, caller), ``free`` (loopback, ``local`` or ``free = true``) or
    ``unknown`` (a worst-case assumption: an estimate, shown as one). Older records lack it."""
    fold: FoldFacts = ABSENT
    """(fold step, ``folded`` cells) what the fold did to the request; other records lack it."""
    unknown: Mapping[str, JSON] = rest()

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def status(self) -> int | None:
        s = self.result.status
        return s if isinstance(s, int) else None

    @property
    def lane(self) -> str | None:
        return self.result.lane if isinstance(self.result, Answered) else None

    @property
    def filtered(self) -> bool:
        return isinstance(self.result, Answered) and self.result.filtered

    @property
    def error(self) -> str | None:
        e = self.result.error
        return None if e is ABSENT else e

    @property
    def error_body(self) -> str | None:
        r = self.result
        return None if isinstance(r, Answered) or r.error_body is ABSENT else r.error_body

    @property
    def error_kind(self) -> str | None:
        return None if isinstance(self.result, Answered) else self.result.error_kind


# -- cost.jsonl --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Reserve(JSONRecord):
    """A call's worst-case cost, reserved before it is sent (see :mod:`.budget`)."""

    type: Literal["reserve"] = "reserve"
    rid: str
    usd: float
    key: str
    route: str
    model: str
    unknown: Mapping[str, JSON] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Intent(JSONRecord):
    """The reserved call ``rid`` is being sent now: written before its first byte goes out.
    An intent that no :class:`Settle` follows was in flight when its run was interrupted: the
    provider may have billed it (see :mod:`.budget`)."""

    type: Literal["intent"] = "intent"
    rid: str
    key: str
    pid: int
    run_id: str = ABSENT
    unknown: Mapping[str, JSON] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Settle(JSONRecord):
    """What the reserved call cost (``estimate``: from the price list, not the provider's
    bill). ``interrupted``: written by a later run for an intent its run never settled (the
    call was in flight at a kill): ``cost_usd`` is then the call's reservation, counted as
    spent, an estimate."""

    type: Literal["settle"] = "settle"
    rid: str
    cost_usd: float
    estimate: bool
    key: str
    model: str
    interrupted: bool = ABSENT
    unknown: Mapping[str, JSON] = rest()


# -- runs.jsonl --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TargetRef(JSONRecord):
    route: str
    dialect: str
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart(JSONRecord):
    """A run's configuration: the fixture (id, seed, canary, T by chars/4), thresholds,
    budget, targets and the default lane of each route."""

    type: Literal["run_start"] = "run_start"
    run_id: str
    fixture_id: str
    seed: int
    canary: str
    trace_chars: int
    T: int
    thresholds: Thresholds
    budget_usd: float
    effort: str | None
    max_tokens: int
    workers: int
    want_direct: tuple[str, ...]
    targets: tuple[TargetRef, ...]
    lane_defaults: Mapping[str, str]
    versions: Mapping[str, str]
    label: str
    t: float
    fold: FoldSetup = ABSENT
    """(``eval run --fold``) the fold evidence's settings and trace; other runs lack it."""
    unknown: Mapping[str, JSON] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnd(JSONRecord):
    type: Literal["run_end"] = "run_end"
    run_id: str
    sent: int
    reused: int
    errors: int
    budget_stopped: bool
    elapsed_s: float
    t: float
    in_flight: int = ABSENT
    """Calls this run found in flight at an earlier run's interruption (sent again once)."""
    unknown: Mapping[str, JSON] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetStop(JSONRecord):
    """The first call a run did not send: its worst case would have overshot the budget."""

    type: Literal["budget_stop"] = "budget_stop"
    run_id: str
    limit_usd: float
    committed_usd: float
    next_call_worst_usd: float
    route: str
    model: str
    t: float
    unknown: Mapping[str, JSON] = rest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Note(JSONRecord):
    """Why a step of a (route, model) did not run or did not complete (the matrix shows it)."""

    type: Literal["note"] = "note"
    run_id: str
    fixture_id: str
    route: str
    model: str
    step: str
    reason: str
    unknown: Mapping[str, JSON] = rest()


@dataclass(frozen=True, slots=True)
class TCount(JSONRecord):
    """The count endpoint's figures T was taken from: with and without ``variant``."""

    variant: str
    with_: int = key("with")
    without: int = key("without")


@dataclass(frozen=True, slots=True, kw_only=True)
class TRecord(JSONRecord):
    """T of a (route, model): counted on the dialect's count endpoint (``count``), or the
    chars/4 estimate with the reason in ``T_note``."""

    type: Literal["T"] = "T"
    run_id: str
    fixture_id: str
    route: str
    model: str
    T: int
    T_source: str
    T_estimate: int
    T_note: str = ABSENT
    count: TCount = ABSENT
    unknown: Mapping[str, JSON] = rest()


Record: TypeAlias = (
    CallRecord | Reserve | Intent | Settle | RunStart | RunEnd | BudgetStop | Note | TRecord
)
RECORD_TYPES: Mapping[str, type[Record]] = {
    str(next(f.default for f in fields(cls) if f.name == "type")): cls
    for cls in (CallRecord, Reserve, Intent, Settle, RunStart, RunEnd, BudgetStop, Note, TRecord)
}
"""Record class per ``type`` tag, over the three files."""


def decode_record(raw: Mapping[str, JSON], where: str = "record") -> Record | None:
    """The typed record of one decoded line; None for a ``type`` this version does not know
    (a newer writer's). A known type that does not fit is a :class:`ConfigError`."""
    cls = RECORD_TYPES.get(str(raw.get("type")))
    return None if cls is None else from_json(cls, raw, what=where)


def read_records(path: str | Path) -> Iterator[Record]:
    """Every record of a JSONL file, typed (see :func:`read_jsonl` for torn lines)."""
    name = Path(path).name
    for i, raw in enumerate(read_jsonl(path), 1):
        rec = decode_record(raw, f"{name} record {i}")
        if rec is not None:
            yield rec


# -- writing and reading -----------------------------------------------------------------------


def request_key(route: str, url: str, body: JSON, attempt: int) -> str:
    """The resume key of a call: route, endpoint URL (Gemini puts the model there), the exact
    request body and the lane attempt."""
    blob = json.dumps([route, url, body, attempt], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


_FILE_OF: Mapping[type, str] = {
    CallRecord: CALLS,
    Reserve: COST,
    Intent: COST,
    Settle: COST,
    RunStart: RUNS,
    RunEnd: RUNS,
    BudgetStop: RUNS,
    Note: RUNS,
    TRecord: RUNS,
}


class Records:
    """Writers for the three record files of one output directory."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out).expanduser()
        self._lock = threading.Lock()
        self._fds: dict[str, int] = {}
        self.check_writable()

    def check_writable(self) -> None:
        """Fail before any call when ``out`` cannot hold the records."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            for name in (CALLS, COST, RUNS):
                fd = os.open(self.out / name, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                self._fds[name] = fd
                _end_torn_line(fd)
        except OSError as exc:
            self.close()
            raise ConfigError(f"--out {self.out} is not writable: {exc.strerror}") from None

    def append(self, record: Record) -> None:
        """Write one record, redacted, as one line of its file."""
        name = _FILE_OF[type(record)]
        line = json.dumps(redact_obj(record.to_json()), ensure_ascii=False, separators=(",", ":"))
        data = (line + "\n").encode("utf-8")
        with self._lock:
            fd = self._fds[name]
            written = os.write(fd, data)
            if written != len(data):  # pragma: no cover - regular files write whole
                raise OSError(f"short write to {self.out / name}")

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


def _end_torn_line(fd: int) -> None:
    """End a torn last line (its writer was killed mid-record) before anything is appended:
    else the next record would be glued to the fragment and lost with it."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        os.write(fd, b"\n")


def read_jsonl(path: str | Path) -> Iterator[JsonObject]:
    """Every record of a JSONL file as decoded JSON; unparsable lines (a torn last line) are
    skipped.

    Parsed with orjson (about 3x the stdlib on these records: the report reads a million of
    them, as JSON: typed records would cost more than the whole report). Callers that keep
    every record should pause the cyclic GC while they do (see
    :func:`reasonwire.eval.matrix.build_matrix`): a million fresh dicts otherwise trigger
    full collections that cost more than the parsing.
    """
    for raw in jsonl_lines(path):
        rec = parse_line(raw)
        if rec is not None:
            yield rec


def jsonl_lines(path: str | Path) -> Iterator[bytes]:
    """The complete lines of a JSONL file, undecoded (none if it does not exist); a torn last
    line (a killed writer's, without its newline) ends the file."""
    p = Path(path)
    if not p.exists():
        return
    with p.open("rb", buffering=1 << 20) as fh:
        for raw in fh:
            if raw[-1:] != b"\n":
                break  # torn last line of a killed writer
            yield raw


def parse_line(raw: bytes) -> JsonObject | None:
    """One JSONL line as a JSON object, or None (not an object, or not JSON)."""
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # the writer's stdlib json also emits NaN and ints beyond 64 bits
            rec = json.loads(raw)
        except ValueError:
            return None
    return rec if isinstance(rec, dict) else None
