"""The spending budget: a worst-case reservation before each call, never overshot; spend is
the provider's bill.

The budget counts every run sharing ``--out``: it is the sum over ``cost.jsonl``, and one run
at a time holds ``--out`` (:mod:`reasonwire.eval.lock`), so nothing is paid twice by two runs.
A call takes, once it holds one of its route's slots, a ``reserve`` record of its worst-case
cost (prompt bytes and the largest output the request allows, at the model's price), then an
``intent`` record just before its first byte is sent; its answer writes a ``settle`` record
replacing the reservation with what the call cost: the provider's bill when it reports one
(``usage.cost`` in the body, or a cost header such as LiteLLM's), on any address, else an
estimate from the price list (``estimate``). Reservations are released as answers arrive: a
call whose reservation does not fit while other calls are in flight waits for them to settle,
and the run stops only when the next call does not fit even with nothing in flight.

After an interruption (``kill -9``) the next run settles what the dead one left open: a
reservation without an intent was never sent and is released; an intent without a settlement
was in flight, the provider may have billed it, so it is counted as spent at its reservation
(an estimate, labelled ``interrupted``) and its call is sent again, once: a call interrupted
twice is not sent a third time.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from reasonwire.eval._records import COST, Intent, Records, Reserve, Settle, decode_record
from reasonwire.routes import Route
from reasonwire.wire.model import ABSENT, Usage

UNKNOWN_PRICE: tuple[float, float] = (15e-6, 75e-6)
"""USD per (prompt, completion) token assumed for a paid route whose price is not listed."""

COST_HEADERS: tuple[str, ...] = ("x-litellm-response-cost",)
"""Response headers that carry the call's cost in USD when the body does not: LiteLLM's proxy
("x-litellm-response-cost", docs.litellm.ai/docs/proxy/response_headers; it prices every
call itself). Body fields (``usage.cost``, ``cost_in_usd_ticks``) are the dialects' to read
(:class:`~reasonwire.wire.model.Usage` ``cost_usd``)."""

RESENDS = 1
"""How many times a call in flight at an interruption is sent again (then no more)."""

_EPS = 1e-12


@dataclass(frozen=True)
class Price:
    prompt: float
    completion: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.prompt + completion_tokens * self.completion


FREE = Price(0.0, 0.0)

BILLED, LISTED, FREE_PRICE, UNKNOWN = "billed", "listed", "free", "unknown"
"""Where a call's cost came from (``CallRecord.price``)."""


def price_for(
    explicit: Price | None, route: Route, reports_cost: bool = False
) -> tuple[Price, str]:
    """The price a call is reserved and estimated at, and its source: the caller's (a catalog
    or a priced simulation) first, then free for a route *declared* free of charge (``local``
    or ``free = true``) that has not reported a cost (``reports_cost``), then the route's
    declared price, else :data:`UNKNOWN_PRICE` (an estimate, labelled so). A loopback address
    alone is not a declaration: LiteLLM's proxy and OpenRouter-style gateways run on
    localhost and bill. Whatever the price, a cost the provider reports is what counts
    (:func:`call_cost`)."""
    if explicit is not None:
        return explicit, LISTED
    if (route.free or route.local) and not reports_cost:
        return FREE, FREE_PRICE
    if route.price is not None:
        return Price(*route.price), LISTED
    return Price(*UNKNOWN_PRICE), UNKNOWN


def reported_cost(usage: Usage | None, headers: Mapping[str, str]) -> float | None:
    """The cost the provider reported for a call (USD), from the body's usage or a cost
    header (:data:`COST_HEADERS`); None when it reported none."""
    if usage is not None and usage.cost_usd is not None:
        return float(usage.cost_usd)
    for name in COST_HEADERS:
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if value >= 0 and value == value and value != float("inf"):
            return value
    return None


class Budget:
    """Reservations, intents and settlements in ``cost.jsonl``; see the module docstring.

    Every figure is read back from the file (each record appended, then caught up), so what
    the run decides is what a later run and the report will see."""

    def __init__(
        self,
        records: Records,
        limit_usd: float,
        run_id: str = "",
        recorded: Mapping[tuple[str, str], tuple[float, bool]] | None = None,
    ) -> None:
        """``recorded``: (call key, run id) -> (cost, is_estimate) of every call record under
        ``--out``: a call its run recorded but was killed before settling is settled from its
        record, not counted as in flight."""
        self.records = records
        self.limit = limit_usd
        self.run_id = run_id
        self._recorded = recorded or {}
        self._path = records.out / COST
        self._lockfile = records.out / ".budget.lock"
        self._tlock = threading.Lock()
        self._offset = 0
        self._open: dict[str, Reserve] = {}  # reservation id -> its record (every run)
        self._sent: dict[str, Intent] = {}  # open reservations with an intent
        self._mine: set[str] = set()  # open reservations of this object
        self.billed = 0.0  # the providers' figures
        self.estimated = 0.0  # from the price list
        self.interrupted_usd = 0.0  # calls in flight at an interruption, at their reservation
        self.interrupted: Counter[str] = Counter()  # call key -> interruptions it was in flight at
        self.found_in_flight = 0  # intents this run found unsettled (an interrupted run's)
        self._flight: list[tuple[str, float]] = []  # (model, reservation) of each such call
        self._billed_by: dict[str, tuple[int, float]] = {}  # model -> billed calls, USD
        self._seq = 0
        self._pid = os.getpid()
        self._waiters: list[asyncio.Future[None]] = []
        self._recover()

    # -- totals ---------------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Read the records appended since the last look (by any process)."""
        with self._path.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        self._offset += end + 1
        for raw in data[: end + 1].splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            rec = decode_record(obj, COST) if isinstance(obj, dict) else None
            if isinstance(rec, Reserve):
                self._open[rec.rid] = rec
            elif isinstance(rec, Intent):
                if rec.rid in self._open:
                    self._sent[rec.rid] = rec
            elif isinstance(rec, Settle):
                self._open.pop(rec.rid, None)
                self._sent.pop(rec.rid, None)
                self._mine.discard(rec.rid)
                if rec.interrupted is True:
                    self.interrupted_usd += rec.cost_usd
                    self.interrupted[rec.key] += 1
                    self._flight.append((rec.model, rec.cost_usd))
                elif rec.estimate:
                    self.estimated += rec.cost_usd
                else:
                    self.billed += rec.cost_usd
                    n, usd = self._billed_by.get(rec.model, (0, 0.0))
                    self._billed_by[rec.model] = (n + 1, usd + rec.cost_usd)

    def _recover(self) -> None:
        """Settle what an earlier run left open (it was killed): a reservation never sent is
        released; one sent (an intent) was in flight and may be billed: it is counted as
        spent at its reservation, ``interrupted``. Called before this run sends anything;
        one run holds ``--out`` at a time, so every open record is a dead run's."""
        with self._tlock, self._lockfile.open("a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            try:
                self._catch_up()
                for rid, res in list(self._open.items()):
                    intent = self._sent.get(rid)
                    done = None if intent is None else self._recorded.get((res.key, intent.run_id))
                    if done is not None:  # answered and recorded, killed before its settle
                        cost, estimate = done
                        settle = Settle(
                            rid=rid, cost_usd=cost, estimate=estimate, key=res.key, model=res.model
                        )
                    else:
                        sent = intent is not None
                        self.found_in_flight += sent
                        settle = Settle(
                            rid=rid,
                            cost_usd=res.usd if sent else 0.0,
                            estimate=True,
                            key=res.key,
                            model=res.model,
                            interrupted=True if sent else ABSENT,
                        )
                    self.records.append(settle)
                self._catch_up()
            finally:
                fcntl.flock(lk, fcntl.LOCK_UN)

    @property
    def settled(self) -> float:
        return self.billed + self.estimated + self.interrupted_usd

    def committed(self) -> float:
        """Spent plus reserved, over every run sharing the output directory."""
        with self._tlock:
            self._catch_up()
            return self.settled + sum(r.usd for r in self._open.values())

    def spent(self) -> float:
        with self._tlock:
            self._catch_up()
            return self.settled

    def likely_in_flight(self) -> float:
        """What the calls in flight at interruptions likely cost (their count is spent at the
        reservation, an upper bound): see :func:`likely_cost`."""
        with self._tlock:
            self._catch_up()
            return likely_cost(self._flight, self._billed_by)

    def resends_left(self, key: str) -> bool:
        """Whether the call ``key`` may be sent: not yet in flight at more interruptions than
        :data:`RESENDS` allows (its first send plus one resend)."""
        return self.interrupted[key] <= RESENDS

    # -- calls ----------------------------------------------------------------------------

    def _try_reserve(self, worst_usd: float, key: str, route: str, model: str) -> str | bool:
        """A reservation id; False: it can never fit (stop); True: it fits once the calls in
        flight have settled (wait)."""
        with self._tlock, self._lockfile.open("a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            try:
                self._catch_up()
                if self.settled + worst_usd > self.limit + _EPS:
                    return False
                reserved = sum(r.usd for r in self._open.values())
                if self.settled + reserved + worst_usd > self.limit + _EPS:
                    return bool(self._mine)  # only this run's calls can settle
                self._seq += 1
                rid = f"{self._pid}-{id(self)}-{self._seq}"
                self.records.append(
                    Reserve(rid=rid, usd=worst_usd, key=key, route=route, model=model)
                )
                self._catch_up()
                self._mine.add(rid)
                return rid
            finally:
                fcntl.flock(lk, fcntl.LOCK_UN)

    async def reserve(self, worst_usd: float, key: str, route: str, model: str) -> str | None:
        """Reserve ``worst_usd`` for the call ``key``: the reservation id, waiting while calls
        in flight hold what it needs; None when it would overshoot even with none in flight."""
        while True:
            got = self._try_reserve(worst_usd, key, route, model)
            if isinstance(got, str):
                return got
            if got is False:
                return None
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def intent(self, rid: str, key: str) -> None:
        """Journal that the reserved call is being sent (before its first byte)."""
        with self._tlock:
            self.records.append(Intent(rid=rid, key=key, pid=self._pid, run_id=self.run_id))

    def settle(self, rid: str, cost_usd: float, estimate: bool, key: str, model: str) -> None:
        """Replace the reservation by the call's cost; wake the calls waiting for room."""
        rec = Settle(rid=rid, cost_usd=cost_usd, estimate=estimate, key=key, model=model)
        with self._tlock:
            self.records.append(rec)
            self._mine.discard(rid)
        self._wake()

    def abandon(self, rid: str) -> None:
        """A call whose outcome is unknown (it failed unexpectedly): its reservation stays
        counted (a later run settles it as in flight), but no call waits for it any more."""
        with self._tlock:
            self._mine.discard(rid)
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)


def likely_cost(
    flight: list[tuple[str, float]], billed_by: Mapping[str, tuple[int, float]]
) -> float:
    """Calls in flight at an interruption, ``(model, reservation)``: each at the mean billed
    cost of its model's answered calls, else at its reservation. Shown beside the reserved
    figure (which the budget counts, to stay under the cap whatever they cost): the likely
    bill, not a bound."""
    total = 0.0
    for model, reserved in flight:
        n, usd = billed_by.get(model, (0, 0.0))
        total += usd / n if n else reserved
    return total


def call_cost(
    usage: Usage | None, price: Price, headers: Mapping[str, str] | None = None
) -> tuple[float, bool]:
    """(USD, is_estimate): the cost the provider reported when it gave one (body or header:
    :func:`reported_cost`), else the price list's figure for the usage, an estimate."""
    billed = reported_cost(usage, headers or {})
    if billed is not None:
        return billed, False
    if usage is None:
        return 0.0, True
    prompt = usage.billed_input or 0
    return price.cost(prompt, usage.output or 0), True


def worst_case(body_bytes: int, max_output: int, price: Price) -> float:
    """Upper bound of a call's cost: one token per prompt byte, the full output allowance."""
    return price.cost(body_bytes, max_output)
