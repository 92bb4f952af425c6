"""The governed-effort gateway: an ASGI app on loopback, the sole authority over provider effort.

Every request carries a signed per-turn binding (header ``x-reasonwire-binding``) and states
its conversation (``x-reasonwire-conversation``). On every request the gateway verifies the
binding (signature, algorithm, key id, expiry), matches its conversation to the request's,
re-checks the runtime pin, the route (registered, not revoked, same dialect and model) and the
policy, and fixes the conversation's effort on its first call. It then strips every reasoning
control the client sent, re-attaches vaulted reasoning carriers to the history, injects only
the route's fragment for the resolved level, and calls the upstream with its own credential
(read at call time; the runtime never sees it). Answers come back without plaintext
reasoning (see :mod:`reasonwire.wire.hidden` for the vault design); every call, refusals
included, leaves an evidence row.

Fast path: verified tokens are cached (re-checking expiry and key id on each hit), upstream
connections are kept alive in one small pool (:mod:`.upstream`), request bodies are copied
only along removed control paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from reasonwire import credentials
from reasonwire.errors import (
    CredentialError,
    PolicyRefusal,
    ReasonwireError,
    TransportError,
    TruncatedStream,
)
from reasonwire.govern.binding import HEADER, Binding, KeyRing, verify
from reasonwire.govern.evidence import EvidenceRow, EvidenceStore, SQLiteStore
from reasonwire.govern.policy import OrgPolicy, resolve
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.govern.upstream import UpstreamPool, UpstreamResponse
from reasonwire.wire import anthropic as _anthropic  # noqa: F401  (registers the dialect)
from reasonwire.wire import chat as _chat  # noqa: F401
from reasonwire.wire import responses as _responses  # noqa: F401
from reasonwire.wire.controls import (
    STREAM_USAGE,
    is_non_escalating,
    strip_controls,
    wants_stream,
)
from reasonwire.wire.dialect import get_dialect
from reasonwire.wire.hidden import StreamScrubber, reattach, scrub_body, vault_entries
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import JSON, Dialect, RequestOptions, Turn, Usage

CONVERSATION_HEADER = "x-reasonwire-conversation"
ATTEMPT_HEADER = "x-reasonwire-attempt"
FORWARDED_HEADERS = ("anthropic-version",)
"""Client headers passed upstream: protocol versions only, never auth or feature flags."""

ENDPOINTS: Mapping[str, Dialect] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "anthropic",
}

_JSON = "application/json"


class Vault:
    """Original reasoning carriers per conversation, keyed as :mod:`wire.hidden` says.

    In memory and bounded (least recently used conversations go first); replicas do not share
    it, so a conversation must stay on one gateway replica for carrier continuity.
    """

    def __init__(self, max_conversations: int = 10_000, max_entries: int = 1_024) -> None:
        self._data: OrderedDict[str, OrderedDict[str, JSON]] = OrderedDict()
        self._max_conv = max_conversations
        self._max_entries = max_entries

    def put(self, conversation_id: str, entries: list[tuple[str, JSON]]) -> None:
        if not entries:
            return
        conv = self._data.get(conversation_id)
        if conv is None:
            conv = self._data[conversation_id] = OrderedDict()
            if len(self._data) > self._max_conv:
                self._data.popitem(last=False)
        for key, value in entries:
            conv[key] = value
            while len(conv) > self._max_entries:
                conv.popitem(last=False)

    def get(self, conversation_id: str, key: str) -> JSON | None:
        conv = self._data.get(conversation_id)
        return None if conv is None else conv.get(key)


@dataclass
class _Authorised:
    binding: Binding
    route: RouteRegistration
    resolved: str


def usage_fields(row: EvidenceRow, usage: Usage | None, prices: Mapping[str, float] | None) -> None:
    """Fill usage and cost evidence: reported figures only, statuses say what is known."""
    figures = {
        "input_uncached": usage.input_uncached if usage else None,
        "cache_read": usage.cache_read if usage else None,
        "cache_write": usage.cache_write if usage else None,
        "output": usage.output if usage else None,
    }
    if usage is None or all(v is None for v in figures.values()):
        return
    row.usage_status = "reported"
    row.input_uncached = usage.input_uncached
    row.cache_read = usage.cache_read
    row.cache_write = usage.cache_write
    row.output_tokens = usage.output
    row.reasoning_tokens = usage.reasoning
    if usage.cost_usd is not None:
        row.cost_status, row.cost_usd = "confirmed", usage.cost_usd
    elif prices:
        row.cost_status = "estimated"
        row.cost_usd = sum((figures.get(k) or 0) * p / 1e6 for k, p in prices.items())


_ERROR_TYPES = {403: "permission_error", 404: "not_found_error", 502: "api_error"}


def _refusal(status: int, reason: str, detail: str) -> Response:
    """An error both SDK families parse: OpenAI reads ``error.message``, Anthropic
    ``type: error`` with ``error.type``."""
    body = {
        "type": "error",
        "error": {
            "type": _ERROR_TYPES.get(status, "invalid_request_error"),
            "code": reason,
            "message": f"reasonwire gateway refused: {reason}: {detail}",
        },
    }
    return Response(json.dumps(body), status, media_type=_JSON)


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
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.keys = keys
        self.store: EvidenceStore = store if store is not None else SQLiteStore()
        self.vault = Vault()
        self._verified: dict[str, Binding] = {}
        # Streams whose vault entries are not stored yet, per conversation: the client sees
        # the stream's last bytes before the gateway has decoded them, and may send its next
        # request at once; that request waits for them (see _settled).
        self._unsettled: dict[str, list[asyncio.Event]] = {}
        self._upstream = upstream if upstream is not None else UpstreamPool()
        self.app = self  # the instance is the ASGI app (see __call__)

    async def aclose(self) -> None:
        await self._upstream.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: three POST endpoints and lifespan, no router or middleware stack
        (they cost more per call than the gateway's own checks)."""
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
        dialect = ENDPOINTS.get(scope["path"])
        if dialect is None:
            response: Response = _refusal(404, "not-found", f"no endpoint {scope['path']}")
        elif scope["method"] != "POST":
            response = _refusal(405, "method-not-allowed", "use POST")
        else:
            response = await self.handle(Request(scope, receive), dialect)
        await response(scope, receive, send)

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
        if route.dialect != dialect:
            raise PolicyRefusal(
                "provider-mismatch", f"route {route.route_id} speaks {route.dialect}, not {dialect}"
            )
        res = resolve(
            self.registry,
            self.policy,
            runtime_id=b.runtime_id,
            runtime_version=b.runtime_version,
            route_id=b.route_id,
            requested=b.requested,
        )
        row.runtime_qualification = res.runtime_qualification
        if res.ceiling != b.ceiling:
            raise PolicyRefusal(
                "ceiling-mismatch", f"binding ceiling {b.ceiling}, policy now {res.ceiling}"
            )
        fixed = self.store.fix_effort(b.conversation_id, res.resolved)
        if fixed != res.resolved:
            raise PolicyRefusal(
                "effort-changed",
                f"conversation was created at {fixed}, this binding resolves to {res.resolved}",
            )
        row.resolved = res.resolved
        return _Authorised(b, route, res.resolved)

    def _prepare(
        self, raw: bytes, dialect: Dialect, auth: _Authorised, row: EvidenceRow
    ) -> dict[str, Any]:
        try:
            body = json.loads(raw)
        except ValueError:
            raise PolicyRefusal("malformed-body", "the request body is not JSON") from None
        if not isinstance(body, dict):
            raise PolicyRefusal("malformed-body", "the request body is not a JSON object")
        if body.get("model") != auth.route.model:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {auth.route.route_id} is bound to model {auth.route.model!r}",
            )
        out, removed = strip_controls(dialect, body)
        fragment = auth.route.levels[auth.resolved]  # type: ignore[index]
        if is_non_escalating(dialect, removed) and not strip_controls(dialect, fragment)[1]:
            out.update(removed)  # only an exact lowering value, on a request that sets none
        else:
            deep_merge(out, fragment)
        row.controls_removed = ",".join(removed)
        conv = auth.binding.conversation_id
        row.carriers_reattached = reattach(dialect, out, lambda k: self.vault.get(conv, k))
        if wants_stream(dialect, out):
            row.stream = True
            deep_merge(out, STREAM_USAGE.get(dialect, {}))
        return out

    # -- the call -----------------------------------------------------------------------

    async def handle(self, request: Request, dialect: Dialect) -> Response:
        t0 = time.perf_counter()
        headers = request.headers
        row = EvidenceRow(
            outcome="refused", conversation_id=headers.get(CONVERSATION_HEADER), dialect=dialect
        )
        try:
            row.attempt = int(headers.get(ATTEMPT_HEADER, "1"))
        except ValueError:
            row.attempt = None
        try:
            if row.attempt is None or row.attempt < 1:
                raise PolicyRefusal("bad-attempt", f"{ATTEMPT_HEADER} must be a positive integer")
            auth = self._authorise(headers, dialect, row)
            await self._settled(auth.binding.conversation_id)
            body = self._prepare(await request.body(), dialect, auth, row)
        except PolicyRefusal as exc:
            return self._refuse(row, t0, 400 if exc.reason == "malformed-body" else 403, exc)
        route = auth.route
        try:
            up_headers = self._upstream_headers(route, headers)
        except CredentialError:
            row.outcome, row.reason = "upstream-error", "credential-unavailable"
            return self._finish_refusal(row, t0, 502, "the gateway has no upstream credential")
        options = RequestOptions(model=route.model, stream=row.stream)
        url = route.upstream_base_url.rstrip("/") + get_dialect(dialect).request_path(options)
        payload = json.dumps(body, ensure_ascii=False).encode()
        try:
            resp = await self._upstream.post(url, payload, up_headers)
        except TransportError as exc:
            row.outcome, row.reason = "upstream-error", f"transport: {type(exc).__name__}"
            return self._finish_refusal(row, t0, 502, "the upstream could not be reached")
        row.status_code = resp.status_code
        if resp.status_code != 200:
            try:
                data = await resp.read()
            except TransportError:
                data = b""
            await resp.aclose()
            row.outcome, row.reason = "upstream-error", f"upstream status {resp.status_code}"
            self._record(row, t0)
            ctype = resp.headers.get("content-type", _JSON)
            return Response(data, resp.status_code, media_type=ctype)
        row.outcome = "forwarded"
        if row.stream:
            settled = asyncio.Event()
            self._unsettled.setdefault(auth.binding.conversation_id, []).append(settled)
            return StreamingResponse(
                self._relay(resp, dialect, auth, row, t0, settled),
                media_type=resp.headers.get("content-type", "text/event-stream"),
            )
        return await self._answer(resp, dialect, auth, row, t0)

    def _upstream_headers(
        self, route: RouteRegistration, client: Mapping[str, str]
    ) -> dict[str, str]:
        out = {"content-type": _JSON, "accept-encoding": "identity"}
        for name in FORWARDED_HEADERS:
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
            return self._finish_refusal(row, t0, 502, "the upstream answer was cut")
        finally:
            await resp.aclose()
        row.ttfb_ms = (time.perf_counter() - t0) * 1000
        try:
            data = json.loads(raw)
            turn = get_dialect(dialect).parse_response(data)
        except (ValueError, ReasonwireError):
            row.outcome, row.reason = "upstream-error", "upstream body malformed"
            return self._finish_refusal(row, t0, 502, "the upstream answer was malformed")
        self._keep(turn, dialect, auth, row)
        scrub_body(dialect, data)
        self._record(row, t0)
        return Response(json.dumps(data, ensure_ascii=False), media_type=_JSON)

    async def _relay(
        self,
        resp: UpstreamResponse,
        dialect: Dialect,
        auth: _Authorised,
        row: EvidenceRow,
        t0: float,
        settled: asyncio.Event,
    ) -> AsyncIterator[bytes]:
        decoder = get_dialect(dialect).stream_decoder()
        scrubber = StreamScrubber(dialect)
        turn: Turn | None = None
        try:
            async for chunk in resp.aiter():
                if row.ttfb_ms is None:
                    row.ttfb_ms = (time.perf_counter() - t0) * 1000
                out = scrubber.feed(chunk)
                if out:
                    yield out  # the client first; evidence decoding can wait
                decoder.feed(chunk)
            tail = scrubber.close()
            if tail:
                yield tail
            for ev in decoder.close():
                if ev.type == "done":
                    turn = ev.turn
        except TruncatedStream as exc:
            row.outcome, row.reason = "upstream-error", "stream truncated"
            turn = exc.partial if isinstance(exc.partial, Turn) else None
        except ReasonwireError as exc:
            row.outcome, row.reason = "upstream-error", f"stream: {type(exc).__name__}"
        finally:
            await resp.aclose()
            if turn is not None:
                self._keep(turn, dialect, auth, row)
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

    def _keep(self, turn: Turn, dialect: Dialect, auth: _Authorised, row: EvidenceRow) -> None:
        self.vault.put(auth.binding.conversation_id, vault_entries(dialect, turn))
        usage_fields(row, turn.usage, auth.route.price_per_mtok)

    # -- evidence -----------------------------------------------------------------------

    def _record(self, row: EvidenceRow, t0: float) -> None:
        row.latency_ms = (time.perf_counter() - t0) * 1000
        self.store.record(row)

    def _refuse(self, row: EvidenceRow, t0: float, status: int, exc: PolicyRefusal) -> Response:
        row.reason = exc.reason
        return self._finish_refusal(row, t0, status, exc.detail)

    def _finish_refusal(self, row: EvidenceRow, t0: float, status: int, detail: str) -> Response:
        self._record(row, t0)
        return _refusal(status, row.reason or "refused", detail)
