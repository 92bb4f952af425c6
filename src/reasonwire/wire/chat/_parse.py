"""Chat Completions response bodies -> neutral :class:`~reasonwire.wire.model.Turn`.

One function, :func:`turn_from_body`, reads both a non-streaming body and the final state a
stream decoder assembles (in the same shape), so a streamed answer and the same answer sent
whole give the same Turn by construction.

Carrier rules (documented here because replay depends on them):

- ``reasoning_content`` and ``reasoning``: a carrier whenever the field is a string (also
  ``""``: DeepSeek expects an empty string back on some turns); ``null`` is no carrier.
- ``reasoning_details``: one carrier for the whole list as received (also ``[]``). Entry by
  entry, :func:`detail_is_opaque` decides: ``reasoning.encrypted`` entries and entries with a
  non-empty ``signature`` are opaque (the client cannot read or rebuild them); plain
  ``reasoning.text`` / ``reasoning.summary`` entries are readable. The carrier is opaque when
  any entry is, because the list must then go back byte for byte.
- ``tool_calls[i].extra_content`` (Gemini's ``google.thought_signature``): an opaque carrier
  tied to that tool call's id.
- ``content[i]`` of ``type: "thinking"`` (Mistral's Magistral: ``content`` is a list of
  parts, ``{"type": "thinking", "thinking": [{"type": "text", "text": ..}]}`` then text
  parts): a readable carrier per part, the part object as received; its text is the joined
  text of its inner parts (https://docs.mistral.ai/inference/conversations/reasoning;
  recording ``pai__test_mistral__test_mistral_model_thinking_part_iter.yaml``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from reasonwire.errors import MalformedBody
from reasonwire.wire.chat._facts import CARRIER_FIELDS, TOOL_CALL_CARRIER
from reasonwire.wire.jsontext import arguments_text
from reasonwire.wire.model import JSON, Carrier, JsonObject, Native, ToolCall, Turn, Usage

MESSAGE_PATH = "choices[0].message"
THINKING_PART = "thinking"
"""The ``type`` (and carrier kind) of a Magistral thinking part in a ``content`` list."""
_TEXT_FIELDS = ("reasoning_content", "reasoning")
_DETAIL_TEXT_KEYS = ("text", "summary")
_NUMBERS = (int, float)
"""For isinstance: a union written in the call is built anew each time (~0.1 us, per answer)."""


def detail_is_opaque(entry: JSON) -> bool:
    """True for a ``reasoning_details`` entry the client cannot read or rebuild.

    Encrypted entries, and any entry with a non-empty ``signature`` (a signed Anthropic
    thinking block behind the gateway), must go back exactly as received.
    """
    if not isinstance(entry, dict):
        return True
    if entry.get("type") == "reasoning.encrypted":
        return True
    sig = entry.get("signature")
    return isinstance(sig, str) and sig != ""


def details_text(details: list[JSON]) -> str:
    """The readable text in a ``reasoning_details`` list (text and summary entries, in order)."""
    parts: list[str] = []
    for entry in details:
        if isinstance(entry, dict):
            for key in _DETAIL_TEXT_KEYS:
                value = entry.get(key)
                if isinstance(value, str):
                    parts.append(value)
    return "".join(parts)


def is_thinking_part(part: JSON) -> bool:
    """True for a Magistral ``{"type": "thinking", ...}`` part of a ``content`` list."""
    return isinstance(part, dict) and part.get("type") == THINKING_PART


def thinking_text(part: Mapping[str, JSON]) -> str:
    """The text of a thinking part: its inner text parts joined (or a plain string)."""
    inner = part.get(THINKING_PART)
    if isinstance(inner, str):
        return inner
    if isinstance(inner, list):
        return "".join(
            p["text"] for p in inner if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def message_carriers(message: Mapping[str, JSON], base: str = MESSAGE_PATH) -> tuple[Carrier, ...]:
    """Every carrier on an assistant message, values as received (the same objects)."""
    out: list[Carrier] = []
    for name in CARRIER_FIELDS:
        value = message.get(name)
        if name in _TEXT_FIELDS and isinstance(value, str):
            out.append(Carrier("chat", name, f"{base}.{name}", value, False, text=value))
        elif name == "reasoning_details" and isinstance(value, list):
            out.append(
                Carrier(
                    "chat",
                    name,
                    f"{base}.{name}",
                    value,
                    any(detail_is_opaque(e) for e in value),
                    text=details_text(value) or None,
                )
            )
    content = message.get("content")
    if isinstance(content, list):
        for i, part in enumerate(content):
            if is_thinking_part(part):
                assert isinstance(part, dict)
                text = thinking_text(part)
                out.append(
                    Carrier("chat", THINKING_PART, f"{base}.content[{i}]", part, False, text=text)
                )
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for i, call in enumerate(calls):
            if isinstance(call, dict) and call.get(TOOL_CALL_CARRIER) is not None:
                call_id = call.get("id")
                out.append(
                    Carrier(
                        "chat",
                        TOOL_CALL_CARRIER,
                        f"{base}.tool_calls[{i}].{TOOL_CALL_CARRIER}",
                        call[TOOL_CALL_CARRIER],
                        True,
                        tool_call_id=call_id if isinstance(call_id, str) else None,
                    )
                )
    return tuple(out)


def reasoning_text(carriers: tuple[Carrier, ...]) -> str:
    """Readable reasoning of a message: the first non-empty text carrier.

    Gateways send the same thought twice (``reasoning`` and ``reasoning_details`` on
    OpenRouter); taking one source in a fixed order (``reasoning_content``, ``reasoning``,
    ``reasoning_details``, then Magistral thinking parts) avoids doubling it. Thinking
    parts are one source: all of them, joined in order.
    """
    for carrier in carriers:
        if carrier.kind == THINKING_PART and carrier.text:
            return "".join(c.text or "" for c in carriers if c.kind == THINKING_PART)
        if carrier.kind != TOOL_CALL_CARRIER and carrier.text:
            return carrier.text
    return ""


def joined_text(content: JSON, keep: Callable[[JsonObject], bool]) -> str:
    """A message ``content`` as text: a string as it is, or the string ``text`` of the parts
    ``keep`` takes, joined in order ("" for anything else)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and keep(p) and isinstance(p.get("text"), str)
        )
    return ""


def visible_text(content: JSON) -> str:
    """The visible text of ``content``: a string, or the text of its non-thinking parts."""
    return joined_text(content, _not_thinking)


def _not_thinking(part: JsonObject) -> bool:
    return not is_thinking_part(part)


def message_tool_calls(message: Mapping[str, JSON]) -> tuple[ToolCall, ...]:
    calls = message.get("tool_calls")
    if calls is None:
        return ()
    if not isinstance(calls, list):
        raise MalformedBody(f"chat message tool_calls must be a list, got {type(calls).__name__}")
    out: list[ToolCall] = []
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            raise MalformedBody(f"chat message tool_calls[{i}] has no function object")
        call_id = call.get("id")
        name = fn.get("name")
        out.append(
            ToolCall(
                call_id if isinstance(call_id, str) else "",
                name if isinstance(name, str) else "",
                arguments_text(fn.get("arguments")),
            )
        )
    return tuple(out)


def _int(obj: JSON, key: str) -> int | None:
    if not isinstance(obj, dict):
        return None
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_usage(usage: JSON) -> Usage | None:
    """Normalise a chat ``usage`` object.

    ``prompt_tokens`` includes cached tokens. Cached = DeepSeek's
    ``prompt_cache_hit_tokens`` when present, else ``prompt_tokens_details.cached_tokens``.
    ``prompt_tokens_details.cache_write_tokens`` (OpenRouter) is counted in the prompt total as
    well, so it is subtracted from the uncached part too: billed input stays prompt_tokens.
    Cost: ``usage.cost`` (USD) or ``usage.cost_in_usd_ticks`` (1e-10 USD).
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise MalformedBody(f"chat usage must be an object, got {type(usage).__name__}")
    details = usage.get("prompt_tokens_details")
    prompt = _int(usage, "prompt_tokens")
    cached = _int(usage, "prompt_cache_hit_tokens")
    if cached is None:
        cached = _int(details, "cached_tokens")
    written = _int(details, "cache_write_tokens")
    uncached = prompt
    if uncached is not None:
        uncached -= (cached or 0) + (written or 0)
    cost: float | None = None
    raw_cost = usage.get("cost")
    ticks = usage.get("cost_in_usd_ticks")
    if isinstance(raw_cost, _NUMBERS) and not isinstance(raw_cost, bool):
        cost = float(raw_cost)
    elif isinstance(ticks, _NUMBERS) and not isinstance(ticks, bool):
        cost = ticks * 1e-10
    return Usage(
        input_uncached=uncached,
        cache_read=cached,
        cache_write=written,
        output=_int(usage, "completion_tokens"),
        reasoning=_int(usage.get("completion_tokens_details"), "reasoning_tokens"),
        cost_usd=cost,
        raw=usage,
    )


def turn_from_body(body: Mapping[str, JSON]) -> Turn:
    """The Turn for a chat completion body (non-streaming, or a stream's assembled state)."""
    if body.get("error") is not None and "choices" not in body:
        raise MalformedBody(f"chat body is an error, not a completion: {_excerpt(body['error'])}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedBody("chat body has no choices[0] object")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise MalformedBody("chat body has no choices[0].message object")
    carriers = message_carriers(message)
    finish = choices[0].get("finish_reason")
    rid = body.get("id")
    model = body.get("model")
    return Turn(
        dialect="chat",
        text=visible_text(message.get("content")),
        reasoning_text=reasoning_text(carriers),
        tool_calls=message_tool_calls(message),
        carriers=carriers,
        usage=parse_usage(body.get("usage")),
        response_id=rid if isinstance(rid, str) else None,
        model=model if isinstance(model, str) else None,
        finish_reason=finish if isinstance(finish, str) else None,
        native=Native("chat", (message,)),
        raw=body,
    )


def _excerpt(value: JSON) -> str:
    message = value.get("message") if isinstance(value, dict) else None
    if isinstance(message, str):
        return message[:300]
    return json.dumps(value, ensure_ascii=False)[:300]
