"""The simulator's ASGI app (starlette): routes, model resolution and faults.

Faults are asked for per request with the header ``x-sim-fault`` or a model suffix
(``sim-qwen3@429``): ``429`` (with Retry-After; ``429:<seconds>``), ``500``, ``503``,
``slow:<ms>`` (answer after a delay), ``drop`` (the connection closes mid-body/mid-stream),
``malformed`` (a 200 whose body is not valid JSON / an SSE event or a streamed array element
that is not JSON).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from reasonwire.errors import SimError, _DroppedConnection
from reasonwire.sim.catalog import NON_TEXT, catalog, resolve
from reasonwire.sim.dialects import (
    Reply,
    anthropic,
    chat,
    dumps,
    gemini,
    interactions,
    responses,
)
from reasonwire.sim.engine import SimState

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON

_JSON = "application/json"
_SSE = "text/event-stream"


def _fault_error(fault: str) -> SimError | None:
    kind, _, arg = fault.partition(":")
    if kind == "429":
        return SimError(
            429,
            "Rate limit reached for requests (simulated)",
            etype="rate_limit_error",
            code="rate_limit_exceeded",
            headers={"retry-after": arg or "1"},
        )
    if kind in ("500", "502", "503", "504"):
        return SimError(int(kind), f"simulated upstream failure ({kind})", etype="server_error")
    return None


def _error(mod: ModuleType, err: SimError) -> Response:
    return Response(dumps(mod.error_body(err)), err.status, err.headers, _JSON)


async def _drop(frames: list[bytes]) -> AsyncIterator[bytes]:
    for f in frames:
        yield f
    await asyncio.sleep(0)
    raise _DroppedConnection("simulated connection drop")


def _array_frames(items: list[JSON]) -> list[bytes]:
    """A stream's payloads as Gemini's progressive JSON array (no ``alt=sse``): ``[{..}``
    first, then ``,\r\n{..}`` per element, then ``]``, each element pretty-printed and
    flushed on its own, so a client sees the array grow element by element."""
    frames = [
        (b"[" if k == 0 else b",\r\n") + json.dumps(item, ensure_ascii=False, indent=2).encode()
        for k, item in enumerate(items)
    ]
    return [*frames, b"]"] if frames else [b"[]"]


def _render(reply: Reply, fault: str, array: bool = False) -> Response:
    if array and reply.items is not None:
        frames = _array_frames(reply.items)
        if fault == "drop":
            return StreamingResponse(_drop(frames[: max(1, len(frames) // 2)]), media_type=_JSON)
        if fault == "malformed":
            frames = [*frames[: len(frames) // 2], b",\r\n{not json", *frames[-1:]]
        return StreamingResponse(iter(frames), reply.status, reply.headers, media_type=_JSON)
    if reply.events is not None:
        frames = reply.events
        if fault == "drop":
            return StreamingResponse(_drop(frames[: max(1, len(frames) // 2)]), media_type=_SSE)
        if fault == "malformed":
            frames = [*frames[: len(frames) // 2], b"data: {not json\n\n", *frames[-1:]]
        return StreamingResponse(iter(frames), reply.status, reply.headers, media_type=_SSE)
    data = dumps(reply.body)
    if fault == "drop":
        return StreamingResponse(_drop([data[: len(data) // 2]]), media_type=_JSON)
    if fault == "malformed":
        data = data[: len(data) // 2]
    return Response(data, reply.status, reply.headers, _JSON)


def build_app(seed: int = 0) -> Starlette:
    """A fresh simulator app; ``seed`` keys the seals and the lane sequence."""
    state = SimState(seed=seed)

    async def serve(
        request: Request,
        mod: ModuleType,
        *,
        path_model: str | None = None,
        stream: bool | None = None,
        count: bool = False,
        array: bool = False,
    ) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return _error(mod, SimError(400, "We could not parse the JSON body of your request."))
        if not isinstance(body, dict):
            return _error(mod, SimError(400, "request body must be a JSON object"))
        model = path_model if path_model is not None else body.get("model")
        if not isinstance(model, str) or not model:
            return _error(mod, SimError(400, "you must provide a model parameter", param="model"))
        fault = request.headers.get("x-sim-fault", "")
        if "@" in model:
            model, _, fault = model.partition("@")
        beh = resolve(model)
        if beh is None or beh.dialect != mod.NAME:
            why = (
                f"The model `{model}` does not exist"
                if beh is None and model not in NON_TEXT
                else f"The model `{model}` is not served on this endpoint"
            )
            return _error(mod, SimError(404, why, code="model_not_found", etype="not_found"))
        err = _fault_error(fault)
        if err is not None:
            return _error(mod, err)
        if fault.startswith("slow:"):
            try:
                await asyncio.sleep(max(0.0, float(fault[5:]) / 1000))
            except ValueError:
                return _error(mod, SimError(400, f"bad x-sim-fault {fault!r}"))
        try:
            if count:
                return Response(dumps(mod.count_tokens(body, beh, state, model)), media_type=_JSON)
            want_stream = body.get("stream") is True if stream is None else stream
            reply = mod.handle(body, beh, state, model, want_stream)
        except SimError as exc:
            return _error(mod, exc)
        return _render(reply, fault, array)

    async def chat_ep(r: Request) -> Response:
        return await serve(r, chat)

    async def responses_ep(r: Request) -> Response:
        return await serve(r, responses)

    async def responses_count(r: Request) -> Response:
        return await serve(r, responses, count=True)

    async def messages_ep(r: Request) -> Response:
        return await serve(r, anthropic)

    async def messages_count(r: Request) -> Response:
        return await serve(r, anthropic, count=True)

    async def gemini_ep(r: Request) -> Response:
        model, _, action = r.path_params["target"].rpartition(":")
        if action == "generateContent":
            return await serve(r, gemini, path_model=model, stream=False)
        if action == "streamGenerateContent":
            # ``alt=sse`` asks for SSE; Gemini's default (``alt=json``) is the JSON array
            array = r.query_params.get("alt", "json") != "sse"
            return await serve(r, gemini, path_model=model, stream=True, array=array)
        if action == "countTokens":
            return await serve(r, gemini, path_model=model, count=True)
        return _error(gemini, SimError(404, f"unknown method {action!r}", etype="NOT_FOUND"))

    async def interactions_ep(r: Request) -> Response:
        return await serve(r, interactions)

    async def models_ep(_: Request) -> Response:
        return Response(dumps(catalog()), media_type=_JSON)

    routes = [
        Route("/v1/chat/completions", chat_ep, methods=["POST"]),
        Route("/v1/responses", responses_ep, methods=["POST"]),
        Route("/v1/responses/input_tokens", responses_count, methods=["POST"]),
        Route("/v1/messages", messages_ep, methods=["POST"]),
        Route("/v1/messages/count_tokens", messages_count, methods=["POST"]),
        Route("/v1beta/models/{target:path}", gemini_ep, methods=["POST"]),
        # google-genai >= 3 defaults the Gemini API to v1; same methods, same shapes
        Route("/v1/models/{target:path}", gemini_ep, methods=["POST"]),
        Route("/v1beta/interactions", interactions_ep, methods=["POST"]),
        Route("/v1/interactions", interactions_ep, methods=["POST"]),
        Route("/v1/models", models_ep, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.sim = state
    return app
