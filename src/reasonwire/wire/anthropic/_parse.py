"""Anthropic Messages: a response message (JSON) into a neutral :class:`Turn`.

The non-streaming parser and the stream decoder share :func:`turn_from_message`, so a turn
assembled from a stream and the same answer parsed non-streamed cannot drift apart.

Carriers are the ``thinking`` and ``redacted_thinking`` content blocks themselves: the carrier
value *is* the block object from the response (same dict, same key order), because the API
checks the signature over the whole block and wants it back unmodified. The turn's native
payload is the content list, so a replay sends back the very same block objects in their
original order, interleaved with text and ``tool_use`` blocks as received.
"""

from __future__ import annotations

import json

from reasonwire.errors import MalformedBody
from reasonwire.wire.jsontext import json_body
from reasonwire.wire.model import JSON, Carrier, JsonObject, Native, ToolCall, Turn, Usage
from reasonwire.wire.turnparts import TurnParts

REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
"""Content block types that carry reasoning state (dropped by ``strip``)."""


def _int(value: JSON) -> int | None:
    """A token count, or None when absent or not an integer (never invent a 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from(raw: JSON) -> Usage | None:
    """Normalise an Anthropic ``usage`` object.

    ``input_tokens`` is already the uncached part; cache reads and writes are reported beside
    it, so billed input is the sum of the three. ``output_tokens_details.thinking_tokens``
    (newer models) fills ``reasoning`` when present.
    """
    if not isinstance(raw, dict):
        return None
    details = raw.get("output_tokens_details")
    reasoning = _int(details.get("thinking_tokens")) if isinstance(details, dict) else None
    return Usage(
        input_uncached=_int(raw.get("input_tokens")),
        cache_read=_int(raw.get("cache_read_input_tokens")),
        cache_write=_int(raw.get("cache_creation_input_tokens")),
        output=_int(raw.get("output_tokens")),
        reasoning=reasoning,
        raw=raw,
    )


def arguments_text(tool_input: JSON) -> str:
    """Tool input object as compact JSON text (the contract's form for object arguments)."""
    return json.dumps(tool_input, separators=(",", ":"), ensure_ascii=False)


def _str_field(block: JsonObject, key: str, path: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise MalformedBody(
            f"anthropic response: {path}.{key} must be a string, got {type(value).__name__}"
        )
    return value


def carrier_for(block: JsonObject, path: str) -> Carrier | None:
    """The carrier a content block holds, or None for a non-reasoning block.

    Both reasoning block types are opaque: a thinking block's text is readable but only valid
    together with its signature, so the block as a whole must travel back byte-for-byte.
    """
    kind = block.get("type")
    if kind == "thinking":
        return Carrier(
            dialect="anthropic",
            kind="thinking",
            path=path,
            value=block,
            opaque=True,
            text=_str_field(block, "thinking", path),
        )
    if kind == "redacted_thinking":
        _str_field(block, "data", path)
        return Carrier(
            dialect="anthropic", kind="redacted_thinking", path=path, value=block, opaque=True
        )
    return None


def turn_from_message(message: JSON) -> Turn:
    """A :class:`Turn` from a Messages response object (``{"type":"message",..}``).

    ``text`` and ``reasoning_text`` are the concatenation of the text and thinking blocks in
    order, with no separator: exactly what the stream's deltas add up to. Block types this
    module does not know (server tools, citations...) stay in the native payload untouched.
    """
    if not isinstance(message, dict):
        raise MalformedBody(
            f"anthropic response: expected a JSON object, got {type(message).__name__}"
        )
    if message.get("type") == "error" or (
        "content" not in message and isinstance(message.get("error"), dict)
    ):
        err = message.get("error")
        err = err if isinstance(err, dict) else {}
        raise MalformedBody(
            "anthropic response is an error body: "
            f"{err.get('type', 'error')}: {err.get('message', '(no message)')}"
        )
    content = message.get("content")
    if not isinstance(content, list):
        raise MalformedBody("anthropic response: 'content' must be a list of content blocks")

    got = TurnParts()
    for i, block in enumerate(content):
        path = f"content[{i}]"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise MalformedBody(f"anthropic response: {path} is not a typed content block")
        kind = block["type"]
        carrier = carrier_for(block, path)
        if carrier is not None:
            got.carriers.append(carrier)
            if carrier.text:
                got.reasoning.append(carrier.text)
        elif kind == "text":
            got.text.append(_str_field(block, "text", path))
        elif kind == "tool_use":
            tool_input = block.get("input", {})
            if not isinstance(tool_input, dict):
                raise MalformedBody(f"anthropic response: {path}.input must be an object")
            got.calls.append(
                ToolCall(
                    id=_str_field(block, "id", path),
                    name=_str_field(block, "name", path),
                    arguments=arguments_text(tool_input),
                )
            )

    return got.turn(
        Native("anthropic", tuple(content)),
        message,
        usage=usage_from(message.get("usage")),
        finish=message.get("stop_reason"),
    )


def parse_response(body: bytes | str | JSON) -> Turn:
    """Parse a non-streaming Messages response body."""
    return turn_from_message(json_body(body, "anthropic response body"))
