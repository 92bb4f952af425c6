"""A toy fifth dialect, in one module: proof that a wire API is one object.

The toy wire format (``POST {base}/toy/ask``): a request ``{"model", "turns": [{"who":
"user"|"bot"|"tool", "say", "calls": [{"id", "fn", "args"}], "mind", "seal", "re"}], "tools":
[names], "live": bool}``; an answer ``{"toy": 1, "id", "say", "calls", "mind", "seal",
"usage": {"in", "out"}}``. ``mind`` is readable reasoning, ``seal`` opaque state the server
wants back byte for byte on the bot turn that made the calls. Streamed (``live``), the answer
comes as SSE: ``{"toy": 1, "piece": ".."}`` events, then ``{"toy": 1, "done": {answer}}``.

Nothing outside this module and one registry line knows any of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire.dialect import Dialect, StreamProjector
from reasonwire.wire.facts import CarrierKind, Control, SentCarrier
from reasonwire.wire.model import (
    JSON,
    Assistant,
    Carrier,
    Done,
    Message,
    Native,
    RequestOptions,
    StreamEvent,
    System,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
    User,
)
from reasonwire.wire.profile import Profile
from reasonwire.wire.projection import SSEProjector, encode_event
from reasonwire.wire.shape import Anything, Bool, ListOf, Obj, Str
from reasonwire.wire.sse import SSEDecoder

_CALL = Obj({"id": Str(), "fn": Str(), "args": Str()})
VISIBLE = Obj(
    {"toy": Anything(), "id": Str(), "say": Str(text=True), "calls": ListOf(_CALL),
     "seal": Str(), "usage": Anything()}
)  # fmt: skip
STREAM = Obj({"toy": Anything(), "piece": Str(text=True), "done": VISIBLE})


def _turn(body: Mapping[str, Any]) -> Turn:
    calls = tuple(ToolCall(c["id"], c["fn"], c.get("args", "{}")) for c in body.get("calls", ()))
    carriers: list[Carrier] = []
    if body.get("mind"):
        carriers.append(Carrier("toy", "mind", "mind", body["mind"], False, body["mind"]))
    if body.get("seal"):
        carriers.append(Carrier("toy", "seal", "seal", body["seal"], True))
    usage = body.get("usage") or {}
    return Turn(
        dialect="toy",
        text=str(body.get("say", "")),
        reasoning_text=str(body.get("mind", "")),
        tool_calls=calls,
        carriers=tuple(carriers),
        usage=Usage(input_uncached=usage.get("in"), output=usage.get("out"), raw=usage),
        response_id=body.get("id"),
        model=None,
        finish_reason="tool_calls" if calls else "stop",
        native=Native("toy", (dict(body),)),
        raw=dict(body),
    )


class _Decoder:
    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self._text: list[str] = []
        self._done: Turn | None = None

    def feed(self, data: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for ev in self._sse.feed(data):
            payload = orjson.loads(ev.data)
            if "piece" in payload:
                self._text.append(payload["piece"])
                out.append(TextDelta(payload["piece"]))
            if "done" in payload:
                self._done = _turn(payload["done"])
        return out

    def close(self) -> list[StreamEvent]:
        self.feed(b"")
        if self._done is None:
            raise TruncatedStream("toy stream ended before done", partial=self.partial_turn())
        return [Done(self._done)]

    def partial_turn(self) -> Turn:
        return _turn({"say": "".join(self._text)})


class ToyDialect(Dialect):
    name = "toy"
    path_pattern = re.compile(r"/toy/ask$")
    gateway_path = "/v1/toy/ask"
    carriers = (CarrierKind("mind", False, "mind"), CarrierKind("seal", True, "seal"))
    controls = (Control(("effort",), "toy wire format", "effort level"),)
    request_shape = Obj(
        {"model": Str(), "turns": ListOf(Anything()), "tools": ListOf(Str()), "live": Bool(),
         "effort": Anything()},
        frozenset({"model", "turns"}),
    )  # fmt: skip
    visible_body = VISIBLE

    def request_path(self, options: RequestOptions) -> str:
        return "/toy/ask"

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        turns: list[JSON] = []
        for m in messages:
            if isinstance(m, System | User):
                turns.append({"who": "user", "say": m.text})
            elif isinstance(m, ToolResult):
                turns.append({"who": "tool", "re": m.tool_call_id, "say": m.content})
            elif isinstance(m, Assistant):
                turns.extend(self.replay(m) if options.keep_carriers else self.strip(m))
        body: dict[str, JSON] = {"model": options.model, "turns": turns}
        if options.tools:
            body["tools"] = [t.name for t in options.tools]
        if options.stream:
            body["live"] = True
        return body

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        data = orjson.loads(body) if isinstance(body, bytes | str) else body
        if not isinstance(data, dict) or data.get("toy") != 1:
            raise MalformedBody("not a toy answer")
        return _turn(data)

    def stream_decoder(self) -> _Decoder:
        return _Decoder()

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        msg = message.as_message() if isinstance(message, Turn) else message
        out: dict[str, JSON] = {"who": "bot", "say": msg.text}
        if msg.tool_calls:
            out["calls"] = [{"id": c.id, "fn": c.name, "args": c.arguments} for c in msg.tool_calls]
        for c in msg.carriers:
            if c.dialect == "toy":
                out[c.kind] = c.value
        return [out]

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        (turn,) = self.replay(message)
        return [{k: v for k, v in turn.items() if k not in ("mind", "seal")}]

    def detects(self, payload: JSON) -> bool:
        return isinstance(payload, dict) and payload.get("toy") == 1

    def request_carriers(self, body: Mapping[str, Any]) -> list[SentCarrier]:
        out = []
        for t in body.get("turns") or ():
            if isinstance(t, dict) and t.get("who") == "bot":
                for key, opaque in (("mind", False), ("seal", True)):
                    if isinstance(t.get(key), str) and t[key]:
                        out.append(SentCarrier(key, len(t[key].encode()), opaque))
        return out

    def stream_projector(self, profile: Profile | None = None) -> StreamProjector:
        return SSEProjector(STREAM, lambda reason: encode_event("message", b'{"toy":1,"error":1}'))


DIALECT = ToyDialect()
