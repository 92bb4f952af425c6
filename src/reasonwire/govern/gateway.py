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
body. Every call, refusals included, leaves an evidence row, and no upstream call is made
before its row exists in memory (a last-resort handler records it).

Fast path: verified tokens are cached (re-checking expiry and key id on each hit), upstream
connections are kept alive in one small pool (:mod:`.upstream`), request bodies are copied
only along removed control paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from reasonwire import credentials
from reasonwire.errors import (
    CredentialError,
    PolicyRefusal,
    TransportError,
    TruncatedStream,
)
from reasonwire.govern.authority import settle_effort
from reasonwire.govern.binding import HEADER, Binding, KeyRing, verify
from reasonwire.govern.evidence import (
    EvidenceRow,
    EvidenceStore,
    SQLiteStore,
    fill_usage,
)
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.govern.stores import MemoryVault, VaultStore
from reasonwire.govern.upstream import UpstreamPool, UpstreamResponse
from reasonwire.govern.upstream_fold import check_operator_fold, fold_upstream
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.facts import ErrorInfo
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import JSON, RequestOptions, Turn
from reasonwire.wire.profile import Profile
from reasonwire.wire.registry import dialect_for_gateway_path, get_dialect
from reasonwire.wire.shape import ShapeError
from reasonwire.wire.translate import ChatToResponses, translation

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


_JSON = "application/json"


@dataclass
class _Authorised:
    binding: Binding
    route: RouteRegistration
    resolved: str
    upstream: Dialect
    """The dialect spoken upstream: the client's, or the route's when it translates."""
    translation: ChatToResponses | None = None


def _error_response(
    dialect: Dialect | None,
    status: int,
    reason: str,
    message: str,
    info: ErrorInfo | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The gateway's own error object, in the dialect's error shape (an OpenAI-style body with
    ``type: error`` when no dialect is known: both SDK families read it)."""
    if dialect is None:
        body: JSON = {
            "type": "error",
            "error": {"type": "invalid_request_error", "code": reason, "message": message},
        }
    else:
        body = dialect.error_body(status, reason, message, info)
    return Response(orjson.dumps(body), status, headers=dict(headers or {}), media_type=_JSON)


def _refusal(status: int, reason: str, detail: str, dialect: Dialect | None = None) -> Response:
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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(raw: bytes) -> Any:
    """A request body as JSON: strict UTF-8, no lone surrogates, no ``NaN``/``Infinity``.

    orjson reads integers beyond 64 bits as floats; past the double range it refuses them and
    the stdlib reads them exactly, on the strictly decoded text (never another encoding)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeError, RecursionError):
        raise PolicyRefusal(
            "malformed-body", "the request body is not valid JSON in UTF-8"
        ) from None
    return value


def _dumps(body: Any) -> bytes:
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
        self._verified: dict[str, Binding] = {}
        self._profiles: dict[str, Profile] = {}
        # Streams whose vault entries are not stored yet, per conversation: the client sees
        # the stream's last bytes before the gateway has decoded them, and may send its next
        # request at once; that request waits for them (see _settled).
        self._unsettled: dict[str, list[asyncio.Event]] = {}
        self._upstream = upstream if upstream is not None else UpstreamPool()
        self.app = self  # the instance is the ASGI app (see __call__)

    async def aclose(self) -> None:
        await self._upstream.aclose()

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
        dialect = dialect_for_gateway_path(scope["path"])
        if dialect is None or scope["method"] != "POST":
            response: Response = self._misrouted(Request(scope, receive), dialect)
        else:
            response = await self._guarded(Request(scope, receive), dialect)
        await response(scope, receive, send)

    def _misrouted(self, request: Request, dialect: Dialect | None) -> Response:
        """404 (no such endpoint) or 405 (not POST), with an evidence row like any refusal."""
        t0 = time.perf_counter()
        reason = "not-found" if dialect is None else "method-not-allowed"
        row = EvidenceRow(
            outcome="refused",
            conversation_id=request.headers.get(CONVERSATION_HEADER),
            reason=reason,
            dialect=dialect.name if dialect else None,
        )
        with contextlib.suppress(Exception):
            self._record(row, t0)
        if dialect is None:
            return _refusal(404, reason, "no such endpoint")
        return _refusal(405, reason, "use POST", dialect)

    async def _guarded(self, request: Request, dialect: Dialect) -> Response:
        """:meth:`handle` behind a last-resort handler: an unexpected error answers 500 with
        a reason and leaves an evidence row, never a bare ASGI failure."""
        t0 = time.perf_counter()
        row = EvidenceRow(outcome="refused", conversation_id=None, dialect=dialect.name)
        try:
            return await self.handle(request, dialect, row, t0)
        except Exception as exc:  # the last resort: every other path answers on its own
            row.outcome, row.reason = "refused", f"internal: {type(exc).__name__}"
            with contextlib.suppress(Exception):
                self._record(row, t0)
            return _refusal(500, "internal-error", "the gateway failed on this request", dialect)

    # -- authorisation ------------------------------------------------------------------

    def _verify(self, token: str) -> Binding:
        hit = self._verified.get(token)
        if hit is not None and hit.key_id in self.keys.public and hit.expires_at > time.time():
            return hit
        binding = verify(self.keys, token)  # raises with the reason (expired, bad key...)
        if len(self._verified) >= 50_000:
            self._verified.clear()
        self._verified[token] = binding
        return binding

    def _authorise(
        self, headers: Mapping[str, str], dialect: Dialect, row: EvidenceRow
    ) -> _Authorised:
        token = headers.get(HEADER)
        if not token:
            raise PolicyRefusal("binding-missing", f"header {HEADER} is required")
        if not row.conversation_id:
            raise PolicyRefusal("conversation-missing", f"header {CONVERSATION_HEADER} is required")
        b = self._verify(token)
        row.key_id, row.task_id = b.key_id, b.task_id
        row.runtime_id, row.runtime_version = b.runtime_id, b.runtime_version
        row.route_id, row.requested = b.route_id, b.requested
        if b.conversation_id != row.conversation_id:
            raise PolicyRefusal(
                "conversation-mismatch", "the binding was issued for another conversation"
            )
        route = self.registry.route(b.route_id)
        row.route_qualification = route.qualification_id
        served = route.client_dialect or route.dialect
        if served != dialect.name:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {route.route_id} speaks {served}, not {dialect.name}",
            )
        resolved = settle_effort(self.registry, self.policy, self.store, b, row)
        upstream = get_dialect(route.dialect)
        return _Authorised(b, route, resolved, upstream, translation(dialect.name, upstream.name))

    def _profile(self, route: RouteRegistration, dialect: Dialect) -> Profile:
        prof = self._profiles.get(route.route_id)
        if prof is None:
            prof = dialect.profile(route.profile, **dict(route.profile_fields))
            self._profiles[route.route_id] = prof
        return prof

    def _prepare(
        self,
        body: Mapping[str, Any],
        dialect: Dialect,
        auth: _Authorised,
        row: EvidenceRow,
        path: str,
    ) -> dict[str, Any]:
        if dialect.model_in_request(path, body) != auth.route.model:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {auth.route.route_id} is bound to model {auth.route.model!r}",
            )
        profile = self._profile(auth.route, dialect)
        out, removed = dialect.strip_controls(body, profile)
        fragment = auth.route.levels[auth.resolved]  # type: ignore[index]
        conv = auth.binding.conversation_id
        row.stream = dialect.stream_requested(path, out)
        if auth.translation is not None:
            # Into the upstream's dialect first (vaulted output items in place of assistant
            # turns); the route fragment, in the upstream's terms, is the only effort.
            out, row.carriers_reattached = auth.translation.request(
                out, lambda k: self.vault.get(conv, k)
            )
            out, more = auth.upstream.strip_controls(out)
            removed.update(more)
            deep_merge(out, fragment)
        else:
            if dialect.is_non_escalating(removed) and not dialect.strip_controls(fragment)[1]:
                out.update(removed)  # only an exact lowering value, on a request that sets none
            else:
                deep_merge(out, fragment)
            row.carriers_reattached = dialect.reattach(out, lambda k: self.vault.get(conv, k))
        row.controls_removed = ",".join(removed)
        if row.stream:
            deep_merge(out, dict(auth.upstream.stream_usage))
        return out

    def _admit(
        self, request: Request, raw: bytes, dialect: Dialect, row: EvidenceRow
    ) -> dict[str, Any]:
        """The client's body checked before anything else: size, headers, JSON, the
        dialect's request shape (unknown fields are dropped and named in the evidence)."""
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
        dropped = [k for k in body if k not in shaped]
        if dropped:
            row.reason = "unknown fields dropped: " + ",".join(sorted(dropped))[:200]
        return shaped

    def _check_headers(self, request: Request) -> None:
        raw = request.scope.get("headers") or []
        lim = self.limits
        if (
            len(raw) > lim.max_headers
            or sum(len(k) + len(v) for k, v in raw) > lim.max_header_bytes
        ):
            raise PolicyRefusal("headers-too-large", "too many or too large request headers")

    async def _read_body(self, request: Request) -> bytes:
        """The body, refused as soon as it passes the size bound (never read whole)."""
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if _is_count(declared) and int(declared) > limit:
            raise PolicyRefusal("body-too-large", f"the body exceeds {limit} bytes")
        parts: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PolicyRefusal("body-too-large", f"the body exceeds {limit} bytes")
            parts.append(chunk)
        return b"".join(parts)

    # -- the call -----------------------------------------------------------------------

    async def handle(
        self, request: Request, dialect: Dialect, row: EvidenceRow, t0: float
    ) -> Response:
        headers = request.headers
        try:
            row.conversation_id = headers.get(CONVERSATION_HEADER)
            self._check_headers(request)
            attempt = headers.get(ATTEMPT_HEADER, "1")
            if not (_is_count(attempt) and len(attempt) <= 4 and 1 <= int(attempt) <= MAX_ATTEMPT):
                raise PolicyRefusal(
                    "bad-attempt", f"{ATTEMPT_HEADER} must be an integer from 1 to {MAX_ATTEMPT}"
                )
            row.attempt = int(attempt)
            auth = self._authorise(headers, dialect, row)
            await self._settled(auth.binding.conversation_id)
            shaped = self._admit(request, await self._read_body(request), dialect, row)
            body = self._prepare(shaped, dialect, auth, row, request.url.path)
        except PolicyRefusal as exc:
            return self._refuse(row, t0, _REFUSAL_STATUS.get(exc.reason, 403), exc, dialect)
        route = auth.route
        # Last, on what really goes upstream (vaulted originals included); unchanged: the
        # same object, so the same bytes as without a fold.
        body = fold_upstream(auth.upstream, body, route, self.fold)
        try:
            up_headers = self._upstream_headers(route, headers, auth.upstream)
        except CredentialError:
            row.outcome, row.reason = "upstream-error", "credential-unavailable"
            return self._finish_refusal(
                row, t0, 502, "the gateway has no upstream credential", dialect
            )
        options = RequestOptions(model=route.model, stream=row.stream)
        url = route.upstream_base_url.rstrip("/") + auth.upstream.request_path(options)
        payload = _dumps(body)
        row.outcome = "upstream-error"  # until the upstream answers 200
        try:
            resp = await self._upstream.post(url, payload, up_headers)
        except TransportError as exc:
            row.reason = f"transport: {type(exc).__name__}"
            return self._finish_refusal(row, t0, 502, "the upstream could not be reached", dialect)
        row.status_code = resp.status_code
        if resp.status_code != 200:
            return await self._upstream_error(resp, dialect, auth.upstream, row, t0)
        row.outcome = "forwarded"
        if row.stream:
            settled = asyncio.Event()
            self._unsettled.setdefault(auth.binding.conversation_id, []).append(settled)
            return StreamingResponse(
                self._relay(resp, dialect, auth, row, t0, settled, shaped),
                media_type="text/event-stream",  # never the upstream's header
            )
        return await self._answer(resp, dialect, auth, row, t0)

    async def _upstream_error(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        upstream: Dialect,
        row: EvidenceRow,
        t0: float,
    ) -> Response:
        """An upstream error as the gateway's own error object: status, a category, the
        provider's type/code when allow-listed, never the upstream body (it may quote the
        request's reasoning or the gateway's own credential)."""
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
        self._record(row, t0)
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
    ) -> dict[str, str]:
        out = {"content-type": _JSON, "accept-encoding": "identity"}
        for name in dialect.forwarded_headers:
            value = client.get(name)
            if value is not None:
                out[name] = value
        out.update(route.headers)
        if route.credential_env:
            key = credentials.read_key(credentials.EnvKey(route.credential_env))
            out[route.auth_header] = f"{route.auth_scheme} {key}" if route.auth_scheme else key
        return out

    async def _answer(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        auth: _Authorised,
        row: EvidenceRow,
        t0: float,
    ) -> Response:
        try:
            raw = await resp.read()
        except TransportError:
            row.outcome, row.reason = "upstream-error", "upstream body cut"
            return self._finish_refusal(row, t0, 502, "the upstream answer was cut", dialect)
        finally:
            await resp.aclose()
        row.ttfb_ms = (time.perf_counter() - t0) * 1000
        try:
            data = orjson.loads(raw)
            turn = auth.upstream.parse_response(data)
            if auth.translation is not None:
                data, entry = auth.translation.answer(data)
        except Exception:  # not JSON, not the dialect's shape, or a parser failing on it
            row.outcome, row.reason = "upstream-error", "upstream body malformed"
            return self._finish_refusal(row, t0, 502, "the upstream answer was malformed", dialect)
        self._keep(turn, auth, row)
        if auth.translation is not None:
            self.vault.put(auth.binding.conversation_id, [entry])
        visible = dialect.project_body(data, self._profile(auth.route, dialect))
        self._record(row, t0)
        return Response(orjson.dumps(visible), media_type=_JSON)

    async def _relay(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        auth: _Authorised,
        row: EvidenceRow,
        t0: float,
        settled: asyncio.Event,
        client_body: Mapping[str, Any],
    ) -> AsyncIterator[bytes]:
        """The upstream stream through the dialect's projector. A cut or malformed stream
        ends with the dialect's error event, never with a clean finish; so does a stream the
        evidence decoder cannot follow (whatever it raises: the client's stream must end in
        the dialect's terms, and the row must say the call failed)."""
        decoder = auth.upstream.stream_decoder()
        translator = auth.translation.stream(client_body) if auth.translation else None
        projector = (
            translator
            if translator is not None
            else dialect.stream_projector(self._profile(auth.route, dialect))
        )
        turn: Turn | None = None
        failure: str | None = None
        try:
            try:
                async for chunk in resp.aiter():
                    if row.ttfb_ms is None:
                        row.ttfb_ms = (time.perf_counter() - t0) * 1000
                    out = projector.feed(chunk)
                    # Evidence before the client's copy: a client that stops reading at its
                    # last event (an SDK at [DONE]) closes this generator at the yield.
                    decoder.feed(chunk)
                    if out:
                        yield out
                tail = projector.close()
                if tail:
                    yield tail
                for ev in decoder.close():
                    if ev.type == "done":
                        turn = ev.turn
            except TruncatedStream as exc:
                failure = "the upstream stream ended before its last event"
                turn = exc.partial if isinstance(exc.partial, Turn) else None
            except TransportError:
                failure = "the upstream stream was cut"
                turn = decoder.partial_turn()
            except Exception as exc:  # MalformedBody, or a decoder failing on hostile input
                failure = f"the upstream stream was malformed ({type(exc).__name__})"
            if failure is not None:
                row.outcome, row.reason = "upstream-error", failure
                yield projector.fail(failure)
        finally:
            await resp.aclose()
            if turn is None and failure is None:
                turn = _finished_turn(decoder)  # the client left after the last event
            if turn is not None:
                self._keep(turn, auth, row)
            if translator is not None and auth.translation is not None:
                entry = auth.translation.vault_entry(translator)
                if entry is not None:
                    self.vault.put(auth.binding.conversation_id, [entry])
            self._record(row, t0)
            self._settle(auth.binding.conversation_id, settled)

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

    def _keep(self, turn: Turn, auth: _Authorised, row: EvidenceRow) -> None:
        self.vault.put(auth.binding.conversation_id, auth.upstream.vault_entries(turn))
        fill_usage(row, turn.usage, auth.route.price_per_mtok)

    # -- evidence -----------------------------------------------------------------------

    def _record(self, row: EvidenceRow, t0: float) -> None:
        row.latency_ms = (time.perf_counter() - t0) * 1000
        self.store.record(row)

    def _refuse(
        self, row: EvidenceRow, t0: float, status: int, exc: PolicyRefusal, dialect: Dialect
    ) -> Response:
        row.reason = exc.reason
        return self._finish_refusal(row, t0, status, exc.detail, dialect)

    def _finish_refusal(
        self, row: EvidenceRow, t0: float, status: int, detail: str, dialect: Dialect
    ) -> Response:
        self._record(row, t0)
        return _refusal(status, row.reason or "refused", detail, dialect)


def _finished_turn(decoder: Any) -> Turn | None:
    """The turn of a stream whose every byte was decoded but whose relay was closed early."""
    try:
        events = decoder.close()
    except Exception:  # truncated or malformed: no finished turn to keep
        return None
    return next((ev.turn for ev in events if ev.type == "done"), None)


_REFUSAL_STATUS = {
    "malformed-body": 400,
    "bad-attempt": 400,
    "body-too-large": 413,
    "headers-too-large": 431,
}
"""Refusals of the request itself (its shape or size) by status; every other refusal is 403."""
