"""Rows of the matrix: the verdicts of one (route, model) per lane, from its call records.

Per lane, the text step compares each variant's billed input with the ``none`` baseline's
that landed on the same lane (same probe wording and parameters), and the opaque step
compares turn 2 ``verbatim`` with ``stripped`` (or ``stand_in``), both on the lane, replaying
that lane's turn 1. The rows are :class:`reasonwire.method.matrix.MatrixRow`; the outcomes
and verdicts the words of :mod:`reasonwire.method.verdicts`.

Call records come in as JSON (see :mod:`reasonwire.eval.matrix` for why).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace

from reasonwire.eval._variants import BASELINE, TEXT_VARIANTS
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
    TextPosition,
    TextUnanswered,
    TextUnbased,
    Turn1,
)
from reasonwire.method.verdicts import Outcome, Thresholds, Verdict, combine, model_verdict
from reasonwire.wire.model import ABSENT, JSON, JsonObject

Rec = JsonObject
"""A call record as read (JSON, slimmed of what the matrix never reads)."""


def _err(rec: Rec) -> CallError:
    return CallError(rec.get("status"), rec.get("error"))


def _row_error(step: str, variant: str, position: str, e: CallError) -> RowError:
    return RowError(step, variant, position, e.status, e.error)


def _text_cells(
    by_position: Mapping[str, list[Rec]],
    lane: str,
    canary: str,
    T: int,
    th: Thresholds,
    variants: Iterable[str],
) -> tuple[dict[str, TextEntry], dict[str, str], list[RowError]]:
    wording: dict[str, str] = {}
    errors: list[RowError] = []
    per_pos: dict[str, dict[str, TextPosition]] = {}
    for position in POSITIONS:
        at = by_position[position]
        bases = [r for r in at if r.get("variant") == BASELINE]
        ok_bases = [r for r in bases if r.get("ok") and r.get("lane") == lane]
        cells: dict[str, TextPosition] = {}
        if not ok_bases:
            # an answer on another lane says nothing of this one: only a failure is reported
            failed = [r for r in bases if not r.get("ok")]
            last = failed[-1] if failed else None
            e = _err(last) if last else CallError(None, None)
            outcome = Outcome.BASELINE_FAILED if last else Outcome.MISSING
            for v in variants:
                cells[v] = TextUnbased(
                    outcome, e.status, e.error, last.get("wording") if last else None
                )
            if last:
                errors.append(_row_error("text", BASELINE, position, e))
            per_pos[position] = cells
            continue
        base = ok_bases[-1]
        gen = (base.get("wording"), base.get("params_sig"))
        wording[position] = str(base.get("wording"))
        by_variant: dict[JSON, list[Rec]] = defaultdict(list)
        for r in at:
            if (r.get("wording"), r.get("params_sig")) == gen:
                by_variant[r.get("variant")].append(r)
        for v in variants:
            mine = by_variant.get(v, [])
            oks = (
                [base]
                if v == BASELINE
                else [r for r in mine if r.get("ok") and r.get("lane") == lane]
            )
            if oks:
                r = oks[0]
                delta = int(r["billed_input"]) - int(base["billed_input"])
                cells[v] = TextMeasured(
                    wording=gen[0],
                    baseline_input=base.get("billed_input"),
                    outcome=th.text_outcome(delta, T) if v != BASELINE else Outcome.BASELINE,
                    delta=delta,
                    input=r.get("billed_input"),
                    ratio=round(delta / T, 3) if T else None,
                    canary=canary_hit(str(r.get("reply") or ""), canary),
                    status=r.get("status"),
                    error=None,
                )
                continue
            failed = [r for r in mine if not r.get("ok") and r.get("lane") in (None, lane)]
            e, outcome = CallError(None, None), Outcome.MISSING
            if failed:
                f = failed[-1]
                e = _err(f)
                if f.get("error_kind") == "provider":
                    outcome = Outcome.REJECTED
                errors.append(_row_error("text", v, position, e))
            cells[v] = TextUnanswered(
                gen[0], base.get("billed_input"), outcome, None, None, e.status, e.error
            )
        per_pos[position] = cells
    out: dict[str, TextEntry] = {}
    for v in variants:
        in_loop, cross = per_pos["in_loop"][v], per_pos["cross_turn"][v]
        verdict = Verdict.BASELINE if v == BASELINE else combine(in_loop.outcome, cross.outcome)
        out[v] = TextEntry(in_loop, cross, verdict)
    return out, wording, errors


def _pick(at: list[Rec], lane: str) -> tuple[Rec | None, CallError | None]:
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
        return None, CallError(None, f"did not land on lane {lane} in {n} attempt(s)")
    return None, None


def _opaque_cells(
    recs: list[Rec], lane: str, th: Thresholds, word: str | None, t1_run: str | None = None
) -> tuple[dict[str, OpaqueEntry], list[RowError]]:
    """The opaque entries of ``lane``: turn-2 records replaying a turn 1 of this lane (their
    ``t1_lane``; records written before it existed fall back to their own lane) and, with
    ``t1_run``, replaying that run's capture (their ``t1_run``: when no record names it, the
    capture predates the field and the records that name no capture are its replays), each
    mode's answer taken on this lane only, so verbatim and stripped compare one upstream and
    one capture."""
    out: dict[str, OpaqueEntry] = {}
    errors: list[RowError] = []
    mine = [
        r
        for r in recs
        if r.get("position") != "turn1" and (r.get("t1_lane") or r.get("lane")) in (None, lane)
    ]
    if t1_run is not None:
        named = any(r.get("t1_run") == t1_run for r in mine)
        mine = [r for r in mine if r.get("t1_run") == (t1_run if named else None)]
    extras = sorted({str(r.get("extra") or "") for r in mine})
    for extra in extras:
        name = "replay" + (f"+{extra}" if extra else "")
        entry: dict[str, OpaquePosition] = {}
        for position in POSITIONS:
            at = [
                r for r in mine if r.get("position") == position and (r.get("extra") or "") == extra
            ]
            if not at:
                continue
            wording = at[-1].get("wording")  # a neutral-wording rerun comes after the probe's
            at = [r for r in at if r.get("wording") == wording]
            modes: dict[str, Rec] = {}
            off: dict[str, CallError] = {}
            for mode in dict.fromkeys(str(r.get("variant")) for r in at):
                rec, why = _pick([r for r in at if r.get("variant") == mode], lane)
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
                errors.append(_row_error("opaque", m, position, e))
            entry[position] = OpaquePosition(
                verbatim_input=v.get("billed_input") if v else None,
                stripped_input=s.get("billed_input") if s else None,
                stand_in_input=si.get("billed_input") if si else None,
                wording=wording,
                errors=errs,
                delta=delta,
                canary=canary,
                outcome=outcome,
            )
        if all(p in entry for p in POSITIONS):
            in_loop, cross = entry["in_loop"], entry["cross_turn"]
            out[name] = OpaqueEntry(in_loop, cross, combine(in_loop.outcome, cross.outcome))
    return out, errors


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
) -> list[MatrixRow]:
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
        text, wording, errs = _text_cells(text_by_position, lane, canary, T, th, variants)
        t1_run = None if t1 is None else t1.get("run_id")
        opaque, oerrs = _opaque_cells(op_recs, lane, th, word, t1_run)
        not_direct = want_direct and lane != default_lane and (multi or default_lane not in lanes)
        unreached = want_direct and lane == default_lane and lane not in landed
        if not_direct or unreached:
            text = _unreached(text)
            opaque = _unreached(opaque)
            verdict = Verdict.DIRECT_LANE_NOT_REACHED
        else:
            verdict = row_verdict(text, opaque, errored)
        rows.append(
            MatrixRow(
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
                errors=tuple(
                    sorted(
                        errs + oerrs,
                        key=lambda e: (e.step, e.position, e.variant, str(e.error)),
                    )
                ),
                calls=calls,
                cost_usd=cost,
                price=price,
            )
        )
    return rows


def _by_position(recs: list[Rec]) -> dict[str, list[Rec]]:
    """The text records at each position, in record order."""
    out: dict[str, list[Rec]] = {p: [] for p in POSITIONS}
    for r in recs:
        position = r.get("position")
        at = out.get(position) if isinstance(position, str) else None
        if at is not None:
            at.append(r)
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


def row_verdict(
    text: Mapping[str, TextEntry], opaque: Mapping[str, OpaqueEntry], errored: bool
) -> Verdict:
    """The method's verdict of one row (:func:`model_verdict` over every carrier entry: the
    text variants but ``none``, the opaque pairs); a row with no carrier entry is
    ``baseline-failed`` when a call of it failed (e.g. turn 1 on a dialect without text
    variants), else ``incomplete``."""
    entries = [(e.in_loop.outcome, e.cross_turn.outcome) for v, e in text.items() if v != BASELINE]
    entries += [(e.in_loop.outcome, e.cross_turn.outcome) for e in opaque.values()]
    if not entries:
        return Verdict.BASELINE_FAILED if errored else Verdict.INCOMPLETE
    return model_verdict(entries)


def _unreached(entries: Mapping[str, JSON]) -> JsonObject:
    """Entries of a lane that does not speak for the direct lane a model asked for."""
    return {n: replace(e, verdict=Verdict.DIRECT_LANE_NOT_REACHED) for n, e in entries.items()}


def _turn1(t1: Rec) -> Turn1:
    carriers = tuple(
        CarrierSummary(c["kind"], c["path"], c["opaque"], c["size"], c["digest"], c["tool_call_id"])
        for c in t1.get("carriers") or ()
    )
    return Turn1(t1.get("effort"), t1.get("response_id"), t1.get("lane"), t1.get("tool_calls"),
                 carriers)  # fmt: skip
