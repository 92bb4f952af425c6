"""Responses API: from a response object (or its output items) to a neutral :class:`Turn`.

Shared by the non-streaming parser and the stream decoder, so a streamed answer and the same
answer sent whole produce equal Turns by construction: both end in :func:`turn_from_response`.

A ``reasoning`` output item is one carrier (kind ``reasoning_item``) whose value is the item
object exactly as received. It is opaque when it holds a non-empty ``encrypted_content``
string; its readable text is its ``summary_text`` parts followed by its ``reasoning_text``
parts. Items of types reasonwire does not model (web search calls and the like) are kept in
``Native.items`` for replay and ignored for text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reasonwire.errors import MalformedBody
from reasonwire.wire import jsontext
from reasonwire.wire.jsontext import json_object
from reasonwire.wire.model import JSON, Carrier, Native, ToolCall, Turn, Usage
from reasonwire.wire.turnparts import TurnParts

CARRIER_KIND = "reasoning_item"
"""Carrier kind of a whole Responses reasoning item."""

TEXT_JOIN = "\n\n"
"""Separator between reasoning text parts (and between reasoning items) in readable text."""

RESPONSE_BODY = "responses response body"
"""How errors name a Responses body."""


def error_message(body: bytes | str | JSON) -> str | None:
    """The provider's message in an error body (``{"error": {"message": ..}}``), else None.

    The HTTP layer uses it for :class:`~reasonwire.errors.ProviderError`; it never raises, so
    an unreadable error body cannot hide the status that came with it.
    """
    try:
        obj = json_object(body, RESPONSE_BODY)
    except MalformedBody:
        return None
    err = obj.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        return msg if isinstance(msg, str) else None
    if isinstance(err, str):
        return err
    msg = obj.get("message") if obj.get("type") == "error" else None
    return msg if isinstance(msg, str) else None


def reasoning_texts(item: Mapping[str, JSON]) -> list[str]:
    """The readable texts of a reasoning item: summary parts, then reasoning_text parts."""
    out: list[str] = []
    for key in ("summary", "content"):
        parts = item.get(key)
        if not isinstance(parts, list):
            continue
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                out.append(part["text"])
    return out


def is_opaque(item: Mapping[str, JSON]) -> bool:
    """True when the reasoning item carries state the client cannot read."""
    enc = item.get("encrypted_content")
    return isinstance(enc, str) and enc != ""


def message_text(item: Mapping[str, JSON]) -> str:
    """Visible text of a ``message`` output item (its ``output_text`` parts, in order)."""
    content = item.get("content")
    if isinstance(content, str):  # some compatible servers send a plain string
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        p["text"]
        for p in content
        if isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str)
    )


def arguments_text(value: JSON) -> str:
    """Function-call arguments as JSON text: a string as received, an object compact-encoded."""
    return jsontext.arguments_text(value, absent="")


def tool_call(item: Mapping[str, JSON], where: str) -> ToolCall:
    """The neutral tool call of a ``function_call`` item (its id is the ``call_id``)."""
    call_id = item.get("call_id")
    name = item.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise MalformedBody(f"responses: {where} is a function_call without call_id/name")
    return ToolCall(id=call_id, name=name, arguments=arguments_text(item.get("arguments")))


def parse_usage(raw: JSON) -> Usage | None:
    """Normalise a Responses ``usage`` object; None when the body has none.

    ``input_tokens`` is the whole prompt: the cached (and, where reported, cache-written)
    tokens inside it are moved to ``cache_read`` / ``cache_write``.
    """
    if not isinstance(raw, dict):
        return None
    total = _int(raw.get("input_tokens"))
    details = raw.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached = _int(details.get("cached_tokens"))
    written = _int(details.get("cache_write_tokens"))
    uncached = total
    if uncached is not None:
        uncached -= (cached or 0) + (written or 0)
    out_details = raw.get("output_tokens_details")
    reasoning = _int(out_details.get("reasoning_tokens")) if isinstance(out_details, dict) else None
    cost = raw.get("cost")
    cost_usd = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return Usage(
        input_uncached=uncached,
        cache_read=cached,
        cache_write=written,
        output=_int(raw.get("output_tokens")),
        reasoning=reasoning,
        cost_usd=cost_usd,
        raw=raw,
    )


def _int(v: JSON) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def finish_reason(response: Mapping[str, JSON]) -> str | None:
    """The incomplete reason when there is one (``max_output_tokens``), else the status."""
    details = response.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return str(details["reason"])
    status = response.get("status")
    return status if isinstance(status, str) else None


def turn_from_items(
    items: Sequence[JSON],
    response: Mapping[str, JSON],
    *,
    extra_reasoning: Sequence[str] = (),
) -> Turn:
    """Build the Turn from output ``items`` (the values themselves become carriers/native).

    ``extra_reasoning`` adds readable text of reasoning items that never completed (a
    truncated stream): their text is shown, but they are no carrier and are never replayed.
    """
    got = TurnParts()
    for i, item in enumerate(items):
        where = f"output[{i}]"
        if not isinstance(item, dict):
            raise MalformedBody(f"responses: {where} must be an object")
        typ = item.get("type")
        if typ == "reasoning":
            texts = reasoning_texts(item)
            joined = TEXT_JOIN.join(texts)
            if joined:
                got.reasoning.append(joined)
            got.carriers.append(
                Carrier(
                    dialect="responses",
                    kind=CARRIER_KIND,
                    path=where,
                    value=item,
                    opaque=is_opaque(item),
                    text=joined or None,
                )
            )
        elif typ == "message":
            got.text.append(message_text(item))
        elif typ == "function_call":
            got.calls.append(tool_call(item, where))
    got.reasoning.extend(t for t in extra_reasoning if t)
    return got.turn(
        Native(dialect="responses", items=tuple(items)),
        response,
        usage=parse_usage(response.get("usage")),
        finish=finish_reason(response),
        reasoning_join=TEXT_JOIN,
    )


def turn_from_response(response: Mapping[str, JSON], what: str = "response body") -> Turn:
    """The Turn of a complete response object (non-streaming body or ``response.completed``)."""
    output = response.get("output")
    if not isinstance(output, list):
        msg = error_message(dict(response))
        if msg is not None:
            raise MalformedBody(f"responses: {what} is an error, not a response: {msg}")
        raise MalformedBody(f"responses: {what} has no 'output' list")
    return turn_from_items(output, response)
