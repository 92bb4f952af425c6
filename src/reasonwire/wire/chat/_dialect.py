"""The OpenAI-compatible Chat Completions dialect (``POST {base}/chat/completions``).

Reasoning rides on the assistant message (``reasoning_content``, ``reasoning``,
``reasoning_details``) and on tool calls (``extra_content``). Which of them a route reads, and
how it takes an effort level, is data in :mod:`reasonwire.wire.chat._profiles`; parsing is in
:mod:`reasonwire.wire.chat._parse`, stream assembly in :mod:`reasonwire.wire.chat._stream`.

Replay builds the assistant message from what was received: ``role``, ``content``,
``tool_calls`` as received, and each carrier field the profile returns, with the very value
objects that arrived. ``reasoning_content: null`` is never sent (llama.cpp answers it with 500).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from reasonwire.errors import ConfigError
from reasonwire.wire.chat import _facts, _hidden
from reasonwire.wire.chat._facts import CARRIER_FIELDS, TEXT_KINDS, TOOL_CALL_CARRIER
from reasonwire.wire.chat._parse import THINKING_PART, is_thinking_part, turn_from_body
from reasonwire.wire.chat._profiles import CHAT_PROFILES, ChatProfile, get_profile
from reasonwire.wire.chat._stream import ChatStreamDecoder
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.jsontext import json_object
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import Assistant, System, ToolResult, Turn, User, native_items
from reasonwire.wire.profile import Profile

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, Message, RequestOptions

_OFF = ("none",)


class ChatDialect(Dialect, facts=_facts):
    """Chat Completions: request building, parsing, stream decoding and replay."""

    name = "chat"
    sent_carriers = _hidden
    decoder = ChatStreamDecoder
    vault = _hidden
    path_pattern = re.compile(r"/chat/completions$", re.IGNORECASE)
    gateway_path = "/v1/chat/completions"
    usage_total = "total_tokens"
    stream_shape = _facts.VISIBLE
    profiles = CHAT_PROFILES

    def profile(self, name: str | None = None, **overrides: object) -> Profile:
        base = get_profile(name)
        return base.with_overrides(overrides) if overrides else base

    def request_path(self, options: RequestOptions) -> str:
        return "/chat/completions"

    # -- requests -----------------------------------------------------------------------

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        """The request body for ``messages`` on a route of the given profile."""
        prof = get_profile(profile)
        body: dict[str, JSON] = {
            "model": options.model,
            "messages": [self._message(m, options, prof) for m in messages],
        }
        if options.max_tokens is not None:
            body[prof.max_tokens_field] = options.max_tokens
        if options.tools:
            body["tools"] = [_tool(t.name, t.description, t.parameters) for t in options.tools]
        if options.effort is not None and options.effort not in _OFF:
            deep_merge(body, prof.effort_fragment(options.effort))
        body["stream"] = options.stream
        if options.stream:
            body["stream_options"] = {"include_usage": True}
        deep_merge(body, dict(prof.request_defaults))
        deep_merge(body, options.extra_body)
        return body

    def _message(self, msg: Message, options: RequestOptions, prof: ChatProfile) -> JSON:
        if isinstance(msg, System | User):
            return {"role": msg.role, "content": msg.text}
        if isinstance(msg, ToolResult):
            return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content}
        if isinstance(msg, Assistant):
            return _assistant(msg, prof, keep=options.keep_carriers)
        raise ConfigError(f"chat cannot send a message of type {type(msg).__name__}")

    # -- responses ----------------------------------------------------------------------

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        return turn_from_body(json_object(body, "chat response body"))

    # -- replay -------------------------------------------------------------------------

    def replay(self, message: Assistant | Turn, profile: str | None = None) -> list[JSON]:
        """``[assistant_message]`` with every carrier the profile returns, as received."""
        return [_assistant(_as_assistant(message), get_profile(profile), keep=True)]

    def strip(self, message: Assistant | Turn, profile: str | None = None) -> list[JSON]:
        """``[assistant_message]`` without any reasoning carrier."""
        return [_assistant(_as_assistant(message), get_profile(profile), keep=False)]

    # -- facts ------------------------------------------------------------------------


def _as_assistant(message: Assistant | Turn) -> Assistant:
    return message.as_message() if isinstance(message, Turn) else message


def _assistant(msg: Assistant, prof: ChatProfile, *, keep: bool) -> dict[str, JSON]:
    items = native_items(msg, "chat")
    if items and isinstance(items[0], dict):
        return _from_native(items[0], prof, keep=keep)
    return _from_parts(msg, prof, keep=keep)


def _from_native(src: Mapping[str, JSON], prof: ChatProfile, *, keep: bool) -> dict[str, JSON]:
    """The assistant message as received: every key, in order, the same value objects.

    Left out: reasoning fields (Magistral ``thinking`` parts of a ``content`` list too) when
    stripping or when the profile does not return them, a
    ``null`` reasoning field (llama.cpp answers it with 500), the keys the profile documents
    must not be sent back (``replay_drop``), an empty or null ``tool_calls``, and, when
    stripping, each tool call's ``extra_content``. A ``null`` content without tool calls is
    sent as ``""``.
    """
    calls = src.get("tool_calls")
    has_calls = isinstance(calls, list) and bool(calls)
    out: dict[str, JSON] = {}
    for key, value in src.items():
        if key in CARRIER_FIELDS:
            if keep and value is not None and prof.returns_field(key):
                out[key] = value
        elif key in prof.replay_drop or (key == "tool_calls" and not has_calls):
            continue  # documented drops; an empty tool_calls list is a 400 on OpenAI
        elif key == "content" and value is None and not has_calls:
            out[key] = ""
        elif key == "content" and isinstance(value, list) and any(map(is_thinking_part, value)):
            if keep and prof.returns_field(THINKING_PART):
                out[key] = value  # Magistral thinking parts go back in place, as received
            else:
                visible = [p for p in value if not is_thinking_part(p)]
                out[key] = visible if visible else (None if has_calls else "")
        elif key == "tool_calls" and has_calls and not keep:
            assert isinstance(value, list)
            out[key] = [
                {k: v for k, v in c.items() if k != TOOL_CALL_CARRIER} if isinstance(c, dict) else c
                for c in value
            ]
        else:
            out[key] = value
    out.setdefault("role", "assistant")
    if "content" not in out:
        out["content"] = None if has_calls else ""
    return out


def _from_parts(msg: Assistant, prof: ChatProfile, *, keep: bool) -> dict[str, JSON]:
    """A chat assistant message from neutral parts (history from another dialect, or built).

    Readable text carriers (``reasoning_content``, ``reasoning``) are expressed whatever
    dialect they came from; ``reasoning_details`` and ``extra_content`` may hold signed or
    encrypted state and are sent only when they were received from a chat route.
    """
    out: dict[str, JSON] = {
        "role": "assistant",
        "content": msg.text if msg.text or not msg.tool_calls else None,
    }
    extra: dict[str, JSON] = {}
    if keep:
        for c in msg.carriers:
            if not prof.returns_field(c.kind) or c.value is None:
                continue
            readable = c.kind in TEXT_KINDS and isinstance(c.value, str)
            own_details = c.kind == "reasoning_details" and c.dialect == "chat"
            if readable or own_details:
                out.setdefault(c.kind, c.value)
            elif c.kind == TOOL_CALL_CARRIER and c.dialect == "chat" and c.tool_call_id:
                extra.setdefault(c.tool_call_id, c.value)
    if msg.tool_calls:
        calls: list[JSON] = []
        for tc in msg.tool_calls:
            call: dict[str, JSON] = {
                "id": tc.id,
                "type": "function",
                "function": {"name": tc.name, "arguments": tc.arguments},
            }
            if tc.id in extra:
                call[TOOL_CALL_CARRIER] = extra[tc.id]
            calls.append(call)
        out["tool_calls"] = calls
        # A message built here had no such field to carry (neutral or foreign history, the
        # harness's arms without reasoning); the route refuses a tool-call turn without it,
        # so it goes as "". A received message is never padded (_from_native): its reasoning
        # goes back as it came (Profile.required_on_tool_calls).
        for name in prof.required_on_tool_calls:
            out.setdefault(name, "")
    return out


def _tool(name: str, description: str, parameters: JSON) -> dict[str, JSON]:
    fn: dict[str, JSON] = {"name": name}
    if description:
        fn["description"] = description
    fn["parameters"] = parameters
    return {"type": "function", "function": fn}


DIALECT = ChatDialect()
"""The Chat Completions dialect object."""

__all__ = ["DIALECT", "ChatDialect", "ChatProfile"]
