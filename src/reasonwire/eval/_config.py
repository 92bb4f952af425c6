"""What a harness run is given (:class:`EvalConfig` of :class:`Target`) and what it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from reasonwire.eval._params import DEFAULT_MAX_TOKENS
from reasonwire.eval.budget import Price
from reasonwire.http import RetryPolicy
from reasonwire.method.fixture import DEFAULT_SEED
from reasonwire.routes import Route
from reasonwire.wire.fold import FoldSettings

DEFAULT_DOTENV = "~/.hermes/.env"
AUTH_WAIT_S = 15.0
"""After a 401 with an unchanged key: how long the key's owner gets to refresh it."""


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
    wait: bool = False
    """Another run holds ``out``: wait for it (``--wait``) instead of stopping at once."""
    on_wait: Callable[[str], None] = lambda holder: None  # told who holds ``out`` before waiting
    fold: FoldSettings | None = None
    """``eval run --fold``: also measure the fold's evidence with these settings (enabled);
    None (the default): the method alone, its requests unchanged."""


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
    unknown_price: tuple[str, ...] = ()
    """route/model ids whose spend is an estimate at an assumed (unknown) price."""
    billed_usd: float = 0.0
    """Of ``spent_usd`` (every run sharing ``out``): the providers' own figures."""
    estimated_usd: float = 0.0
    """Of ``spent_usd``: from the price list (no bill reported)."""
    in_flight_usd: float = 0.0
    """Of ``spent_usd``: calls in flight at an interruption, counted at their reservation."""
    in_flight: int = 0
    """Calls this run found in flight at an interruption of an earlier run (sent again once)."""
    not_resent: int = 0
    """Calls not sent because they were in flight at two interruptions already."""
    in_flight_likely_usd: float = 0.0
    """What the calls in flight at an interruption likely cost: each at the mean billed cost
    of its model's answered calls (its reservation when none was billed)."""
    stop_reason: str = ""
    """Why the budget stopped the run (empty when it did not)."""
