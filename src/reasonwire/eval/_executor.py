"""The executor: one cell in, one :class:`~reasonwire.eval._records.CallRecord` out.

It owns everything between a cell and its record: the resume cache (a cell whose key is
already recorded, same route, endpoint, exact body and lane attempt, is answered from the
record; ``transport`` and ``auth`` failures are sent again), the budget (a worst-case
reservation once the call holds a slot, an intent as it is sent, a settlement after; a call
that cannot fit stops its (route, model), the others go on while theirs fit), the per-route
bound on calls in flight, HTTP with retries, and the 401 protocol (the key is re-read once,
after ``auth_wait_s`` when it is unchanged and its source can change: an auth or dotenv
file, never an environment variable, :func:`reasonwire.credentials.can_change`). Every answer
is written to ``calls.jsonl`` before it is used. Which cells are sent, and in which order, is
not its business (:mod:`reasonwire.eval._steps`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from reasonwire import credentials
from reasonwire.errors import (
    CredentialError,
    MalformedBody,
    ProviderError,
    ReasonwireError,
    TransportError,
)
from reasonwire.eval._cells import FILTER_REASONS, CallOutcome, CallStats, Cell, carrier_summary
from reasonwire.eval._config import EvalConfig, Target
from reasonwire.eval._records import (
    CALLS,
    RUNS,
    Answered,
    BudgetStop,
    CallRecord,
    CallResult,
    Failed,
    Records,
    TRecord,
    Unparsed,
    read_jsonl,
    read_records,
    request_key,
)
from reasonwire.eval.budget import (
    BILLED,
    FREE_PRICE,
    UNKNOWN,
    UNKNOWN_PRICE,
    Budget,
    Price,
    call_cost,
    price_for,
    reported_cost,
    worst_case,
)
from reasonwire.http import apost_json
from reasonwire.routes import Route
from reasonwire.wire.model import ABSENT, Turn
from reasonwire.wire.registry import get_dialect

T_ESTIMATE = "chars/4"
T_COUNTED = "count-endpoint"
_CONNECT_ERRORS = ("ConnectError", "ConnectTimeout", "UnsupportedProtocol")
"""Transport failures that say the route's base URL does not answer at all (not one call's
timeout or drop): the whole route stops."""
_RESEND = frozenset({"transport", "auth"})
"""Error kinds a resumed run sends again: the answer said nothing about the cell."""


class Executor:
    """Sends cells for one run (see the module docstring)."""

    def __init__(
        self, cfg: EvalConfig, records: Records, run_id: str, fixture_id: str, t_estimate: int
    ) -> None:
        self.cfg = cfg
        self.records = records
        self.run_id = run_id
        self.fixture_id = fixture_id
        self.t_estimate = t_estimate
        # key -> the call record of an earlier run, decoded when a cell asks for it
        self.done: dict[str, dict[str, Any]] = {}
        recorded: dict[tuple[str, str], tuple[float, bool]] = {}  # (key, run id) -> its cost
        for raw in read_jsonl(records.out / CALLS):
            if raw.get("type") != "call":
                continue
            key = str(raw.get("key"))
            cost = float(raw.get("cost_usd") or 0.0)
            recorded[(key, str(raw.get("run_id")))] = (cost, raw.get("cost_estimate") is not False)
            if raw.get("error_kind") not in _RESEND:
                self.done[key] = raw
        self.budget = Budget(records, cfg.budget, run_id, recorded)
        # (route, model) -> (T, T_source); counted ones from earlier runs are reused
        self.T: dict[tuple[str, str], tuple[int, str]] = {}
        for rec in read_records(records.out / RUNS):
            if (
                isinstance(rec, TRecord)
                and rec.fixture_id == fixture_id
                and rec.T_source == T_COUNTED
            ):
                self.T[(rec.route, rec.model)] = (rec.T, T_COUNTED)
        self.inflight: dict[str, asyncio.Task[CallOutcome]] = {}
        self.sems: dict[str, asyncio.Semaphore] = {}
        self.slots: dict[str, int] = {}  # route -> calls in flight it gets
        self._sem_lock = asyncio.Lock()
        self.stats = CallStats()
        self.per_model: dict[str, int] = {}
        self.unknown_price: set[str] = set()  # route/model whose cost is a worst-case guess
        # (route, model)s that reported a cost: no longer taken as free, even when declared so
        self.reports_cost: set[tuple[str, str]] = set()
        # (route, model)s declared free that answered without a bill: reserved at 0 from then
        self.unbilled: set[tuple[str, str]] = set()
        self._reserved: dict[str, str] = {}  # call key -> its open reservation (being sent)
        # (route, model)s the budget stopped: a call of theirs did not fit even with nothing
        # in flight (spend only grows, so it never will); the others go on while they fit
        self.budget_stopped: set[tuple[str, str]] = set()
        self.stop_reason = ""  # why the budget stopped the first of them (the summary says it)
        # route name -> why it is stopped (its base URL did not answer): no more calls to it
        self.dead_routes: dict[str, str] = {}
        self.on_progress: Callable[[int], None] = lambda n: None
        self.client: httpx.AsyncClient | None = None

    # -- one request, with the 401 protocol ----------------------------------------------

    async def post(self, route: Route, path: str, body: Any) -> httpx.Response:
        """POST ``body``; on a 401 re-read the key once (waiting ``auth_wait_s`` first when
        it is unchanged, so its owner can refresh it) and retry once. A second 401 raises."""
        assert self.client is not None
        url = route.base_url + path
        key = route.read_key(dotenv=self.cfg.dotenv)
        try:
            return await apost_json(
                self.client, url, body, route.auth_headers(key), retries=self.cfg.retries
            )
        except ProviderError as exc:
            if exc.status != 401 or key is None:
                raise
            fresh = route.read_key(dotenv=self.cfg.dotenv)
            if fresh == key:
                # the same key again gets the same 401, unless its source can change meanwhile
                if not credentials.can_change(route.key, dotenv=self.cfg.dotenv):
                    raise
                await self.cfg.sleep(self.cfg.auth_wait_s)
                fresh = route.read_key(dotenv=self.cfg.dotenv)
        return await apost_json(
            self.client, url, body, route.auth_headers(fresh), retries=self.cfg.retries
        )

    # -- calls in flight per route --------------------------------------------------------

    async def semaphore(self, route: Route) -> asyncio.Semaphore:
        """The route's bound on calls in flight: ``--workers``, capped by the server's slots
        (:meth:`server_slots`). Why the cap: a request beyond the slots only queues, and on
        llama-server each waiting request holds a keep-alive connection; its HTTP thread pool
        is small (slots + 2 on a 2-core machine), so with more open connections than
        threads a new request waits for an idle one's keep-alive timeout (5 s) before it is
        read. Measured on a one-slot server: 5.3 s at 8 workers, 0.3 s at 1."""
        sem = self.sems.get(route.name)
        if sem is not None:
            return sem
        async with self._sem_lock:
            sem = self.sems.get(route.name)
            if sem is None:
                slots = await self.server_slots(route)
                n = max(1, min(self.cfg.workers, slots or self.cfg.workers))
                self.slots[route.name] = n
                sem = self.sems[route.name] = asyncio.Semaphore(n)
        return sem

    async def server_slots(self, route: Route) -> int | None:
        """The route's declared ``slots``, else what a loopback llama.cpp server advertises
        (``GET /props``: ``total_slots``); None when neither says (a remote route is never
        asked: no request a provider would not expect)."""
        if route.slots is not None:
            return route.slots
        if not route.loopback or self.client is None or not route.base_url:
            return None
        parts = urlsplit(route.base_url)
        try:
            headers = route.auth_headers(route.read_key(dotenv=self.cfg.dotenv))
            resp = await self.client.get(
                f"{parts.scheme}://{parts.netloc}/props", headers=headers, timeout=5.0
            )
            total = resp.json().get("total_slots") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError, CredentialError):
            return None
        return total if isinstance(total, int) and total > 0 else None

    # -- one call -------------------------------------------------------------------------

    def call(self, cell: Cell, target: Target) -> Awaitable[CallOutcome]:
        """The outcome of ``cell``: recorded, in flight (the same task), or sent now."""
        body = cell.body()
        # a server reasonwire starts itself gets a fresh port each run: its URL is not identity
        where = ("" if cell.route.local else cell.route.base_url) + cell.path()
        key = request_key(cell.route.name, where, body, cell.attempt)
        task = self.inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._call(cell, target, body, key))
            self.inflight[key] = task
        return task

    async def _call(
        self, cell: Cell, target: Target, body: dict[str, Any], key: str
    ) -> CallOutcome:
        """:meth:`_send`; a call that fails unexpectedly after its reservation leaves it open
        (it may have been sent and billed: the next run counts it as in flight) but stops
        holding it for this run, so calls waiting for room are not kept waiting for it."""
        try:
            return await self._send(cell, target, body, key)
        except BaseException:
            rid = self._reserved.pop(key, None)
            if rid is not None:
                self.budget.abandon(rid)
            raise

    async def _send(
        self, cell: Cell, target: Target, body: dict[str, Any], key: str
    ) -> CallOutcome:
        dialect = get_dialect(cell.route.dialect)
        raw = self.done.get(key)
        if raw is not None:
            self.stats.reused += 1
            self.on_progress(1)
            rec = CallRecord.from_json(raw)
            kept = None
            raw_body = rec.result.raw if isinstance(rec.result, Answered) else None
            if rec.ok and raw_body is not None and raw_body is not ABSENT:
                kept = dialect.parse_response(raw_body)
            return CallOutcome(rec, kept, reused=True)
        who = (cell.route.name, cell.model)  # a gateway bills some models and not others
        if who in self.budget_stopped or cell.route.name in self.dead_routes:
            return CallOutcome(None)
        if not self.budget.resends_left(key):  # in flight at two interruptions: not again
            self.stats.not_resent += 1
            return CallOutcome(None)
        price, source = price_for(target.price, cell.route, who in self.reports_cost)
        # a route declared free is free once it has answered without a bill; until then its
        # calls are reserved as paid ones: it may bill, and the cap holds either way
        held = price
        if source == FREE_PRICE and who not in self.unbilled:
            held = price_for(None, replace(cell.route, local=False, free=False))[0]
        payload = json.dumps(body, ensure_ascii=False).encode()
        worst = worst_case(len(payload), _max_output(cell.params, self.cfg.max_tokens), held)
        sem = await self.semaphore(cell.route)
        started = time.monotonic()
        turn: Turn | None = None
        status: int | None = None  # the HTTP status, once a response arrived
        headers: Mapping[str, str] = {}
        failure: ReasonwireError | None = None
        async with sem:
            # reserved once the call holds a slot: a call waiting for a slot holds no money
            if who in self.budget_stopped or cell.route.name in self.dead_routes:  # meanwhile
                return CallOutcome(None)
            rid = await self.budget.reserve(worst, key, cell.route.name, cell.model)
            if rid is None:
                self._budget_stop(cell, worst, held)
                return CallOutcome(None)
            self._reserved[key] = rid
            self.budget.intent(rid, key)
            try:
                resp = await self.post(cell.route, cell.path(), body)
                status = resp.status_code
                headers = resp.headers
                turn = dialect.parse_response(resp.content)
            except ReasonwireError as exc:
                failure = exc
        elapsed = round(time.monotonic() - started, 3)
        result: CallResult
        cost, estimate = 0.0, True
        if turn is not None and status is not None:
            result = _answered(cell, turn, status, elapsed)
            billed = reported_cost(turn.usage, headers)
            if billed is not None:  # the provider's bill counts, on any address
                cost, estimate, source = billed, False, BILLED
                self.reports_cost.add(who)
            elif source == FREE_PRICE:  # declared free and no bill: nothing is paid
                cost, estimate = 0.0, False
                self.unbilled.add(who)
            else:
                cost, estimate = call_cost(turn.usage, price)
        else:
            assert failure is not None
            result = _failed(failure, status, elapsed)
            self._stop_route_if_unreachable(cell, result)
        T, T_source = self.T.get((cell.route.name, cell.model), (self.t_estimate, T_ESTIMATE))
        rec = CallRecord(
            key=key,
            run_id=self.run_id,
            fixture_id=self.fixture_id,
            cell=cell.labels(),
            T=T,
            T_source=T_source,
            result=result,
            cost_usd=cost,
            cost_estimate=estimate,
            t=time.time(),
            price=source,
            fold=cell.fold_facts() or ABSENT,
        )
        self.records.append(rec)
        self.budget.settle(rid, cost, estimate, key, cell.model)
        self._reserved.pop(key, None)
        self.stats.sent += 1
        if not rec.ok:
            self.stats.errors += 1
        name = f"{cell.route.name}/{cell.model}"
        self.per_model[name] = self.per_model.get(name, 0) + 1
        if source == UNKNOWN:
            self.unknown_price.add(name)
        self.on_progress(1)
        return CallOutcome(rec, turn)

    def _stop_route_if_unreachable(self, cell: Cell, result: CallResult) -> None:
        """A connection failure to the route's base URL (not one call's timeout or drop)
        stops the whole route: every later cell of it is skipped, and the note says why."""
        if (
            isinstance(result, Failed)
            and result.error_kind == "transport"
            and str(result.error or "").startswith(_CONNECT_ERRORS)
        ):
            self.dead_routes.setdefault(
                cell.route.name,
                f"stopped: no connection to {cell.route.base_url} ({result.error})",
            )

    @property
    def stopped(self) -> bool:
        """Whether the budget stopped some (route, model) of this run."""
        return bool(self.budget_stopped)

    def over_budget(self, target: Target) -> bool:
        """Whether the budget stopped ``target``: its later cells are not sent."""
        return (target.route.name, target.model) in self.budget_stopped

    def _budget_stop(self, cell: Cell, worst: float, price: Price) -> None:
        who = (cell.route.name, cell.model)
        if who in self.budget_stopped:
            return
        first = not self.budget_stopped
        self.budget_stopped.add(who)
        if first:
            spent = self.budget.spent()
            self.stop_reason = (
                f"{cell.route.name}/{cell.model}'s next call could cost up to ${worst:.4f}, "
                f"${spent:.4f} is spent of --budget ${self.cfg.budget:g}"
            )
            if price == Price(*UNKNOWN_PRICE):
                self.stop_reason += (
                    "; its price is unknown, assumed the highest (give the route a `price` "
                    "in --routes-file)"
                )
        self.records.append(
            BudgetStop(
                run_id=self.run_id,
                limit_usd=self.cfg.budget,
                committed_usd=self.budget.committed(),
                next_call_worst_usd=worst,
                route=cell.route.name,
                model=cell.model,
                t=time.time(),
            )
        )

    def done_outcomes(self) -> list[CallOutcome]:
        """Every outcome this run has (sent or reused), in the order cells asked for them."""
        return [
            t.result()
            for t in self.inflight.values()
            if t.done() and not t.cancelled() and t.exception() is None
        ]


def _answered(cell: Cell, turn: Turn, status: int, elapsed: float) -> Answered:
    filtered = turn.finish_reason in FILTER_REASONS
    billed = turn.usage.billed_input if turn.usage else None
    error = ABSENT
    if billed is None and not filtered:
        error = "answer without usage figures"
    elif filtered:
        error = f"finish_reason {turn.finish_reason} (safety filter)"
    turn1 = cell.position == "turn1"
    return Answered(
        status=status,
        elapsed_s=elapsed,
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
        error=error,
        raw=turn.raw if turn1 else ABSENT,
        reasoning_excerpt=turn.reasoning_text[:200] if turn1 else ABSENT,
    )


def _failed(exc: ReasonwireError, status: int | None, elapsed: float) -> Failed | Unparsed:
    """The record of a failed call; ``status``: the HTTP status when a response arrived before
    the failure (it is then written first, :class:`Unparsed`)."""
    fstatus: int | None = None
    body = ABSENT
    if isinstance(exc, ProviderError):
        kind, error = ("auth" if exc.status == 401 else "provider"), exc.provider_message
        fstatus, error, body = exc.status, error or exc.body_excerpt, exc.body_excerpt
    elif isinstance(exc, TransportError | CredentialError):
        kind, error = "transport", str(exc)
    elif isinstance(exc, MalformedBody):
        kind, error, fstatus = "malformed", str(exc), ABSENT if status is None else status
    else:
        kind, error = "other", str(exc)
    failed = Failed if status is None else Unparsed
    return failed(
        ok=False, status=fstatus, error_kind=kind, error=error, error_body=body, elapsed_s=elapsed
    )


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
