"""The doctor's data: a file read into conversations of history items, and findings.

A reader (:mod:`.readers`) turns one session file, whatever program wrote it, into
:class:`Conversation` objects: provider-native history items (Anthropic content blocks,
Gemini parts, Responses input items, Chat messages) with where each came from. The checks
(:mod:`.checks`) see only those, so a new session format is one reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from reasonwire.wire.model import JSON, JsonObject


@dataclass(eq=False)
class Item:
    """One provider-native history item.

    ``value`` is what the checks read (the native item); ``origin`` is the object in the
    parsed file it stands for (the same object for native formats; the file's own block for
    a format that stores it differently), ``container`` the list in the file holding
    ``origin`` (a repair that drops the item removes it there), ``keys`` maps native keys to
    the file's own (pi writes ``thinkingSignature`` for ``signature``)."""

    value: JSON
    path: str
    line: int | None
    origin: JSON = None
    container: list[JSON] | None = None
    doc_line: int | None = None
    keys: dict[str, str] = field(default_factory=dict)


@dataclass(eq=False)
class Message:
    """One history message: ``assistant`` (the model's turn, or one step of it) or another
    role; ``items`` in order. ``model``/``provider`` as the session recorded them."""

    role: str
    items: list[Item]
    dialect: str
    line: int | None = None
    path: str = "$"
    model: str | None = None
    provider: str | None = None
    turn: int = 0


@dataclass(eq=False)
class Conversation:
    """Messages in the order they would be replayed, plus what the session says about the
    request: ``thinking`` on/off (None: not recorded), ``store`` (server-side state; None:
    the dialect's default), ``profile`` (the wire Profile of the route, for Chat)."""

    messages: list[Message]
    thinking: bool | None = None
    store: bool | None = None
    profile: str | None = None


@dataclass
class Document:
    """A parsed file: ``lines`` for line-oriented files (parsed JSON per line, None for a
    blank or foreign line), else ``whole``. ``dirty`` lines are re-serialised on write;
    every other line is written back byte for byte."""

    path: Path
    format: str
    raw_lines: list[str] = field(default_factory=list)
    lines: list[JSON] = field(default_factory=list)
    whole: JSON = None
    line_oriented: bool = True
    dirty: set[int] = field(default_factory=set)
    dropped: set[int] = field(default_factory=set)
    rows: list[int] | None = None
    """SQLite row ids, one per line (an Agents SDK session database)."""
    conversations: list[Conversation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong, where it is and what to do (the ``--json`` object, issue 27)."""

    file: str
    line: int | None
    path: str
    kind: str
    severity: str
    provider: str
    detail: str
    fix: str
    turn: int = 0

    def as_json(self) -> JsonObject:
        return _as_json(self, skip="turn")


def _as_json(record: Finding | Change, skip: str = "") -> JsonObject:
    """A report record as its JSON object: every field but ``skip``, in field order."""
    return {f.name: getattr(record, f.name) for f in fields(record) if f.name != skip}


@dataclass(frozen=True, slots=True)
class Change:
    """One repair: what was done where, the rule and the provider source it follows."""

    line: int | None
    path: str
    action: str
    rule: str
    source: str

    def as_json(self) -> JsonObject:
        return _as_json(self)
