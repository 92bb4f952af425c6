"""The Gemini dialect: ``generateContent`` and ``streamGenerateContent``.

Request building, replay and strip live here; parsing is in :mod:`gemini_parse`, stream
decoding (both stream forms, and the part merge rule) in :mod:`gemini_stream`.

Replay rules:

- A Gemini assistant turn (``native.dialect == "gemini"``) goes back as
  ``{"role": "model", "parts": [...]}`` with the parts exactly as received: the same dict
  objects, every ``thoughtSignature`` on the part it came on, thought parts in place. Gemini 3
  signs only the FIRST of parallel ``functionCall`` parts; the others go back without one
  (never a copy), and a signature on a plain text part stays on that text part (Google,
  https://ai.google.dev/gemini-api/docs/thought-signatures: "return the signature in the
  exact part where it was received"; recording
  ``pai__test_google__test_google_instructions_only_with_tool_calls.yaml``).
- :meth:`GeminiDialect.strip` drops thought parts and removes ``thoughtSignature`` from the
  remaining parts (copies of those parts; the received ones are never modified).
- Every other assistant turn (foreign or synthetic history) is built from its neutral fields:
  text carriers ``Carrier(kind="thought", value=str)`` become ``{"text": .., "thought": true}``
  parts, then the visible text, then one ``functionCall`` part per tool call. Gemini 3
  rejects a step whose first ``functionCall`` lacks a signature, and a foreign step has none,
  so the FIRST ``functionCall`` of each such step carries :data:`STAND_IN_SIGNATURE` (parallel
  calls: the first only). Signed or opaque carriers of other dialects are never sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import orjson

from reasonwire.errors import MalformedBody
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.facts import GOOGLE_RPC_STATUS, ErrorInfo
from reasonwire.wire.gemini import _facts, _hidden
from reasonwire.wire.gemini._parse import is_thought, parse_body, synthetic_call_id
from reasonwire.wire.gemini._stream import GeminiStreamDecoder
from reasonwire.wire.jsontext import arguments_object
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import Assistant, System, ToolResult, User, native_items
from reasonwire.wire.projection import encode_event

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, Message, RequestOptions, Turn

STAND_IN_SIGNATURE = "skip_thought_signature_validator"
"""Signature put on the first ``functionCall`` of a step built from foreign/synthetic history.

Google documents two stand-in values that make Gemini 3 skip signature validation:
``"skip_thought_signature_validator"`` (the one we send, as written) and
``"context_engineering_is_the_way_to_go"``; pydantic-ai sends the base64 of the latter
(``Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv``), as its recorded request shows.
"""

NO_EFFORT = frozenset({"none"})
"""Effort values that mean "send no thinkingConfig"."""

SCHEMA_FIELD = "parametersJsonSchema"
"""FunctionDeclaration field for a tool's schema: takes JSON Schema as written (``parameters``
takes Gemini's OpenAPI subset and refuses e.g. ``additionalProperties``)."""


def _foreign_parts(message: Assistant | Turn, *, keep_carriers: bool) -> list[JSON]:
    parts: list[JSON] = []
    if keep_carriers:
        for carrier in message.carriers:
            if carrier.kind == "thought" and isinstance(carrier.value, str):
                parts.append({"text": carrier.value, "thought": True})
    if message.text:
        parts.append({"text": message.text})
    for n, call in enumerate(message.tool_calls):
        part: dict[str, JSON] = {
            "functionCall": {
                "name": call.name,
                "args": arguments_object(call, "Gemini"),
                "id": call.id,
            }
        }
        if n == 0:
            part["thoughtSignature"] = STAND_IN_SIGNATURE
        parts.append(part)
    return parts


def _stripped_parts(parts: Sequence[JSON]) -> list[JSON]:
    out: list[JSON] = []
    for part in parts:
        if isinstance(part, dict):
            if is_thought(part):
                continue
            if "thoughtSignature" in part:
                part = {k: v for k, v in part.items() if k != "thoughtSignature"}
        out.append(part)
    return out


def _model_content(parts: list[JSON]) -> list[JSON]:
    # Gemini refuses a content with no parts, so an empty turn is left out altogether.
    return [{"role": "model", "parts": parts}] if parts else []


class GeminiDialect(Dialect, facts=_facts):
    """The Gemini generateContent wire API."""

    name = "gemini"
    sent_carriers = _hidden
    decoder = GeminiStreamDecoder
    usage_total = "totalTokenCount"
    gateway_path_pattern = _facts.GATEWAY_PATH
    stream_shape = _facts.VISIBLE

    def stream_error(self, reason: str) -> bytes:
        return _error_event(reason)

    def streams_as_json(self, path: str) -> bool:
        return _facts.JSON_STREAM_PATH.search(path.split("?", 1)[0].rstrip("/")) is not None

    def model_in_request(self, path: str, body: JSON) -> str | None:
        found = super().model_in_request(path, body)
        if found is not None:
            return found
        m = _facts.MODEL_IN_PATH.search(path)
        return m.group(1) if m else None

    def stream_requested(self, path: str, body: Mapping[str, JSON]) -> bool:
        return _facts.STREAM_PATH.search(path) is not None

    def error_body(self, status: int, reason: str, message: str, info: ErrorInfo | None) -> JSON:
        """Google's error shape (``error.code`` / ``message`` / ``status``), which the
        google-genai SDK reads; the status is an allow-listed one or derived from the code."""
        kind = (
            info.type if info and info.type in self.error_types else GOOGLE_RPC_STATUS.get(status)
        )
        return {"error": {"code": status, "message": message, "status": kind or "INTERNAL"}}

    def wants_stream(self, body: Mapping[str, JSON]) -> bool:
        """Gemini says it in the path (``:streamGenerateContent``), never in the body."""
        return False

    def request_path(self, options: RequestOptions) -> str:
        model = options.model.removeprefix("models/")
        if options.stream:
            return f"/models/{model}:streamGenerateContent?alt=sse"
        return f"/models/{model}:generateContent"

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        """The body for ``messages``. ``profile`` is accepted for the protocol; Gemini has one.

        System messages go to ``systemInstruction``; consecutive tool results share one user
        content of ``functionResponse`` parts, each ``response`` being ``{"output": content}``
        (Google's documented key). ``functionResponse.id`` is sent when the call had a real
        id (Gemini's own or a foreign one); never a synthetic id Gemini did not issue.
        """
        del profile
        system: list[JSON] = []
        contents: list[JSON] = []
        no_id: set[str] = set()
        results: list[JSON] | None = None
        for msg in messages:
            if isinstance(msg, ToolResult):
                response: dict[str, JSON] = {"name": msg.name, "response": {"output": msg.content}}
                if msg.tool_call_id not in no_id:
                    response = {"id": msg.tool_call_id, **response}
                if results is None:
                    results = []
                    contents.append({"role": "user", "parts": results})
                results.append({"functionResponse": response})
                continue
            results = None
            if isinstance(msg, System):
                system.append({"text": msg.text})
            elif isinstance(msg, User):
                contents.append({"role": "user", "parts": [{"text": msg.text}]})
            elif isinstance(msg, Assistant):
                native = native_items(msg, "gemini")
                if native is not None:
                    for i, part in enumerate(native):
                        fc = part.get("functionCall") if isinstance(part, dict) else None
                        if isinstance(fc, dict) and not fc.get("id"):
                            no_id.add(synthetic_call_id(str(fc.get("name")), i))
                if options.keep_carriers:
                    contents.extend(self.replay(msg))
                else:
                    contents.extend(self.strip(msg))
            else:  # pragma: no cover - the Message union is closed
                raise MalformedBody(f"unknown message type {type(msg).__name__}")
        body: dict[str, JSON] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": system}
        if options.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t.name, "description": t.description, SCHEMA_FIELD: t.parameters}
                        for t in options.tools
                    ]
                }
            ]
        config: dict[str, JSON] = {}
        if options.max_tokens is not None:
            config["maxOutputTokens"] = options.max_tokens
        if options.effort is not None and options.effort not in NO_EFFORT:
            config["thinkingConfig"] = {"includeThoughts": True, "thinkingLevel": options.effort}
        if config:
            body["generationConfig"] = config
        return deep_merge(body, options.extra_body)  # merges in place; nothing when empty

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        return parse_body(body)

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        """``[{"role": "model", "parts": [...]}]``: native parts as received (same objects)."""
        native = native_items(message, "gemini")
        if native is not None:
            return _model_content(list(native))
        return _model_content(_foreign_parts(message, keep_carriers=True))

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        """The replay without thought parts and without ``thoughtSignature`` keys.

        Foreign history keeps its :data:`STAND_IN_SIGNATURE`: it carries no reasoning and
        without it Gemini 3 refuses the step.
        """
        native = native_items(message, "gemini")
        if native is not None:
            return _model_content(_stripped_parts(native))
        return _model_content(_foreign_parts(message, keep_carriers=False))


def _error_event(reason: str) -> bytes:
    data = {"error": {"code": 502, "status": "UNAVAILABLE", "message": reason}}
    return encode_event("message", orjson.dumps(data))


DIALECT = GeminiDialect()

__all__ = ["DIALECT", "NO_EFFORT", "SCHEMA_FIELD", "STAND_IN_SIGNATURE", "GeminiDialect"]
