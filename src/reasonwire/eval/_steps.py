"""The method: which cells a (route, model) gets, and in which order.

Per model: T is measured first (the dialect's count endpoint, else chars/4). The ``in_loop``
``none`` baseline goes next and doubles as parameter discovery (a 400 naming a parameter
fixes the model's parameters for every later cell; a 403 or a content filter switches the
position to the neutral probe wording). Then the other text cells, the ``cross_turn``
position and the opaque step run at once; calls of many models overlap (the executor bounds
them per route). Lane completion runs last: a lane a variant landed on without a baseline
gets one, and ``want_direct`` models resample cells until they reach the route's default
(direct) lane. On a multi-lane route the opaque step is lane-bound: every turn-2 request is
resampled (``attempt`` += 1, up to ``lane_attempts``) until it lands on its turn 1's lane,
and every lane a text variant landed on (the direct lane only, for ``want_direct``) gets its
own turn 1 and turn-2 pairs.

Cells go through :class:`~reasonwire.eval._executor.Executor`, which answers, records and
pays for them.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, TypedDict

from reasonwire import credentials
from reasonwire.errors import ReasonwireError
from reasonwire.eval._cells import CallOutcome, Cell
from reasonwire.eval._config import EvalConfig, Target
from reasonwire.eval._executor import T_COUNTED, T_ESTIMATE, Executor
from reasonwire.eval._params import ParamFix, fix_for_error, route_params
from reasonwire.eval._records import Note, Records, TCount, TRecord
from reasonwire.eval._variants import (
    BASELINE,
    NO_TEXT_VARIANTS_REASON,
    OPAQUE_EXTRAS,
    OPAQUE_STAND_IN,
    TEXT_VARIANTS,
    carriers_for,
    variants_for,
)
from reasonwire.eval.fixture import POSITIONS, PROBES, TOOL, Fixture
from reasonwire.wire.count_tokens import count_body, count_path, parse_count
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import ABSENT, JSON, Assistant, Carrier, JsonObject, Turn
from reasonwire.wire.registry import get_dialect

EFFORT_LADDER: tuple[str, ...] = ("low", "medium", "high")
MAX_FIXES = 4
COUNT_PLAUSIBLE = 0.25
"""A counted carrier adds at least this share of the chars/4 estimate; less means the count
endpoint dropped the trace and counted only the item's framing (no measure of T)."""


@dataclass(frozen=True, slots=True)
class Captured:
    """Turn 1 answered with a tool call and a carrier: what turn 2 replays."""

    turn: Turn
    effort: str
    lane: str
    run_id: str
    """The run of the capture: a turn 1 answered from the records of an earlier run keeps
    that run's id."""


@dataclass(frozen=True, slots=True)
class NothingToReplay:
    """Turn 1 gave nothing turn 2 could replay; ``reason`` says why (noted in the matrix)."""

    reason: str


@dataclass(frozen=True, slots=True)
class BudgetStopped:
    """Turn 1 was not sent: the budget stopped it (the stop is recorded already)."""


Turn1Result: TypeAlias = Captured | NothingToReplay | BudgetStopped


class _ModelIds(TypedDict):
    """The fields every record about one (route, model) of a run starts with."""

    run_id: str
    fixture_id: str
    route: str
    model: str


class Method:
    """The method over one run's executor (see the module docstring)."""

    def __init__(self, cfg: EvalConfig, executor: Executor, fixture: Fixture) -> None:
        self.cfg = cfg
        self.x = executor
        self.records: Records = executor.records
        self.run_id = executor.run_id
        self.fixture = fixture
        # (route, model) -> lanes the opaque step was run for (None: the first, unpinned)
        self.opaque_tried: dict[tuple[str, str], set[str | None]] = {}
        # (route, model) -> its state once the in-loop baseline answered (the fold step reads it)
        self.states: dict[tuple[str, str], _ModelState] = {}

    def model_ids(self, target: Target) -> _ModelIds:
        return _ModelIds(
            run_id=self.run_id,
            fixture_id=self.fixture.fixture_id,
            route=target.route.name,
            model=target.model,
        )

    def note(self, target: Target, step: str, reason: str) -> None:
        self.records.append(Note(**self.model_ids(target), step=step, reason=reason))

    # -- one model ------------------------------------------------------------------------

    async def model(self, target: Target) -> None:
        state = _ModelState(
            params=route_params(target.route, target.model, self.cfg.effort, self.cfg.max_tokens)
        )
        dialect = target.route.dialect
        jobs: list[Awaitable[None]] = []
        if self.route_stopped(target):
            return
        await self.measure_T(target, state)
        if variants_for(dialect):
            base = await self.text_baseline(target, state, "in_loop", discover=True)
            if not base.ok:
                self.baseline_failed(target, base)
                return
            self.states[(target.route.name, target.model)] = state
            jobs.append(self.text_position(target, state, "in_loop"))
            jobs.append(self.cross_turn(target, state))
        else:
            self.note(target, "text", NO_TEXT_VARIANTS_REASON.get(dialect, "no text variants"))
        jobs.append(self.opaque(target, state))
        await asyncio.gather(*jobs)
        await self.lanes(target, state)

    def route_stopped(self, target: Target) -> bool:
        """True (and noted) when the route was stopped: its base URL did not answer."""
        why = self.x.dead_routes.get(target.route.name)
        if why is not None:
            self.note(target, "route", why)
        return why is not None

    def baseline_failed(self, target: Target, res: CallOutcome) -> None:
        """The in-loop baseline could not be obtained: nothing of this model (on this lane)
        can be compared, so no further cell is sent. A connection failure to the route's
        base URL stops the whole route."""
        if res.skipped:  # a budget stop (recorded) or a stopped route (noted)
            self.route_stopped(target)
            return
        self.route_stopped(target)
        status = res.status if res.status is not None else "no status"
        self.note(
            target,
            "baseline",
            f"baseline-failed: {status} {credentials.redact(res.error or '')[:300]}; "
            "no further call for this model",
        )

    async def measure_T(self, target: Target, state: _ModelState) -> None:
        """T of this (route, model): count(with carrier) - count(without) on the dialect's
        count endpoint, in the loop, for the first text variant the endpoint counts (adds at
        least ``COUNT_PLAUSIBLE`` of the estimate); else the chars/4 estimate, with the reason
        recorded. Count calls are free and unrecorded
        in ``calls.jsonl``; the result goes to ``runs.jsonl`` as a ``T`` record."""
        ident = (target.route.name, target.model)
        if ident in self.x.T:
            return
        est = self.fixture.trace_tokens_estimate
        spec = get_dialect(target.route.dialect).count
        names = [v for v in variants_for(target.route.dialect) if v != BASELINE]
        why, count = "", None
        if spec is None:
            why = f"no count endpoint for the {target.route.dialect} dialect"
        elif not names:
            why = f"no text variant on the {target.route.dialect} dialect (T is not used)"
        else:
            path = count_path(spec, target.model)
            try:
                base = self.text_cell(target, state, "in_loop", BASELINE).body()
                resp = await self.x.post(target.route, path, count_body(spec, base))
                without = parse_count(spec, resp.content)
                for name in names:
                    body = self.text_cell(target, state, "in_loop", name).body()
                    resp = await self.x.post(target.route, path, count_body(spec, body))
                    with_ = parse_count(spec, resp.content)
                    if with_ - without >= COUNT_PLAUSIBLE * est:
                        count = TCount(name, with_, without)
                        self.x.T[ident] = (with_ - without, T_COUNTED)
                        break
                else:
                    why = (
                        f"the count endpoint counted none of {', '.join(names)} in the loop "
                        f"(each added < {COUNT_PLAUSIBLE} x {est} tokens)"
                    )
            except ReasonwireError as exc:
                why = f"count endpoint failed: {credentials.redact(str(exc))[:300]}"
        T, source = self.x.T.setdefault(ident, (est, T_ESTIMATE))
        self.records.append(
            TRecord(
                **self.model_ids(target),
                T=T,
                T_source=source,
                T_estimate=est,
                T_note=why or ABSENT,
                count=count or ABSENT,
            )
        )

    def text_cell(
        self,
        target: Target,
        state: _ModelState,
        position: str,
        variant: str,
        attempt: int = 0,
        *,
        trace: str | None = None,
        probes: dict[str, str] = PROBES,
    ) -> Cell:
        """One text cell; ``trace`` and ``probes`` replace the fixture's (the fold step's
        long trace and its every-word probe), the rest (fills, wording, fixes) is the same."""
        dialect = target.route.dialect
        carriers = carriers_for(dialect, variant, self.fixture.trace if trace is None else trace)
        kinds = {c.kind for c in carriers}
        fill = tuple(
            Carrier(dialect, k, f"fix.{k}", "", False) for k in state.fix.fill if k not in kinds
        )
        wording = state.wording.get(position, "probe")
        return Cell(
            route=target.route,
            model=target.model,
            step="text",
            position=position,
            variant=variant,
            wording=wording,
            effort=self.cfg.effort,
            transcript=tuple(self.fixture.transcript(position, wording, fill + carriers, probes)),
            tools=(TOOL,),
            params=state.fix.apply(state.params),
            fix=state.fix,
            attempt=attempt,
        )

    async def text_baseline(
        self, target: Target, state: _ModelState, position: str, discover: bool
    ) -> CallOutcome:
        """The ``none`` cell of a position, fixing parameters and wording as it learns."""
        kinds = tuple(k for k, _ in TEXT_VARIANTS[target.route.dialect].get("all", ()))
        kinds = kinds or tuple(
            spec[0] for specs in TEXT_VARIANTS[target.route.dialect].values() for spec in specs
        )
        for _ in range(MAX_FIXES + 2):
            res = await self.x.call(self.text_cell(target, state, position, BASELINE), target)
            if res.ok or res.skipped:
                return res
            if (res.status == 403 or res.filtered) and state.wording.get(position) != "neutral":
                state.wording[position] = "neutral"
                continue
            if discover and res.status == 400 and len(state.fix.drop) < MAX_FIXES:
                fix = fix_for_error(
                    state.fix.apply(state.params),
                    res.error or "",
                    res.error_body or "",
                    kinds,
                )
                if fix is not None and fix.signature() != ParamFix().signature():
                    merged = state.fix.plus(fix)
                    if merged.signature() != state.fix.signature():
                        state.fix = merged
                        continue
            return res
        return res

    async def text_position(self, target: Target, state: _ModelState, position: str) -> None:
        names = [v for v in variants_for(target.route.dialect) if v != BASELINE]
        await asyncio.gather(
            *(self.x.call(self.text_cell(target, state, position, v), target) for v in names)
        )

    async def cross_turn(self, target: Target, state: _ModelState) -> None:
        if state.wording.get("in_loop") == "neutral":
            state.wording.setdefault("cross_turn", "neutral")
        res = await self.text_baseline(target, state, "cross_turn", discover=False)
        if res.skipped:
            return
        await self.text_position(target, state, "cross_turn")

    # -- opaque step ----------------------------------------------------------------------

    def turn1_cell(self, target: Target, state: _ModelState, effort: str, attempt: int = 0) -> Cell:
        params = route_params(target.route, target.model, effort, self.cfg.max_tokens)
        return Cell(
            route=target.route,
            model=target.model,
            step="opaque",
            position="turn1",
            variant="turn1",
            wording="-",
            effort=effort,
            transcript=tuple(self.fixture.opening()),
            tools=(TOOL,),
            params=state.fix.apply(params),
            fix=state.fix,
            attempt=attempt,
        )

    async def on_lane(
        self, make: Callable[[int], Cell], target: Target, lane: str | None
    ) -> CallOutcome:
        """Send ``make(0)``; with ``lane``, resample (attempt += 1, up to ``lane_attempts``)
        while the answer lands on another lane. An error, a budget skip or an answer on
        ``lane`` ends it; the last outcome is returned (off the lane when none landed)."""
        tries = self.cfg.lane_attempts + 1 if lane is not None else 1
        res = await self.x.call(make(0), target)
        for attempt in range(1, tries):
            if res.skipped or not res.ok or res.lane == lane or self.x.over_budget(target):
                break
            res = await self.x.call(make(attempt), target)
        return res

    async def turn1(self, target: Target, state: _ModelState, lane: str | None) -> Turn1Result:
        """Turn 1 up the effort ladder (:meth:`ladder`) until it answers with a tool call and a
        carrier, on ``lane`` when given. The method raises the effort when turn 1 returns no
        carrier *or no tool call* (a reasoning model may answer in prose at a low effort and
        call the tool once it thinks more), so both climb; the walk ends at the top level,
        and the reason names that level and the ladder walked.
        Returns the capture, why there is nothing to replay, or the budget stop."""
        why = "turn 1 gave nothing to replay"
        ladder = self.ladder(target)
        for effort in ladder:
            make = functools.partial(self.turn1_cell, target, state, effort)
            res = await self.on_lane(make, target, lane)
            if res.skipped:
                return BudgetStopped()
            if not res.ok or res.turn is None:
                return NothingToReplay(
                    f"turn 1 failed at effort {effort}: {res.status} {res.error}"
                )
            if lane is not None and res.lane != lane:
                return NothingToReplay(
                    f"turn 1 did not land on lane {lane} in {self.cfg.lane_attempts + 1} "
                    f"attempts at effort {effort}"
                )
            turn = res.turn
            if turn.tool_calls and turn.carriers:
                assert res.record is not None
                return Captured(turn, effort, str(res.lane), res.record.run_id)
            why = (
                f"no tool call at effort {effort}"
                if not turn.tool_calls
                else f"no reasoning carrier at effort {effort}"
            )
        if len(ladder) > 1:
            return NothingToReplay(f"{why}, the top of the effort ladder ({' > '.join(ladder)})")
        return NothingToReplay(f"{why} (the route takes no effort control: one level only)")

    def ladder(self, target: Target) -> tuple[str, ...]:
        """The efforts turn 1 may walk: the ladder when the route takes an effort control
        (its request differs between levels), else the first level only."""
        mt = self.cfg.max_tokens
        bodies = {
            json.dumps(route_params(target.route, target.model, e, mt), sort_keys=True)
            for e in EFFORT_LADDER
        }
        return EFFORT_LADDER if len(bodies) > 1 else EFFORT_LADDER[:1]

    async def opaque(self, target: Target, state: _ModelState) -> None:
        """The opaque step on the lane turn 1 lands on (the direct lane for ``want_direct``
        models on a multi-lane route); :meth:`lanes` adds the other lanes later."""
        rule = target.route.lanes
        want = rule.prefixes and target.model in self.cfg.want_direct
        await self.opaque_on(target, state, rule.default if want else None)

    async def opaque_on(self, target: Target, state: _ModelState, lane: str | None) -> None:
        """Turn 1 (on ``lane`` when given), then turn 2 verbatim/stripped in both positions,
        each request resampled until it lands on turn 1's lane: a delta across lanes would
        compare two different upstreams."""
        self.opaque_tried.setdefault((target.route.name, target.model), set()).add(lane)
        found = await self.turn1(target, state, lane)
        if isinstance(found, NothingToReplay):
            self.note(target, "opaque", found.reason + (f" (lane {lane})" if lane else ""))
        if not isinstance(found, Captured):
            return
        turn, effort, landed, t1_run = found.turn, found.effort, found.lane, found.run_id
        self.opaque_tried[(target.route.name, target.model)].add(landed)
        params = state.fix.apply(
            route_params(target.route, target.model, effort, self.cfg.max_tokens)
        )
        extras: dict[str, Mapping[str, JSON]] = {"": {}}
        extras.update(OPAQUE_EXTRAS.get(target.route.dialect, {}))
        jobs = [
            self.turn2(
                target,
                state,
                turn,
                effort,
                position,
                name,
                deep_merge(dict(params), frag),
                landed,
                t1_run,
            )
            for position in POSITIONS
            for name, frag in extras.items()
        ]
        await asyncio.gather(*jobs)

    async def turn2(
        self,
        target: Target,
        state: _ModelState,
        turn: Turn,
        effort: str,
        position: str,
        extra: str,
        params: JsonObject,
        t1_lane: str,
        t1_run: str,
    ) -> None:
        wording = state.wording.get(position, "probe")
        pin = t1_lane if target.route.lanes.prefixes else None
        for _ in range(2):
            msgs = {
                "verbatim": (turn.as_message(), True),
                "stripped": (turn.as_message(), False),
            }
            if target.route.dialect in OPAQUE_STAND_IN:
                msgs["stand_in"] = (Assistant(text=turn.text, tool_calls=turn.tool_calls), True)

            def make(mode: str, msg: Assistant, keep: bool, wording: str) -> Callable[[int], Cell]:
                def cell(attempt: int) -> Cell:
                    return Cell(
                        route=target.route,
                        model=target.model,
                        step="opaque",
                        position=position,
                        variant=mode,
                        wording=wording,
                        effort=effort,
                        transcript=tuple(self.fixture.replay(msg, position, wording)),
                        tools=(TOOL,),
                        params=params,
                        fix=state.fix,
                        extra=extra,
                        keep_carriers=keep,
                        attempt=attempt,
                        t1_lane=t1_lane,
                        t1_run=t1_run,
                    )

                return cell

            outs = await asyncio.gather(
                *(
                    self.on_lane(make(mode, msg, keep, wording), target, pin)
                    for mode, (msg, keep) in msgs.items()
                )
            )
            refused = [o for o in outs if o.status == 403 or o.filtered]
            if refused and wording != "neutral":
                wording = "neutral"
                continue
            for mode, o in zip(msgs, outs, strict=True):
                if o.ok and pin is not None and o.lane != pin:
                    self.note(
                        target,
                        "opaque",
                        f"turn 2 {mode} ({position}{'+' + extra if extra else ''}) did not "
                        f"land on turn 1's lane {pin} in {self.cfg.lane_attempts + 1} attempts",
                    )
            return

    # -- lanes ----------------------------------------------------------------------------

    async def lanes(self, target: Target, state: _ModelState) -> None:
        """Give every lane a variant landed on its own baseline and its own opaque step;
        resample towards the direct lane for ``want_direct`` models. Only routes with lane
        prefixes have more than one."""
        rule = target.route.lanes
        if not rule.prefixes:
            return
        want = target.model in self.cfg.want_direct
        landed: set[str] = set()
        for position in POSITIONS:
            for variant, lanes in self._lanes_of(target, position).items():
                if variant != BASELINE:
                    landed |= lanes
        for position in POSITIONS:
            seen = self._lanes_of(target, position)
            for variant in variants_for(target.route.dialect):
                # every lane a carrier landed on gets its own baseline and full variant set
                goal = {rule.default} if want else landed
                missing = goal - seen.get(variant, set())
                attempt = 1
                while (
                    missing and attempt <= self.cfg.lane_attempts and not self.x.over_budget(target)
                ):
                    res = await self.x.call(
                        self.text_cell(target, state, position, variant, attempt), target
                    )
                    attempt += 1
                    if res.ok:
                        missing.discard(str(res.lane))
        tried = self.opaque_tried.get((target.route.name, target.model), set())
        todo = sorted(({rule.default} if want else landed) - tried)
        await asyncio.gather(*(self.opaque_on(target, state, lane) for lane in todo))

    def _lanes_of(self, target: Target, position: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for res in self.x.done_outcomes():
            rec = res.record
            if (
                rec is not None
                and rec.cell.route == target.route.name
                and rec.cell.model == target.model
                and rec.cell.step == "text"
                and rec.cell.position == position
                and rec.ok
            ):
                out.setdefault(rec.cell.variant, set()).add(str(rec.lane))
        return out


@dataclass
class _ModelState:
    params: JsonObject
    fix: ParamFix = field(default_factory=ParamFix)
    wording: dict[str, str] = field(default_factory=dict)


def estimate_cells(targets: Sequence[Target]) -> int:
    """Cells a run will send at least (for the progress bar's total)."""
    n = 0
    for t in targets:
        v = len(variants_for(t.route.dialect))
        extras = 1 + len(OPAQUE_EXTRAS.get(t.route.dialect, {}))
        modes = 3 if t.route.dialect in OPAQUE_STAND_IN else 2
        n += 2 * v + 1 + 2 * extras * modes
    return n
