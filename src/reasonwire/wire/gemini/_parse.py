"""Gemini ``GenerateContentResponse`` bodies -> neutral :class:`Turn`.

Only ``candidates[0]`` is read: reasonwire never asks for ``candidateCount > 1``, and the
next request can only continue one candidate anyway.

Carriers, one per wire item, values exactly as received:

- ``thought``: a ``{"text": .., "thought": true}`` part. The value is the whole part (the same
  dict object that sits in ``Turn.native.items``), a text carrier (``opaque=False``).
- ``thoughtSignature``: the signature string on any part (text, thought or functionCall),
  opaque. ``tool_call_id`` is set when it rides on a functionCall part: Gemini 3 rejects a
  step whose first call comes back without it.

Function calls become :class:`ToolCall` with ``functionCall.id`` when the API sent one, else
the synthetic id ``f"{name}-{part_index}"`` (see :func:`synthetic_call_id`). Gemini matches a
``functionResponse`` by name and order, so the synthetic id only has to be unique within one
answer; it is never sent back on the wire.
"""

from __future__ import annotations

import base64
import binascii

from reasonwire.errors import MalformedBody
from reasonwire.wire.google_usage import UsageNames, google_usage
from reasonwire.wire.jsontext import json_object
from reasonwire.wire.model import (
    JSON,
    Carrier,
    JsonObject,
    Native,
    ToolCall,
    Turn,
    Usage,
    canonical_text,
)
from reasonwire.wire.turnparts import TurnParts

PARTS_PATH = "candidates[0].content.parts"


def synthetic_call_id(name: str, part_index: int) -> str:
    """The id given to a ``functionCall`` part that came without ``id``: ``name-index``.

    Deterministic (stream and non-stream parse of one answer agree) and unique within one
    answer, since the part index is.
    """
    return f"{name}-{part_index}"


def same_signature(a: str, b: str) -> bool:
    """True when two thought signatures hold the same bytes.

    Gemini returns signatures in standard base64 (``+``, ``/``); the google-genai SDK sends
    them back urlsafe (``-``, ``_``) and the API accepts that. So equality is checked on the
    decoded bytes, with padding optional. Strings that are not base64 at all compare as text.
    Only comparisons use this: replay always sends the string exactly as received.
    """
    if a == b:
        return True
    da, db = _b64_bytes(a), _b64_bytes(b)
    return da is not None and da == db


def _b64_bytes(s: str) -> bytes | None:
    t = s.strip().replace("-", "+").replace("_", "/")
    t += "=" * (-len(t) % 4)
    try:
        return base64.b64decode(t, validate=True)
    except (binascii.Error, ValueError):
        return None


def parse_usage(meta: JSON) -> Usage | None:
    """``usageMetadata`` -> :class:`Usage`.

    ``promptTokenCount`` includes ``cachedContentTokenCount``: input_uncached = prompt - cached,
    cache_read = cached. ``toolUsePromptTokenCount`` (tokens of tool results Gemini itself
    fetched, e.g. search) is billed as input and counted in input_uncached. Output is
    ``candidatesTokenCount + thoughtsTokenCount``: Gemini bills thoughts as output but reports
    them apart (totalTokenCount = prompt + toolUse + candidates + thoughts); reasoning =
    ``thoughtsTokenCount``.
    """
    return google_usage(meta, _USAGE)


_USAGE = UsageNames(
    where="gemini usageMetadata",
    input="promptTokenCount",
    cached="cachedContentTokenCount",
    tool_use="toolUsePromptTokenCount",
    output="candidatesTokenCount",
    thoughts="thoughtsTokenCount",
)


def candidate_parts(body: JsonObject) -> tuple[JsonObject | None, list[JSON]]:
    """``candidates[0]`` and its parts (``[]`` when absent, e.g. a blocked prompt)."""
    if "error" in body:
        err = body["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        raise MalformedBody(f"gemini body is an error object, not an answer: {msg}")
    cands = body.get("candidates")
    if cands is None:
        return None, []
    if not isinstance(cands, list):
        raise MalformedBody("gemini 'candidates' must be a list")
    if not cands:
        return None, []
    cand = cands[0]
    if not isinstance(cand, dict):
        raise MalformedBody("gemini candidates[0] must be an object")
    content = cand.get("content")
    if content is None:
        return cand, []
    if not isinstance(content, dict):
        raise MalformedBody("gemini candidates[0].content must be an object")
    parts = content.get("parts", [])
    if not isinstance(parts, list):
        raise MalformedBody("gemini candidates[0].content.parts must be a list")
    for i, p in enumerate(parts):
        if not isinstance(p, dict):
            raise MalformedBody(f"gemini {PARTS_PATH}[{i}] must be an object")
    return cand, parts


def is_thought(part: JsonObject) -> bool:
    return part.get("thought") is True and isinstance(part.get("text"), str)


def read_parts(parts: list[JSON]) -> TurnParts:
    """Visible text, reasoning text, tool calls and carriers of a list of parts."""
    got = TurnParts()
    for i, part in enumerate(parts):
        path = f"{PARTS_PATH}[{i}]"
        call_id: str | None = None
        fc = part.get("functionCall")
        if fc is not None:
            call = tool_call_of(fc, i, path)
            got.calls.append(call)
            call_id = call.id
        if is_thought(part):
            got.reasoning.append(part["text"])
            got.carriers.append(
                Carrier("gemini", "thought", path, part, opaque=False, text=part["text"])
            )
        elif isinstance(part.get("text"), str):
            got.text.append(part["text"])
        if "thoughtSignature" in part:
            sig = part["thoughtSignature"]
            if not isinstance(sig, str):
                raise MalformedBody(f"gemini {path}.thoughtSignature must be a string")
            got.carriers.append(
                Carrier(
                    "gemini",
                    "thoughtSignature",
                    f"{path}.thoughtSignature",
                    sig,
                    opaque=True,
                    tool_call_id=call_id,
                )
            )
    return got


def tool_call_of(fc: JSON, index: int, path: str) -> ToolCall:
    if not isinstance(fc, dict) or not isinstance(fc.get("name"), str):
        raise MalformedBody(f"gemini {path}.functionCall must be an object with a name")
    name: str = fc["name"]
    cid = fc.get("id")
    args = fc.get("args")
    return ToolCall(
        id=cid if isinstance(cid, str) and cid else synthetic_call_id(name, index),
        name=name,
        arguments=canonical_text({} if args is None else args),
    )


def parse_body(body: bytes | str | JSON) -> Turn:
    """A non-streaming ``generateContent`` body (or an assembled stream state) -> Turn."""
    data = json_object(body, "gemini response body")
    cand, parts = candidate_parts(data)
    finish = cand.get("finishReason") if cand is not None else None
    if finish is None:
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            finish = feedback["blockReason"]
    return read_parts(parts).turn(
        Native("gemini", tuple(parts)),
        data,
        usage=parse_usage(data.get("usageMetadata")),
        finish=finish,
        names=("responseId", "modelVersion"),
    )
