"""What a saved response or stream carries (the ``reasonwire inspect`` command, in
:mod:`reasonwire.doctor.cli`).

The command a user reaches for when a provider answers "Invalid signature in thinking block":
it reads a saved body or capture, finds its dialect and form by shape (never by file name),
decodes it with the dialect's own parser or stream decoder, and prints what would go back:
the carriers (kind, location, size, opaque or not, a short hash of opaque values, the start of
readable ones), usage and ids. ``--replay`` prints the exact JSON the dialect sends back.

Forms understood: one JSON body; an SSE capture (``event:``/``data:`` lines); a JSON-lines
file with one stream payload per line (as SDK debug logs and the corpus ``*.chunks.txt``
keep them); a Gemini progressive JSON array. Bad input ends with one line on stderr and a
non-zero exit code: 2 when the file cannot be read, 1 when its content is not a response.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reasonwire.credentials import redact
from reasonwire.errors import MalformedBody, TruncatedStream, UnknownDialect
from reasonwire.wire.dialect import read_error
from reasonwire.wire.jsonarray import JSONArrayDecoder
from reasonwire.wire.model import JSON, Carrier, DialectName, Done, Turn
from reasonwire.wire.registry import detect, get_dialect, names
from reasonwire.wire.sse import SSEDecoder

Form = Literal["json", "sse", "jsonl", "array"]

_PREVIEW = 60
_SCAN = 50  # payloads looked at when detecting the dialect of a stream


@dataclass(frozen=True, slots=True)
class Inspection:
    """What a file held: its dialect, form, the decoded turn and how many payloads it had."""

    dialect: DialectName
    form: Form
    turn: Turn
    payloads: int


def detect_payload(payload: JSON) -> DialectName | None:
    """The dialect a single JSON body or stream payload belongs to (asked of each dialect
    object), or None when its shape does not say (an error object, a keep-alive)."""
    found = detect(payload[:_SCAN] if isinstance(payload, list) else payload)
    return found.name if found is not None else None


def _error_message(payload: JSON) -> str | None:
    """The provider's message when a body is an error object rather than a response."""
    info = read_error(payload)
    if info is None:
        return None
    return info.message or info.type or info.code or "an error object without a message"


def _sse_payloads(data: bytes) -> Iterator[JSON]:
    dec = SSEDecoder()
    for ev in [*dec.feed(data), *dec.close()]:
        text = ev.data.strip()
        if not text or text == "[DONE]":
            continue
        try:
            yield json.loads(text)
        except json.JSONDecodeError:
            raise MalformedBody(
                f"SSE event {ev.event!r} does not hold JSON: {redact(text[:60])!r}"
            ) from None


def _jsonl_payloads(text: str) -> list[JSON]:
    out: list[JSON] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise MalformedBody(f"line {n} is not JSON ({exc.msg})") from None
    return out


def _reframe(payloads: list[JSON]) -> bytes:
    """Payloads as an SSE stream (``event:`` named after a ``type`` field, as providers do)."""
    parts: list[str] = []
    for p in payloads:
        typ = p.get("type") if isinstance(p, dict) else None
        prefix = f"event: {typ}\n" if isinstance(typ, str) else ""
        parts.append(f"{prefix}data: {json.dumps(p, ensure_ascii=False)}\n\n")
    return "".join(parts).encode("utf-8")


def _looks_like_sse(text: str) -> bool:
    for line in text.splitlines()[:20]:
        s = line.strip()
        if not s or s.startswith(":"):
            continue
        return s.startswith(("data:", "event:", "id:", "retry:")) or s == "data"
    return False


def _pick(found: DialectName | None, forced: str | None, payloads: list[JSON]) -> DialectName:
    if forced is not None:
        if forced not in names():
            raise UnknownDialect(
                f"unknown dialect {forced!r}; expected one of {', '.join(names())}"
            )
        return forced
    if found is not None:
        return found
    for p in payloads[:_SCAN]:
        msg = _error_message(p)
        if msg is not None:
            raise UnknownDialect(f"the file holds a provider error, not a response: {redact(msg)}")
    raise UnknownDialect(
        "cannot tell the dialect from the payload shape (expected chat `choices`, responses "
        "`type: response.*`, anthropic `type: message*` or gemini `candidates`); pass --dialect"
    )


def _decode_stream(dialect: DialectName, data: bytes) -> Turn:
    dec = get_dialect(dialect).stream_decoder()
    events = [*dec.feed(data), *dec.close()]
    for ev in reversed(events):
        if isinstance(ev, Done):
            return ev.turn
    raise TruncatedStream(f"{dialect} stream produced no final turn", partial=dec.partial_turn())


def inspect_bytes(data: bytes, dialect: str | None = None) -> Inspection:
    """Detect form and dialect of ``data`` and decode it.

    Raises :class:`~reasonwire.errors.WireError` subclasses: ``UnknownDialect`` when the shape
    says nothing, ``MalformedBody`` for bytes that are not JSON/SSE, ``TruncatedStream`` for a
    stream that ended before its terminal event.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedBody(f"the file is not UTF-8 text (byte {exc.start})") from None
    stripped = text.strip()
    if not stripped:
        raise MalformedBody("the file is empty")

    if stripped[0] == "[":
        # Gemini's progressive array, or a JSON list body: both go through the array decoder.
        arr = JSONArrayDecoder()
        elements = arr.feed(stripped.encode("utf-8"))
        arr.close()
        d = _pick(detect_payload(elements), dialect, elements)
        return Inspection(d, "array", _decode_stream(d, data), len(elements))

    if stripped[0] == "{":
        try:
            body = json.loads(stripped)
        except json.JSONDecodeError as whole_exc:
            lines = [ln for ln in stripped.splitlines() if ln.strip()]
            if len(lines) < 2:
                raise MalformedBody(
                    f"not valid JSON ({whole_exc.msg} at line {whole_exc.lineno} column "
                    f"{whole_exc.colno}); a truncated body?"
                ) from None
            payloads = _jsonl_payloads(stripped)
            found = next((f for p in payloads[:_SCAN] if (f := detect_payload(p))), None)
            d = _pick(found, dialect, payloads)
            return Inspection(d, "jsonl", _decode_stream(d, _reframe(payloads)), len(payloads))
        d = _pick(detect_payload(body), dialect, [body])
        return Inspection(d, "json", get_dialect(d).parse_response(body), 1)

    if _looks_like_sse(stripped):
        payloads = []
        found = None
        for p in _sse_payloads(data):
            payloads.append(p)
            found = detect_payload(p)
            if found or len(payloads) >= _SCAN:
                break
        if not payloads:
            raise MalformedBody("the SSE capture holds no data events")
        d = _pick(found, dialect, payloads)
        return Inspection(d, "sse", _decode_stream(d, data), _count_events(data))

    raise MalformedBody(
        f"not a JSON body, SSE capture or JSON array (starts with {redact(stripped[:30])!r})"
    )


def _count_events(data: bytes) -> int:
    dec = SSEDecoder()
    return len(dec.feed(data)) + len(dec.close())


def inspect_file(path: str | Path, dialect: str | None = None) -> Inspection:
    """:func:`inspect_bytes` on a file; ``OSError`` is left to the caller."""
    return inspect_bytes(Path(path).read_bytes(), dialect)


# --------------------------------------------------------------------------------------------
# Presentation
# --------------------------------------------------------------------------------------------


def _one_line(text: str, limit: int = _PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def carrier_preview(c: Carrier) -> str:
    """A short, safe description of the carrier's content: a hash for opaque values, the
    first characters of readable ones."""
    if c.opaque:
        readable = f" {json.dumps(_one_line(redact(c.text)), ensure_ascii=False)}" if c.text else ""
        return f"sha256:{c.digest}{readable}"
    text = c.text
    if text is None:
        text = c.value if isinstance(c.value, str) else json.dumps(c.value, ensure_ascii=False)
    return json.dumps(_one_line(redact(text)), ensure_ascii=False)


def summary(ins: Inspection) -> dict[str, Any]:
    """The report as JSON-ready data (what ``--json`` prints)."""
    t = ins.turn
    return {
        "dialect": ins.dialect,
        "form": ins.form,
        "payloads": ins.payloads,
        "response_id": t.response_id,
        "model": t.model,
        "finish_reason": t.finish_reason,
        "text_chars": len(t.text),
        "text_preview": _one_line(redact(t.text)),
        "reasoning_chars": len(t.reasoning_text),
        "tool_calls": [
            {"id": tc.id, "name": tc.name, "arguments_chars": len(tc.arguments)}
            for tc in t.tool_calls
        ],
        "carriers": [
            {
                "kind": c.kind,
                "path": c.path,
                "size": c.size,
                "opaque": c.opaque,
                "digest": c.digest,
                "preview": carrier_preview(c),
                "tool_call_id": c.tool_call_id,
            }
            for c in t.carriers
        ],
        "usage": t.usage.as_dict() if t.usage is not None else None,
    }


def render(ins: Inspection) -> str:
    """The human-readable report."""
    s = summary(ins)
    out = [
        f"dialect   {s['dialect']} ({s['form']}, {s['payloads']} payload(s))",
        f"response  {s['response_id'] or '-'}   model {s['model'] or '-'}   "
        f"finish {s['finish_reason'] or '-'}",
        f"text      {s['text_chars']} chars  {json.dumps(s['text_preview'], ensure_ascii=False)}",
        f"reasoning {s['reasoning_chars']} chars of readable reasoning",
    ]
    for tc in s["tool_calls"]:
        out.append(f"tool call {tc['name']}  id {tc['id']}  ({tc['arguments_chars']} chars args)")
    out.append(f"carriers  {len(s['carriers'])}")
    for c in s["carriers"]:
        kind = "opaque" if c["opaque"] else "text"
        on = f"  on {c['tool_call_id']}" if c["tool_call_id"] else ""
        out.append(
            f"  {c['kind']:<18} {c['path']:<44} {c['size']:>7} B  {kind:<6} {c['preview']}{on}"
        )
    usage = s["usage"]
    if usage is None:
        out.append("usage     none reported")
    else:
        figures = "  ".join(f"{k}={v}" for k, v in usage.items() if v is not None)
        out.append(f"usage     {figures or 'none reported'}")
    return "\n".join(out)


__all__ = ["Inspection", "detect_payload", "inspect_bytes", "inspect_file", "render", "summary"]
