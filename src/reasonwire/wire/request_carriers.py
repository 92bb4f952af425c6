"""Reasoning carriers a client sends back, found in an outgoing request body.

The probe watches requests it did not build, so it cannot ask a transcript which carriers it
replays: it reads the JSON body. Which fields carry reasoning in a request is a fact about
each wire API, so it lives here in ``wire/`` as data, with the URL-path rule that tells which
dialect a call speaks. Nothing above ``wire/`` needs to know a request shape.

Sizes are UTF-8 bytes of the string value as sent (text carriers: the reasoning text; opaque
carriers: the signature / encrypted string). Non-string values of a carrier field are sized
as compact JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reasonwire.wire.model import JSON, Dialect, canonical_bytes

# URL path -> dialect, as data. Checked in order against the path (query stripped); the first
# rule whose pattern is found wins. Gemini model paths end in ``:generateContent`` or
# ``:streamGenerateContent``.
PATH_RULES: tuple[tuple[str, Dialect], ...] = (
    (r":(stream)?generatecontent$", "gemini"),
    (r"/chat/completions$", "chat"),
    (r"/responses$", "responses"),
    (r"/messages$", "anthropic"),
)
_PATH_RES = tuple((re.compile(p, re.IGNORECASE), d) for p, d in PATH_RULES)
_JSON_STREAM_PATHS = re.compile(r":streamgeneratecontent$", re.IGNORECASE)
"""Endpoints that stream as one progressively delivered JSON array over application/json
(Gemini without ``?alt=sse``), so the content type alone does not reveal the stream."""
_GEMINI_MODEL = re.compile(r"/models/([^/:]+):", re.IGNORECASE)


def dialect_for_path(path: str) -> Dialect | None:
    """The dialect a request to ``path`` speaks, or None for any other endpoint."""
    path = path.split("?", 1)[0].rstrip("/")
    for pattern, dialect in _PATH_RES:
        if pattern.search(path):
            return dialect
    return None


def streams_as_json(path: str) -> bool:
    """True for an endpoint whose stream may arrive as ``application/json`` (a JSON array)."""
    return _JSON_STREAM_PATHS.search(path.split("?", 1)[0].rstrip("/")) is not None


def model_in_request(dialect: Dialect, path: str, body: JSON) -> str | None:
    """The model a request names: a body field, or (Gemini) the ``/models/<m>:`` path part."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])
    m = _GEMINI_MODEL.search(path)
    return m.group(1) if m else None


@dataclass(frozen=True, slots=True)
class SentCarrier:
    """One reasoning carrier in a request: its kind, byte size and whether it is opaque."""

    kind: str
    size: int
    opaque: bool


def _size(value: JSON) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return len(canonical_bytes(value))


def _present(value: JSON) -> bool:
    return value is not None and value != ""


def _chat(body: dict[str, Any]) -> list[SentCarrier]:
    out: list[SentCarrier] = []
    for msg in body.get("messages") or ():
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        for field in ("reasoning_content", "reasoning"):
            if _present(msg.get(field)):
                out.append(SentCarrier(field, _size(msg[field]), False))
        for detail in msg.get("reasoning_details") or ():
            if not isinstance(detail, dict):
                continue
            kind = str(detail.get("type") or "reasoning_details")
            for key, opaque in (("text", False), ("summary", False), ("data", True)):
                if _present(detail.get(key)):
                    out.append(SentCarrier(kind, _size(detail[key]), opaque))
            if _present(detail.get("signature")):
                out.append(SentCarrier(kind + ".signature", _size(detail["signature"]), True))
        for call in msg.get("tool_calls") or ():
            if isinstance(call, dict) and _present(call.get("extra_content")):
                out.append(SentCarrier("extra_content", _size(call["extra_content"]), True))
    return out


def _responses(body: dict[str, Any]) -> list[SentCarrier]:
    out: list[SentCarrier] = []
    items = body.get("input")
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        for part_key in ("summary", "content"):
            for part in item.get(part_key) or ():
                if isinstance(part, dict) and _present(part.get("text")):
                    kind = str(part.get("type") or part_key)
                    out.append(SentCarrier(kind, _size(part["text"]), False))
        if _present(item.get("encrypted_content")):
            out.append(SentCarrier("encrypted_content", _size(item["encrypted_content"]), True))
    return out


def _anthropic(body: dict[str, Any]) -> list[SentCarrier]:
    out: list[SentCarrier] = []
    for msg in body.get("messages") or ():
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking":
                if _present(block.get("thinking")):
                    out.append(SentCarrier("thinking", _size(block["thinking"]), False))
                if _present(block.get("signature")):
                    out.append(SentCarrier("signature", _size(block["signature"]), True))
            elif block.get("type") == "redacted_thinking" and _present(block.get("data")):
                out.append(SentCarrier("redacted_thinking", _size(block["data"]), True))
    return out


def _gemini(body: dict[str, Any]) -> list[SentCarrier]:
    out: list[SentCarrier] = []
    for content in body.get("contents") or ():
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        for part in content.get("parts") or ():
            if not isinstance(part, dict):
                continue
            if part.get("thought") is True and _present(part.get("text")):
                out.append(SentCarrier("thought", _size(part["text"]), False))
            for key in ("thoughtSignature", "thought_signature"):
                if _present(part.get(key)):
                    out.append(SentCarrier("thoughtSignature", _size(part[key]), True))
    return out


_FINDERS = {
    "chat": _chat,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


def request_carriers(dialect: Dialect, body: JSON) -> list[SentCarrier]:
    """Every reasoning carrier the request ``body`` sends back on its assistant turns."""
    if not isinstance(body, dict):
        return []
    return _FINDERS[dialect](body)


__all__ = [
    "PATH_RULES",
    "SentCarrier",
    "dialect_for_path",
    "model_in_request",
    "request_carriers",
    "streams_as_json",
]
