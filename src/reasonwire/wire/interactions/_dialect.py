"""The Gemini Interactions dialect (``POST {base}/interactions``, ``stream: true`` for SSE).

Replay rules:

- An assistant turn of this dialect (``native.dialect == "interactions"``) goes back as its
  answer steps exactly as received: the same dicts, each ``signature`` on the step it came
  on, thought steps in place [SIG]. With server state on (``store``, the default) the agent
  sends only what is new plus ``previous_interaction_id`` [OVERVIEW]; stateless
  (``store: false``) it resends the whole history, signatures included.
- :meth:`InteractionsDialect.strip` drops thought steps and removes ``signature`` from the
  remaining steps (copies; the received ones are never modified).
- Every other assistant turn (foreign or synthetic history) is built from its neutral fields:
  a ``model_output`` step for the text and one ``function_call`` step per call. A thought
  step needs its signature [THINK], so readable reasoning of other dialects is not sent.

Facts and their sources are in :mod:`reasonwire.wire.interactions._facts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import orjson

from reasonwire.errors import MalformedBody
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.facts import GOOGLE_RPC_STATUS, ErrorInfo
from reasonwire.wire.interactions import _facts, _hidden
from reasonwire.wire.interactions._parse import DIALECT as NAME
from reasonwire.wire.interactions._parse import is_thought, parse_body
from reasonwire.wire.interactions._stream import InteractionsStreamDecoder
from reasonwire.wire.jsontext import arguments_object
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import Assistant, System, ToolResult, User, native_items
from reasonwire.wire.projection import encode_event

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, Message, RequestOptions, Turn


def _foreign_steps(message: Assistant | Turn) -> list[JSON]:
    steps: list[JSON] = []
    if message.text:
        steps.append({"type": "model_output", "content": [{"type": "text", "text": message.text}]})
    for call in message.tool_calls:
        steps.append(
            {
                "type": "function_call",
                "id": call.id,
                "name": call.name,
                "arguments": arguments_object(call, "Interactions"),
            }
        )
    return steps


def _stripped(steps: Sequence[JSON]) -> list[JSON]:
    out: list[JSON] = []
    for step in steps:
        if is_thought(step):
            continue
        if isinstance(step, dict) and "signature" in step:
            step = {k: v for k, v in step.items() if k != "signature"}
        out.append(step)
    return out


class InteractionsDialect(Dialect, facts=_facts):
    """The Gemini Interactions wire API."""

    name = NAME
    sent_carriers = _hidden
    decoder = InteractionsStreamDecoder
    gateway_path = _facts.GATEWAY_PATH
    stream_shape = _facts.STREAM
    usage_total = "total_tokens"

    def stream_error(self, reason: str) -> bytes:
        data = {"event_type": "error", "error": {"code": "UNAVAILABLE", "message": reason}}
        return encode_event("message", orjson.dumps(data))

    def error_body(self, status: int, reason: str, message: str, info: ErrorInfo | None) -> JSON:
        """The Interactions error shape: ``error.code`` is a string on this API (the
        google-genai SDK's ``interactions.Error``: ``code: str``, ``message: str``; an integer
        code fails its schema), here the google.rpc status name, also given as ``status``."""
        kind = (
            info.type if info and info.type in self.error_types else GOOGLE_RPC_STATUS.get(status)
        )
        name = kind or "INTERNAL"
        return {"error": {"code": name, "message": message, "status": name}}

    def request_path(self, options: RequestOptions) -> str:
        return "/interactions"

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        """The create-interaction body for ``messages`` (``profile``: one, the default).

        System messages join into ``system_instruction``; a user message is a ``user_input``
        step of one text item; a tool result a ``function_result`` step (``call_id``,
        ``name``, ``result``) [SDK]; effort is ``generation_config.thinking_level`` with
        ``thinking_summaries: auto`` so the summaries come back readable.
        """
        del profile
        system: list[str] = []
        steps: list[JSON] = []
        for msg in messages:
            if isinstance(msg, System):
                system.append(msg.text)
            elif isinstance(msg, User):
                steps.append(
                    {"type": "user_input", "content": [{"type": "text", "text": msg.text}]}
                )
            elif isinstance(msg, ToolResult):
                steps.append(
                    {"type": "function_result", "call_id": msg.tool_call_id, "name": msg.name,
                     "result": msg.content}
                )  # fmt: skip
            elif isinstance(msg, Assistant):
                steps.extend(self.replay(msg) if options.keep_carriers else self.strip(msg))
            else:  # pragma: no cover - the Message union is closed
                raise MalformedBody(f"unknown message type {type(msg).__name__}")
        body: dict[str, JSON] = {"model": options.model, "input": steps}
        if system:
            body["system_instruction"] = "\n\n".join(system)
        if options.tools:
            body["tools"] = [
                {"type": "function", "name": t.name, "description": t.description,
                 "parameters": t.parameters}
                for t in options.tools
            ]  # fmt: skip
        config: dict[str, JSON] = {}
        if options.max_tokens is not None:
            config["max_output_tokens"] = options.max_tokens
        if options.effort is not None and options.effort not in _facts.NO_EFFORT:
            config["thinking_level"] = options.effort
            config["thinking_summaries"] = "auto"
        if config:
            body["generation_config"] = config
        if options.stream:
            body["stream"] = True
        return deep_merge(body, options.extra_body)  # merges in place; nothing when empty

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        return parse_body(body)

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        """The answer steps as received (same objects), or steps built from neutral fields."""
        native = native_items(message, NAME)
        if native is not None:
            return list(native)
        return _foreign_steps(message)

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        """The replay without thought steps and without ``signature`` keys."""
        native = native_items(message, NAME)
        if native is not None:
            return _stripped(native)
        return _foreign_steps(message)


DIALECT = InteractionsDialect()

__all__ = ["DIALECT", "InteractionsDialect"]
