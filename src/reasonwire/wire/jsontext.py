"""JSON text in and out of the dialects: a whole response body read as JSON (the first step
of every non-streaming parser), and tool-call arguments written as JSON text.

A body arrives as bytes (off the wire), text (a recording) or an already decoded value (a
stream's assembled state, a test). Every dialect reads it the same way, and says what was
wrong the same way: :class:`~reasonwire.errors.MalformedBody` naming the body, for bytes that
are not UTF-8, text that is not JSON, or (for :func:`json_object`) a value that is not an
object. Arguments are kept as the provider wrote them when they came as text, else written
compactly (:func:`~reasonwire.wire.model.canonical_text`: key order and non-ASCII kept).
"""

from __future__ import annotations

import json

from reasonwire.errors import MalformedBody
from reasonwire.wire import jsonload
from reasonwire.wire.model import JSON, JsonObject, ToolCall, canonical_text


def json_body(body: bytes | str | JSON, what: str) -> JSON:
    """``body`` decoded (a decoded value passes as it is); ``what`` names it in errors."""
    if isinstance(body, bytes | bytearray):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedBody(f"{what} is not UTF-8 ({exc})") from None
    if isinstance(body, str):
        try:
            return jsonload.loads(body)
        except json.JSONDecodeError as exc:
            raise MalformedBody(f"{what} is not valid JSON ({exc})") from None
    return body


def json_object(body: bytes | str | JSON, what: str) -> JsonObject:
    """:func:`json_body`, which must be a JSON object."""
    value = json_body(body, what)
    if not isinstance(value, dict):
        raise MalformedBody(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def arguments_text(value: JSON, absent: str = "{}") -> str:
    """Tool-call arguments as JSON text: a string as received, ``absent`` for none (null or
    missing), any other value compact."""
    if value is None:
        return absent
    return value if isinstance(value, str) else canonical_text(value)


def arguments_object(call: ToolCall, api: str) -> JsonObject:
    """A tool call's arguments decoded, for an ``api`` that sends them as an object;
    :class:`MalformedBody` when they are not JSON or not an object."""
    try:
        args = call.parsed_arguments()
    except json.JSONDecodeError as exc:
        raise MalformedBody(
            f"tool call {call.id!r} ({call.name}) arguments are not JSON: {exc.msg}"
        ) from None
    if not isinstance(args, dict):
        raise MalformedBody(
            f"tool call {call.id!r} ({call.name}) arguments must be a JSON object for {api}"
        )
    return args


__all__ = ["arguments_object", "arguments_text", "json_body", "json_object"]
