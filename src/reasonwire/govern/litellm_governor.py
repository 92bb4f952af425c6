"""Governed effort inside a LiteLLM proxy, with the gateway's promise: the hook LiteLLM calls
before, during and after each chat completion.

For each chat completion the proxy receives, :class:`Governor` (the hook's logic, without
LiteLLM) does what the gateway does, in the same order and with the same dialect objects:

Before the call (``async_pre_call_hook``, once per client request)
    verify the binding header (:func:`~reasonwire.govern.binding.verify`), match its
    conversation to the conversation header, re-check the runtime pin, the route (registered,
    not revoked, chat, same model as the request) and the policy, fix the conversation's
    effort and intent; refuse (400 ``routing-field``) every field or header by which a client
    picks its own routing or retries (:data:`ROUTING_FIELDS`, :data:`ROUTING_HEADERS`: client
    ``fallbacks``, ``num_retries``, model lists, ``api_base``/``base_url``, ``extra_headers``,
    ``metadata`` that LiteLLM reads as routing metadata...); apply the dialect's request
    allow-list (:meth:`~reasonwire.wire.dialect.Dialect.validate_request`: the gateway's shape
    validation, unknown fields dropped and named in the evidence); strip every reasoning
    control, put back the conversation's vaulted carriers, inject the route's fragment. The
    route's own settings (LiteLLM's deployment ``litellm_params``) are the only others.
Each upstream attempt (``async_pre_call_deployment_hook`` and the deployment success and
failure hooks: LiteLLM calls them once per attempt, its own retries and fallbacks included)
    the attempt's model group must be the route's model (a fallback to another model is
    refused before it is sent, with its own row), the SDK's internal retries are set to 0 so
    one attempt is one upstream request, and the attempt gets its own evidence row.
After the call (``async_post_call_success_hook`` for JSON,
``async_post_call_streaming_iterator_hook`` for streams, ``async_post_call_failure_hook`` and
``async_post_call_response_headers_hook``)
    the answer is the dialect's visible projection (the gateway's allow-list: hidden
    reasoning, ``<think>`` text, ``reasoning_content``, ``thinking_blocks`` and their
    signatures, ``reasoning_details`` never reach the client; ``<think>`` blocks are cut unless
    the route's profile says its model never writes them, ``think_tags=False``), the opaque
    carriers of the answer are kept server-side (the vault) and put back on the next call of
    the conversation; an upstream error is the hook's own error object (never the upstream
    body); the upstream's relayed response headers (LiteLLM's ``llm_provider-*``, which carry
    ``set-cookie`` and anything an upstream echoes, the key included) are dropped.

Evidence: one :class:`~reasonwire.govern.evidence.EvidenceRow` per refusal and one per
upstream attempt, committed as ``pending`` before the attempt is let out (a store that cannot
commit it in time: 503, nothing sent) and completed when the attempt ends (LiteLLM's
deployment hooks, or the end of the relayed stream). The first attempt's row is written when
the call is admitted; the attempt waits for that write. A call that never gets an attempt
(LiteLLM ends it first, the hook stops waiting, the call is forgotten) has that row closed
``refused`` with the reason, so no row stays ``pending`` for an attempt that never went out.

Where the work runs. With the SQLite store and the in-memory vault, a call on a conversation
whose effort and intent are already fixed (cached: fixed once, they never change) is
admitted on the proxy's event loop, and its rows - a refusal's, the first attempt's pending
row, each completion - are committed there when SQLite can commit without waiting
(:class:`~reasonwire.govern.evidence.NoWait`: the connection's lock free, SQLite's busy
timeout 0). A write that would wait (the database locked by another process or a
checkpoint) or fails writes nothing there and goes to the hook's own store threads, where it
waits as any store write does; the rules are the same either way (the attempt is let out
only once its row is committed, a store that cannot commit within the budget is a 503). The
first call of a conversation (which fixes its effort in the store), a PostgreSQL or other
store, a shared vault, and a later attempt's row take the store threads.

Why: under load the hop was the hook's largest cost, not the governance. Measured in the
real proxy at 32 connections (``bench/bench_gateway.py``'s LiteLLM rows and
``bench/bench_litellm_hook.py``, py-spy on the hooked proxy against LiteLLM alone): with the
authorisation and the pending row on a store thread and each completion on another, the
hooked proxy spent ~1.0-1.6 ms more CPU per request than LiteLLM alone (~9-11 ms), of which
the hook's own frames were under half a millisecond - the rest was the store threads and
LiteLLM's busy loop handing the GIL to each other; on the loop, with no hop, ~0.4-0.5 ms
more, the hook's own work (~0.2 ms per call in process, two SQLite commits included). A
binding is verified once per token (:class:`~reasonwire.govern.verified.VerifiedBindings`;
expiry and key checked on every call), and a route's profile is made once per registration.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import NoReturn, TypeVar

import orjson

from reasonwire.errors import (
    HookRefused,
    PolicyRefusal,
    ReasonwireError,
    ShapeError,
    StoreUnavailable,
)
from reasonwire.govern.authority import policy_now, settle_effort
from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.carry import ATTEMPT_HEADER, CONVERSATION_HEADER
from reasonwire.govern.evidence import (
    EvidenceRow,
    EvidenceStore,
    Outcome,
    SQLiteStore,
    fill_usage,
    new_call_id,
)
from reasonwire.govern.litellm_fields import (
    CALL_ID_KEY,
    PROXY_REQUESTER_KEYS,
    ROUTING_FIELDS,
    ROUTING_HEADERS,
    ROUTING_PREFIXES,
    client_keys,
    litellm_metadata,
    mask_binding,
    plain_name,
    request_headers,
    response_json,
)
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.govern.stores import MemoryVault, VaultStore
from reasonwire.govern.verified import VerifiedBindings
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import JSON, JsonObject, Turn
from reasonwire.wire.profile import Profile
from reasonwire.wire.registry import get_dialect

_CHAT_CALLS = frozenset({"completion", "acompletion"})
_MAX_PENDING = 10_000
_MAX_ATTEMPT = 1000
_STATUS = {"malformed-body": 400, "bad-attempt": 400, "routing-field": 400}


@dataclass
class _Call:
    """One governed client request: its template row, route, profile and attempts."""

    template: EvidenceRow
    route: RouteRegistration
    profile: Profile
    t0: float
    conversation_id: str
    attempts: int = 0
    open: EvidenceRow | None = None
    open_t0: float = 0.0
    finished: bool = False
    rows: list[str] = field(default_factory=list)
    prepared: EvidenceRow | None = None
    """The first attempt's ``pending`` row, written when the call was admitted;
    None once an attempt took it (or the call never had one)."""
    completing: Future[None] | None = None
    """The completion of the last closed attempt's row, while on a store thread (None: none,
    or committed on the loop)."""
    ready: Future[None] = field(default_factory=Future)
    """The write of :attr:`prepared`: done when committed, or with the store's error. Never
    cancellable (it is marked running when made), so a waiter giving up cannot undo it."""

    def __post_init__(self) -> None:
        self.ready.set_running_or_notify_cancel()


class _Ticket:
    """One :meth:`Governor.apre_call` as its store thread and the event loop both see it,
    under the governor's lock: either the loop gave up waiting first (``abandoned``: the
    client has its 503, so the thread registers no call), or the thread registered ``call``
    first (and the loop, giving up, ends it: its first attempt never goes out)."""

    __slots__ = ("abandoned", "call")

    def __init__(self) -> None:
        self.abandoned = False
        self.call: _Call | None = None


class Governor:
    """The hook's logic: authorise and rewrite one request (``pre_call``), account for each
    upstream attempt (``attempt_*``), project the answer (``answer``, ``relay``). Thread- and
    task-safe."""

    def __init__(
        self,
        registry: Registry,
        policy: OrgPolicy,
        keys: KeyRing,
        store: EvidenceStore,
        vault: VaultStore | None = None,
        store_timeout: float = 2.0,
        retry_after: int = 1,
    ) -> None:
        """``store_timeout``: seconds a request may wait for the evidence store before its
        upstream call (authorising, committing each attempt's row); past it the client gets
        ``503`` with ``Retry-After: retry_after`` and nothing goes upstream (the gateway's
        :class:`~reasonwire.govern.gateway.StoreSettings` defaults)."""
        self.store_timeout = store_timeout
        self.retry_after = retry_after
        self.registry = registry
        self.policy = policy
        self.keys = keys
        self.store = store
        self.vault: VaultStore = vault if vault is not None else MemoryVault()
        self.dialect = get_dialect("chat")
        self.verified = VerifiedBindings(keys)
        self._calls: OrderedDict[str, _Call] = OrderedDict()
        self._profiles: dict[str, tuple[RouteRegistration, Profile]] = {}
        self._lock = threading.Lock()
        # Store work that may wait runs on these threads (see the module: what runs on the
        # proxy's loop instead), never queued behind LiteLLM's own use of the loop's default
        # executor.
        self.executor = ThreadPoolExecutor(4, thread_name_prefix="reasonwire-hook-store")

    # -- before the call ---------------------------------------------------------------

    def pre_call(self, data: JsonObject, call_type: str) -> JsonObject:
        """The request LiteLLM should send, or :class:`HookRefused` (after recording the row).
        The first attempt's pending row is written before this returns (its outcome, a store
        error included, is what :meth:`attempt_start` finds)."""
        out, call = self._pre_call(data, call_type, None)
        if call is not None and call.prepared is not None:
            self._write_prepared(call, call.prepared)
        return out

    def _pre_call(
        self, data: JsonObject, call_type: str, ticket: _Ticket | None
    ) -> tuple[JsonObject, _Call | None]:
        t0 = time.perf_counter()
        row = EvidenceRow(outcome="refused", conversation_id=None, dialect=self.dialect.name)
        try:
            return self._admit(data, call_type, row, t0, ticket)
        except PolicyRefusal as exc:
            self.refuse(row, exc, t0)

    async def apre_call(self, data: JsonObject, call_type: str) -> JsonObject:
        """:meth:`pre_call` from the proxy's event loop, within the store budget: on a store
        thread, which answers as soon as the request is admitted and then writes the first
        attempt's pending row while LiteLLM goes on to its attempt (which waits for that
        write: :meth:`aattempt_start`): one thread hop per call, and the commit overlaps
        LiteLLM's own work. A call the loop stops waiting for is not let out
        (:class:`_Ticket`).

        On the loop itself, no thread, when nothing of it may wait (:meth:`_admits_now`):
        the request is admitted there and its first attempt's pending row committed there
        when SQLite can without waiting (:meth:`_prepare_now`)."""
        if self._admits_now(data):
            return await self._apre_call_now(data, call_type)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[JsonObject] = loop.create_future()
        ticket = _Ticket()
        self.executor.submit(self._admit_then_prepare, loop, answer, ticket, data, call_type)
        try:
            async with asyncio.timeout(self.store_timeout):
                return await answer
        except BaseException as exc:
            with self._lock:
                ticket.abandoned = True
                call = ticket.call
            if call is not None:  # admitted, but the loop gave up first: never let out
                self._end_unsent(call, "store-unavailable: the hook stopped waiting")
                self._done(call)
            if isinstance(exc, TimeoutError | StoreUnavailable):
                raise _unavailable(self) from None
            raise

    def _store_now(self) -> SQLiteStore | None:
        """The evidence store, when its writes may run on the proxy's loop without ever
        waiting (:class:`~reasonwire.govern.evidence.NoWait`: a write that would wait writes
        nothing and takes a store thread instead); else None."""
        store = self.store
        return store if isinstance(store, SQLiteStore) and store.writes_now else None

    def _admits_now(self, data: Mapping[str, JSON]) -> bool:
        """Admitting ``data`` reads no store and waits for nothing: the store's writes never
        wait, the vault is in memory, and the conversation's effort and intent are cached
        (fixed once, they never change; the first call of a conversation fixes them on a
        store thread)."""
        store = self._store_now()
        if store is None or not isinstance(self.vault, MemoryVault):
            return False
        conv = request_headers(data).get(CONVERSATION_HEADER)
        return conv is not None and store.fixed(conv)

    async def _apre_call_now(self, data: JsonObject, call_type: str) -> JsonObject:
        """:meth:`apre_call` on the loop (:meth:`_admits_now`); a refusal's row is committed
        before the refusal is answered (a store that cannot: 503)."""
        t0 = time.perf_counter()
        row = EvidenceRow(outcome="refused", conversation_id=None, dialect=self.dialect.name)
        try:
            out, call = self._admit(data, call_type, row, t0, None)
        except PolicyRefusal as exc:
            refusal = self._refusal(row, exc, t0)
            if not _now(lambda store: store.record_now(row), self._store_now()):
                await _bounded(self, self.store.record, row)
            raise refusal from None
        if call is not None and call.prepared is not None:
            self._prepare_now(call, call.prepared)
        return out

    def _prepare_now(self, call: _Call, row: EvidenceRow) -> None:
        """Commit the first attempt's pending row on the loop if that needs no waiting, else
        leave it to a store thread (:meth:`_write_prepared`), for :meth:`aattempt_start` to
        wait for (:attr:`_Call.ready` is set only once the row is committed)."""
        if _now(lambda store: store.record_now(row), self._store_now()):
            call.ready.set_result(None)
        else:
            self.executor.submit(self._write_prepared, call, row)

    def _admit_then_prepare(
        self,
        loop: asyncio.AbstractEventLoop,
        answer: asyncio.Future[JsonObject],
        ticket: _Ticket,
        data: JsonObject,
        call_type: str,
    ) -> None:
        """On a store thread: admit the call, answer the loop, then write the first attempt's
        pending row."""
        try:
            out, call = self._pre_call(data, call_type, ticket)
        except Exception as exc:  # a refusal (its row recorded), or the store's error
            _settle(loop, answer, exc)
            return
        first = call.prepared if call is not None else None  # read before the loop may take it
        _settle(loop, answer, out)
        if call is not None and first is not None:
            self._write_prepared(call, first)

    def _write_prepared(self, call: _Call, row: EvidenceRow) -> None:
        """Commit the first attempt's pending row; :attr:`_Call.ready` says how it went."""
        try:
            self.store.record(row)
        except Exception as exc:  # StoreUnavailable, or a store's own failure: no attempt
            call.ready.set_exception(exc)
        else:
            call.ready.set_result(None)

    def refuse(self, row: EvidenceRow, exc: PolicyRefusal, t0: float) -> NoReturn:
        """Record the refused call's row and raise the refusal as :class:`HookRefused`."""
        refusal = self._refusal(row, exc, t0)
        self.store.record(row)
        raise refusal from None

    @staticmethod
    def _refusal(row: EvidenceRow, exc: PolicyRefusal, t0: float) -> HookRefused:
        """The refused call's row filled in (still to be recorded), and its refusal."""
        row.reason = exc.reason
        row.latency_ms = (time.perf_counter() - t0) * 1000
        status = _STATUS.get(exc.reason, 403)
        return HookRefused(status, exc.reason, f"reasonwire refused: {exc.reason}: {exc.detail}")

    def _admit(
        self,
        data: JsonObject,
        call_type: str,
        row: EvidenceRow,
        t0: float,
        ticket: _Ticket | None,
    ) -> tuple[JsonObject, _Call | None]:
        """The authorised and rewritten request, registered as a call with its first
        attempt's pending row prepared (PolicyRefusal else); no call when the loop already
        gave up waiting (``ticket``)."""
        out, route, profile = self._authorise_and_rewrite(data, call_type, row)
        meta = out.get("metadata")
        if not isinstance(meta, dict):
            meta = out["metadata"] = {}
        meta[CALL_ID_KEY] = row.call_id  # in place: LiteLLM holds this dict elsewhere too
        call = _Call(row, route, profile, t0, row.conversation_id or "")
        call.prepared = self._attempt_row(call, 1)
        lost: list[_Call] = []
        with self._lock:
            if ticket is not None:
                if ticket.abandoned:
                    return out, None
                ticket.call = call
            self._calls[row.call_id] = call
            while len(self._calls) > _MAX_PENDING:
                lost.append(self._calls.popitem(last=False)[1])
        for gone in lost:
            self._end(gone, "no outcome reported by litellm")
        return out, call

    @staticmethod
    def _attempt_row(call: _Call, number: int) -> EvidenceRow:
        """The ``pending`` row of the call's ``number``-th attempt (from 1)."""
        row = replace(call.template, call_id=new_call_id(), ts=time.time())
        row.outcome = "pending"  # committed before the attempt is sent (evidence first)
        row.attempt = (call.template.attempt or 1) + number - 1
        return row

    def _authorise_and_rewrite(
        self, data: JsonObject, call_type: str, row: EvidenceRow
    ) -> tuple[JsonObject, RouteRegistration, Profile]:
        headers = request_headers(data)
        row.conversation_id = headers.get(CONVERSATION_HEADER)
        attempt = headers.get(ATTEMPT_HEADER, "1")
        if not (
            attempt.isascii()
            and attempt.isdigit()
            and len(attempt) <= 4
            and 1 <= int(attempt) <= _MAX_ATTEMPT
        ):
            raise PolicyRefusal(
                "bad-attempt", f"{ATTEMPT_HEADER} must be an integer from 1 to {_MAX_ATTEMPT}"
            )
        row.attempt = int(attempt)
        token = headers.get(HEADER)
        if not token:
            raise PolicyRefusal("binding-missing", f"header {HEADER} is required")
        if not row.conversation_id:
            raise PolicyRefusal("conversation-missing", f"header {CONVERSATION_HEADER} is required")
        b = self.verified.verify(token)
        row.key_id, row.task_id = b.key_id, b.task_id
        row.runtime_id, row.runtime_version = b.runtime_id, b.runtime_version
        row.route_id, row.requested = b.route_id, b.requested
        if b.conversation_id != row.conversation_id:
            raise PolicyRefusal(
                "conversation-mismatch", "the binding was issued for another conversation"
            )
        route = self.registry.route(b.route_id)
        row.route_qualification = route.qualification_id
        if call_type not in _CHAT_CALLS or route.dialect != self.dialect.name:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {route.route_id} speaks {route.dialect}; this is a {call_type} call",
            )
        if data.get("model") != route.model:
            raise PolicyRefusal(
                "provider-mismatch", f"route {route.route_id} is bound to model {route.model!r}"
            )
        client = client_keys(data)
        self._refuse_routing(data, client, headers)
        res = policy_now(self.registry, self.policy, b)
        row.runtime_qualification = res.runtime_qualification
        row.resolved = resolved = settle_effort(self.store, b, res)
        mask_binding(data)
        try:
            shaped = self.dialect.validate_request({k: data[k] for k in client if k in data})
        except ShapeError as exc:
            raise PolicyRefusal("malformed-body", f"{exc.path}: {exc.problem}") from None
        dropped = sorted(k for k in client if k not in shaped)
        if dropped:
            row.reason = "unknown fields dropped: " + ",".join(plain_name(k) for k in dropped)[:200]
        profile = self._profile(route)
        body, removed = self.dialect.strip_controls(shaped, profile)
        fragment = route.levels[resolved]
        if self.dialect.is_non_escalating(removed) and not self.dialect.strip_controls(fragment)[1]:
            body.update(removed)  # only an exact lowering value, on a route that sets none
        else:
            deep_merge(body, dict(fragment))
        row.controls_removed = ",".join(removed)
        conv = b.conversation_id
        row.carriers_reattached = self.dialect.reattach(body, lambda k: self.vault.get(conv, k))
        if self.dialect.wants_stream(body):
            row.stream = True
            deep_merge(body, dict(self.dialect.stream_usage))
        out = {k: v for k, v in data.items() if k not in client}
        out.update(body)
        return out, route, profile

    def _profile(self, route: RouteRegistration) -> Profile:
        """The route's profile, made once per registration (a route registered again gets
        its own): ``<think>`` blocks cut unless the route says its model never writes them."""
        known = self._profiles.get(route.route_id)
        if known is not None and known[0] is route:
            return known[1]
        fields = dict(route.profile_fields)
        fields.setdefault("think_tags", True)  # cut unless the route says its model never does
        profile = self.dialect.profile(route.profile, **fields)
        if len(self._profiles) < 1024:
            self._profiles[route.route_id] = (route, profile)
        return profile

    def _refuse_routing(
        self, data: Mapping[str, JSON], client: set[str], headers: Mapping[str, str]
    ) -> None:
        """Refuse a client that picks its own routing, retries or transport (the names only
        when plain)."""
        named = sorted(k for k in client if k in ROUTING_FIELDS or k.startswith(ROUTING_PREFIXES))
        meta = data.get("metadata")
        asked = meta.get("requester_metadata") if isinstance(meta, Mapping) else None
        if isinstance(asked, Mapping) and set(asked) - PROXY_REQUESTER_KEYS:
            named.append("metadata")
        named += sorted(h for h in ROUTING_HEADERS if h in headers)
        if named:
            raise PolicyRefusal(
                "routing-field",
                "the route's own settings decide routing and retries; the request sets "
                + ", ".join(plain_name(n) for n in named),
            )

    # -- each upstream attempt ----------------------------------------------------------

    def _call(self, kwargs: Mapping[str, JSON]) -> _Call | None:
        call_id = litellm_metadata(kwargs).get(CALL_ID_KEY)
        with self._lock:
            return self._calls.get(call_id) if isinstance(call_id, str) else None

    def attempt_start(self, kwargs: JsonObject) -> JsonObject:
        """One upstream attempt is about to be sent: it gets its own row, committed as
        ``pending`` before the attempt goes out (a store that cannot commit raises, and the
        attempt is not sent); an attempt on another model than the route's (a fallback) is
        refused before it is sent. The first attempt's row was written when the call was
        admitted: this waits for that write (within the store budget)."""
        call = self._call(kwargs)
        if call is None:
            return kwargs
        row = self._take_prepared(call)
        if row is None:
            return self._next_attempt(call, kwargs)
        try:
            call.ready.result(self.store_timeout)  # the store's error: no upstream call
        except TimeoutError:
            self._end_unsent(call, "store-unavailable: the hook stopped waiting", row)
            raise StoreUnavailable("the first attempt's row was not committed in time") from None
        return self._let_out(call, row, kwargs)

    async def aattempt_start(self, kwargs: JsonObject) -> JsonObject:
        """:meth:`attempt_start` from the proxy's event loop: the first attempt waits there
        for its row's write (no thread hop when it is already committed, as it mostly is),
        a later attempt writes its own on a store thread; a store that cannot commit in the
        budget is :class:`HookRefused` 503, nothing sent."""
        call = self._call(kwargs)
        if call is None:
            return kwargs
        row = self._take_prepared(call)
        if row is None:
            return await _bounded(self, self._next_attempt, call, kwargs)
        try:
            if not call.ready.done():
                async with asyncio.timeout(self.store_timeout):
                    await asyncio.wrap_future(call.ready)
            call.ready.result()
        except TimeoutError:
            self._end_unsent(call, "store-unavailable: the hook stopped waiting", row)
            raise _unavailable(self) from None
        except StoreUnavailable:
            raise _unavailable(self) from None
        return self._let_out(call, row, kwargs)

    def _take_prepared(self, call: _Call) -> EvidenceRow | None:
        """The first attempt's prepared row, now this attempt's (None when already taken)."""
        with self._lock:
            row, call.prepared = call.prepared, None
            if row is not None:
                call.attempts += 1
        return row

    def _next_attempt(self, call: _Call, kwargs: JsonObject) -> JsonObject:
        """A later attempt (LiteLLM's retry or fallback): its row written now, then let out
        - after the previous attempt's row is completed (one pending row per call at a time:
        what an upstream sees in the evidence when an attempt arrives)."""
        with self._lock:
            if call.open is not None:  # the previous attempt ended without a report
                reason = "attempt ended without a report"
                self._close(call, "upstream-error", None, reason, here=True)
            previous, call.completing = call.completing, None
            call.attempts += 1
            row = self._attempt_row(call, call.attempts)
        if previous is not None:
            wait([previous])  # queued before this job, so already taken by a store thread
        self.store.record(row)  # StoreUnavailable: no row, so no upstream call
        return self._let_out(call, row, kwargs)

    def _let_out(self, call: _Call, row: EvidenceRow, kwargs: JsonObject) -> JsonObject:
        """The attempt whose pending row is committed, open until it reports (refused if it
        is a fallback to another model)."""
        with self._lock:
            row.outcome = "upstream-error"  # until the attempt answers 200
            call.open, call.open_t0 = row, time.perf_counter()
        meta = litellm_metadata(kwargs)
        group = meta.get("model_group")
        if group is not None and group != call.route.model:
            with self._lock:
                row.outcome = "refused"
                self._close(call, "refused", None, "provider-mismatch: a fallback to another model")
            raise PermissionError(
                f"reasonwire refused: route {call.route.route_id} is bound to model "
                f"{call.route.model!r}"
            )
        kwargs["max_retries"] = 0  # one attempt is one upstream request: LiteLLM retries
        return kwargs

    def attempt_failed(self, request_data: Mapping[str, JSON], exc: BaseException) -> None:
        call = self._call(request_data)
        if call is None:
            return
        status = getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        reason = f"upstream status {status}" if status else f"upstream: {type(exc).__name__}"
        with self._lock:
            self._close(call, "upstream-error", status, reason)

    def attempt_answered(self, request_data: Mapping[str, JSON], response: object) -> None:
        """A JSON attempt answered: usage from the provider's figures, opaque carriers kept
        server-side."""
        call = self._call(request_data)
        if call is None:
            return
        turn = self._turn(response_json(response))
        with self._lock:
            row = call.open
            if row is not None:
                self._keep(call, row, turn)
                self._close(call, "forwarded", 200, row.reason)

    def _turn(self, body: JSON) -> Turn | None:
        if body is None:
            return None
        try:
            return self.dialect.parse_response(body)
        except (ReasonwireError, ValueError, TypeError, KeyError, AttributeError):
            return None  # unreadable: usage stays unavailable, never made up

    def _keep(self, call: _Call, row: EvidenceRow, turn: Turn | None) -> None:
        if turn is None:
            return
        self.vault.put(call.conversation_id, self.dialect.vault_entries(turn))
        fill_usage(row, turn.usage, call.route.price_per_mtok)

    def _end(self, call: _Call, reason: str) -> None:
        """Close whatever of ``call`` is still open: LiteLLM will not report on it."""
        with self._lock:
            self._close(call, "upstream-error", None, reason)
        self._end_unsent(call, reason)

    def _end_unsent(
        self,
        call: _Call,
        reason: str,
        row: EvidenceRow | None = None,
        status: int | None = None,
    ) -> None:
        """Close the first attempt's row as ``refused``: that attempt never went out (LiteLLM
        ended the call before it, or the hook stopped waiting for the row's write). ``row``:
        the row when an attempt took it; else the one still prepared, if any. The row is
        closed once its write is committed (an update before the insert would leave it
        pending); a write that failed left no row to close."""
        if row is None:
            with self._lock:
                row, call.prepared = call.prepared, None
        if row is None:
            return
        unsent = row

        def close(written: Future[None]) -> None:
            if written.exception() is not None:
                return
            unsent.outcome, unsent.reason, unsent.status_code = "refused", reason, status
            unsent.latency_ms = (time.perf_counter() - call.t0) * 1000
            # a store down now leaves the row pending: "outcome never recorded", as documented
            self._complete_soon(unsent)

        call.ready.add_done_callback(close)

    def _close(
        self,
        call: _Call,
        outcome: Outcome,
        status: int | None,
        reason: str | None,
        here: bool = False,
    ) -> None:
        """Record ``call``'s open attempt (the caller holds the lock): its pending row,
        committed before the attempt went out, is completed on a store thread, and nothing
        waits for that (:meth:`_complete`); ``here``: on this thread (a store thread)."""
        row = call.open
        if row is None:
            return
        call.open = None
        row.outcome, row.reason, row.status_code = outcome, reason, status
        row.latency_ms = (time.perf_counter() - call.open_t0) * 1000
        call.rows.append(row.call_id)
        if here:
            self._complete(row)
        else:
            call.completing = self._complete_soon(row)

    def _complete_soon(self, row: EvidenceRow) -> Future[None] | None:
        """Complete ``row`` without waiting for it (:meth:`_complete`): on the proxy's loop
        when SQLite can commit it there without waiting (None: done), else on a store thread
        (the future says when it is done)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a store thread, or no loop: the store thread's way
            store = None
        else:
            store = self._store_now()
        if _now(lambda s: s.complete_now(row), store):
            return None
        return self.executor.submit(self._complete, row)

    def _complete(self, row: EvidenceRow) -> None:
        """Complete an attempt's row. Nobody waits for it: what the client gets does not
        depend on it, and the proxy's event loop would otherwise sit through the commit on
        every call (the row was committed before the attempt went out, so this update
        always finds it). A store that cannot commit now leaves the row ``pending``: an
        upstream call whose outcome was never recorded, as the evidence rules say."""
        with contextlib.suppress(StoreUnavailable):
            self.store.complete(row)

    # -- after the call ----------------------------------------------------------------

    def answer(self, data: Mapping[str, JSON], response: object) -> JSON:
        """The client's JSON answer: the dialect's visible projection of what LiteLLM made
        of the upstream's answer."""
        call = self._call(data)
        if call is None:
            return None
        body = response_json(response)
        self._done(call)
        if body is None:
            return None
        return self.dialect.project_body(body, call.profile)

    async def relay(
        self, data: Mapping[str, JSON], stream: AsyncIterable[object]
    ) -> AsyncIterator[object]:
        """The client's stream: each LiteLLM chunk as its SSE event through the dialect's
        projector (raw ``data:`` frames LiteLLM passes as written); the row of the attempt
        that streamed is completed at the end (usage, carriers to the vault); a stream that
        fails ends with the dialect's error event."""
        call = self._call(data)
        if call is None:
            async for item in stream:
                yield item
            return
        projector = self.dialect.stream_projector(call.profile)
        decoder = self.dialect.stream_decoder()
        failure: str | None = None
        status: int | None = 200
        try:
            async for item in stream:
                body = response_json(item)
                if body is None:
                    continue
                raw = b"data: " + orjson.dumps(body) + b"\n\n"
                out = projector.feed(raw)
                decoder.feed(raw)
                if out:
                    yield out  # bytes opening with "data:": LiteLLM sends them as written
            decoder.feed(b"data: [DONE]\n\n")
            tail = projector.close()
            if tail:
                yield tail
        except Exception as exc:  # the upstream cut, or LiteLLM failing on it
            failure = f"the upstream stream failed ({type(exc).__name__})"
            code = getattr(exc, "status_code", None)
            status = code if isinstance(code, int) else None
            yield projector.fail(failure)
        finally:
            turn: Turn | None = None
            if failure is None:
                try:
                    turn = next((ev.turn for ev in decoder.close() if ev.type == "done"), None)
                except Exception:  # truncated or malformed: nothing to keep
                    turn = None
            with self._lock:
                row = call.open
                if row is not None:
                    self._keep(call, row, turn)
                    if failure is None:
                        self._close(call, "forwarded", status, row.reason)
                    else:
                        self._close(call, "upstream-error", status, failure)
            self._done(call)

    def failed(self, data: Mapping[str, JSON], exc: BaseException) -> bool:
        """LiteLLM failed a call: True when it was one this hook let through (its open
        attempt, if any, is recorded); else a refusal of LiteLLM's own (its auth checks run
        before the hook) is recorded as such, and False."""
        call = self._call(data)
        code = getattr(exc, "status_code", None)
        if call is not None:
            with self._lock:
                self._close(call, "upstream-error", None, "litellm failed the call")
            status = code if isinstance(code, int) else None
            self._end_unsent(call, f"litellm refused: {type(exc).__name__}", None, status)
            self._done(call)
            return True
        row = EvidenceRow(
            outcome="refused",
            conversation_id=request_headers(data).get(CONVERSATION_HEADER),
            dialect=self.dialect.name,
            reason=f"litellm refused: {type(exc).__name__}",
        )
        row.status_code = code if isinstance(code, int) else None
        self.store.record(row)
        return False

    def _done(self, call: _Call) -> None:
        with self._lock:
            call.finished = True
            self._calls.pop(call.template.call_id, None)
        self._end_unsent(call, "litellm ended the call before any upstream attempt")

    @staticmethod
    def drop_relayed_headers(response: object) -> None:
        """Forget the upstream's response headers LiteLLM would relay (``llm_provider-*``):
        an upstream may echo the request's key in any header, ``set-cookie`` included."""
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            hidden["additional_headers"] = {}
            headers = hidden.get("headers")
            if isinstance(headers, dict):
                headers.clear()


T = TypeVar("T")


def _unavailable(governor: Governor) -> HookRefused:
    """The 503 for a store that cannot answer in time, or cannot commit."""
    return HookRefused(
        503,
        "store-unavailable",
        "reasonwire refused: the evidence store cannot commit; nothing was sent upstream",
        {"Retry-After": str(governor.retry_after)},
    )


def _now(write: Callable[[SQLiteStore], bool], store: SQLiteStore | None) -> bool:
    """``write(store)`` committed on the caller's thread without waiting (True); False when
    there is no such store or the write would wait or failed (nothing written: the caller
    takes a store thread, where a failure is handled as on any write)."""
    if store is None:
        return False
    try:
        return write(store)
    except StoreUnavailable:
        return False


def _settle(
    loop: asyncio.AbstractEventLoop, answer: asyncio.Future[T], value: T | Exception
) -> None:
    """Hand a store thread's result (or error) to the loop's ``answer``, unless the loop
    stopped waiting for it."""

    def settle() -> None:
        if answer.done():
            return
        if isinstance(value, Exception):
            answer.set_exception(value)
        else:
            answer.set_result(value)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
        loop.call_soon_threadsafe(settle)


async def _bounded(governor: Governor, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` on a store thread (store work never blocks the proxy's event loop),
    within the governor's store budget: a store that cannot answer in time, or cannot
    commit, is a :class:`HookRefused` 503 with ``Retry-After``, and no upstream call follows.
    (The budget is an ``asyncio.timeout`` scope, not ``wait_for``: no Task per call.)"""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(governor.store_timeout):
            return await loop.run_in_executor(governor.executor, fn, *args)
    except (TimeoutError, StoreUnavailable):
        raise _unavailable(governor) from None
