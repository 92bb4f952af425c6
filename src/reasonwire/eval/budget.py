"""The spending budget: worst-case reservation before each call, never overshot.

The budget counts every run sharing ``--out``: it is the sum over ``cost.jsonl``. A call first
appends a ``reserve`` record holding its worst-case cost (prompt bytes and the largest output
the request allows, at the model's price), under an exclusive ``flock`` so concurrent
processes see each other's reservations; afterwards a ``settle`` record replaces the
reservation with what the call cost (the provider's ``usage.cost`` when given, else an
estimate from the price list, marked ``estimate``). A reservation never settled (the process
died) stays counted: the budget errs towards stopping early, never towards overspending.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import dataclass

from reasonwire.eval.records import COST, Records, Reserve, Settle, decode_record
from reasonwire.routes import Route
from reasonwire.wire.model import Usage

UNKNOWN_PRICE: tuple[float, float] = (15e-6, 75e-6)
"""USD per (prompt, completion) token assumed for a paid route whose price is not listed."""


@dataclass(frozen=True)
class Price:
    prompt: float
    completion: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.prompt + completion_tokens * self.completion


FREE = Price(0.0, 0.0)

BILLED, LISTED, FREE_PRICE, UNKNOWN = "billed", "listed", "free", "unknown"
"""Where a call's cost came from (``CallRecord.price``)."""


def price_for(explicit: Price | None, route: Route) -> tuple[Price, str]:
    """The price a call is reserved and settled at, and its source: the caller's (a catalog
    or a priced simulation) first, then free for a free, loopback or ``local`` route, then
    the route's declared price, else :data:`UNKNOWN_PRICE` (an estimate, labelled so)."""
    if explicit is not None:
        return explicit, LISTED
    if route.free or route.loopback:
        return FREE, FREE_PRICE
    if route.price is not None:
        return Price(*route.price), LISTED
    return Price(*UNKNOWN_PRICE), UNKNOWN


class Budget:
    """Reservations and settlements in ``cost.jsonl``; see the module docstring."""

    def __init__(self, records: Records, limit_usd: float) -> None:
        self.records = records
        self.limit = limit_usd
        self._path = records.out / COST
        self._lockfile = records.out / ".budget.lock"
        self._tlock = threading.Lock()
        self._offset = 0
        self._open: dict[str, float] = {}  # reservation id -> amount (every process)
        self._settled = 0.0
        self._seq = 0
        self._pid = os.getpid()

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
                self._open[rec.rid] = rec.usd
            elif isinstance(rec, Settle):
                self._open.pop(rec.rid, None)
                self._settled += rec.cost_usd

    def committed(self) -> float:
        """Spent plus reserved, over every run sharing the output directory."""
        with self._tlock:
            self._catch_up()
            return self._settled + sum(self._open.values())

    def spent(self) -> float:
        with self._tlock:
            self._catch_up()
            return self._settled

    # -- calls ----------------------------------------------------------------------------

    def reserve(self, worst_usd: float, key: str, route: str, model: str) -> str | None:
        """Reserve ``worst_usd`` for the call ``key``; the reservation id, or None when it
        would overshoot."""
        with self._tlock, self._lockfile.open("a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            try:
                self._catch_up()
                committed = self._settled + sum(self._open.values())
                if committed + worst_usd > self.limit + 1e-12:
                    return None
                self._seq += 1
                rid = f"{self._pid}-{id(self)}-{self._seq}"
                self.records.append(
                    Reserve(rid=rid, usd=worst_usd, key=key, route=route, model=model)
                )
                self._open[rid] = worst_usd
                return rid
            finally:
                fcntl.flock(lk, fcntl.LOCK_UN)

    def settle(self, rid: str, cost_usd: float, estimate: bool, key: str, model: str) -> None:
        rec = Settle(rid=rid, cost_usd=cost_usd, estimate=estimate, key=key, model=model)
        with self._tlock:
            self.records.append(rec)


def call_cost(usage: Usage | None, price: Price) -> tuple[float, bool]:
    """(USD, is_estimate): the provider's billed cost when it gave one, else the price list."""
    if usage is None:
        return 0.0, True
    if usage.cost_usd is not None:
        return float(usage.cost_usd), False
    prompt = usage.billed_input or 0
    return price.cost(prompt, usage.output or 0), True


def worst_case(body_bytes: int, max_output: int, price: Price) -> float:
    """Upper bound of a call's cost: one token per prompt byte, the full output allowance."""
    return price.cost(body_bytes, max_output)
