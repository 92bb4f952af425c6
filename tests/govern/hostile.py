"""A hostile upstream for the gateway, and a governed world in front of it.

:class:`HostileUpstream` is an ASGI app on loopback that answers whatever a test scripts for a
conversation (the conversation id is found in the request body): any status, headers and
body, a stream as separate body messages, a stream cut mid-way (the connection dropped with
no terminal event), a reply computed from the request (echo its ``Authorization`` header and
headers in a 401 body, echo its body, re-attached vaulted reasoning included, in a 400 body).
Unscripted requests get a plain valid answer in the dialect of the path.

The builders below plant each hidden-reasoning shape of ``shared/WIRE.md`` ("Reasoning
controls and hidden-reasoning shapes beyond the four dialects' own fields") with a unique
canary per planted string, next to visible text, tool calls, usage and opaque carriers that
must still reach the client. Nothing here uses the gateway's own allow-lists.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.gateway import CONVERSATION_HEADER, Gateway
from reasonwire.govern.levels import LEVELS, Requested
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration, RuntimeAdapter
from tests.govern.conftest import ROOMY, RUNTIME, ThreadServer

KEY_ENV = "RW_HOSTILE_UPSTREAM_KEY"
CONV = re.compile(r"conv-[0-9a-f]{12}")


def new_conv() -> str:
    return "conv-" + uuid.uuid4().hex[:12]


def upstream_key() -> str:
    """A key-shaped upstream credential, made at run time (never written in the repo)."""
    return "-".join(["sk", "hostile", secrets.token_hex(20)])


# -- the upstream -----------------------------------------------------------------------------


@dataclass
class Seen:
    """One request as the upstream received it."""

    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def body(self) -> Any:
        return json.loads(self.raw or b"{}")


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    """The whole body (sent in one message) when ``chunks`` is empty."""
    chunks: Sequence[bytes] = ()
    """A streamed body: each piece its own ASGI body message."""
    content_type: str = "application/json"
    headers: Sequence[tuple[str, str]] = ()
    cut: bool = False
    """After the chunks, drop the connection (no chunked terminator, no terminal event)."""
    content_length: int | None = None
    """Declare this Content-Length (a cut then leaves the body short of it)."""


Script = Reply | Callable[[Seen], Reply]


class _Cut(Exception):
    """Raised inside the app to make the server drop the connection mid-body."""


class HostileUpstream:
    """The scriptable fake upstream (an ASGI app)."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self._script: dict[str, list[Script]] = {}
        self._lock = threading.Lock()

    def plan(self, conv: str, *replies: Script) -> None:
        """The replies for ``conv``'s next requests, in order (the last one repeats)."""
        with self._lock:
            self._script[conv] = list(replies)

    def find(self, marker: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if marker in s.text]

    def count(self) -> int:
        with self._lock:
            return len(self.seen)

    def _next(self, seen: Seen) -> Reply:
        m = CONV.search(seen.text)
        with self._lock:
            queue = self._script.get(m.group(0)) if m else None
            script: Script | None = None
            if queue:
                script = queue.pop(0) if len(queue) > 1 else queue[0]
        if script is None:
            return default_reply(seen)
        return script(seen) if callable(script) else script

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        parts: list[bytes] = []
        more = True
        while more:
            msg = await receive()
            parts.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        seen = Seen(scope["path"], headers, b"".join(parts))
        with self._lock:
            self.seen.append(seen)
        reply = self._next(seen)
        hdrs = [(b"content-type", reply.content_type.encode("latin-1"))]
        hdrs += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
        if reply.content_length is not None:
            hdrs.append((b"content-length", str(reply.content_length).encode()))
        elif not reply.chunks:
            hdrs.append((b"content-length", str(len(reply.body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": hdrs})
        if not reply.chunks:
            await send({"type": "http.response.body", "body": reply.body})
            return
        for piece in reply.chunks:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await asyncio.sleep(0)
        if reply.cut:
            raise _Cut("hostile upstream drops the connection")
        await send({"type": "http.response.body", "body": b""})


def default_reply(seen: Seen) -> Reply:
    """A plain valid answer in the path's dialect (stream when the body asks for one)."""
    try:
        stream = seen.body.get("stream") is True
    except (ValueError, AttributeError):
        stream = False
    c = Canaries()
    if seen.path.endswith("/responses"):
        return responses_stream(c, Visible()) if stream else responses_json(c, Visible())
    if seen.path.endswith("/messages"):
        return anthropic_stream(c, Visible()) if stream else anthropic_json(c, Visible())
    return chat_stream(c, Visible()) if stream else chat_json(c, Visible())


# -- canaries and visible parts ---------------------------------------------------------------


class Canaries:
    """Unique hidden strings, one per planted place (``c("where")``)."""

    def __init__(self) -> None:
        self.planted: dict[str, str] = {}

    def __call__(self, where: str) -> str:
        value = "cnry" + secrets.token_hex(8)
        self.planted[value] = where
        return value

    def leaked(self, seen: str) -> dict[str, str]:
        """Planted canaries found in ``seen`` (value -> where it was planted)."""
        return {v: w for v, w in self.planted.items() if v in seen}


@dataclass
class Visible:
    """What must still reach the client: text, a tool call, usage, opaque carriers."""

    text: str = field(default_factory=lambda: "visible-" + secrets.token_hex(6))
    call_id: str = field(default_factory=lambda: "call_" + secrets.token_hex(6))
    args: str = '{"q": "Lyon"}'
    signature: str = field(default_factory=lambda: "sig" + secrets.token_hex(12))
    encrypted: str = field(default_factory=lambda: "enc" + secrets.token_hex(12))
    redacted: str = field(default_factory=lambda: "red" + secrets.token_hex(12))
    prompt_tokens: int = 4711
    output_tokens: int = 815
    reasoning_tokens: int = 333

    def strings(self) -> list[str]:
        return [self.text, self.call_id]


def sse(data: Any, event: str | None = None) -> bytes:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + raw + b"\n\n"


def escape_key(raw: bytes, placeholder: str, spelled: str) -> bytes:
    """Replace the JSON key ``placeholder`` by ``spelled`` (a key written with \\u escapes)."""
    return raw.replace(json.dumps(placeholder).encode(), spelled.encode())


ESCAPED_KEYS = {
    "__ESC1__": '"reasoning\\u005fcontent"',
    "__ESC2__": '"\\u0072easoning"',
    "__ESC3__": '"thinkin\\u0067"',
}


def _escaped(raw: bytes) -> bytes:
    for placeholder, spelled in ESCAPED_KEYS.items():
        raw = escape_key(raw, placeholder, spelled)
    return raw


# -- chat completions -------------------------------------------------------------------------


def _chat_usage(c: Canaries, v: Visible) -> dict[str, Any]:
    return {
        "prompt_tokens": v.prompt_tokens,
        "completion_tokens": v.output_tokens,
        "total_tokens": v.prompt_tokens + v.output_tokens,
        "completion_tokens_details": {
            "reasoning_tokens": v.reasoning_tokens,
            "reasoning_text": c("usage.completion_tokens_details.reasoning_text"),
        },
        "reasoning_content": c("usage.reasoning_content"),
    }


def chat_hidden_message(c: Canaries, v: Visible, *, mistral: bool = False) -> dict[str, Any]:
    """An assistant message carrying every known hidden-reasoning field."""
    content: Any = v.text
    if mistral:
        content = [
            {"type": "thinking", "thinking": [{"type": "text", "text": c("mistral.thinking")}]},
            {"type": "text", "text": v.text},
            {"type": "reasoning", "text": c("mistral.reasoning-part")},
        ]
    return {
        "role": "assistant",
        "content": content,
        "reasoning_content": c("message.reasoning_content"),
        "reasoning": c("message.reasoning"),
        "reasoning_details": [
            {"type": "reasoning.text", "text": c("reasoning_details.text"), "index": 0},
            {"type": "reasoning.summary", "summary": c("reasoning_details.summary")},
        ],
        "thinking": c("message.thinking (Ollama)"),
        "thinking_blocks": [
            {"type": "thinking", "thinking": c("thinking_blocks.thinking"), "signature": "s1"}
        ],
        "provider_specific_fields": {"reasoning_content": c("provider_specific_fields")},
        "__ESC1__": c("escaped key reasoning\\u005fcontent"),
        "__ESC2__": c("escaped key \\u0072easoning"),
        "__ESC3__": c("escaped key thinkin\\u0067"),
        "tool_calls": [
            {
                "id": v.call_id,
                "type": "function",
                "function": {"name": "lookup", "arguments": v.args, "thought": c("fn.thought")},
                "extra_content": {
                    "google": {"thought_signature": v.signature, "thought": c("google.thought")}
                },
            }
        ],
    }


def chat_json(c: Canaries, v: Visible, *, mistral: bool = False, model: str = "h-chat") -> Reply:
    body = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "reasoning": c("top-level reasoning"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": chat_hidden_message(c, v, mistral=mistral),
                "reasoning_content": c("choice.reasoning_content"),
                "logprobs": {"content": [{"token": c("logprobs.token")}]},
            }
        ],
        "usage": _chat_usage(c, v),
    }
    return Reply(body=_escaped(json.dumps(body).encode()))


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "h-chat",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **top,
    }


def chat_stream_events(c: Canaries, v: Visible) -> list[bytes]:
    """Every hidden shape as a stream, then text, a tool call, finish, usage, [DONE]."""
    first = v.text[: len(v.text) // 2]
    rest = v.text[len(v.text) // 2 :]
    mistral = [{"type": "thinking", "thinking": [{"type": "text", "text": c("mistral delta")}]}]
    return [
        sse(chat_chunk({"role": "assistant", "reasoning_content": c("delta.reasoning_content")})),
        sse(chat_chunk({"reasoning": c("delta.reasoning")})),
        sse(chat_chunk({"reasoning_details": [{"type": "reasoning.text", "text": c("d.rd")}]})),
        sse(
            chat_chunk(
                {"thinking": c("delta.thinking"), "provider_specific_fields": {"x": c("psf")}}
            )
        ),
        sse(chat_chunk({"thinking_blocks": [{"type": "thinking", "thinking": c("d.tb")}]})),
        sse(chat_chunk({"content": mistral})),
        sse(
            _escaped(
                json.dumps(chat_chunk({"__ESC1__": c("d.esc1"), "__ESC2__": c("d.esc2")})).encode()
            )
        ),
        sse(chat_chunk({"content": first}), event=c("event name")),
        b": "
        + c("sse comment").encode()
        + b"\n"
        + b"id: "
        + c("sse id").encode()
        + b"\n"
        + sse(chat_chunk({"content": rest})),
        sse(
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": v.call_id,
                            "type": "function",
                            "function": {"name": "lookup", "arguments": ""},
                            "extra_content": {
                                "google": {"thought_signature": v.signature, "thought": c("d.g")}
                            },
                        }
                    ]
                }
            )
        ),
        sse(chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": v.args}}]})),
        sse(chat_chunk({}, "tool_calls", reasoning=c("finish chunk reasoning"))),
        sse({**chat_chunk({}), "choices": [], "usage": _chat_usage(c, v)}),
        sse(b"[DONE]", event=c("event name on [DONE]")),
    ]


def chat_stream(c: Canaries, v: Visible) -> Reply:
    return Reply(chunks=chat_stream_events(c, v), content_type="text/event-stream")


def chat_text_stream(pieces: Sequence[str], *, done: bool = True) -> list[bytes]:
    """A plain content stream: one delta per piece, finish, [DONE]."""
    out = [sse(chat_chunk({"role": "assistant", "content": ""}))]
    out += [sse(chat_chunk({"content": p})) for p in pieces]
    if done:
        out += [sse(chat_chunk({}, "stop")), sse(b"[DONE]")]
    return out


# -- responses --------------------------------------------------------------------------------


def _resp_usage(c: Canaries, v: Visible) -> dict[str, Any]:
    return {
        "input_tokens": v.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": v.output_tokens,
        "output_tokens_details": {
            "reasoning_tokens": v.reasoning_tokens,
            "reasoning_text": c("usage.output_tokens_details.reasoning_text"),
        },
        "total_tokens": v.prompt_tokens + v.output_tokens,
    }


def _reasoning_item(c: Canaries, v: Visible, where: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": "rs_hostile",
        "summary": [{"type": "summary_text", "text": c(where + ".summary_text")}],
        "content": [{"type": "reasoning_text", "text": c(where + ".reasoning_text")}],
        "encrypted_content": v.encrypted,
        "status": "completed",
        "__ESC2__": c(where + ".escaped reasoning key"),
    }


def _message_item(c: Canaries, v: Visible) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_hostile",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": v.text, "annotations": [], "logprobs": [c("lp")]},
            {"type": "reasoning_text", "text": c("message.content reasoning_text part")},
        ],
        "reasoning": c("message item reasoning field"),
    }


def _call_item(c: Canaries, v: Visible) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_hostile",
        "call_id": v.call_id,
        "name": "lookup",
        "arguments": v.args,
        "status": "completed",
        "thinking": c("function_call.thinking"),
    }


def responses_body(c: Canaries, v: Visible, status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_hostile",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "h-resp",
        "output": [
            _reasoning_item(c, v, "output[0]"),
            _message_item(c, v),
            _call_item(c, v),
            {"type": "thinking", "id": "th_1", "thinking": c("unknown output item type")},
        ],
        "reasoning": {"effort": "high", "summary": c("response.reasoning.summary")},
        "instructions": c("response.instructions"),
        "usage": _resp_usage(c, v),
        "__ESC1__": c("response escaped key"),
    }


def responses_json(c: Canaries, v: Visible) -> Reply:
    return Reply(body=_escaped(json.dumps(responses_body(c, v)).encode()))


def responses_stream_events(c: Canaries, v: Visible) -> list[bytes]:
    seq = iter(range(1000))

    def ev(kind: str, **data: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

    created = {
        "id": "resp_hostile",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "h-resp",
        "output": [],
        "reasoning": {"summary": c("created.reasoning.summary")},
        "instructions": c("created.instructions"),
    }
    rs_added = {"type": "reasoning", "id": "rs_hostile", "summary": [], "content": []}
    at0 = {"item_id": "rs_hostile", "output_index": 0, "content_index": 0}
    at1 = {"item_id": "msg_hostile", "output_index": 1, "content_index": 0}
    part_rt = {"type": "reasoning_text", "text": c("content_part.added reasoning_text")}
    message_added = {
        "type": "message",
        "id": "msg_hostile",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    half = len(v.text) // 2
    done_message = _message_item(c, v)
    call = _call_item(c, v)
    call_added = {**call, "arguments": "", "status": "in_progress"}
    escaped_type = _escaped(
        json.dumps(
            {"type": "response.reasoning_text.delta", **at0, "delta": c("escaped-type delta")}
        ).encode()
    ).replace(b"reasoning_text.delta", b"reasoning\\u005ftext.delta")
    return [
        ev("response.created", response=created),
        ev("response.in_progress", response=created),
        ev("response.output_item.added", output_index=0, item=rs_added),
        ev("response.content_part.added", **at0, part=part_rt),
        ev("response.reasoning_text.delta", **at0, delta=c("reasoning_text.delta")),
        sse(escaped_type, event="response.output_text.delta"),
        ev("response.reasoning_text.done", **at0, text=c("reasoning_text.done")),
        ev("response.content_part.done", **at0, part={"type": "reasoning_text", "text": c("cpd")}),
        ev(
            "response.reasoning_summary_part.added",
            item_id="rs_hostile",
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": c("summary_part.added")},
        ),
        ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_hostile",
            output_index=0,
            summary_index=0,
            delta=c("summary_text.delta"),
            obfuscation=c("obfuscation"),
        ),
        ev("response.output_item.done", output_index=0, item=_reasoning_item(c, v, "item.done")),
        ev("response.output_item.added", output_index=1, item=message_added),
        ev(
            "response.content_part.added",
            **at1,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
        ev("response.output_text.delta", **at1, delta=v.text[:half], logprobs=[c("delta lp")]),
        sse(
            _escaped(
                json.dumps(
                    {
                        "type": "response.output_text.delta",
                        **at1,
                        "delta": v.text[half:],
                        "__ESC1__": c("escaped key in text delta"),
                    }
                ).encode()
            ),
            event="response.output_text.delta",
        ),
        ev("response.output_text.done", **at1, text=v.text),
        ev(
            "response.content_part.done",
            **at1,
            part={"type": "output_text", "text": v.text, "annotations": []},
        ),
        ev("response.output_item.done", output_index=1, item=done_message),
        ev("response.output_item.added", output_index=2, item=call_added),
        ev(
            "response.function_call_arguments.delta",
            item_id="fc_hostile",
            output_index=2,
            delta=v.args,
        ),
        ev(
            "response.function_call_arguments.done",
            item_id="fc_hostile",
            output_index=2,
            arguments=v.args,
        ),
        ev("response.output_item.done", output_index=2, item=call),
        ev("response.thinking.delta", delta=c("unknown event kind")),
        ev("response.completed", response=responses_body(c, v)),
    ]


def responses_stream(c: Canaries, v: Visible) -> Reply:
    return Reply(chunks=responses_stream_events(c, v), content_type="text/event-stream")


# -- anthropic --------------------------------------------------------------------------------


def _anth_usage(c: Canaries, v: Visible) -> dict[str, Any]:
    return {
        "input_tokens": v.prompt_tokens,
        "output_tokens": v.output_tokens,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "thinking_tokens_text": c("usage.thinking_tokens_text"),
    }


def anthropic_content(c: Canaries, v: Visible) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": c("thinking block text"), "signature": v.signature},
        {"type": "redacted_thinking", "data": v.redacted},
        {"type": "text", "text": v.text, "reasoning": c("text block reasoning field")},
        {"type": "tool_use", "id": v.call_id, "name": "lookup", "input": {"q": "Lyon"}},
        {"type": "reasoning", "text": c("unknown block type")},
    ]


def anthropic_body(c: Canaries, v: Visible) -> dict[str, Any]:
    return {
        "id": "msg_hostile",
        "type": "message",
        "role": "assistant",
        "model": "h-claude",
        "content": anthropic_content(c, v),
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": _anth_usage(c, v),
        "thinking": c("top-level thinking"),
        "reasoning_content": c("top-level reasoning_content"),
        "provider_specific_fields": {"thinking_blocks": [c("psf thinking_blocks")]},
        "__ESC3__": c("escaped thinking key"),
    }


def anthropic_json(c: Canaries, v: Visible) -> Reply:
    return Reply(body=_escaped(json.dumps(anthropic_body(c, v)).encode()))


def anthropic_stream_events(c: Canaries, v: Visible) -> list[bytes]:
    def ev(kind: str, **data: Any) -> bytes:
        return sse({"type": kind, **data}, event=kind)

    start = {
        "id": "msg_hostile",
        "type": "message",
        "role": "assistant",
        "model": "h-claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": v.prompt_tokens, "output_tokens": 1},
        "thinking": c("message_start.thinking"),
    }
    half = len(v.text) // 2
    return [
        ev("message_start", message=start),
        ev(
            "content_block_start",
            index=0,
            content_block={
                "type": "thinking",
                "thinking": c("block_start.thinking"),
                "signature": "",
            },
        ),
        ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": c("td")}),
        sse(
            _escaped(
                json.dumps(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "thinking_delta", "__ESC3__": c("esc td")},
                    }
                ).encode()
            ),
            event="content_block_delta",
        ),
        ev(
            "content_block_delta",
            index=0,
            delta={"type": "signature_delta", "signature": v.signature},
        ),
        ev("content_block_stop", index=0),
        ev(
            "content_block_start",
            index=1,
            content_block={"type": "redacted_thinking", "data": v.redacted},
        ),
        ev("content_block_stop", index=1),
        ev("content_block_start", index=2, content_block={"type": "text", "text": ""}),
        ev(
            "content_block_delta",
            index=2,
            delta={"type": "text_delta", "text": v.text[:half], "thinking": c("x")},
        ),
        ev("content_block_delta", index=2, delta={"type": "text_delta", "text": v.text[half:]}),
        ev("content_block_stop", index=2),
        ev(
            "content_block_start",
            index=3,
            content_block={"type": "tool_use", "id": v.call_id, "name": "lookup", "input": {}},
        ),
        ev(
            "content_block_delta",
            index=3,
            delta={"type": "input_json_delta", "partial_json": v.args},
        ),
        ev("content_block_stop", index=3),
        ev("reasoning_delta", index=4, delta={"text": c("unknown event kind")}),
        ev(
            "message_delta",
            delta={"stop_reason": "tool_use", "stop_sequence": None, "thinking": c("md.thinking")},
            usage={"output_tokens": v.output_tokens, "reasoning": c("md.usage.reasoning")},
        ),
        ev("message_stop"),
    ]


def anthropic_stream(c: Canaries, v: Visible) -> Reply:
    return Reply(chunks=anthropic_stream_events(c, v), content_type="text/event-stream")


# -- the governed world -----------------------------------------------------------------------

POLICY = OrgPolicy(allowed=frozenset({"low", "medium", "high"}), maximum="high")
ANTHROPIC_BUDGET = {"low": 1024, "medium": 4096, "high": 16000}

ROUTES: dict[str, tuple[str, str, str]] = {
    # route id -> (dialect, model, gateway path)
    "chat/h-chat": ("chat", "h-chat", "/v1/chat/completions"),
    "chat/h-vllm": ("chat", "h-vllm", "/v1/chat/completions"),
    "chat/h-tags": ("chat", "h-tags", "/v1/chat/completions"),
    "chat/h-none": ("chat", "h-none", "/v1/chat/completions"),
    "responses/h-resp": ("responses", "h-resp", "/v1/responses"),
    "responses/h-resp-tags": ("responses", "h-resp-tags", "/v1/responses"),
    "anthropic/h-claude": ("anthropic", "h-claude", "/v1/messages"),
    "anthropic/h-claude-tags": ("anthropic", "h-claude-tags", "/v1/messages"),
}
MAIN = {"chat": "chat/h-chat", "responses": "responses/h-resp", "anthropic": "anthropic/h-claude"}
TAGS = {"chat": "chat/h-tags", "responses": "responses/h-resp-tags"}
TAGS["anthropic"] = "anthropic/h-claude-tags"


def _levels(dialect: str) -> dict[Any, Any]:
    if dialect == "responses":
        return {lv: {"reasoning": {"effort": lv}} for lv in LEVELS}
    if dialect == "anthropic":
        return {
            lv: {"thinking": {"type": "enabled", "budget_tokens": ANTHROPIC_BUDGET[lv]}}
            for lv in LEVELS
        }
    return {lv: {"reasoning_effort": lv} for lv in LEVELS}


def make_registry(upstream: str) -> Registry:
    reg = Registry(
        adapters=[RuntimeAdapter(*RUNTIME, "qualified", "Q-RT-hostile", frozenset(LEVELS))]
    )
    for route_id, (dialect, model, _) in ROUTES.items():
        extra: dict[str, Any] = {}
        if route_id == "chat/h-vllm":
            extra["profile"] = "vllm"
        elif route_id.endswith("-tags"):
            extra["profile_fields"] = {"think_tags": True}
        if dialect == "anthropic":
            extra.update(auth_header="x-api-key", auth_scheme="")
        levels = {"low": {}} if route_id == "chat/h-none" else _levels(dialect)
        reg.add_route(
            RouteRegistration(
                route_id=route_id,
                provider="hostile",
                model=model,
                dialect=dialect,  # type: ignore[arg-type]
                upstream_base_url=upstream,
                qualification_id="Q-ROUTE-" + model,
                levels=levels,
                credential_env=KEY_ENV,
                price_per_mtok={"input_uncached": 1.0, "output": 4.0},
                **extra,
            )
        )
    return reg


@dataclass
class HostileWorld:
    gateway: Gateway
    upstream: HostileUpstream
    ring: KeyRing
    url: str
    store: SQLiteStore
    key: str

    def token(self, conv: str, route_id: str, requested: Requested = "medium") -> str:
        return project(
            self.gateway.registry,
            self.gateway.policy,
            self.ring,
            conversation_id=conv,
            task_id="task-" + conv,
            runtime_id=RUNTIME[0],
            runtime_version=RUNTIME[1],
            route_id=route_id,
            requested=requested,
        )

    def headers(self, conv: str, route_id: str, requested: Requested = "medium") -> dict[str, str]:
        return {HEADER: self.token(conv, route_id, requested), CONVERSATION_HEADER: conv}

    def rows(self, conv: str, n: int = 1, timeout: float = 5.0) -> list[EvidenceRow]:
        """The conversation's evidence rows once there are ``n`` completed ones (a row is
        committed ``pending`` before its upstream call, evidence first, and completed when
        the gateway has finished with it, which may be just after the client's last byte)."""
        deadline = time.monotonic() + timeout
        rows = self.store.rows(conv)
        while (
            len(rows) < n or any(r.outcome == "pending" for r in rows)
        ) and time.monotonic() < deadline:
            time.sleep(0.01)
            rows = self.store.rows(conv)
        return rows

    def route(self, route_id: str) -> RouteRegistration:
        return self.gateway.registry.routes[route_id]

    def post(
        self,
        route_id: str,
        conv: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        requested: Requested = "medium",
    ) -> Received:
        """POST to the route's gateway path; the raw bytes the client received."""
        path = ROUTES[route_id][2]
        hdrs = {**self.headers(conv, route_id, requested), **(headers or {})}
        content = raw if raw is not None else json.dumps(body).encode()
        hdrs.setdefault("content-type", "application/json")
        with (
            httpx.Client(base_url=self.url, timeout=30) as client,
            client.stream("POST", path, content=content, headers=hdrs) as resp,
        ):
            data = b"".join(resp.iter_raw())
            return Received(resp.status_code, dict(resp.headers), data)


@dataclass
class Received:
    status: int
    headers: dict[str, str]
    raw: bytes

    def seen(self) -> str:
        """Everything the client got, raw and with every JSON value decoded (escapes undone)."""
        text = self.raw.decode("utf-8", "replace")
        parts = [text, json.dumps(self.headers)]
        for line in text.splitlines():
            payload = line[5:].strip() if line.startswith("data:") else line
            try:
                parts.append(json.dumps(json.loads(payload), ensure_ascii=False))
            except ValueError:
                continue
        return "\n".join(parts)

    def json(self) -> Any:
        return json.loads(self.raw)

    def events(self) -> list[tuple[str | None, Any]]:
        """(event name, decoded data) of each SSE event."""
        out: list[tuple[str | None, Any]] = []
        for block in self.raw.decode().replace("\r\n", "\n").split("\n\n"):
            name, data = None, []
            for line in block.split("\n"):
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
            if data:
                joined = "\n".join(data)
                try:
                    out.append((name, json.loads(joined)))
                except ValueError:
                    out.append((name, joined))
        return out


@contextmanager
def hostile_world(tmp: Any) -> Iterator[HostileWorld]:
    mp = pytest.MonkeyPatch()
    key = upstream_key()
    mp.setenv(KEY_ENV, key)
    app = HostileUpstream()
    try:
        with ThreadServer(app) as upstream:
            ring = KeyRing.generate("k1")
            store = SQLiteStore(tmp / "evidence.sqlite")
            gw = Gateway(
                make_registry(upstream.url + "/v1"), POLICY, ring, store, store_settings=ROOMY
            )
            with ThreadServer(gw.app, server="builtin") as gsrv:
                yield HostileWorld(gw, app, ring, gsrv.url, store, key)
            store.close()
    finally:
        mp.undo()


def user_body(route_id: str, conv: str, **extra: Any) -> dict[str, Any]:
    """The smallest valid client body for the route's dialect, mentioning ``conv``."""
    dialect, model, _ = ROUTES[route_id]
    msg = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    if dialect == "responses":
        return {"model": model, "input": msg, **extra}
    if dialect == "anthropic":
        return {"model": model, "max_tokens": 20000, "messages": msg, **extra}
    return {"model": model, "messages": msg, **extra}
