"""The Responses API dialect (``POST {base}/responses``): OpenAI, OpenRouter, xAI, DeepSeek.

Request building choices (and why):

- **System messages** become ``{"role": "system", "content": ..}`` input items in place, not
  ``instructions``: a transcript may hold several system messages at any position and this
  keeps their order; every Responses-compatible server we have recordings of accepts them.
  A caller who wants ``instructions`` sets it through ``extra_body``.
- **Effort** ``low``/``medium``/``high`` (or any other string, passed through) becomes
  ``reasoning: {"effort": e, "summary": "auto"}``; ``None``/``"none"`` omits ``reasoning``.
- **Profiles** (data, not branches): ``None``/``"default"`` asks for
  ``include: ["reasoning.encrypted_content"]`` so reasoning can be replayed statelessly;
  ``"bare"`` adds nothing (servers or models that refuse the include).
- **Native replay** of a Responses assistant turn sends every output item of that turn, in
  order, exactly as received (reasoning items with their ``encrypted_content``, message
  items, function_call items): the same objects, never copies.
- **Strip** drops the reasoning items *and* the ``id`` of every remaining item. A ``msg_`` or
  ``fc_`` item sent with its id but without the reasoning item it followed is refused
  ("provided without its required 'reasoning' item"), so ids go consistently: every item is
  kept whole with its reasoning, or every id is dropped.
- **Foreign or synthetic history** (an assistant turn without a Responses native payload) is
  built from text, tool calls and the neutral text carriers this dialect can express:
  ``Carrier(kind="summary_text", value=str)`` becomes ``{"type": "reasoning", "summary":
  [{"type": "summary_text", "text": ..}]}`` and ``Carrier(kind="reasoning_text", value=str)``
  becomes ``{"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text",
  "text": ..}]}``. Opaque carriers of other dialects are never sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

import orjson

from reasonwire.errors import ConfigError
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.facts import ErrorInfo
from reasonwire.wire.jsontext import json_object
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import Assistant, System, ToolResult, ToolSpec, User, native_items
from reasonwire.wire.profile import Profile
from reasonwire.wire.projection import encode_event
from reasonwire.wire.responses import _facts, _hidden
from reasonwire.wire.responses._parse import RESPONSE_BODY, turn_from_response
from reasonwire.wire.responses._stream import ResponsesStreamDecoder

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, Message, RequestOptions, Turn

PROFILES: Mapping[str, Mapping[str, JSON]] = {
    "default": {"include": ["reasoning.encrypted_content"]},
    "bare": {},
}
"""Request defaults per profile, merged before ``extra_body``."""

TEXT_CARRIER_KINDS = ("summary_text", "reasoning_text")
"""Neutral text carrier kinds an assistant turn without a native payload can carry here."""


def reasoning_input_item(kind: str, text: str) -> dict[str, JSON]:
    """The reasoning input item for one neutral text carrier (``summary_text`` or
    ``reasoning_text``); no id and no encrypted content, since none was ever issued."""
    if kind == "summary_text":
        return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}
    if kind == "reasoning_text":
        return {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": text}],
        }
    raise ValueError(f"not a Responses text carrier kind: {kind!r}")


def tool_spec(tool: ToolSpec) -> dict[str, JSON]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }


def _neutral_items(msg: Assistant | Turn, keep_carriers: bool) -> list[JSON]:
    items: list[JSON] = []
    if keep_carriers:
        for c in msg.carriers:
            if c.kind in TEXT_CARRIER_KINDS and isinstance(c.value, str):
                items.append(reasoning_input_item(c.kind, c.value))
    if msg.text:
        items.append({"role": "assistant", "content": msg.text})
    for call in msg.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def _without_id(item: JSON) -> JSON:
    if isinstance(item, dict) and "id" in item:
        return {k: v for k, v in item.items() if k != "id"}
    return item


class ResponsesDialect(Dialect, facts=_facts):
    """The Responses wire API (see the module docstring for the request choices)."""

    name = "responses"
    sent_carriers = _hidden
    decoder = ResponsesStreamDecoder
    vault = _hidden
    gateway_path = "/v1/responses"
    usage_total = "total_tokens"
    stream_shape = _facts.STREAM_EVENT
    profiles = MappingProxyType(
        {n: Profile(n, request_defaults=MappingProxyType(dict(v))) for n, v in PROFILES.items()}
    )

    def profile(self, name: str | None = None, **overrides: JSON) -> Profile:
        """Responses profiles are alternatives (``bare`` asks for nothing), not layers."""
        found = self.profiles.get(name or "default")
        if found is None:
            raise ConfigError(
                f"responses: unknown profile {name!r}; expected one of: "
                + ", ".join(sorted(self.profiles))
            )
        return found.with_overrides(overrides) if overrides else found

    def request_path(self, options: RequestOptions) -> str:
        return "/responses"

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        defaults = self.profile(profile).request_defaults
        body: dict[str, JSON] = {"model": options.model, "input": self._input(messages, options)}
        if options.tools:
            body["tools"] = [tool_spec(t) for t in options.tools]
        if options.max_tokens is not None:
            body["max_output_tokens"] = options.max_tokens
        if options.effort is not None and options.effort != "none":
            body["reasoning"] = {"effort": options.effort, "summary": "auto"}
        if options.stream:
            body["stream"] = True
        deep_merge(body, defaults)
        return deep_merge(body, options.extra_body)

    def _input(self, messages: Sequence[Message], options: RequestOptions) -> list[JSON]:
        out: list[JSON] = []
        for i, msg in enumerate(messages):
            if isinstance(msg, System):
                out.append({"role": "system", "content": msg.text})
            elif isinstance(msg, User):
                out.append({"role": "user", "content": msg.text})
            elif isinstance(msg, Assistant):
                out.extend(self.replay(msg) if options.keep_carriers else self.strip(msg))
            elif isinstance(msg, ToolResult):
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": msg.tool_call_id,
                        "output": msg.content,
                    }
                )
            else:
                raise ConfigError(f"responses: message {i} has an unknown type {type(msg)!r}")
        return out

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        return turn_from_response(json_object(body, RESPONSE_BODY))

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        items = native_items(message, "responses")
        if items is not None:
            return list(items)
        return _neutral_items(message, keep_carriers=True)

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        items = native_items(message, "responses")
        if items is not None:
            return [
                _without_id(item)
                for item in items
                if not (isinstance(item, dict) and item.get("type") == "reasoning")
            ]
        return _neutral_items(message, keep_carriers=False)

    def stream_error(self, reason: str) -> bytes:
        return _error_event(reason)

    def error_info(self, payload: JSON) -> ErrorInfo | None:
        info = super().error_info(payload)
        if info is None and isinstance(payload, dict) and payload.get("type") == "error":
            msg, code = payload.get("message"), payload.get("code")
            return ErrorInfo(
                msg if isinstance(msg, str) else None, None, code if isinstance(code, str) else None
            )
        return info


def _error_event(reason: str) -> bytes:
    """A stream error the openai SDK raises on (an ``error`` key in the event data)."""
    data = {
        "type": "error",
        "error": {"type": "api_error", "code": "upstream_stream", "message": reason},
    }
    return encode_event("error", orjson.dumps(data))


DIALECT = ResponsesDialect()
"""The Responses dialect object."""

__all__ = ["DIALECT", "PROFILES", "ResponsesDialect", "reasoning_input_item", "tool_spec"]
