"""Hidden reasoning: take plaintext reasoning out of what a governed client receives, and put
the original carriers back when the client replays its history.

Design: a server-side vault per conversation (held by the gateway), not pass-through.
Pass-through of opaque parts alone does not give continuity: an Anthropic ``thinking`` block's
signature covers its text, and DeepSeek-style ``reasoning_content`` must come back as text
after a tool call, so a client that never saw the text cannot return it. The gateway therefore
hands the client a placeholder that keeps every opaque part (signature, ``encrypted_content``,
item id) and no text, stores the exact original carrier under a key the client does carry back
(signature, reasoning item id, tool call id), and re-attaches the original on the way up.
Reasoning the client sends that is not in the vault is removed (it cannot be genuine).

Only this module knows where each dialect puts reasoning; the gateway calls it by dialect.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from reasonwire.wire.model import JSON, Dialect, Turn
from reasonwire.wire.sse import SSEDecoder, SSEEvent

CHAT_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
"""Chat message fields that carry reasoning (text or details) on an assistant message."""

_MARKER: dict[Dialect, bytes] = {
    "chat": b"reasoning",
    "responses": b"reasoning",
    "anthropic": b"thinking",
    "gemini": b"thought",
}
"""A stream event without this byte string carries no reasoning and passes unparsed."""

Lookup = Callable[[str], JSON | None]


def _text_key(text: str) -> str:
    return "tx:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _chat_key(tool_call_ids: list[str], text: str) -> str:
    return "tc:" + tool_call_ids[0] if tool_call_ids else _text_key(text)


# --------------------------------------------------------------------------------------------
# Responses to the client
# --------------------------------------------------------------------------------------------


def _scrub_responses_item(item: Any) -> Any:
    """A new reasoning item with summary and reasoning text removed (opaque parts kept)."""
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return item
    out = {k: v for k, v in item.items() if k != "content"}
    if "summary" in out:
        out["summary"] = []
    return out


def _scrub_anthropic_block(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "thinking":
        return {**block, "thinking": ""}
    return block


def _scrub_chat_message(msg: Any) -> None:
    if isinstance(msg, dict):
        for f in CHAT_FIELDS:
            msg.pop(f, None)


def scrub_body(dialect: Dialect, body: dict[str, Any]) -> None:
    """Remove plaintext reasoning from a non-streamed response body, in place.

    Replaced items are new objects, so carrier values taken from ``body`` before (the vault's)
    stay exactly as received.
    """
    if dialect == "chat":
        for choice in body.get("choices") or ():
            if isinstance(choice, dict):
                _scrub_chat_message(choice.get("message"))
                _scrub_chat_message(choice.get("delta"))
    elif dialect == "responses":
        out = body.get("output")
        if isinstance(out, list):
            body["output"] = [_scrub_responses_item(i) for i in out]
    elif dialect == "anthropic":
        content = body.get("content")
        if isinstance(content, list):
            body["content"] = [_scrub_anthropic_block(b) for b in content]
    else:
        for cand in body.get("candidates") or ():
            parts = (cand.get("content") or {}).get("parts") if isinstance(cand, dict) else None
            if isinstance(parts, list):
                cand["content"]["parts"] = [
                    p for p in parts if not (isinstance(p, dict) and p.get("thought") is True)
                ]


_RESPONSES_DROP = ("response.reasoning_summary", "response.reasoning_text", "response.reasoning.")


def _scrub_event(dialect: Dialect, data: dict[str, Any]) -> bool:
    """Scrub one decoded stream event in place; False when the whole event must be dropped."""
    if dialect == "chat":
        scrub_body("chat", data)
        return True
    if dialect == "responses":
        etype = str(data.get("type", ""))
        if etype.startswith(_RESPONSES_DROP):
            return False
        if "item" in data:
            data["item"] = _scrub_responses_item(data["item"])
        if isinstance(data.get("response"), dict):
            scrub_body("responses", data["response"])
        return True
    if dialect == "anthropic":
        delta = data.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "thinking_delta":
            return False
        if "content_block" in data:
            data["content_block"] = _scrub_anthropic_block(data["content_block"])
        if isinstance(data.get("message"), dict):
            scrub_body("anthropic", data["message"])
        return True
    scrub_body("gemini", data)
    return True


def _encode(ev: SSEEvent, data: str) -> bytes:
    head = f"event: {ev.event}\n" if ev.event != "message" else ""
    return f"{head}data: {data}\n\n".encode()


class StreamScrubber:
    """Bytes of an upstream SSE stream in, the same stream without plaintext reasoning out.

    Events that cannot hold reasoning (no marker bytes) pass without JSON work; events that
    only carried reasoning text (thinking deltas, summary deltas) are dropped whole.
    """

    __slots__ = ("_dialect", "_marker", "_sse")

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._marker = _MARKER[dialect].decode()
        self._sse = SSEDecoder()

    def feed(self, chunk: bytes) -> bytes:
        return self._emit(self._sse.feed(chunk))

    def close(self) -> bytes:
        return self._emit(self._sse.close())

    def _emit(self, events: list[SSEEvent]) -> bytes:
        out: list[bytes] = []
        for ev in events:
            if self._marker not in ev.data:
                out.append(_encode(ev, ev.data))
                continue
            try:
                data = json.loads(ev.data)
            except ValueError:
                continue  # not JSON and mentions reasoning: never forward it
            if not isinstance(data, dict) or _scrub_event(self._dialect, data):
                out.append(_encode(ev, json.dumps(data, ensure_ascii=False)))
        return b"".join(out)


# --------------------------------------------------------------------------------------------
# The vault: what to keep, and putting it back
# --------------------------------------------------------------------------------------------


def vault_entries(dialect: Dialect, turn: Turn) -> list[tuple[str, JSON]]:
    """(key, exact original value) pairs for the reasoning carriers of a finished turn."""
    if dialect == "chat":
        fields = {
            c.kind: c.value
            for c in turn.carriers
            if c.kind in CHAT_FIELDS and c.path.startswith("choices[0].")
        }
        if not fields:
            return []
        ids = [tc.id for tc in turn.tool_calls if tc.id]
        return [(_chat_key(ids, turn.text), fields)]
    out: list[tuple[str, JSON]] = []
    for c in turn.carriers:
        v = c.value
        if not isinstance(v, dict):
            continue
        if dialect == "responses" and v.get("type") == "reasoning" and v.get("id"):
            out.append(("rs:" + str(v["id"]), v))
        elif dialect == "anthropic" and v.get("type") == "thinking" and v.get("signature"):
            out.append(("sig:" + str(v["signature"]), v))
    return out


def reattach(dialect: Dialect, body: dict[str, Any], lookup: Lookup) -> int:
    """Put vaulted carriers back into the history of a request body, in place.

    Plaintext reasoning the client sent that the vault does not know is removed. Returns how
    many carriers were re-attached.
    """
    if dialect == "chat":
        return _reattach_chat(body, lookup)
    if dialect == "responses":
        return _reattach_responses(body, lookup)
    if dialect == "anthropic":
        return _reattach_anthropic(body, lookup)
    return 0


def _reattach_chat(body: dict[str, Any], lookup: Lookup) -> int:
    n = 0
    for msg in body.get("messages") or ():
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        had = any(f in msg for f in CHAT_FIELDS)
        if had:
            _scrub_chat_message(msg)
        ids = [
            str(tc["id"])
            for tc in msg.get("tool_calls") or ()
            if isinstance(tc, dict) and tc.get("id")
        ]
        content = msg.get("content")
        text = content if isinstance(content, str) else ""
        found = lookup(_chat_key(ids, text))
        if isinstance(found, dict):
            msg.update(found)
            n += 1
    return n


def _reattach_responses(body: dict[str, Any], lookup: Lookup) -> int:
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    n = 0
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        found = lookup("rs:" + str(item.get("id")))
        if found is not None:
            items[i] = found
            n += 1
        else:
            items[i] = _scrub_responses_item(item)
    return n


def _reattach_anthropic(body: dict[str, Any], lookup: Lookup) -> int:
    n = 0
    for msg in body.get("messages") or ():
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        kept: list[Any] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking":
                found = lookup("sig:" + str(block.get("signature")))
                if found is None:
                    continue  # unknown plaintext thinking: not genuine, never forwarded
                kept.append(found)
                n += 1
            else:
                kept.append(block)
        msg["content"] = kept
    return n
