"""Offline structure checks of opaque carriers: the text encoding, then the binary framing.

Nothing here can verify a signature (only the provider holds the key); what it can tell is
whether a value is still the *shape* the provider hands out, which is what breaks when an
agent truncates, re-serialises, merges or trims a carrier. Each rule was learned from the
intact carriers in ``../shared/conformance`` and ``../shared/sessions`` (every one of them
passes; tests/doctor checks that) and from the published wire formats:

- Anthropic ``signature`` / ``redacted_thinking.data`` (also Anthropic signatures relayed in
  Chat ``reasoning_details``): standard base64 with ``=`` padding of a protobuf message whose
  top level holds field 2 (length-delimited, the sealed payload) exactly once, and optionally
  field 1 and 3 (varints) once each. Observed in every pai__test_anthropic__* cassette,
  vercel__anthropic__*, pi-coding-agent__large-session.jsonl (``ErMC...`` = 0x12 0xb3 0x02).
- Gemini ``thoughtSignature`` / Interactions ``signature``: base64 of a protobuf message of
  field 2 once (``Ep...``, generateContent) or field 1 repeated (``Ci...``, the streamed and
  Interactions form). Gemini takes the value as a proto ``bytes`` field, whose JSON mapping
  accepts standard and URL-safe base64 alike (protobuf JSON mapping, "bytes"); pydantic-ai's
  recorded requests send the URL-safe form of the same bytes and get 200
  (pai__test_google__test_google_instructions_only_with_tool_calls.yaml).
- Responses ``encrypted_content``: a Fernet token (URL-safe base64 of version byte 0x80,
  8-byte timestamp, 16-byte IV, AES-CBC ciphertext in 16-byte blocks, 32-byte HMAC), as
  every OpenAI recording shows (``gAAAAAB...``); the Fernet spec
  (github.com/fernet/spec) fixes those sizes. DeepSeek's Responses endpoint returns a UUID
  there instead (a UUID and ``-N``), which is accepted as its own shape.

Every check returns a :class:`Problem` (kind and detail) or None.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

STANDARD = re.compile(r"[A-Za-z0-9+/]*={0,2}")
URLSAFE = re.compile(r"[A-Za-z0-9_-]*={0,2}")
TOKEN = re.compile(r"[A-Za-z0-9+/_=-]+")
"""What any opaque value of the known families is written with; anything else (spaces,
brackets: ``[trimmed for fixture]``) is a placeholder, not a carrier."""
UUID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(-[0-9]+)?"
)
"""DeepSeek's Responses ``encrypted_content``: a UUID with an item index suffix
(``806896f9-a0e7-497f-9645-51900b22342d-0``, pai__test_deepseek_responses__*)."""

FERNET_VERSION = 0x80
FERNET_FIXED = 1 + 8 + 16 + 32  # version, timestamp, IV, HMAC
FERNET_BLOCK = 16


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with one carrier value: a finding kind and a sentence saying why."""

    kind: str
    detail: str


def decode_base64(value: str, *, urlsafe: bool) -> bytes:
    """The bytes of a padded base64 value in one alphabet; ValueError otherwise."""
    pattern = URLSAFE if urlsafe else STANDARD
    if not pattern.fullmatch(value):
        raise ValueError("characters outside the alphabet")
    if len(value) % 4:
        raise ValueError(f"length {len(value)} is not a multiple of 4")
    text = value.translate(str.maketrans("-_", "+/")) if urlsafe else value
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise EOFError("a varint runs past the end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def protobuf_fields(data: bytes) -> list[tuple[int, int]]:
    """(field number, wire type) of every top-level field, reading to the last byte.

    EOFError when a field's declared size runs past the end (what truncation leaves),
    ValueError when the bytes are not protobuf wire format at all."""
    fields: list[tuple[int, int]] = []
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            _, at = _varint(data, at)
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
            if at > len(data):
                raise EOFError("a fixed-size field runs past the end")
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise EOFError(f"field {number} declares {size} bytes, {len(data) - at} remain")
            at += size
        else:
            raise ValueError(f"wire type {wire}")
        fields.append((number, wire))
    return fields


@dataclass(frozen=True, slots=True)
class Envelope:
    """The top-level protobuf fields a carrier family has: ``once`` fields may appear at
    most once, ``repeated`` any number of times; ``required`` (one of) must appear."""

    once: frozenset[int]
    repeated: frozenset[int]
    required: frozenset[int]


def check_protobuf(value: str, envelope: Envelope, *, urlsafe_ok: bool) -> Problem | None:
    """Base64 (standard; URL-safe too when the provider maps it to bytes) of a protobuf
    message that decodes to its end and has the family's top-level fields."""
    urlsafe = "-" in value or "_" in value
    if urlsafe and not urlsafe_ok:
        return Problem("reencoded", "URL-safe base64 where the provider returned standard base64")
    try:
        data = decode_base64(value, urlsafe=urlsafe)
    except ValueError as exc:
        return _b64_problem(value, exc)
    try:
        fields = protobuf_fields(data)
    except EOFError as exc:
        return Problem("truncated", f"the framed message ends early: {exc}")
    except ValueError as exc:
        return Problem("undecodable", f"not the framed message the provider returns: {exc}")
    return _envelope_problem(fields, envelope)


def _envelope_problem(fields: list[tuple[int, int]], envelope: Envelope) -> Problem | None:
    numbers = [n for n, _ in fields]
    for n in set(numbers):
        if n not in envelope.once and n not in envelope.repeated:
            return Problem("undecodable", f"unexpected top-level field {n}")
        if n in envelope.once and numbers.count(n) > 1:
            return Problem(
                "merged",
                f"top-level field {n} appears {numbers.count(n)} times: two carriers joined",
            )
    if not envelope.required & set(numbers):
        return Problem("undecodable", "the sealed payload field is missing")
    return None


def _b64_problem(value: str, exc: ValueError) -> Problem:
    if len(value) % 4 and TOKEN.fullmatch(value):
        return Problem("truncated", f"base64 {exc}: characters were cut")
    return Problem("undecodable", f"not base64: {exc}")


def check_fernet(value: str) -> Problem | None:
    """A Fernet token (URL-safe base64) whose sizes add up; or a UUID (DeepSeek's form)."""
    if UUID.fullmatch(value):
        return None
    if "+" in value or "/" in value:
        return Problem("reencoded", "standard base64 where the provider returned URL-safe")
    try:
        data = decode_base64(value, urlsafe=True)
    except ValueError as exc:
        return _b64_problem(value, exc)
    if not data or data[0] != FERNET_VERSION:
        return Problem("undecodable", "not a Fernet token (version byte 0x80 missing)")
    body = len(data) - FERNET_FIXED
    if body <= 0 or body % FERNET_BLOCK:
        return Problem(
            "truncated",
            f"{len(data)} bytes: a token is 57 + a multiple of 16 (ciphertext blocks)",
        )
    return None


def is_placeholder(value: str) -> bool:
    """True when a value cannot be an opaque carrier of any family (a note left by a tool)."""
    return not TOKEN.fullmatch(value)


def reencode(value: str, *, to_urlsafe: bool) -> str:
    """The same bytes in the other base64 alphabet (the repair of a re-encoded carrier)."""
    table = str.maketrans("+/", "-_") if to_urlsafe else str.maketrans("-_", "+/")
    return value.translate(table)
