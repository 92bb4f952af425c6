"""The governed-effort gateway: an ASGI app on loopback, the sole authority over provider effort.

Every request carries a signed per-turn binding (header ``x-reasonwire-binding``) and states
its conversation (``x-reasonwire-conversation``). On every request the gateway verifies the
binding (signature, algorithm, key id, expiry), matches its conversation to the request's,
re-checks the runtime pin, the route (registered, not revoked, same dialect and model) and the
policy, and fixes the conversation's effort on its first call. It then strips every reasoning
control the client sent, re-attaches vaulted reasoning carriers to the history, injects only
the route's fragment for the resolved level, folds long replayed reasoning text where the
route's fold settings say so (off by default: :mod:`.upstream_fold`), and calls the upstream
with its own credential (read at call time; the runtime never sees it). What the client
receives is the dialect's visible projection (an allow-list: text, tool calls, usage, ids,
finish reasons, the opaque carriers the vault keys on, and blocks of tools the provider runs
itself, such as Claude's ``server_tool_use`` and its results, which are not reasoning; see
:mod:`reasonwire.wire.vault` for the design), in JSON, in streams and in errors: an
upstream error reaches the client as the gateway's own error object, never the upstream
body. On Chat Completions routes ``<think>...</think>`` blocks are cut from visible text
unless the route states its model never writes them (``no_think_tags``); a stream that ends
badly (cut, malformed, or with no answer of the dialect's shape) ends with the dialect's
error event, never a clean ``[DONE]``; a translated route passes function tools only, and
hosted tool types its registration names (``hosted_tools``). Every call, refusals included,
leaves an evidence row.

Evidence first: the row of an upstream call is committed (outcome ``pending``) before the
call's first byte goes upstream, then completed in place with the outcome, usage and stream
state (:mod:`.evidence`); the upstream call is in the code path after the awaited commit and
nowhere else, so a call without a durable row cannot happen. A store access that may wait
(fixing the effort, a PostgreSQL or busy SQLite write, a vault read) runs on a small thread
pool, never on the event loop, under one time budget per request (:class:`StoreSettings`,
default 2 s): when the store cannot commit within it, the client gets ``503`` with
``Retry-After`` and no upstream call is made. A SQLite write (and a vault read or write, in
memory or SQLite) that cannot wait runs on the event loop itself: it is tried with the
connection's lock free and SQLite's busy timeout at 0 (:class:`~.evidence.NoWait`), and if
it would wait it writes nothing and the request takes the thread instead. The same commit,
one thread hop less (a hop, a thread woken and the GIL handed over twice, cost more than the
commit: profiled), and never ahead of a write waiting in the outbox. The evidence rows that
reach the event loop in one turn of it are committed in one transaction (group commit,
:mod:`.group_commit`): each request goes on only once the transaction holding its row
committed, and a transaction that cannot commit without waiting is rolled back whole, its
requests taking the store thread each with its own row, as a single write would. (With
PostgreSQL the rows of concurrent store threads share a transaction the same way.)

Writes that come after the upstream answered (the completion, the vault entries of the
answer) and fail are kept in an outbox, in order, and written before the next request's own
store work (so a conversation's next turn reads its carriers once the database is back). A
stream's client has its answer already (all but the stream's last bytes, sent once the writes
are done or the bounded wait for them is over), and its row says ``pending`` until then; a JSON
answer whose carriers cannot be kept is withheld (503: the client asks again, and no turn
ever runs without the carriers of the one before). Refusal rows written while the store was
down follow the writes of real calls, a few per request, the rest by a background thread,
which also retries the outbox every ``flush_interval`` while it is not empty, so
a conversation that moves to another replica finds its carriers once the database is back
and this replica has written them.

Fast path: verified tokens are cached (re-checking expiry and key id on each hit), upstream
connections are kept alive in one small pool (:mod:`.upstream`), request bodies are copied
only along removed control paths, a call on a known conversation with an empty outbox and a
SQLite store makes no thread hop at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sqlite3
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import MISSING, dataclass, fields, replace
from functools import partial
from itertools import chain
from types import MappingProxyType
from typing import NoReturn, TypeVar

import orjson

from reasonwire.errors import (
    CredentialError,
    MalformedBody,
    PolicyRefusal,
    ShapeError,
    StaleConnection,
    StoreUnavailable,
    TransportError,
    TruncatedStream,
    _StoreDown,
    _WouldWait,
)
from reasonwire.govern.asgi import Final, Incoming, Receive, Relayed, Reply, Scope, Send
from reasonwire.govern.authority import policy_now, settle_effort
from reasonwire.govern.binding import HEADER, Binding, KeyRing
from reasonwire.govern.evidence import (
    EvidenceRow,
    EvidenceStore,
    FixedOnce,
    Outcome,
    SQLiteStore,
    Statement,
    StreamState,
    fill_usage,
    new_call_id,
)
from reasonwire.govern.group_commit import GroupCommit
from reasonwire.govern.levels import Level
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.govern.stores import MemoryVault, SQLiteVault, VaultStore
from reasonwire.govern.upstream import UpstreamPool, UpstreamResponse
from reasonwire.govern.upstream_fold import check_operator_fold, fold_upstream
from reasonwire.govern.verified import VerifiedBindings
from reasonwire.wire.dialect import Dialect, StreamDecoder, StreamProjector
from reasonwire.wire.facts import ErrorInfo
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import JSON, JsonObject, RequestOptions, Turn
from reasonwire.wire.profile import Profile
from reasonwire.wire.projection import OneParse, encode_event
from reasonwire.wire.registry import dialect_for_gateway_path, get_dialect
from reasonwire.wire.translate import ChatToResponses, translation
from reasonwire.wire.vault import Lookup

CONVERSATION_HEADER = "x-reasonwire-conversation"
ATTEMPT_HEADER = "x-reasonwire-attempt"
MAX_ATTEMPT = 1000
"""Highest ``x-reasonwire-attempt`` accepted (a retry counter, not an id)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what a client may send; past any of them the request is refused (413/431)
    before anything is parsed, with an evidence row."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_headers: int = 64
    max_header_bytes: int = 16 * 1024


DEFAULT_STORE_TIMEOUT = 2.0
"""Seconds of store waiting before a request is refused with 503 (issue 25: at most 2 s)."""
DEFAULT_RETRY_AFTER = 1


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """How long a request may wait for the evidence store and the vault before it is refused.

    ``timeout``: seconds of store waiting one request may spend in all, before its upstream
    call (fixing the effort, reading carriers, committing the row): past it, ``503`` with
    ``Retry-After: retry_after`` and no upstream call. The same bound applies to each write
    after the call. ``workers``: threads that run store work (a thread stuck on an
    unreachable database holds one; requests past them wait in the queue, within their
    budget). ``outbox``: writes kept for later when the store failed after an upstream call
    (past it the oldest are dropped and counted). ``clock``: the monotonic clock the budget
    is measured with (tests pass a fake one). ``flush_interval``: seconds between retries of
    a non-empty outbox by the background flusher."""

    timeout: float = DEFAULT_STORE_TIMEOUT
    retry_after: int = DEFAULT_RETRY_AFTER
    workers: int = 8
    outbox: int = 10_000
    flush_interval: float = 0.2
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError("store timeout must be a positive number of seconds")
        if not (1 <= self.retry_after <= 3600):
            raise ValueError("retry_after must be 1..3600 seconds")
        if self.workers < 1 or self.outbox < 1:
            raise ValueError("store workers and outbox must be at least 1")
        if not (math.isfinite(self.flush_interval) and self.flush_interval > 0):
            raise ValueError("flush_interval must be a positive number of seconds")


class _Budget:
    """The store time one request has left: only time spent waiting for the store counts
    (not the client's upload), so a slow client is never refused as a store failure."""

    __slots__ = ("_clock", "left")

    def __init__(self, settings: StoreSettings) -> None:
        self.left = settings.timeout
        self._clock = settings.clock

    def start(self) -> float:
        return self._clock()

    def spend(self, since: float) -> None:
        self.left -= max(0.0, self._clock() - since)


T = TypeVar("T")
Op = Callable[[], object]
Now = Callable[[], bool]
"""A write that never waits: True when committed, False when it would have to wait (nothing
written)."""

_JSON = "application/json"
_NOW_VAULTS = (MemoryVault, SQLiteVault)
"""The vaults whose writes may run on the event loop (a tuple: a union written in the
isinstance call is built anew on every call)."""


@dataclass(slots=True)  # not frozen: made on every request, a plain __init__
class _Authorised:
    """What the authorisation established: the verified binding, its route, the level the
    call runs at, and the dialect spoken upstream."""

    binding: Binding
    route: RouteRegistration
    resolved: Level
    upstream: Dialect
    """The dialect spoken upstream: the client's, or the route's when it translates."""
    translation: ChatToResponses | None = None


@dataclass(slots=True)  # not frozen: made on every request, a plain __init__
class _Admitted:
    """The client's body as the dialect's request shape keeps it, and the unknown top-level
    fields it dropped."""

    body: JsonObject
    dropped: tuple[str, ...]


@dataclass(slots=True)  # not frozen: made on every request, a plain __init__
class _Prepared:
    """The upstream body and what making it did: whether it streams, the reasoning controls
    removed from the client's body, the vaulted carriers put back into its history."""

    body: JsonObject
    stream: bool
    controls_removed: tuple[str, ...]
    carriers_reattached: int


class _Facts:
    """What one request's steps have established so far, in the order they run. The evidence
    row is made from it once (:meth:`row`), wherever the request stops: at a refusal it holds
    what was known then (a conversation mismatch names the binding's runtime and route; a
    policy refusal the runtime's qualification). ``call_id`` and ``ts`` are fixed when the
    request arrives (:meth:`arrived`), so every row made from these facts is the same call.
    Each step notes a fact as soon as it is known by setting it here (eight a request: an
    attribute set costs a fraction of a named tuple's ``_replace``, profiled); nothing but
    the request's own steps sets them."""

    __slots__ = (
        "attempt",
        "binding",
        "call_id",
        "conversation_id",
        "dialect",
        "dropped",
        "prepared",
        "resolved",
        "route_qualification",
        "runtime_qualification",
        "ts",
    )

    def __init__(self, dialect: str, call_id: str, ts: float) -> None:
        self.dialect = dialect
        self.call_id = call_id
        self.ts = ts
        # noted by the steps, in the order they run:
        self.conversation_id: str | None = None
        self.attempt: int | None = None
        self.binding: Binding | None = None
        self.route_qualification: str | None = None
        self.runtime_qualification: str | None = None
        self.resolved: Level | None = None
        self.dropped: tuple[str, ...] = ()
        self.prepared: _Prepared | None = None

    @classmethod
    def arrived(cls, dialect: str) -> _Facts:
        """The facts of a request that just arrived: its call id and time."""
        return cls(dialect, new_call_id(), time.time())

    def row(self, outcome: Outcome = "refused") -> EvidenceRow:
        # The row's fields set into a copy of the defaults, not through the dataclass
        # __init__ (31 arguments: twice the cost, profiled; one row per request).
        b, p = self.binding, self.prepared
        v = _ROW_DEFAULTS.copy()
        v["outcome"] = outcome
        v["conversation_id"] = self.conversation_id
        if self.dropped:
            v["reason"] = "unknown fields dropped: " + ",".join(sorted(self.dropped))[:200]
        v["call_id"] = self.call_id
        v["ts"] = self.ts
        v["attempt"] = self.attempt
        v["dialect"] = self.dialect
        if b is not None:
            v["key_id"] = b.key_id
            v["task_id"] = b.task_id
            v["runtime_id"] = b.runtime_id
            v["runtime_version"] = b.runtime_version
            v["route_id"] = b.route_id
            v["requested"] = b.requested
        v["route_qualification"] = self.route_qualification
        v["runtime_qualification"] = self.runtime_qualification
        v["resolved"] = self.resolved
        if p is not None:
            v["stream"] = p.stream
            v["controls_removed"] = ",".join(p.controls_removed)
            v["carriers_reattached"] = p.carriers_reattached
        row = object.__new__(EvidenceRow)
        row.__dict__ = v
        return row


_ROW_SET = frozenset({"outcome", "conversation_id", "call_id", "ts"})
"""The fields :meth:`_Facts.row` always sets (the only ones without a plain default)."""
_ROW_DEFAULTS: dict[str, object] = {
    f.name: None if f.name in _ROW_SET else f.default for f in fields(EvidenceRow)
}
"""Every field of :class:`EvidenceRow` in its order, with its default."""
if MISSING in _ROW_DEFAULTS.values():  # a field added without a plain default: set it above
    raise TypeError("EvidenceRow has a field _Facts.row cannot default")


def _copy(row: EvidenceRow) -> EvidenceRow:
    """A snapshot of ``row`` (what a write will store, whatever happens to the row after):
    its fields copied as they are, without a dataclass ``replace`` (which re-runs
    ``__init__`` over 31 fields, twice per request)."""
    new = object.__new__(EvidenceRow)
    new.__dict__ = row.__dict__.copy()
    return new


def _error_response(
    dialect: Dialect | None,
    status: int,
    reason: str,
    message: str,
    info: ErrorInfo | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """The gateway's own error object, in the dialect's error shape (an OpenAI-style body with
    ``type: error`` when no dialect is known: both SDK families read it)."""
    if dialect is None:
        body: JSON = {
            "type": "error",
            "error": {"type": "invalid_request_error", "code": reason, "message": message},
        }
    else:
        body = dialect.error_body(status, reason, message, info)
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    return Reply(orjson.dumps(body), status, extra)


def _refusal(status: int, reason: str, detail: str, dialect: Dialect | None = None) -> Reply:
    return _error_response(
        dialect, status, reason, f"reasonwire gateway refused: {reason}: {detail}"
    )


def _retry_after(value: str | None) -> dict[str, str]:
    """A Retry-After to pass on: delay-seconds (ASCII digits, bounded) or an HTTP date
    written anew by the gateway (a lenient date parse ignores trailing words, so the
    upstream's text is never relayed), nothing else."""
    if not value:
        return {}
    v = value.strip()
    if _is_count(v) and len(v) <= 6:
        return {"retry-after": v}
    import email.utils
    from datetime import UTC

    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError, OverflowError):
        return {}
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return {"retry-after": email.utils.format_datetime(when.astimezone(UTC), usegmt=True)}


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _parse_json(raw: bytes) -> JSON:
    """A request body as JSON: strict UTF-8, no lone surrogates, no ``NaN``/``Infinity``.

    orjson reads integers beyond 64 bits as floats; past the double range it refuses them and
    the stdlib reads them exactly, on the strictly decoded text (never another encoding)."""
    try:
        parsed: JSON = orjson.loads(raw)
        return parsed
    except orjson.JSONDecodeError:
        pass
    try:
        value: JSON = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeError, RecursionError):
        raise PolicyRefusal(
            "malformed-body", "the request body is not valid JSON in UTF-8"
        ) from None
    return value


def _dumps(body: JSON) -> bytes:
    """The upstream payload; the stdlib writes what orjson cannot (integers past 64 bits)."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _is_count(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also accepts superscripts a latin-1 header holds)."""
    return text.isascii() and text.isdigit()


class Gateway:
    """The gateway's state and ASGI app (``gateway.app``)."""

    def __init__(
        self,
        registry: Registry,
        policy: OrgPolicy,
        keys: KeyRing,
        store: EvidenceStore | None = None,
        *,
        upstream: UpstreamPool | None = None,
        vault: VaultStore | None = None,
        limits: Limits | None = None,
        fold: FoldSettings | None = None,
        store_settings: StoreSettings | None = None,
    ) -> None:
        """``fold``: the operator's fold settings for routes whose registration has none
        (:mod:`.upstream_fold`); None, the default: no fold but where a route sets one.
        ConfigError when one of its entries names no registered route."""
        if fold is not None:
            check_operator_fold(registry, fold)
        self.registry = registry
        self.policy = policy
        self.keys = keys
        self.store: EvidenceStore = store if store is not None else SQLiteStore()
        # Opaque originals the client cannot hold, per conversation (wire.vault's design). In
        # memory by default; a shared SQLite/PostgreSQL vault lets replicas share it.
        self.vault: VaultStore = vault if vault is not None else MemoryVault()
        self.limits = limits if limits is not None else Limits()
        self.fold = fold
        # An EdDSA check costs more than the rest of the authorisation; a turn re-sends one
        # token. Hits only where verify() would accept it too (govern/verified.py).
        self._bindings = VerifiedBindings(keys)
        self._profiles: dict[tuple[str, str], Profile] = {}
        self._endpoints: dict[str, Dialect] = {}
        self._urls: dict[tuple[int, bool], tuple[RouteRegistration, str]] = {}
        self._literal_events: dict[frozenset[str], tuple[bytes, ...]] = {}
        self._headers: dict[int, tuple[RouteRegistration, str | None, Mapping[str, str]]] = {}
        # Streams whose vault entries are not stored yet, per conversation: the client sees
        # the stream's last bytes before the gateway has decoded them, and may send its next
        # request at once; that request waits for them (see _settled).
        self._unsettled: dict[str, list[asyncio.Event]] = {}
        self._upstream = upstream if upstream is not None else UpstreamPool()
        self.store_settings = store_settings if store_settings is not None else StoreSettings()
        self._executor = ThreadPoolExecutor(
            self.store_settings.workers, thread_name_prefix="reasonwire-store"
        )
        # Writes that failed, oldest first (see the module doc): those of upstream calls
        # (carriers, completions), then refusal rows (written after them, a few at a time
        # on a request's path, so a long outage's refusals never delay a request).
        self._outbox: deque[Op] = deque()
        self._refusals: deque[Op] = deque()
        self._outbox_lock = threading.Lock()
        self._flushing = threading.Lock()
        self.outbox_dropped = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._group = GroupCommit(self._write_group)
        self.app = self  # the instance is the ASGI app (see __call__)

    async def aclose(self) -> None:
        """Close the upstream pool; write what the outbox holds (bounded by the store
        timeout: what cannot be written then is lost, and its rows stay ``pending``)."""
        await self._upstream.aclose()
        if self.outbox_size():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.to_thread(self._flush, None), self.store_settings.timeout
                )
        self._stop.set()
        self._wake.set()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- the store, off the event loop ----------------------------------------------------

    async def _db(self, budget: _Budget, work: Callable[[], T]) -> T:
        """``work()`` on a store thread, awaited for at most what ``budget`` has left;
        :class:`_StoreDown` when it fails or runs out (the thread may go on: every store
        write is idempotent, and a late pending row is completed as refused, see
        :meth:`_open_row`)."""
        since = budget.start()
        fut = self._submit(budget, work)
        return await self._await(budget, fut, since)

    def _submit(self, budget: _Budget, work: Callable[[], T]) -> Future[T]:
        if budget.left <= 0:
            raise _StoreDown("the store time budget is spent")
        return self._executor.submit(work)

    async def _await(self, budget: _Budget, fut: Future[T], since: float) -> T:
        """The result of submitted store work; the wait (from ``since``, taken before the
        work was submitted) is spent from the budget."""
        try:
            async with asyncio.timeout(budget.left):  # no Task per wait (wait_for makes one)
                return await asyncio.wrap_future(fut)
        except TimeoutError:
            raise _StoreDown("the store did not answer in time") from None
        except (StoreUnavailable, sqlite3.Error) as exc:
            raise _StoreDown(str(exc) or type(exc).__name__) from None
        finally:
            budget.spend(since)

    def _queue(self, ops: list[Op], *, refusal: bool = False) -> None:
        if not ops:
            return
        with self._outbox_lock:
            queue = self._refusals if refusal else self._outbox
            queue.extend(ops)
            while len(queue) > self.store_settings.outbox:
                queue.popleft()
                self.outbox_dropped += 1
            self._wake.set()
            if self._flusher is None and not self._stop.is_set():
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="reasonwire-outbox", daemon=True
                )
                self._flusher.start()

    def _flush_loop(self) -> None:
        """The background flusher: while the outbox holds writes, try them every
        ``flush_interval`` (a failure leaves them queued, in order)."""
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            with contextlib.suppress(Exception):
                self._flush(refusals=None)
            with self._outbox_lock:
                if not (self._outbox or self._refusals):
                    self._wake.clear()
                    continue
            self._stop.wait(self.store_settings.flush_interval)

    def _apply(
        self, ops: list[Op], on_fail: Callable[[], None] | None = None, *, refusal: bool = False
    ) -> None:
        """Run store writes in order (on a store thread); on the first failure, ``on_fail``
        runs, then it and the rest go to the outbox, and the failure is raised. The outbox is
        written first, so writes stay in order."""
        pending = list(ops)
        try:
            self._flush()
            while pending:
                pending[0]()
                pending.pop(0)
        except BaseException:
            if on_fail is not None:
                on_fail()
            self._queue(pending, refusal=refusal)
            raise

    def _flush(self, refusals: int | None = 16) -> None:
        """Write the outbox (on a store thread), oldest first: every write of an upstream
        call, then up to ``refusals`` refusal rows (None: all); what fails stays queued."""
        if not (self._outbox or self._refusals):
            return
        with self._flushing:
            self._drain(self._outbox, None)
            self._drain(self._refusals, refusals)

    def _drain(self, queue: deque[Op], limit: int | None) -> None:
        done = 0
        while limit is None or done < limit:
            with self._outbox_lock:
                if not queue:
                    return
                op = queue[0]
            try:
                op()
            except (StoreUnavailable, sqlite3.Error):
                raise  # the store is down: the op stays first in the outbox
            except Exception:  # never succeeds: dropped, not blocking every later write
                self.outbox_dropped += 1
            with self._outbox_lock:
                if queue and queue[0] is op:
                    queue.popleft()
            done += 1

    def outbox_size(self) -> int:
        """Writes waiting for the store to come back."""
        with self._outbox_lock:
            return len(self._outbox) + len(self._refusals)

    async def _write(self, budget: _Budget, row: EvidenceRow, t0: float, opened: bool) -> None:
        """Record (or complete, when its pending row was written) ``row`` within the budget;
        when the store fails it goes to the outbox. Never raises: this is evidence of an
        answer already decided."""
        row.latency_ms = (time.perf_counter() - t0) * 1000
        snap = _copy(row)
        store = self.store
        now = self._store_now() is not None
        if opened:
            if not (now and await self._group.add(SQLiteStore.completing(snap))):
                await self._settle_ops(budget, [lambda: store.complete(snap)])
        elif not (now and await self._group.add(SQLiteStore.recording(snap))):
            await self._settle_ops(budget, [lambda: store.record(snap)], refusal=True)

    def _write_group(self, statements: Sequence[Statement]) -> bool:
        """A group of evidence statements (:class:`GroupCommit`), committed on the event loop
        if the store may still be written there when the group commits (nothing waits in
        the outbox meanwhile), else none (the requests take the waiting way)."""
        store = self._store_now()
        return store is not None and store.write_now(statements)

    def _store_now(self) -> SQLiteStore | None:
        """The evidence store, when its writes may run on the event loop without waiting
        (:class:`~reasonwire.govern.evidence.NoWait`) and nothing waits in the outbox (the
        outbox is written first, by a store thread, so writes stay in order); else None."""
        store = self.store
        if (
            isinstance(store, SQLiteStore)
            and store.writes_now
            and not (self._outbox or self._refusals)
        ):
            return store
        return None

    def _vault_now(self) -> MemoryVault | SQLiteVault | None:
        vault = self.vault
        if isinstance(vault, _NOW_VAULTS) and vault.writes_now:
            return vault
        return None

    def _lookup_now(self, conv: str) -> Lookup:
        """The conversation's vault read without waiting; :class:`_WouldWait` (raised inside
        the body's making, caught by :meth:`_open_row`) when it would wait."""
        vault = self._vault_now()

        def lookup(key: str) -> JSON | None:
            if vault is None:
                raise _WouldWait("the vault may wait")
            done, value = vault.get_now(conv, key)
            if not done:
                raise _WouldWait("the vault is busy")
            return value

        return lookup

    @staticmethod
    def _now(writes: list[Now]) -> int:
        """Run non-waiting writes in order, on the event loop; how many were committed (all:
        ``len(writes)``). The first that would wait (or fails) stops them: it and the rest
        go the waiting way (the caller's), where a failure is handled as on a store thread."""
        for i, write in enumerate(writes):
            try:
                if not write():
                    return i
            except StoreUnavailable:
                return i
        return len(writes)

    async def _settle_ops(
        self,
        budget: _Budget,
        ops: list[Op],
        on_fail: Callable[[], None] | None = None,
        *,
        refusal: bool = False,
    ) -> bool:
        """Write ``ops`` on a store thread within the budget; False (they wait in the
        outbox) when the store failed or did not answer in time."""
        if budget.left <= 0:
            if on_fail is not None:
                on_fail()
            self._queue(ops, refusal=refusal)
            return False
        try:
            await self._db(budget, lambda: self._apply(ops, on_fail, refusal=refusal))
        except _StoreDown:
            return False
        return True

    async def _open_row(
        self, budget: _Budget, call: _Call, make: Callable[[bool], tuple[T, EvidenceRow]]
    ) -> T:
        """Commit the pending row of the upstream call about to be made. ``make(now)`` runs
        first and gives a result and the row; the row is committed as ``pending`` and becomes
        ``call.row``, and the result is returned (the caller then marks the call opened).

        On the event loop (``make(True)``, its vault reads without waiting) when the store's
        writes never wait (:meth:`_store_now`) and the commit needs no waiting; else, or when
        ``make(True)`` raises :class:`_WouldWait`, on one store thread (``make(False)``, then
        the commit: one hop per call). :class:`_StoreDown` when it cannot be committed within
        the budget. If the commit lands after the budget ran out (the call is then never
        made), the row is completed as a refusal."""
        now = self._store_now()
        if now is not None:
            since = budget.start()
            try:
                result, row = make(True)
            except _WouldWait:
                pass
            else:
                # The statement's parameters are read now: the row as pending, without a
                # copy of it (the outcome it will be completed with is put back at once).
                outcome, row.outcome = row.outcome, "pending"
                statement = SQLiteStore.recording(row)
                row.outcome = outcome
                # Released only once the tick's transaction holding the row committed.
                committed = await self._group.add(statement)
                budget.spend(since)
                if committed:
                    call.row = row
                    return result
                made = (result, row)
                return await self._open_row_waiting(budget, call, lambda _: made)
        return await self._open_row_waiting(budget, call, make)

    async def _open_row_waiting(
        self, budget: _Budget, call: _Call, make: Callable[[bool], tuple[T, EvidenceRow]]
    ) -> T:
        since = budget.start()
        fut = self._submit(budget, lambda: self._apply_open(make))
        try:
            result, row = await self._await(budget, fut, since)
        except _StoreDown:

            def done(f: Future[tuple[T, EvidenceRow]]) -> None:
                if not f.cancelled() and f.exception() is None:
                    row = f.result()[1]
                    late = replace(row, outcome="refused", reason="store-unavailable")
                    self._queue([lambda: self.store.complete(late)])

            fut.add_done_callback(done)
            raise
        call.row = row
        return result

    def _apply_open(self, make: Callable[[bool], tuple[T, EvidenceRow]]) -> tuple[T, EvidenceRow]:
        result, row = make(False)
        self._flush()
        pending = _copy(row)
        pending.outcome = "pending"
        self.store.record(pending)
        return result, row

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: one POST endpoint per served dialect and lifespan, no router or
        middleware stack (they cost more per call than the gateway's own checks)."""
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await self.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        dialect = self._endpoint(scope["path"])
        request = Incoming(scope, receive)
        if dialect is None or scope["method"] != "POST":
            response: Reply | Relayed = await self._misrouted(request, dialect)
        else:
            response = await self._guarded(request, dialect)
        await response(scope, receive, send)

    def _endpoint(self, path: str) -> Dialect | None:
        """The dialect served on ``path``, remembered for the paths that have one (a few:
        one per dialect, or per model on a dialect whose path names it; at most 1024 kept,
        so a client sending many paths costs only the lookup)."""
        found = self._endpoints.get(path)
        if found is None:
            found = dialect_for_gateway_path(path)
            if found is not None and len(self._endpoints) < 1024:
                self._endpoints[path] = found
        return found

    async def _misrouted(self, request: Incoming, dialect: Dialect | None) -> Reply:
        """404 (no such endpoint) or 405 (not POST), with an evidence row like any refusal."""
        t0 = time.perf_counter()
        reason = "not-found" if dialect is None else "method-not-allowed"
        row = EvidenceRow(
            outcome="refused",
            conversation_id=request.headers.get(CONVERSATION_HEADER),
            reason=reason,
            dialect=dialect.name if dialect else None,
        )
        await self._write(_Budget(self.store_settings), row, t0, opened=False)
        if dialect is None:
            return _refusal(404, reason, "no such endpoint")
        return _refusal(405, reason, "use POST", dialect)

    async def _guarded(self, request: Incoming, dialect: Dialect) -> Reply | Relayed:
        """:meth:`handle` behind a last-resort handler: an unexpected error answers 500 with
        a reason and leaves an evidence row, never a bare ASGI failure."""
        t0 = time.perf_counter()
        call = _Call(_Facts.arrived(dialect.name), t0, _Budget(self.store_settings))
        try:
            return await self.handle(request, dialect, call)
        except Exception as exc:  # the last resort: every other path answers on its own
            row = call.row
            row.outcome, row.reason = "refused", f"internal: {type(exc).__name__}"
            if call.opened:
                row.outcome = "upstream-error"
            with contextlib.suppress(Exception):
                await self._write(call.budget, row, t0, call.opened)
            return _refusal(500, "internal-error", "the gateway failed on this request", dialect)

    # -- authorisation ------------------------------------------------------------------

    @property
    def binding_cache_hits(self) -> int:
        """Calls whose binding was served from the verified-binding cache."""
        return self._bindings.hits

    def _authorise(self, headers: Mapping[str, str], dialect: Dialect, call: _Call) -> _Authorised:
        """The binding verified and checked against the request, its route and the policy.
        Each check returns a fact; each fact is noted on ``call`` as soon as it is known, so
        that a later refusal's row holds it."""
        token = headers.get(HEADER)
        if not token:
            raise PolicyRefusal("binding-missing", f"header {HEADER} is required")
        if not call.facts.conversation_id:
            raise PolicyRefusal("conversation-missing", f"header {CONVERSATION_HEADER} is required")
        b = self._bindings.verify(token)
        call.facts.binding = b
        if b.conversation_id != call.facts.conversation_id:
            raise PolicyRefusal(
                "conversation-mismatch", "the binding was issued for another conversation"
            )
        route = self.registry.route(b.route_id)
        call.facts.route_qualification = route.qualification_id
        served = route.client_dialect or route.dialect
        if served != dialect.name:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {route.route_id} speaks {served}, not {dialect.name}",
            )
        res = policy_now(self.registry, self.policy, b)
        call.facts.runtime_qualification = res.runtime_qualification
        resolved = settle_effort(self.store, b, res)
        call.facts.resolved = resolved
        upstream = get_dialect(route.dialect)
        return _Authorised(b, route, resolved, upstream, translation(dialect.name, upstream.name))

    def _profile(self, route: RouteRegistration, dialect: Dialect) -> Profile:
        """The route's profile for ``dialect``; on a client dialect of
        :data:`INLINE_THINK_DIALECTS`, with ``<think>`` blocks cut unless the route says its
        model never writes them (:attr:`RouteRegistration.no_think_tags`)."""
        key = (route.route_id, dialect.name)
        prof = self._profiles.get(key)
        if prof is None:
            prof = dialect.profile(route.profile, **dict(route.profile_fields))
            served = route.client_dialect or route.dialect
            if served == dialect.name and served in INLINE_THINK_DIALECTS:
                prof = prof.with_overrides({"think_tags": not route.no_think_tags})
            self._profiles[key] = prof
        return prof

    def _prepare(
        self, body: JsonObject, dialect: Dialect, auth: _Authorised, path: str, lookup: Lookup
    ) -> _Prepared:
        """The upstream body: the client's controls stripped, the route's fragment for the
        resolved level the only effort, vaulted carriers put back (read with ``lookup``; on a
        translated route, in the upstream's dialect). :meth:`_check_tools` runs on it next."""
        if dialect.model_in_request(path, body) != auth.route.model:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {auth.route.route_id} is bound to model {auth.route.model!r}",
            )
        profile = self._profile(auth.route, dialect)
        out, removed = dialect.strip_controls(body, profile)
        fragment = auth.route.levels[auth.resolved]
        stream = dialect.stream_requested(path, out)
        if auth.translation is not None:
            # Into the upstream's dialect first (vaulted output items in place of assistant
            # turns); the route fragment, in the upstream's terms, is the only effort.
            out, carriers = auth.translation.request(out, lookup)
            out, more = auth.upstream.strip_controls(out)
            removed.update(more)
            deep_merge(out, fragment)
        else:
            if dialect.is_non_escalating(removed) and not dialect.strip_controls(fragment)[1]:
                out.update(removed)  # only an exact lowering value, on a request that sets none
            else:
                deep_merge(out, fragment)
            carriers = dialect.reattach(out, lookup)
        if stream:
            deep_merge(out, dict(auth.upstream.stream_usage))
        return _Prepared(out, stream, tuple(removed), carriers)

    def _admit(self, raw: bytes, dialect: Dialect) -> _Admitted:
        """The client's body checked before anything else: size, JSON, the dialect's request
        shape (unknown fields are dropped and named in the evidence)."""
        lim = self.limits
        if len(raw) > lim.max_body_bytes:
            raise PolicyRefusal("body-too-large", f"the body exceeds {lim.max_body_bytes} bytes")
        body = _parse_json(raw)
        if not isinstance(body, dict):
            raise PolicyRefusal("malformed-body", "the request body is not a JSON object")
        try:
            shaped = dialect.validate_request(body)
        except ShapeError as exc:
            raise PolicyRefusal("malformed-body", f"{exc.path}: {exc.problem}") from None
        return _Admitted(shaped, tuple(k for k in body if k not in shaped))

    def _check_headers(self, request: Incoming) -> None:
        raw = request.scope.get("headers") or []
        lim = self.limits
        if (
            len(raw) > lim.max_headers
            or sum(map(len, chain.from_iterable(raw))) > lim.max_header_bytes
        ):
            raise PolicyRefusal("headers-too-large", "too many or too large request headers")

    async def _read_body(self, request: Incoming) -> bytes:
        """The body, refused as soon as it passes the size bound (never read whole)."""
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if _is_count(declared) and int(declared) > limit:
            raise PolicyRefusal("body-too-large", f"the body exceeds {limit} bytes")
        body = await request.body(limit)
        if body is None:
            raise PolicyRefusal("body-too-large", f"the body exceeds {limit} bytes")
        return body

    # -- the call -----------------------------------------------------------------------

    async def handle(self, request: Incoming, dialect: Dialect, call: _Call) -> Reply | Relayed:
        """One request: its steps establish facts (:class:`_Facts`), its evidence row is made
        from them once, committed before the upstream call, then completed."""
        budget = call.budget
        headers = request.headers
        try:
            call.facts.conversation_id = headers.get(CONVERSATION_HEADER)
            self._check_headers(request)
            attempt = headers.get(ATTEMPT_HEADER, "1")
            if not (_is_count(attempt) and len(attempt) <= 4 and 1 <= int(attempt) <= MAX_ATTEMPT):
                raise PolicyRefusal(
                    "bad-attempt", f"{ATTEMPT_HEADER} must be an integer from 1 to {MAX_ATTEMPT}"
                )
            call.facts.attempt = int(attempt)
            if self._authorise_inline(call.facts.conversation_id):
                auth = self._authorise(headers, dialect, call)
            else:
                auth = await self._db(
                    budget, lambda: self._authorise_flushed(headers, dialect, call)
                )
            if self._unsettled.get(auth.binding.conversation_id):  # (rare: no coroutine else)
                since = budget.start()  # waiting for earlier writes is store time too
                await self._settled(auth.binding.conversation_id, max(0.0, budget.left))
                budget.spend(since)
            raw = await self._read_body(request)
            admitted = self._admit(raw, dialect)
            call.facts.dropped = admitted.dropped
            path = request.scope["path"]  # as the endpoint was chosen (see __call__)

            conv = auth.binding.conversation_id
            tried: list[bool] = []

            def ready(now: bool) -> tuple[tuple[bytes, Mapping[str, str]], EvidenceRow]:
                # A try on the event loop that stopped at a vault read may have changed the
                # body in place: the waiting way starts again from the client's bytes.
                shaped = self._admit(raw, dialect).body if tried else admitted.body
                lookup: Lookup = partial(self.vault.get, conv)
                if now:
                    tried.append(True)
                    lookup = self._lookup_now(conv)
                made = self._ready(shaped, dialect, auth, call, path, headers, lookup)
                # the row, made once: upstream-error until the upstream answers 200
                return made, call.facts.row("upstream-error")

            # No store hop when the store never waits, else one: the upstream body and
            # headers, then the pending row committed.
            payload, up_headers = await self._open_row(budget, call, ready)
        except PolicyRefusal as exc:
            return await self._refuse(call, _REFUSAL_STATUS.get(exc.reason, 403), exc, dialect)
        except CredentialError:
            row = call.row
            row.outcome, row.reason = "upstream-error", "credential-unavailable"
            return await self._finish_refusal(
                call, 502, "the gateway has no upstream credential", dialect
            )
        except _StoreDown as exc:
            return await self._store_down(call, dialect, str(exc))
        row = call.row  # made from the facts in the hop that committed it
        call.opened = True
        url = self._url(auth, row.stream)  # after the body is made (it may fix the flag)
        try:
            resp = await self._post(call, url, payload, up_headers)
        except _StoreDown as exc:
            return await self._store_down(call, dialect, str(exc))
        except TransportError as exc:
            call.row.reason = f"transport: {type(exc).__name__}"
            return await self._finish_refusal(
                call, 502, "the upstream could not be reached", dialect
            )
        row = call.row  # another row when the call was sent again (see _post)
        row.status_code = resp.status_code
        if resp.status_code != 200:
            return await self._upstream_error(resp, dialect, auth.upstream, call)
        row.outcome = "forwarded"
        if row.stream:
            settled = asyncio.Event()
            self._unsettled.setdefault(auth.binding.conversation_id, []).append(settled)
            # text/event-stream, never the upstream's content type
            return Relayed(self._relay(resp, dialect, auth, call, settled, admitted.body))
        return await self._answer(resp, dialect, auth, call)

    async def _post(
        self, call: _Call, url: str, payload: bytes, headers: Mapping[str, str]
    ) -> UpstreamResponse:
        """The upstream call, evidence first: every attempt is sent only after its own row
        was committed. A keep-alive connection found stale is sent again once on a fresh
        one, under a new row (the first is completed as that transport failure)."""
        try:
            return await self._upstream.post(url, payload, headers, retry_stale=False)
        except StaleConnection as exc:
            first = call.row
            first.reason = f"transport: {exc}; sent again as another call"
            await self._write(call.budget_after(self.store_settings), first, call.t0, True)
            again = replace(first, call_id=new_call_id(), ts=time.time(), reason=None)
            call.row, call.opened = again, False
            budget = call.budget_after(self.store_settings)
            await self._open_row(budget, call, lambda _: (None, again))
            call.opened = True
            return await self._upstream.post(url, payload, headers, retry_stale=False)

    def _url(self, auth: _Authorised, stream: bool) -> str:
        """The upstream URL of a call on ``auth``'s route, remembered per route and stream
        flag (a route registration is frozen: the same object always gives the same URL;
        at most 1024 kept)."""
        route = auth.route
        key = (id(route), stream)
        known = self._urls.get(key)
        if known is not None and known[0] is route:
            return known[1]
        options = RequestOptions(model=route.model, stream=stream)
        url = route.upstream.base_url + auth.upstream.request_path(options)
        if len(self._urls) >= 1024:
            self._urls.clear()
        self._urls[key] = (route, url)
        return url

    def _authorise_inline(self, conversation_id: str | None) -> bool:
        """The authorisation needs no store hop: the outbox is empty (nothing to write
        first) and the conversation's effort and intent are cached (fixed once, they never
        change). A thread hop costs more than the whole check; the pending row's commit
        before the upstream call still goes to the store."""
        store = self.store
        return (
            conversation_id is not None
            and not (self._outbox or self._refusals)
            and isinstance(store, FixedOnce)
            and store.fixed(conversation_id)
        )

    def _authorise_flushed(
        self, headers: Mapping[str, str], dialect: Dialect, call: _Call
    ) -> _Authorised:
        """On a store thread: the outbox first (earlier answers' carriers and rows), then
        the authorisation (which fixes the conversation's effort in the store)."""
        self._flush()
        return self._authorise(headers, dialect, call)

    def _ready(
        self,
        shaped: JsonObject,
        dialect: Dialect,
        auth: _Authorised,
        call: _Call,
        path: str,
        client_headers: Mapping[str, str],
        lookup: Lookup,
    ) -> tuple[bytes, Mapping[str, str]]:
        """The upstream payload and headers (the vault read with ``lookup``)."""
        prepared = self._prepare(shaped, dialect, auth, path, lookup)
        call.facts.prepared = prepared
        if auth.translation is not None:
            _check_translated_tools(prepared.body, auth.route)
        # Last, on what really goes upstream (vaulted originals included); unchanged: the
        # same object, so the same bytes as without a fold.
        body = fold_upstream(auth.upstream, prepared.body, auth.route, self.fold)
        return _dumps(body), self._upstream_headers(auth.route, client_headers, auth.upstream)

    async def _store_down(self, call: _Call, dialect: Dialect, detail: str) -> Reply:
        """503 with Retry-After: the store could not commit, nothing went upstream. The row
        of this refusal waits in the outbox (the store is down)."""
        row = call.row
        row.outcome, row.reason, row.status_code = "refused", "store-unavailable", None
        row.latency_ms = (time.perf_counter() - call.t0) * 1000
        snap = replace(row)
        self._queue([lambda: self.store.record(snap)], refusal=True)
        return self._unavailable(
            dialect, "the evidence store cannot commit; nothing was sent upstream"
        )

    def _unavailable(self, dialect: Dialect, detail: str) -> Reply:
        return _error_response(
            dialect,
            503,
            "store-unavailable",
            f"reasonwire gateway refused: store-unavailable: {detail}",
            headers={"retry-after": str(self.store_settings.retry_after)},
        )

    async def _upstream_error(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        upstream: Dialect,
        call: _Call,
    ) -> Reply:
        """An upstream error as the gateway's own error object: status, a category, the
        provider's type/code when allow-listed, never the upstream body (it may quote the
        request's reasoning or the gateway's own credential)."""
        row = call.row
        try:
            data = await resp.read()
        except TransportError:
            data = b""
        finally:
            await resp.aclose()
        try:
            info = upstream.error_info(orjson.loads(data)) if data else None
        except orjson.JSONDecodeError:
            info = None
        status = resp.status_code if 400 <= resp.status_code <= 599 else 502
        row.reason = f"upstream status {resp.status_code}"
        await self._write(call.budget_after(self.store_settings), row, call.t0, opened=True)
        kind = info.type if info and info.type in upstream.error_types else None
        code = info.code if info and info.code in upstream.error_types else None
        message = f"the upstream answered {resp.status_code}" + (
            f" ({', '.join(x for x in (kind, code) if x)})" if kind or code else ""
        )
        extra = _retry_after(resp.headers.get("retry-after")) if status in (429, 503) else {}
        return _error_response(
            dialect, status, "upstream-error", message, ErrorInfo(None, kind, code), extra
        )

    def _upstream_headers(
        self, route: RouteRegistration, client: Mapping[str, str], dialect: Dialect
    ) -> Mapping[str, str]:
        """The upstream request's headers: the route's credential, read now (a changed key
        takes effect on the next call), and the dialect's forwarded client headers. Without
        forwarded headers the same route and key give the same headers: those are kept per
        route (a read-only mapping, at most 1024) and rebuilt when the key read differs."""
        key = route.upstream.read_key(dotenv=None)
        forwarded = [
            (name, value)
            for name in dialect.forwarded_headers
            if (value := client.get(name)) is not None
        ]
        if not forwarded:
            known = self._headers.get(id(route))
            if known is not None and known[0] is route and known[1] == key:
                return known[2]
        out = {"content-type": _JSON, "accept-encoding": "identity"}
        out.update(forwarded)
        out.update(route.upstream.auth_headers(key))
        if forwarded:
            return out
        if len(self._headers) >= 1024:
            self._headers.clear()
        kept = MappingProxyType(out)
        self._headers[id(route)] = (route, key, kept)
        return kept

    async def _answer(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        auth: _Authorised,
        call: _Call,
    ) -> Reply:
        row, t0 = call.row, call.t0
        try:
            raw = await resp.read()
        except TransportError:
            row.outcome, row.reason = "upstream-error", "upstream body cut"
            return await self._finish_refusal(call, 502, "the upstream answer was cut", dialect)
        finally:
            await resp.aclose()
        row.ttfb_ms = (time.perf_counter() - t0) * 1000
        try:
            data = orjson.loads(raw)
            turn = auth.upstream.parse_response(data)
            entry = None
            if auth.translation is not None:
                data, entry = auth.translation.answer(data)
        except Exception:  # not JSON, not the dialect's shape, or a parser failing on it
            row.outcome, row.reason = "upstream-error", "upstream body malformed"
            return await self._finish_refusal(
                call, 502, "the upstream answer was malformed", dialect
            )
        fill_usage(row, turn.usage, auth.route.price_per_mtok)
        conv = auth.binding.conversation_id
        entries = auth.upstream.vault_entries(turn) + ([entry] if entry is not None else [])
        visible = dialect.project_body(data, self._profile(auth.route, dialect))
        row.latency_ms = (time.perf_counter() - t0) * 1000
        final = [_copy(row)]

        def withheld() -> None:  # on the store thread, before the writes are queued
            final[0] = replace(
                final[0], outcome="upstream-error", reason="answer withheld: store-unavailable"
            )

        ops, now = self._completion(conv, entries, final)
        if now:  # the carriers without waiting, then the row in this tick's group commit
            done = self._now(now[:-1])
            if done == len(now) - 1 and await self._group.add(SQLiteStore.completing(final[0])):
                done += 1
            ops = ops[done:]
        kept = not ops or await self._settle_ops(
            call.budget_after(self.store_settings), ops, withheld
        )
        if not kept:
            # The answer's carriers are not durable: a next turn (on any replica) could not
            # put them back. The client asks again; this call's row stays, completed later.
            return self._unavailable(dialect, "the answer's evidence cannot be committed")
        return Reply(orjson.dumps(visible))

    def _completion(
        self, conv: str, entries: list[tuple[str, JSON]], final: list[EvidenceRow]
    ) -> tuple[list[Op], list[Now]]:
        """The writes after an upstream call, in order: the answer's carriers, then the
        completed row (``final[0]``, read when the write runs: a JSON answer withheld
        rewrites it before its writes are queued); and the same writes without waiting
        when both stores can (else none: they all take a store thread), the row's last."""
        ops: list[Op] = []
        if entries:
            ops.append(lambda: self.vault.put(conv, entries))
        ops.append(lambda: self.store.complete(final[0]))
        store, vault = self._store_now(), self._vault_now()
        if store is None or (entries and vault is None):
            return ops, []
        now: list[Now] = []
        if entries and vault is not None:
            now.append(lambda: vault.put_now(conv, entries))
        now.append(lambda: store.complete_now(final[0]))
        return ops, now

    async def _relay(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        auth: _Authorised,
        call: _Call,
        settled: asyncio.Event,
        client_body: JsonObject,
    ) -> AsyncIterator[bytes]:
        """The upstream stream through the dialect's projector. A cut or malformed stream
        ends with the dialect's error event, never with a clean finish; so does a stream the
        evidence decoder cannot follow (whatever it raises: the client's stream must end in
        the dialect's terms, and the row must say the call failed). The row's
        ``stream_state`` says who ended it: ``complete``, ``cut-by-upstream``,
        ``cut-by-client`` or ``malformed``. The stream's last bytes (its terminal literal
        event, or the error event) go after the row's completion, with the end of the body
        (:class:`~reasonwire.govern.asgi.Final`: one write for both)."""
        row, t0 = call.row, call.t0
        decoder = auth.upstream.stream_decoder()
        translator = auth.translation.stream(client_body) if auth.translation else None
        profile = self._profile(auth.route, dialect)
        projector: StreamProjector
        if translator is None:
            projector = dialect.stream_projector(profile)
        elif profile.think_tags:  # the translated stream, then the client dialect's cut
            projector = _Chained(translator, dialect.stream_projector(profile))
        else:
            projector = translator
        framing = OneParse.of(projector, decoder)  # None: each frames and parses its own
        turn: Turn | None = None
        failure: str | None = None
        state: StreamState | None = None
        literals = self._literals(dialect)
        ended = False  # the relay ran to its end (no exception in flight in the finally)
        held = b""  # a terminal literal event ([DONE]), sent once the stream is known good
        last = b""  # the stream's last bytes: sent after the evidence, with the body's end
        undecoded: bytes | None = None  # a chunk sent to the client, not decoded yet
        try:
            try:
                async for chunk in resp.aiter():
                    if row.ttfb_ms is None:
                        row.ttfb_ms = (time.perf_counter() - t0) * 1000
                    out = projector.feed(chunk) if framing is None else framing.feed(chunk)
                    # The client's copy, then the evidence (the first byte waits for no
                    # decode): a client that stops reading at its last event (an SDK at
                    # [DONE]) closes this generator at the yield, and the finally decodes
                    # the chunk it stopped at. A chunk the decoder cannot follow has had its
                    # projection sent (allow-listed bytes); the error event comes next.
                    undecoded = chunk
                    if out:
                        out, held = _hold_literal(held + out, literals)
                        if out:
                            yield out
                    undecoded = None
                    if framing is None:
                        decoder.feed(chunk)
                    else:
                        framing.decode()
                if framing is not None:
                    framing.flush()
                for ev in decoder.close():
                    if ev.type == "done":
                        turn = ev.turn
                if turn is not None and _no_answer(turn):
                    turn = None
                    raise MalformedBody("no answer of the dialect's shape in the stream")
                last = held + (projector.close() if framing is None else framing.close())
                state = "complete"
            except TruncatedStream as exc:
                failure = "the upstream stream ended before its last event"
                state = "cut-by-upstream"
                turn = exc.partial if isinstance(exc.partial, Turn) else None
            except TransportError:
                failure = "the upstream stream was cut"
                state = "cut-by-upstream"
                turn = decoder.partial_turn()
            except Exception as exc:  # MalformedBody, or a decoder failing on hostile input
                failure = f"the upstream stream was malformed ({type(exc).__name__})"
                state = "malformed"
            if failure is not None:
                row.outcome, row.reason = "upstream-error", failure
                last = projector.fail(failure)
            ended = True
        finally:
            await resp.aclose()
            if turn is None and failure is None:
                # the client left after the last event
                turn = _finished_turn(decoder, framing, undecoded)
                if state is None:
                    state = "complete" if turn is not None else "cut-by-client"
            if state == "cut-by-client":
                row.outcome, row.reason = "upstream-error", "the client left mid-stream"
            row.stream_state = state
            conv = auth.binding.conversation_id
            entries: list[tuple[str, JSON]] = []
            if turn is not None:
                entries += auth.upstream.vault_entries(turn)
                fill_usage(row, turn.usage, auth.route.price_per_mtok)
            if translator is not None and auth.translation is not None:
                entry = auth.translation.vault_entry(translator)
                if entry is not None:
                    entries.append(entry)
            row.latency_ms = (time.perf_counter() - t0) * 1000
            self._finish_stream(call, conv, entries, settled)
            # Bounded wait for the writes, so a client that read to the end (or stopped at
            # its last event) finds its row complete; a cancelled task cannot wait, and its
            # writes finish on their own (settled is set by the store thread).
            try:
                await self._stream_settled(call, settled)
            except asyncio.CancelledError:
                if ended:  # nothing else in flight: the cancellation is this task's own
                    raise
        if last:
            yield Final(last)

    def _literals(self, dialect: Dialect) -> tuple[bytes, ...]:
        """The dialect's terminal literal events as the projector writes them (made once per
        set of literals: a dialect's are fixed data)."""
        found = self._literal_events.get(dialect.stream_literals)
        if found is None:
            found = tuple(encode_event("message", t) for t in sorted(dialect.stream_literals))
            self._literal_events[dialect.stream_literals] = found
        return found

    def _finish_stream(
        self,
        call: _Call,
        conv: str,
        entries: list[tuple[str, JSON]],
        settled: asyncio.Event,
    ) -> None:
        """The stream's writes, on the event loop when they need no waiting (the carriers
        now, the row in this tick's group commit), else on a store thread; ``settled`` is set
        (on the loop) once they are done or queued, whether or not anyone awaits them (a
        generator closed by a client that left cannot await: the group's future and the
        thread report to the loop by themselves)."""
        final = [_copy(call.row)]
        ops, now = self._completion(conv, entries, final)
        if now:
            done = self._now(now[:-1])
            ops = ops[done:]
            if done == len(now) - 1:
                grouped = self._group.add(SQLiteStore.completing(final[0]))
                grouped.add_done_callback(partial(self._stream_grouped, call, conv, ops, settled))
                return
        self._stream_waiting(call, conv, ops, settled)

    def _stream_grouped(
        self,
        call: _Call,
        conv: str,
        ops: list[Op],
        settled: asyncio.Event,
        grouped: asyncio.Future[bool],
    ) -> None:
        """The stream's row committed by its group (settled), or the waiting way when the
        group could not commit it."""
        if not grouped.cancelled() and grouped.result():
            self._settle(conv, settled)
        else:
            self._stream_waiting(call, conv, ops, settled)

    def _stream_waiting(
        self, call: _Call, conv: str, ops: list[Op], settled: asyncio.Event
    ) -> None:
        """The stream's writes left, on a store thread (``settled`` once done or queued)."""
        if not ops:
            self._settle(conv, settled)
            return
        loop = asyncio.get_running_loop()

        def run() -> None:
            try:
                self._apply(ops)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(self._settle, conv, settled)

        try:
            call.tail = self._executor.submit(run)
        except RuntimeError:  # the executor is shut down (gateway closing)
            self._queue(ops)
            self._settle(conv, settled)

    async def _stream_settled(self, call: _Call, settled: asyncio.Event) -> None:
        """Wait (bounded) for the stream's writes, so that a client reading the stream to
        its end finds its row complete."""
        if settled.is_set():  # written on the event loop (no Task to wait for it)
            return
        budget = call.budget_after(self.store_settings)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(budget.left):  # no Task per wait (wait_for makes one)
                await settled.wait()

    async def _settled(self, conversation_id: str, timeout: float = 10.0) -> None:
        """Wait until the conversation's earlier streams have stored their vault entries."""
        pending = list(self._unsettled.get(conversation_id, ()))
        if pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(e.wait() for e in pending)), timeout)

    def _settle(self, conversation_id: str, settled: asyncio.Event) -> None:
        settled.set()
        waiting = self._unsettled.get(conversation_id)
        if waiting is not None:
            with contextlib.suppress(ValueError):
                waiting.remove(settled)
            if not waiting:
                del self._unsettled[conversation_id]

    # -- evidence -----------------------------------------------------------------------

    async def _refuse(
        self, call: _Call, status: int, exc: PolicyRefusal, dialect: Dialect
    ) -> Reply:
        call.row.reason = exc.reason  # the row is made here when the refusal came first
        return await self._finish_refusal(call, status, exc.detail, dialect)

    async def _finish_refusal(
        self, call: _Call, status: int, detail: str, dialect: Dialect
    ) -> Reply:
        budget = call.budget_after(self.store_settings) if call.opened else call.budget
        await self._write(budget, call.row, call.t0, call.opened)
        return _refusal(status, call.row.reason or "refused", detail, dialect)


class _Call:
    """One request's evidence state: the facts its steps established, its row (made from
    them once, when first needed), its start, its store budget, whether its pending row was
    committed (then later writes complete it)."""

    __slots__ = ("_row", "budget", "facts", "opened", "t0", "tail")

    def __init__(self, facts: _Facts, t0: float, budget: _Budget) -> None:
        self.facts = facts
        self.t0 = t0
        self.budget = budget
        self.opened = False
        self.tail: Future[None] | None = None
        self._row: EvidenceRow | None = None

    @property
    def row(self) -> EvidenceRow:
        """The request's evidence row: made from the facts when first needed (a refusal
        before the upstream call, or the hop that commits the pending row), the same row
        from then on."""
        if self._row is None:
            self._row = self.facts.row()
        return self._row

    @row.setter
    def row(self, row: EvidenceRow) -> None:
        self._row = row

    def budget_after(self, settings: StoreSettings) -> _Budget:
        """A fresh budget for the writes after the upstream call (the call itself is not
        store time)."""
        return _Budget(settings)


def _check_translated_tools(body: JsonObject, route: RouteRegistration) -> None:
    """On a translated route, what goes upstream names function tools only, or hosted tool
    types the route allows (:attr:`RouteRegistration.hosted_tools`); ``tool-not-allowed``
    otherwise. Checked on the translated body: what would really reach the upstream."""
    allowed = route.hosted_tools | {"function"}
    tools = body.get("tools")
    named: list[JSON] = [t.get("type") if isinstance(t, dict) else t for t in tools or ()]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        named.append(choice.get("type"))
    refused = sorted({str(n) for n in named if n not in allowed})
    if refused:
        raise PolicyRefusal(
            "tool-not-allowed",
            f"route {route.route_id} passes function tools only; refused: {', '.join(refused)}",
        )


def _hold_literal(out: bytes, literals: tuple[bytes, ...]) -> tuple[bytes, bytes]:
    """``out`` split into what to send now and a terminal literal event it ends with (held
    until the upstream stream is known to have ended well: an SDK stops at ``[DONE]``, so
    an error event after it would never be read)."""
    for lit in literals:
        if out.endswith(lit):
            return out[: -len(lit)], lit
    return out, b""


def _no_answer(turn: Turn) -> bool:
    """A finished stream with nothing of an answer in it: no text, reasoning, tool call or
    finish reason (the upstream sent events of another shape, or only a terminal literal)."""
    return not (turn.text or turn.reasoning_text or turn.tool_calls or turn.finish_reason)


class _Chained:
    """Two stream projectors in a row (a translated stream, then the client dialect's own
    projection, for its ``<think>`` cut); the second one's error event ends a failure."""

    def __init__(self, first: StreamProjector, second: StreamProjector) -> None:
        self.first, self.second = first, second

    def feed(self, chunk: bytes) -> bytes:
        return self.second.feed(self.first.feed(chunk))

    def close(self) -> bytes:
        return self.second.feed(self.first.close()) + self.second.close()

    def fail(self, reason: str) -> bytes:
        return self.second.fail(reason)


INLINE_THINK_DIALECTS = frozenset({"chat"})
"""Client dialects on which ``<think>`` blocks are cut from visible text by default: the
OpenAI-compatible Chat Completions API, where servers for open models pass a model's inline
reasoning through in ``content`` (see :attr:`RouteRegistration.no_think_tags`)."""


def _finished_turn(
    decoder: StreamDecoder, framing: OneParse | None, undecoded: bytes | None
) -> Turn | None:
    """The turn of a stream whose relay was closed early, with every byte the client was
    sent decoded (``undecoded``: the chunk it stopped at; with a shared framing, what that
    still holds, as the decoder's own close would take it)."""
    try:
        if framing is not None:
            framing.flush()  # the chunk not decoded yet first
        elif undecoded is not None:
            decoder.feed(undecoded)
        events = decoder.close()
    except Exception:  # truncated or malformed: no finished turn to keep
        return None
    return next((ev.turn for ev in events if ev.type == "done"), None)


_REFUSAL_STATUS = {
    "malformed-body": 400,
    "tool-not-allowed": 400,
    "bad-attempt": 400,
    "body-too-large": 413,
    "headers-too-large": 431,
}
"""Refusals of the request itself (its shape or size) by status; every other refusal is 403."""
