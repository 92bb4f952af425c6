"""The async runner: every (route, model) measured concurrently, calls bounded per route.

Per model: the ``in_loop`` ``none`` baseline goes first and doubles as parameter discovery (a
400 naming a parameter fixes the model's parameters for every later cell; a 403 or a content
filter switches the position to the neutral probe wording). Then the other text cells, the
``cross_turn`` position and the opaque step run at once; a per-route semaphore (``workers``)
bounds the calls in flight, so calls of many models overlap. Lane completion runs last: a
lane a variant landed on without a baseline gets one, and ``want_direct`` models resample
cells until they reach the route's default (direct) lane. On a multi-lane route the opaque
step is lane-bound: every turn-2 request is resampled (``attempt`` += 1, up to
``lane_attempts``) until it lands on its turn 1's lane, and every lane a text variant landed
on (the direct lane only, for ``want_direct``) gets its own turn 1 and turn-2 pairs.

Every answer is written to ``calls.jsonl`` before it is used; a cell whose key is already
recorded (same route, endpoint, exact body and lane attempt) is answered from the record, so a
re-run with the same ``--out`` resumes and pays nothing twice.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from reasonwire import credentials
from reasonwire.errors import (
    CredentialError,
    MalformedBody,
    ProviderError,
    ReasonwireError,
    TransportError,
)
from reasonwire.eval.budget import FREE, UNKNOWN_PRICE, Budget, Price, call_cost, worst_case
from reasonwire.eval.cells import FILTER_REASONS, CallStats, Cell, Outcome, carrier_summary
from reasonwire.eval.fixture import POSITIONS, TOOL, Fixture, make_fixture
from reasonwire.eval.params import DEFAULT_MAX_TOKENS, ParamFix, fix_for_error, route_params
from reasonwire.eval.records import CALLS, RUNS, Records, read_jsonl, request_key
from reasonwire.eval.variants import (
    BASELINE,
    NO_TEXT_VARIANTS_REASON,
    OPAQUE_EXTRAS,
    OPAQUE_STAND_IN,
    TEXT_VARIANTS,
    carriers_for,
    variants_for,
)
from reasonwire.http import RetryPolicy, apost_json, make_async_client
from reasonwire.routes import Route
from reasonwire.templates.fixture import DEFAULT_SEED
from reasonwire.wire.count_tokens import count_body, count_path, parse_count
from reasonwire.wire.model import Assistant, Carrier, Turn
from reasonwire.wire.registry import get_dialect

EFFORT_LADDER: tuple[str, ...] = ("low", "medium", "high")
MAX_FIXES = 4
CANARY_IN_TEXT = re.compile(r"The verification word for this task is ([A-Za-z]+)\.")
DEFAULT_DOTENV = "~/.hermes/.env"
AUTH_WAIT_S = 15.0
"""After a 401 with an unchanged key: how long the key's owner gets to refresh it."""
T_ESTIMATE = "chars/4"
T_COUNTED = "count-endpoint"
COUNT_PLAUSIBLE = 0.25
"""A counted carrier adds at least this share of the chars/4 estimate; less means the count
endpoint dropped the trace and counted only the item's framing (no measure of T)."""
_RESEND = frozenset({"transport", "auth"})
"""Error kinds a resumed run sends again: the answer said nothing about the cell."""


@dataclass(frozen=True)
class Target:
    """One (route, model) to measure, with its price for the budget."""

    route: Route
    model: str
    price: Price | None = None


@dataclass
class EvalConfig:
    """Everything a run needs. ``transport`` replaces the network (tests, benches)."""

    targets: list[Target]
    out: Path
    budget: float = 10.0
    workers: int = 8
    want_direct: frozenset[str] = frozenset()
    lane_attempts: int = 8
    opaque_min: int = 25
    consume_ratio: float = 0.5
    seed: int = DEFAULT_SEED
    effort: str | None = "low"
    max_tokens: int = DEFAULT_MAX_TOKENS
    retries: RetryPolicy = field(default_factory=lambda: RetryPolicy(retries=4))
    progress: bool = False
    transport: httpx.AsyncBaseTransport | None = None
    timeout: float = 300.0
    label: str = ""
    dotenv: str = DEFAULT_DOTENV
    auth_wait_s: float = AUTH_WAIT_S
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # the 401 wait (tests inject)


@dataclass
class RunResult:
    out: Path
    run_id: str
    sent: int
    reused: int
    errors: int
    spent_usd: float
    budget_stopped: bool
    elapsed_s: float
    calls_per_model: dict[str, int] = field(default_factory=dict)


def _key_of(route: Route, dotenv: str = DEFAULT_DOTENV) -> str | None:
    """The route's key, read now (None when the route needs none): the auth file's first
    key path that holds one, or the process environment, then the ``dotenv`` file."""
    src = route.key
    if not src.needs_key:
        return None
    if src.auth_file:
        paths = "|".join(src.key_paths)
        return credentials.read_key(f"authfile:{src.auth_file}#{paths}")
    assert src.env is not None
    try:
        return credentials.read_key(f"env:{src.env}")
    except CredentialError:
        return credentials.read_key(credentials.DotenvKey(dotenv, src.env))


class _Run:
    def __init__(self, cfg: EvalConfig, records: Records) -> None:
        self.cfg = cfg
        self.records = records
        self.budget = Budget(records, cfg.budget)
        self.fixture: Fixture = make_fixture(cfg.seed)
        self.run_id = uuid.uuid4().hex[:12]
        self.done: dict[str, dict[str, Any]] = {}
        for rec in read_jsonl(records.out / CALLS):
            if rec.get("type") == "call" and rec.get("error_kind") not in _RESEND:
                self.done[str(rec.get("key"))] = rec
        self.inflight: dict[str, asyncio.Task[Outcome]] = {}
        self.sems: dict[str, asyncio.Semaphore] = {}
        self.stats = CallStats()
        self.per_model: dict[str, int] = {}
        self.stopped = False
        self.on_progress: Callable[[int], None] = lambda n: None
        self.client: httpx.AsyncClient | None = None
        # (route, model) -> lanes the opaque step was run for (None: the first, unpinned)
        self.opaque_tried: dict[tuple[str, str], set[str | None]] = {}
        # (route, model) -> (T, T_source); measured ones from earlier runs are reused
        self.T: dict[tuple[str, str], tuple[int, str]] = {}
        for rec in read_jsonl(records.out / RUNS):
            if (
                rec.get("type") == "T"
                and rec.get("fixture_id") == self.fixture.fixture_id
                and rec.get("T_source") == T_COUNTED
            ):
                self.T[(str(rec["route"]), str(rec["model"]))] = (int(rec["T"]), T_COUNTED)

    # -- one request, with the 401 protocol ----------------------------------------------

    async def post(self, route: Route, path: str, body: Any) -> httpx.Response:
        """POST ``body``; on a 401 re-read the key once (waiting ``auth_wait_s`` first when
        it is unchanged, so its owner can refresh it) and retry once. A second 401 raises."""
        assert self.client is not None
        url = route.base_url + path
        key = _key_of(route, self.cfg.dotenv)
        try:
            return await apost_json(
                self.client, url, body, route.auth_headers(key), retries=self.cfg.retries
            )
        except ProviderError as exc:
            if exc.status != 401 or key is None:
                raise
        fresh = _key_of(route, self.cfg.dotenv)
        if fresh == key:
            await self.cfg.sleep(self.cfg.auth_wait_s)
            fresh = _key_of(route, self.cfg.dotenv)
        return await apost_json(
            self.client, url, body, route.auth_headers(fresh), retries=self.cfg.retries
        )

    # -- one call -------------------------------------------------------------------------

    def call(self, cell: Cell, target: Target) -> Awaitable[Outcome]:
        body = cell.body()
        # a server reasonwire starts itself gets a fresh port each run: its URL is not identity
        where = ("" if cell.route.local else cell.route.base_url) + cell.path()
        key = request_key(cell.route.name, where, body, cell.attempt)
        task = self.inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._call(cell, target, body, key))
            self.inflight[key] = task
        return task

    async def _call(self, cell: Cell, target: Target, body: dict[str, Any], key: str) -> Outcome:
        dialect = get_dialect(cell.route.dialect)
        rec = self.done.get(key)
        if rec is not None:
            self.stats.reused += 1
            self.on_progress(1)
            kept = None
            if rec.get("ok") and rec.get("raw") is not None:
                kept = dialect.parse_response(rec["raw"])
            return Outcome(rec, kept, reused=True)
        if self.stopped:
            return Outcome({"ok": False, "error": "budget", "error_kind": "budget"}, skipped=True)
        price = target.price or (FREE if cell.route.local else Price(*UNKNOWN_PRICE))
        payload = json.dumps(body, ensure_ascii=False).encode()
        worst = worst_case(len(payload), _max_output(cell.params, self.cfg.max_tokens), price)
        labels = cell.labels()
        rid = self.budget.reserve(
            worst, {"key": key, "route": labels["route"], "model": cell.model}
        )
        if rid is None:
            self._budget_stop(cell, worst)
            return Outcome({"ok": False, "error": "budget", "error_kind": "budget"}, skipped=True)
        sem = self.sems.setdefault(cell.route.name, asyncio.Semaphore(self.cfg.workers))
        started = time.monotonic()
        out: dict[str, Any] = {"type": "call", "key": key, "run_id": self.run_id}
        out["fixture_id"] = self.fixture.fixture_id
        out.update(labels)
        out["T"], out["T_source"] = self.T.get(
            (cell.route.name, cell.model), (self.fixture.trace_tokens_estimate, T_ESTIMATE)
        )
        turn: Turn | None = None
        async with sem:
            try:
                resp = await self.post(cell.route, cell.path(), body)
                out["status"] = resp.status_code
                turn = dialect.parse_response(resp.content)
            except ProviderError as exc:
                kind = "auth" if exc.status == 401 else "provider"
                out.update(ok=False, status=exc.status, error_kind=kind)
                out["error"] = exc.provider_message or exc.body_excerpt
                out["error_body"] = exc.body_excerpt
            except (TransportError, CredentialError) as exc:
                out.update(ok=False, status=None, error_kind="transport", error=str(exc))
            except MalformedBody as exc:
                out.update(ok=False, error_kind="malformed", error=str(exc))
            except ReasonwireError as exc:
                out.update(ok=False, status=None, error_kind="other", error=str(exc))
        out["elapsed_s"] = round(time.monotonic() - started, 3)
        cost, estimate = 0.0, True
        if turn is not None:
            filtered = turn.finish_reason in FILTER_REASONS
            billed = turn.usage.billed_input if turn.usage else None
            out.update(
                ok=not filtered and billed is not None,
                filtered=filtered,
                lane=cell.route.lanes.lane(turn.response_id),
                response_id=turn.response_id,
                billed_input=billed,
                usage=turn.usage.as_dict() if turn.usage else None,
                finish_reason=turn.finish_reason,
                reply=turn.text[:400],
                tool_calls=len(turn.tool_calls),
                carriers=carrier_summary(turn),
            )
            if billed is None and not filtered:
                out["error"] = "answer without usage figures"
            elif filtered:
                out["error"] = f"finish_reason {turn.finish_reason} (safety filter)"
            if cell.position == "turn1":
                out["raw"] = turn.raw
                out["reasoning_excerpt"] = turn.reasoning_text[:200]
            cost, estimate = call_cost(turn.usage, price)
        out["cost_usd"] = cost
        out["cost_estimate"] = estimate
        out["t"] = time.time()
        self.records.append(CALLS, out)
        self.budget.settle(rid, cost, estimate, {"key": key, "model": cell.model})
        self.stats.sent += 1
        if not out.get("ok"):
            self.stats.errors += 1
        name = f"{cell.route.name}/{cell.model}"
        self.per_model[name] = self.per_model.get(name, 0) + 1
        self.on_progress(1)
        # re-read from what was written, so a resumed run sees the same record
        return Outcome(out, turn)

    def _budget_stop(self, cell: Cell, worst: float) -> None:
        if not self.stopped:
            self.stopped = True
            self.records.append(
                RUNS,
                {
                    "type": "budget_stop",
                    "run_id": self.run_id,
                    "limit_usd": self.cfg.budget,
                    "committed_usd": self.budget.committed(),
                    "next_call_worst_usd": worst,
                    "route": cell.route.name,
                    "model": cell.model,
                    "t": time.time(),
                },
            )

    def note(self, target: Target, step: str, reason: str, **extra: Any) -> None:
        self.records.append(
            RUNS,
            {
                "type": "note",
                "run_id": self.run_id,
                "fixture_id": self.fixture.fixture_id,
                "route": target.route.name,
                "model": target.model,
                "step": step,
                "reason": reason,
                **extra,
            },
        )

    # -- one model ------------------------------------------------------------------------

    async def model(self, target: Target) -> None:
        state = _ModelState(
            params=route_params(target.route, target.model, self.cfg.effort, self.cfg.max_tokens)
        )
        dialect = target.route.dialect
        jobs: list[Awaitable[Any]] = []
        await self.measure_T(target, state)
        if variants_for(dialect):
            await self.text_baseline(target, state, "in_loop", discover=True)
            jobs.append(self.text_position(target, state, "in_loop"))
            jobs.append(self.cross_turn(target, state))
        else:
            self.note(target, "text", NO_TEXT_VARIANTS_REASON.get(dialect, "no text variants"))
        jobs.append(self.opaque(target, state))
        await asyncio.gather(*jobs)
        await self.lanes(target, state)

    async def measure_T(self, target: Target, state: _ModelState) -> None:
        """T of this (route, model): count(with carrier) - count(without) on the dialect's
        count endpoint, in the loop, for the first text variant the endpoint counts (adds at
        least ``COUNT_PLAUSIBLE`` of the estimate); else the chars/4 estimate, with the reason
        recorded. Count calls are free and unrecorded
        in ``calls.jsonl``; the result goes to ``runs.jsonl`` as a ``T`` record."""
        ident = (target.route.name, target.model)
        if ident in self.T:
            return
        est = self.fixture.trace_tokens_estimate
        spec = get_dialect(target.route.dialect).count
        names = [v for v in variants_for(target.route.dialect) if v != BASELINE]
        why, detail = "", {}
        if spec is None:
            why = f"no count endpoint for the {target.route.dialect} dialect"
        elif not names:
            why = f"no text variant on the {target.route.dialect} dialect (T is not used)"
        else:
            path = count_path(spec, target.model)
            try:
                base = self.text_cell(target, state, "in_loop", BASELINE).body()
                resp = await self.post(target.route, path, count_body(spec, base))
                without = parse_count(spec, resp.content)
                for name in names:
                    body = self.text_cell(target, state, "in_loop", name).body()
                    resp = await self.post(target.route, path, count_body(spec, body))
                    with_ = parse_count(spec, resp.content)
                    if with_ - without >= COUNT_PLAUSIBLE * est:
                        detail = {"variant": name, "with": with_, "without": without}
                        self.T[ident] = (with_ - without, T_COUNTED)
                        break
                else:
                    why = (
                        f"the count endpoint counted none of {', '.join(names)} in the loop "
                        f"(each added < {COUNT_PLAUSIBLE} x {est} tokens)"
                    )
            except ReasonwireError as exc:
                why = f"count endpoint failed: {credentials.redact(str(exc))[:300]}"
        T, source = self.T.setdefault(ident, (est, T_ESTIMATE))
        self.records.append(
            RUNS,
            {
                "type": "T",
                "run_id": self.run_id,
                "fixture_id": self.fixture.fixture_id,
                "route": target.route.name,
                "model": target.model,
                "T": T,
                "T_source": source,
                "T_estimate": est,
                **({"T_note": why} if why else {}),
                **({"count": detail} if detail else {}),
            },
        )

    def text_cell(
        self, target: Target, state: _ModelState, position: str, variant: str, attempt: int = 0
    ) -> Cell:
        dialect = target.route.dialect
        carriers = carriers_for(dialect, variant, self.fixture.trace)
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
            transcript=tuple(self.fixture.transcript(position, wording, fill + carriers)),
            tools=(TOOL,),
            params=state.fix.apply(state.params),
            fix=state.fix,
            attempt=attempt,
        )

    async def text_baseline(
        self, target: Target, state: _ModelState, position: str, discover: bool
    ) -> Outcome:
        """The ``none`` cell of a position, fixing parameters and wording as it learns."""
        kinds = tuple(k for k, _ in TEXT_VARIANTS[target.route.dialect].get("all", ()))
        kinds = kinds or tuple(
            spec[0] for specs in TEXT_VARIANTS[target.route.dialect].values() for spec in specs
        )
        for _ in range(MAX_FIXES + 2):
            res = await self.call(self.text_cell(target, state, position, BASELINE), target)
            if res.ok or res.skipped:
                return res
            if (res.status == 403 or res.filtered) and state.wording.get(position) != "neutral":
                state.wording[position] = "neutral"
                continue
            if discover and res.status == 400 and len(state.fix.drop) < MAX_FIXES:
                fix = fix_for_error(
                    state.fix.apply(state.params),
                    str(res.record.get("error") or ""),
                    str(res.record.get("error_body") or ""),
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
            *(self.call(self.text_cell(target, state, position, v), target) for v in names)
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
    ) -> Outcome:
        """Send ``make(0)``; with ``lane``, resample (attempt += 1, up to ``lane_attempts``)
        while the answer lands on another lane. An error, a budget skip or an answer on
        ``lane`` ends it; the last outcome is returned (off the lane when none landed)."""
        tries = self.cfg.lane_attempts + 1 if lane is not None else 1
        res = await self.call(make(0), target)
        for attempt in range(1, tries):
            if res.skipped or not res.ok or res.record.get("lane") == lane or self.stopped:
                break
            res = await self.call(make(attempt), target)
        return res

    async def turn1(
        self, target: Target, state: _ModelState, lane: str | None
    ) -> tuple[Turn, str, str] | str:
        """Turn 1 up the effort ladder until it answers with a tool call and a carrier, on
        ``lane`` when given. Returns (turn, effort, lane), or why there is nothing to replay
        ("" after a budget stop: the stop is recorded already)."""
        why = "turn 1 gave nothing to replay"
        for effort in EFFORT_LADDER:
            make = functools.partial(self.turn1_cell, target, state, effort)
            res = await self.on_lane(make, target, lane)
            if res.skipped:
                return ""
            if not res.ok or res.turn is None:
                return f"turn 1 failed at effort {effort}: {res.status} {res.record.get('error')}"
            if lane is not None and res.record.get("lane") != lane:
                return (
                    f"turn 1 did not land on lane {lane} in {self.cfg.lane_attempts + 1} "
                    f"attempts at effort {effort}"
                )
            turn = res.turn
            if turn.tool_calls and turn.carriers:
                return turn, effort, str(res.record.get("lane"))
            why = (
                f"no reasoning carrier at effort {effort}"
                if turn.tool_calls
                else f"no tool call at effort {effort}"
            )
        return why

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
        if isinstance(found, str):
            if found:
                self.note(target, "opaque", found + (f" (lane {lane})" if lane else ""))
            return
        turn, effort, landed = found
        self.opaque_tried[(target.route.name, target.model)].add(landed)
        params = state.fix.apply(
            route_params(target.route, target.model, effort, self.cfg.max_tokens)
        )
        extras: dict[str, Mapping[str, Any]] = {"": {}}
        extras.update(OPAQUE_EXTRAS.get(target.route.dialect, {}))
        jobs = [
            self.turn2(target, state, turn, effort, position, name, _merge(params, frag), landed)
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
        params: dict[str, Any],
        t1_lane: str,
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
                        transcript=tuple(self.fixture.around(msg, position, wording)),
                        tools=(TOOL,),
                        params=params,
                        fix=state.fix,
                        extra=extra,
                        keep_carriers=keep,
                        attempt=attempt,
                        t1_lane=t1_lane,
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
                if o.ok and pin is not None and o.record.get("lane") != pin:
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
                while missing and attempt <= self.cfg.lane_attempts and not self.stopped:
                    res = await self.call(
                        self.text_cell(target, state, position, variant, attempt), target
                    )
                    attempt += 1
                    if res.ok:
                        missing.discard(str(res.record.get("lane")))
        tried = self.opaque_tried.get((target.route.name, target.model), set())
        todo = sorted(({rule.default} if want else landed) - tried)
        await asyncio.gather(*(self.opaque_on(target, state, lane) for lane in todo))

    def _lanes_of(self, target: Target, position: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for task in self.inflight.values():
            if not task.done() or task.cancelled() or task.exception() is not None:
                continue
            rec = task.result().record
            if (
                rec.get("route") == target.route.name
                and rec.get("model") == target.model
                and rec.get("step") == "text"
                and rec.get("position") == position
                and rec.get("ok")
            ):
                out.setdefault(str(rec.get("variant")), set()).add(str(rec.get("lane")))
        return out


@dataclass
class _ModelState:
    params: dict[str, Any]
    fix: ParamFix = field(default_factory=ParamFix)
    wording: dict[str, str] = field(default_factory=dict)


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _max_output(params: Mapping[str, Any], default: int) -> int:
    """The largest output allowance in the request (any ``*max*tokens*`` number)."""
    best = default
    stack: list[Any] = [params]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for k, v in node.items():
                low = str(k).lower()
                if isinstance(v, int) and "max" in low and "token" in low:
                    best = max(best, v)
                elif isinstance(v, Mapping):
                    stack.append(v)
    return best


def estimate_cells(targets: Sequence[Target]) -> int:
    """Cells a run will send at least (for the progress bar's total)."""
    n = 0
    for t in targets:
        v = len(variants_for(t.route.dialect))
        extras = 1 + len(OPAQUE_EXTRAS.get(t.route.dialect, {}))
        modes = 3 if t.route.dialect in OPAQUE_STAND_IN else 2
        n += 2 * v + 1 + 2 * extras * modes
    return n


async def arun_eval(cfg: EvalConfig) -> RunResult:
    """Run the method over ``cfg.targets``; records under ``cfg.out`` (see module doc)."""
    records = Records(cfg.out)  # fails before any call when --out is unwritable
    run = _Run(cfg, records)
    fx = run.fixture
    records.append(
        RUNS,
        {
            "type": "run_start",
            "run_id": run.run_id,
            "fixture_id": fx.fixture_id,
            "seed": cfg.seed,
            "canary": fx.canary,
            "trace_chars": len(fx.trace),
            "T": fx.trace_tokens_estimate,
            "thresholds": {
                "consume_ratio": cfg.consume_ratio,
                "opaque_min": cfg.opaque_min,
                "lane_attempts": cfg.lane_attempts,
            },
            "budget_usd": cfg.budget,
            "effort": cfg.effort,
            "max_tokens": cfg.max_tokens,
            "workers": cfg.workers,
            "want_direct": sorted(cfg.want_direct),
            "targets": [
                {"route": t.route.name, "dialect": t.route.dialect, "model": t.model}
                for t in cfg.targets
            ],
            "lane_defaults": {t.route.name: t.route.lanes.default for t in cfg.targets},
            "versions": _versions(),
            "label": cfg.label,
            "t": time.time(),
        },
    )
    started = time.monotonic()
    progress = _progress(cfg, run) if cfg.progress else None
    limits = httpx.Limits(max_connections=max(cfg.workers * 4, 16), max_keepalive_connections=64)
    try:
        async with make_async_client(
            transport=cfg.transport, timeout=cfg.timeout, http2=False, limits=limits
        ) as client:
            run.client = client
            if progress is not None:
                progress.start()
            results = await asyncio.gather(
                *(run.model(t) for t in cfg.targets), return_exceptions=True
            )
            for t, r in zip(cfg.targets, results, strict=True):
                if isinstance(r, BaseException):
                    if not isinstance(r, Exception):
                        raise r
                    run.note(t, "run", f"{type(r).__name__}: {credentials.redact(str(r))}")
    finally:
        if progress is not None:
            progress.stop()
        elapsed = time.monotonic() - started
        records.append(
            RUNS,
            {
                "type": "run_end",
                "run_id": run.run_id,
                "sent": run.stats.sent,
                "reused": run.stats.reused,
                "errors": run.stats.errors,
                "budget_stopped": run.stopped,
                "elapsed_s": round(elapsed, 3),
                "t": time.time(),
            },
        )
        records.close()
    return RunResult(
        out=cfg.out,
        run_id=run.run_id,
        sent=run.stats.sent,
        reused=run.stats.reused,
        errors=run.stats.errors,
        spent_usd=run.budget.spent(),
        budget_stopped=run.stopped,
        elapsed_s=elapsed,
        calls_per_model=dict(run.per_model),
    )


def run_eval(cfg: EvalConfig) -> RunResult:
    """The synchronous entry: :func:`arun_eval` in a fresh event loop."""
    return asyncio.run(arun_eval(cfg))


class _Progress:
    def __init__(self, cfg: EvalConfig, run: _Run) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.run = run
        self.bar = Progress(
            TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.description}"), transient=False,
        )  # fmt: skip
        self.task = self.bar.add_task("", total=estimate_cells(cfg.targets))
        run.on_progress = self.advance

    def advance(self, n: int) -> None:
        t = self.bar.tasks[0]
        if t.total is not None and t.completed + n > t.total:
            self.bar.update(self.task, total=t.completed + n)
        desc = (
            f"spend ${self.run.budget.spent():.4f}  errors {self.run.stats.errors}  "
            f"reused {self.run.stats.reused}"
        )
        self.bar.update(self.task, advance=n, description=desc)

    def start(self) -> None:
        self.bar.start()

    def stop(self) -> None:
        self.bar.stop()


def _progress(cfg: EvalConfig, run: _Run) -> _Progress:
    return _Progress(cfg, run)


def _versions() -> dict[str, str]:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("reasonwire", "httpx"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def load_done(out: Path) -> int:
    """Number of finished call records under ``out`` (for messages and tests)."""
    return sum(1 for r in read_jsonl(out / CALLS) if r.get("type") == "call")


__all__ = [
    "EvalConfig",
    "RunResult",
    "Target",
    "arun_eval",
    "estimate_cells",
    "replace",
    "run_eval",
]
