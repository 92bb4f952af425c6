"""Placeholder replaced by the credentials module (see issue: foundation)."""

from __future__ import annotations

import re

_PATTERNS = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,}|Bearer\s+[A-Za-z0-9._\-]+)")


def redact(text: str) -> str:
    """Replace anything shaped like a key with ``[redacted]``."""
    return _PATTERNS.sub("[redacted]", text)
