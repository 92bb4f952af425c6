"""Rows of the matrix: the verdicts of one (route, model) per lane, from its call records.

Per lane, the text step compares each variant's billed input with the ``none`` baseline's
that landed on the same lane (same probe wording and parameters), and the opaque step
compares turn 2 ``verbatim`` with ``stripped`` (or ``stand_in``), both on the lane, replaying
that lane's turn 1. The rows are :class:`reasonwire.method.matrix.MatrixRow` in their JSON
form; the outcomes and verdicts the words of :mod:`reasonwire.method.verdicts`.

Call records come in as JSON (see :mod:`reasonwire.eval.matrix` for why), and rows go out as
JSON made from the classes' fields (:func:`~reasonwire.method.codec.json_maker`) without the
instances: a million-record report makes ~70,000 rows of ~20 records each, only to write them,
and constructing the frozen instances then encoding them cost more than the rows' logic. The
outcomes a verdict is combined from stay :class:`Outcome` members beside their cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reasonwire.eval._variants import BASELINE, TEXT_VARIANTS
from reasonwire.method.codec import json_maker
from reasonwire.method.fixture import POSITIONS, canary_hit, canary_in
from reasonwire.method.matrix import (
    CallError,
    CarrierSummary,
    MatrixRow,
    OpaqueEntry,
    OpaquePosition,
    RowError,
    TextEntry,
    TextMeasured,
    TextUnanswered,
    TextUnbased,
    Turn1,
)
from reasonwire.method.verdicts import Outcome, Thresholds, Verdict, combine, model_verdict
from reasonwire.wire.model import ABSENT, JSON, JsonObject

Rec = JsonObject
"""A call record as read (JSON, slimmed of what the matrix never reads)."""

_call_error = json_maker(CallError)
_carrier = json_maker(CarrierSummary)
_matrix_row = json_maker(MatrixRow)
_opaque_entry = json_maker(OpaqueEntry)
_opaque_position = json_maker(OpaquePosition)
_row_error = json_maker(RowError)
_text_entry = json_maker(TextEntry)
_text_measured = json_maker(TextMeasured)
_text_unanswered = json_maker(TextUnanswered)
_text_unbased = json_maker(TextUnbased)
_turn1_json = json_maker(Turn1)

Err = tuple[JSON, JSON]
"""A failed call's (status, error): the fields of :class:`CallError`."""
ErrorAt = tuple[str, str, str, JSON, JSON]
"""A failed cell of a row (step, variant, position, status, error): a :class:`RowError`."""
Pairs = list[tuple[Outcome, Outcome]]
"""Each carrier entry's (in-loop, cross-turn) outcomes, as :func:`row_verdict` reads them."""
_NO_ERR: Err = (None, None)


def _err(rec: Rec) -> Err:
    return rec.get("status"), rec.get("error")


def _text_cells(
    by_position: Mapping[str, Mapping[str, list[Rec]]],
    lane: str,
    canary: str,
    T: int,
    th: Thresholds,
    variants: Iterable[str],
) -> tuple[JsonObject, dict[str, str], list[ErrorAt], Pairs]:
    """The text entries of ``lane`` (JSON) per variant, the probe wording per position, the
    failed cells and the outcomes of every variant but the baseline."""
    wording: dict[str, str] = {}
    errors: list[ErrorAt] = []
    per_pos: dict[str, dict[str, tuple[Outcome, JsonObject]]] = {}
    for position in POSITIONS:
        at = by_position[position]
        bases = at.get(BASELINE, [])
        ok_bases = [r for r in bases if r.get("ok") and r.get("lane") == lane]
        cells: dict[str, tuple[Outcome, JsonObject]] = {}
        if not ok_bases:
            # an answer on another lane says nothing of this one: only a failure is reported
            failed = [r for r in bases if not r.get("ok")]
            last = failed[-1] if failed else None
            e = _err(last) if last else _NO_ERR
            outcome = Outcome.BASELINE_FAILED if last else Outcome.MISSING
            for v in variants:
                cells[v] = (
                    outcome,
                    _text_unbased(outcome, *e, last.get("wording") if last else None),
                )
            if last:
                errors.append(("text", BASELINE, position, *e))
            per_pos[position] = cells
            continue
        base = ok_bases[-1]
        gen = (base.get("wording"), base.get("params_sig"))
        wording[position] = str(base.get("wording"))
        for v in variants:
            # the variant's records of the baseline's probe wording and parameters
            mine = [] if v == BASELINE else [
                r for r in at.get(v, ()) if (r.get("wording"), r.get("params_sig")) == gen
            ]  # fmt: skip
            oks = (
                [base]
                if v == BASELINE
                else [r for r in mine if r.get("ok") and r.get("lane") == lane]
            )
            if oks:
                r = oks[0]
                delta = int(r["billed_input"]) - int(base["billed_input"])
                outcome = th.text_outcome(delta, T) if v != BASELINE else Outcome.BASELINE
                cells[v] = (
                    outcome,
                    _text_measured(
                        wording=gen[0],
                        baseline_input=base.get("billed_input"),
                        outcome=outcome,
                        delta=delta,
                        input=r.get("billed_input"),
                        ratio=round(delta / T, 3) if T else None,
                        canary=canary_hit(str(r.get("reply") or ""), canary),
                        status=r.get("status"),
                        error=None,
                    ),
                )
                continue
            failed = [r for r in mine if not r.get("ok") and r.get("lane") in (None, lane)]
            e, outcome = _NO_ERR, Outcome.MISSING
            if failed:
                f = failed[-1]
                e = _err(f)
                if f.get("error_kind") == "provider":
                    outcome = Outcome.REJECTED
                errors.append(("text", v, position, *e))
            cells[v] = (
                outcome,
                _text_unanswered(gen[0], base.get("billed_input"), outcome, None, None, *e),
            )
        per_pos[position] = cells
    out: JsonObject = {}
    pairs: Pairs = []
    for v in variants:
        (o_in, in_loop), (o_cross, cross) = per_pos["in_loop"][v], per_pos["cross_turn"][v]
        if v == BASELINE:
            verdict = Verdict.BASELINE
        else:
            verdict = combine(o_in, o_cross)
            pairs.append((o_in, o_cross))
        out[v] = _text_entry(in_loop, cross, verdict)
    return out, wording, errors, pairs


def _pick(at: list[Rec], lane: str) -> tuple[Rec | None, Err | None]:
    """One mode's record on ``lane``: the answer that landed there, else the last error (an
    error has no lane), else (the last off-lane answer, why it does not count)."""
    on = [r for r in at if r.get("ok") and r.get("lane") == lane]
    if on:
        return on[-1], None
    failed = [r for r in at if not r.get("ok")]
    if failed:
        return failed[-1], None
    if at:
        n = max(int(r.get("attempt") or 0) for r in at) + 1
        return None, (None, f"did not land on lane {lane} in {n} attempt(s)")
    return None, None


def _opaque_cells(
    recs: list[Rec], lane: str, th: Thresholds, word: str | None, t1_run: str | None = None
) -> tuple[JsonObject, list[ErrorAt], Pairs]:
    """The opaque entries of ``lane``: turn-2 records replaying a turn 1 of this lane (their
    ``t1_lane``; records written before it existed fall back to their own lane) and, with
    ``t1_run``, replaying that run's capture (their ``t1_run``: when no record names it, the
    capture predates the field and the records that name no capture are its replays), each
    mode's answer taken on this lane only, so verbatim and stripped compare one upstream and
    one capture. Besides the entries (JSON) and the failed cells, each entry's outcomes."""
    out: JsonObject = {}
    errors: list[ErrorAt] = []
    pairs: Pairs = []
    mine = [
        r
        for r in recs
        if r.get("position") != "turn1" and (r.get("t1_lane") or r.get("lane")) in (None, lane)
    ]
    if t1_run is not None:
        named = any(r.get("t1_run") == t1_run for r in mine)
        mine = [r for r in mine if r.get("t1_run") == (t1_run if named else None)]
    groups: dict[tuple[str, str], list[Rec]] = {}  # (extra pair, position): records in order
    for r in mine:
        position, extra = r.get("position"), r.get("extra") or ""
        if isinstance(position, str) and isinstance(extra, str):
            groups.setdefault((extra, position), []).append(r)
    for extra in sorted({extra for extra, _ in groups}):
        name = "replay" + (f"+{extra}" if extra else "")
        entry: dict[str, tuple[Outcome, JsonObject]] = {}
        for position in POSITIONS:
            at = groups.get((extra, position))
            if not at:
                continue
            wording = at[-1].get("wording")  # a neutral-wording rerun comes after the probe's
            by_mode: dict[str, list[Rec]] = {}  # modes in order of appearance (str() of any)
            for r in at:
                if r.get("wording") == wording:
                    mode = r.get("variant")
                    if isinstance(mode, str):
                        by_mode.setdefault(mode, []).append(r)
                    else:  # named, but no record is of it
                        by_mode.setdefault(str(mode), [])
            modes: dict[str, Rec] = {}
            off: dict[str, Err] = {}
            for mode, of_mode in by_mode.items():
                rec, why = _pick(of_mode, lane)
                if rec is not None:
                    modes[mode] = rec
                elif why is not None:
                    off[mode] = why
            v, s, si = modes.get("verbatim"), modes.get("stripped"), modes.get("stand_in")
            errs = {**{m: _err(r) for m, r in modes.items() if not r.get("ok")}, **off}
            delta: int | None = None
            canary: bool | None = None
            base_ok = (s and s.get("ok")) or (si and si.get("ok"))
            if v is None or (not base_ok and ("stripped" in off or "stand_in" in off)):
                outcome = Outcome.MISSING
            elif not v.get("ok"):
                # an extra pair refused whole (e.g. reasoning.context) is a result: rejected
                refused = bool(extra) and v.get("error_kind") == "provider"
                outcome = Outcome.REJECTED if base_ok or refused else Outcome.BASELINE_FAILED
            else:
                base = s if s and s.get("ok") else si if si and si.get("ok") else None
                if word:
                    canary = canary_hit(str(v.get("reply") or ""), word)
                if base is None:
                    outcome = Outcome.REQUIRED
                else:
                    delta = int(v["billed_input"]) - int(base["billed_input"])
                    outcome = th.opaque_outcome(delta)
            for m, e in errs.items():
                errors.append(("opaque", m, position, *e))
            entry[position] = (
                outcome,
                _opaque_position(
                    verbatim_input=v.get("billed_input") if v else None,
                    stripped_input=s.get("billed_input") if s else None,
                    stand_in_input=si.get("billed_input") if si else None,
                    wording=wording,
                    errors={m: _call_error(*e) for m, e in errs.items()},
                    delta=delta,
                    canary=canary,
                    outcome=outcome,
                ),
            )
        if all(p in entry for p in POSITIONS):
            (o_in, in_loop), (o_cross, cross) = entry["in_loop"], entry["cross_turn"]
            out[name] = _opaque_entry(in_loop, cross, combine(o_in, o_cross))
            pairs.append((o_in, o_cross))
    return out, errors, pairs


def rows_of(
    k: tuple[str, str],
    dialect: str,
    recs: list[Rec],
    notes: list[str],
    t_row: tuple[int, str, str | None],
    canary: str,
    th: Thresholds,
    default_lane: str,
    want_direct: bool,
) -> list[JsonObject]:
    T, T_source, T_note = t_row
    # one pass over the records for what every lane's row shares (a million-record report
    # builds ~70,000 rows: each further pass over a key's records costs about a second)
    text_recs: list[Rec] = []
    op_recs: list[Rec] = []
    turn1s: list[Rec] = []
    ok_lanes: set[str] = set()  # str() of every truthy lane an answer landed on
    landed: set[JSON] = set()  # the lanes themselves (a string lane compares equal)
    fix_set: set[str] = set()
    prices: set[str] = set()
    cost: float = 0  # as sum() counts: no record costs the int 0 (matrix.json writes 0)
    errored = False
    for r in recs:
        get = r.get
        ok = get("ok")
        if ok:
            lane = get("lane")
            if lane:
                ok_lanes.add(str(lane))
            if isinstance(lane, str):
                landed.add(lane)
        else:
            errored = True
        step = get("step")
        if step == "text":
            text_recs.append(r)
        elif step == "opaque":
            op_recs.append(r)
            if get("position") == "turn1" and ok and get("tool_calls") and get("carriers"):
                turn1s.append(r)
        notes_fixed = get("fix_notes")
        if notes_fixed:
            fix_set.update(notes_fixed)
        cost += float(get("cost_usd") or 0.0)
        price = get("price")
        if price:
            prices.add(str(price))
    lanes = sorted(ok_lanes)
    multi = bool(lanes) and (len(lanes) > 1 or lanes[0] != default_lane)
    if want_direct and default_lane not in lanes:
        lanes.append(default_lane)
    if not lanes:
        lanes = [default_lane]
    variants = list(TEXT_VARIANTS.get(dialect, {}))
    fixes = tuple(sorted(fix_set))
    calls = len(recs)
    cost = round(cost, 8)
    price = _weakest(prices)
    text_by_position = _by_position(text_recs)
    rows = []
    for lane in lanes:
        # turn 1 of this lane: its carriers are what this lane's opaque cells replay
        t1 = newest_capture([r for r in turn1s if r.get("lane") == lane])
        word = canary_in(str(t1.get("reasoning_excerpt") or "")) if t1 is not None else None
        text, wording, errs, pairs = _text_cells(text_by_position, lane, canary, T, th, variants)
        t1_run = None if t1 is None else t1.get("run_id")
        opaque, oerrs, opairs = _opaque_cells(op_recs, lane, th, word, t1_run)
        not_direct = want_direct and lane != default_lane and (multi or default_lane not in lanes)
        unreached = want_direct and lane == default_lane and lane not in landed
        if not_direct or unreached:
            text = _unreached(text)
            opaque = _unreached(opaque)
            verdict = Verdict.DIRECT_LANE_NOT_REACHED
        else:
            verdict = row_verdict(pairs + opairs, errored)
        rows.append(
            _matrix_row(
                route=k[0],
                model=k[1],
                dialect=dialect,
                lane=lane,
                verdict=verdict,
                T=T,
                T_source=T_source,
                T_note=T_note,
                text=text,
                opaque=opaque,
                turn1=None if t1 is None else _turn1(t1),
                wording=wording,
                params_fix=fixes,
                notes=tuple(notes),
                errors=[
                    _row_error(*e)
                    for e in sorted(errs + oerrs, key=lambda e: (e[0], e[2], e[1], str(e[4])))
                ],
                calls=calls,
                cost_usd=cost,
                price=price,
            )
        )
    return rows


def _by_position(recs: list[Rec]) -> dict[str, dict[str, list[Rec]]]:
    """The text records at each position, per variant, in record order (every lane's cells
    read them: grouped once per (route, model), not once per lane and variant)."""
    out: dict[str, dict[str, list[Rec]]] = {p: {} for p in POSITIONS}
    for r in recs:
        position, variant = r.get("position"), r.get("variant")
        at = out.get(position) if isinstance(position, str) else None
        if at is not None and isinstance(variant, str):
            at.setdefault(variant, []).append(r)
    return out


def newest_capture(turn1s: list[Rec]) -> Rec | None:
    """The turn-1 capture a lane's row replays when several runs captured one (two runs
    sharing ``--out``, or records of two machines put together): the newest, by the time its
    record was written (``t``), the later line on a tie. Its ``run_id`` then selects the
    turn-2 records that replay it (their ``t1_run``), so a delta never compares the verbatim
    replay of one capture with the stripped replay of another."""
    best: Rec | None = None
    for r in turn1s:
        if best is None or float(r.get("t") or 0.0) >= float(best.get("t") or 0.0):
            best = r
    return best


_PRICE_ORDER = ("unknown", "listed", "billed", "free")


def price_of(recs: Iterable[Rec]) -> str:
    """The weakest price source among the calls (``unknown`` first); ABSENT for none."""
    return _weakest({str(r.get("price")) for r in recs if r.get("price")})


def _weakest(seen: set[str]) -> str:
    return next((p for p in _PRICE_ORDER if p in seen), ABSENT)


def row_verdict(entries: Pairs, errored: bool) -> Verdict:
    """The method's verdict of one row (:func:`model_verdict` over every carrier entry's
    outcomes: the text variants but ``none``, the opaque pairs); a row with no carrier entry
    is ``baseline-failed`` when a call of it failed (e.g. turn 1 on a dialect without text
    variants), else ``incomplete``."""
    if not entries:
        return Verdict.BASELINE_FAILED if errored else Verdict.INCOMPLETE
    return model_verdict(entries)


_UNREACHED = str(Verdict.DIRECT_LANE_NOT_REACHED)


def _unreached(entries: JsonObject) -> JsonObject:
    """Entries (JSON) of a lane that does not speak for the direct lane a model asked for: the
    verdict replaced where it stands."""
    out: JsonObject = {}
    for n, e in entries.items():
        assert isinstance(e, dict)
        out[n] = {**e, "verdict": _UNREACHED}
    return out


def _turn1(t1: Rec) -> JsonObject:
    carriers = [
        _carrier(c["kind"], c["path"], c["opaque"], c["size"], c["digest"], c["tool_call_id"])
        for c in t1.get("carriers") or ()
    ]
    return _turn1_json(t1.get("effort"), t1.get("response_id"), t1.get("lane"),
                       t1.get("tool_calls"), carriers)  # fmt: skip
