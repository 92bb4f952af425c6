"""Redaction: every loaded secret and every key-shaped string out of any text or record.

One place for it, below :mod:`reasonwire.errors` and :mod:`reasonwire.credentials` (both
use it), so that an error can redact its body excerpt without importing the key sources.
Shapes come from :mod:`reasonwire.secrets_scan`, the detector the evidence validator uses.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from reasonwire.secrets_scan import is_secret_field, scan_text

REDACTED = "[redacted]"

_LOADED = "loaded secret"

_MIN_SECRET = 8  # shorter values would blank ordinary words; such keys are not real keys

_lock = threading.Lock()
_secrets: set[str] = set()
_secret_re: re.Pattern[str] | None = None


def register_secret(value: str) -> None:
    """Remember ``value`` so :func:`redact` removes it from any text from now on."""
    global _secret_re
    value = value.strip()
    if len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        # Longest first so a secret containing another is removed whole.
        alts = sorted(_secrets, key=len, reverse=True)
        _secret_re = re.compile("|".join(re.escape(s) for s in alts))


def redact(text: str) -> str:
    """``text`` with every loaded secret and every key-shaped string replaced by ``[redacted]``.

    Shapes are those of :mod:`reasonwire.secrets_scan` (the detector the evidence validator
    uses), found as written and after JSON unescaping (``\\u0073k-...`` is a key too).
    """
    pattern = _secret_re
    found = scan_text(text, ((_LOADED, pattern),) if pattern is not None else ())
    if not found:
        return text
    out: list[str] = []
    pos = 0
    for m in found:  # sorted by start; overlapping spans merge into one [redacted]
        if m.end <= pos:
            continue
        if m.start >= pos:
            out.append(text[pos : m.start])
            out.append(REDACTED)
        pos = m.end
    out.append(text[pos:])
    return "".join(out)


def redact_obj(obj: Any) -> Any:  # decoded JSON: wire.model's alias would be an import cycle
    """A copy of a record (dicts, lists, strings) with secrets removed; other values unchanged.

    Values of credential-named fields are replaced whole; every string is passed through
    :func:`redact`. Keys of dicts are redacted too (a header dump may use a key as a name).
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            key = redact(k) if isinstance(k, str) else k
            if isinstance(k, str) and is_secret_field(k) and v is not None:
                out[key] = REDACTED
            else:
                out[key] = redact_obj(v)
        return out
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj


__all__ = ["REDACTED", "redact", "redact_obj", "register_secret"]
