"""``reasonwire doctor``: find, and repair into a new file, broken reasoning state in saved
agent sessions, offline (issue 27).

A session that dies with "Invalid signature in thinking block", "Function call is missing a
thought_signature", "Missing reasoning_content" or "Item with id 'rs_...' not found" was
usually damaged by the program that saved it: a carrier truncated, re-encoded, trimmed or
dropped. The doctor reads the session formats people have (:mod:`.readers`), checks every
opaque carrier's structure and every carrier a provider requires (:mod:`.checks`, rules as
data in :mod:`.facts`, the dialect objects of :mod:`reasonwire.wire` for the rest), and
writes a repaired copy by the providers' documented rules (:mod:`.repair`), never in place
and never inventing a carrier.
"""

from __future__ import annotations

from pathlib import Path

from reasonwire.doctor.model import Change, Document, Finding
from reasonwire.doctor.readers import FORMATS, parse
from reasonwire.doctor.report import findings
from reasonwire.errors import Unreadable


def read(path: str | Path, fmt: str | None = None, profile: str | None = None) -> Document:
    """Parse one session file (:class:`Unreadable` when it is no known format)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise Unreadable(f"{p}: {exc.strerror or exc}") from None
    return parse(p, data, fmt, profile)


def check_bytes(
    data: bytes, name: str = "<bytes>", fmt: str | None = None, profile: str | None = None
) -> list[Finding]:
    """The findings of one file's content."""
    doc = parse(Path(name), data, fmt, profile)
    return findings(doc, name)


def check_file(
    path: str | Path, fmt: str | None = None, profile: str | None = None
) -> list[Finding]:
    """The findings of one session file."""
    doc = read(path, fmt, profile)
    return findings(doc, str(path))


__all__ = [
    "FORMATS",
    "Change",
    "Document",
    "Finding",
    "Unreadable",
    "check_bytes",
    "check_file",
    "findings",
    "parse",
    "read",
]
