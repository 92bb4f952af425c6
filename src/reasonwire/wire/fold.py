"""The fold: shorten long replayed reasoning *text* in a request body, leave everything else.

A client that replays its model's reasoning pays for it as input on every later call. When a
replayed text carrier is at least ``floor_chars`` long (the spec's "minimum reasoning block
length for the fold to apply"), the fold keeps its first ``head_chars``
and last ``tail_chars`` characters and puts a short marker between them saying how many
characters were folded::

    head + "\\n\\n[... 6000 characters folded ...]\\n\\n" + tail

What is folded is data on the dialect objects, nothing here names a dialect:
``Dialect.fold_where`` maps each foldable carrier kind (a non-opaque entry of
``Dialect.carriers``) to where it sits in a request body. Today that is chat
``reasoning_content`` / ``reasoning`` / ``reasoning_details`` entries of type
``reasoning.text`` without a signature (their ``text``), Responses reasoning items'
``summary_text`` / ``reasoning_text`` parts, and Gemini ``thought`` parts that carry no
``thoughtSignature`` of their own. Anthropic ``thinking`` text is never folded: it is signed.
Opaque carriers (signatures, encrypted content, thought signatures, redacted thinking,
encrypted ``reasoning_details``) are never touched, and a body in which nothing is folded is
returned as the very same object (a transport then forwards the original bytes).

Characters, not bytes: lengths are code points of the decoded JSON string. A cut never
splits a grapheme cluster's tail from its base (:func:`safe_cut`): the head cut moves back
and the tail cut moves forward to the nearest safe boundary, so the kept head is
``text[:h]`` with ``h`` the largest safe position <= ``head_chars`` and the kept tail is
``text[t:]`` with ``t`` the smallest safe position >= ``len(text) - tail_chars``. The folded
text is then never longer than ``head_chars + tail_chars + len(marker)``, keeps valid UTF-8
valid, and folding it again changes nothing (:func:`is_folded`).

Pure: no I/O, no mutation of the input (copy-on-write along the edited paths only).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reasonwire.errors import ConfigError
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.registry import get_dialect

Action = Literal["fold", "drop"]

DEFAULT_FLOOR_CHARS = 12000
DEFAULT_HEAD_CHARS = 4000
DEFAULT_TAIL_CHARS = 2000

MARKER_RE = re.compile(r"\n\n\[\.\.\. (\d+) characters folded \.\.\.\]\n\n")


def marker(folded: int) -> str:
    """The text put between head and tail: says how many characters were folded."""
    return f"\n\n[... {folded} characters folded ...]\n\n"


# -- settings --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FoldSettings:
    """What to fold, where. Off by default (``enabled=False``: nothing is changed).

    ``providers``: the routes / hosts the fold applies to, each entry matched against the
    route name, the host, ``route/model`` and ``host/model`` of a call; ``None`` (the
    default) means every route, an empty set means none. ``drop``: routes / hosts (same
    matching, checked first) whose provider ignores replayed reasoning text: there every
    text carrier is sent empty (its key and shape kept; opaque carriers untouched).

    Raises :class:`~reasonwire.errors.ConfigError` unless ``floor_chars > head_chars +
    tail_chars`` and the three are non-negative integers.
    """

    enabled: bool = False
    floor_chars: int = DEFAULT_FLOOR_CHARS
    head_chars: int = DEFAULT_HEAD_CHARS
    tail_chars: int = DEFAULT_TAIL_CHARS
    providers: frozenset[str] | None = None
    drop: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for name in ("floor_chars", "head_chars", "tail_chars"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ConfigError(f"fold: {name} must be a non-negative integer, not {value!r}")
        if not self.floor_chars > self.head_chars + self.tail_chars:
            raise ConfigError(
                f"fold: floor_chars ({self.floor_chars}) must be greater than head_chars + "
                f"tail_chars ({self.head_chars} + {self.tail_chars})"
            )
        if type(self.enabled) is not bool:
            raise ConfigError(f"fold: enabled must be true or false, not {self.enabled!r}")

    def action(
        self,
        route: str | None = None,
        host: str | None = None,
        model: str | None = None,
    ) -> Action | None:
        """What to do for a call to ``route`` at ``host`` for ``model`` (None: nothing)."""
        if not self.enabled:
            return None
        names = _names(route, host, model)
        if self.drop and not names.isdisjoint(self.drop):
            return "drop"
        if self.providers is None or not names.isdisjoint(self.providers):
            return "fold"
        return None

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any], where: str = "fold settings") -> FoldSettings:
        """Settings from a TOML-style table (``enabled``, ``floor_chars``, ``head_chars``,
        ``tail_chars``, ``providers``, ``drop``); unknown keys are a ConfigError."""
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
        kw: dict[str, Any] = {}
        for key in ("enabled", "floor_chars", "head_chars", "tail_chars"):
            if key in table:
                kw[key] = table[key]
        for key in ("providers", "drop"):
            if key in table:
                value = table[key]
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ConfigError(f"{where}: {key} must be a list of strings")
                kw[key] = frozenset(v.strip() for v in value if v.strip())
        try:
            return cls(**kw)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


_KEYS = frozenset({"enabled", "floor_chars", "head_chars", "tail_chars", "providers", "drop"})


def _names(route: str | None, host: str | None, model: str | None) -> set[str]:
    names = {n for n in (route, host) if n}
    if model:
        names |= {f"{n}/{model}" for n in list(names)}
    return names


# -- one text --------------------------------------------------------------------------------


def _extends(ch: str) -> bool:
    """True for a code point that belongs to the cluster before it (never starts one):
    combining marks (Mn, Me, Mc: accents, variation selectors, spacing marks), ZWJ / ZWNJ,
    emoji skin-tone modifiers and emoji tag characters."""
    cp = ord(ch)
    if cp < 0x300:
        return False
    if cp in (0x200C, 0x200D):
        return True
    if 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F:
        return True
    return unicodedata.category(ch) in ("Mn", "Me", "Mc")


def _ri(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _hangul(ch: str) -> str:
    """Hangul syllable type: L, V, T, LV, LVT, or '' (not Hangul jamo or syllable)."""
    cp = ord(ch)
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return "L"
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return "V"
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return "T"
    if 0xAC00 <= cp <= 0xD7A3:
        return "LV" if (cp - 0xAC00) % 28 == 0 else "LVT"
    return ""


_HANGUL_JOIN = {
    ("L", "L"), ("L", "V"), ("L", "LV"), ("L", "LVT"),
    ("V", "V"), ("V", "T"), ("LV", "V"), ("LV", "T"),
    ("T", "T"), ("LVT", "T"),
}  # fmt: skip


def safe_cut(text: str, i: int) -> bool:
    """True when cutting ``text`` at ``i`` (between ``text[i-1]`` and ``text[i]``) keeps
    every grapheme cluster whole, as far as these rules of Unicode's UAX #29 go:

    - never inside a surrogate pair held as two code points, nor between CR and LF;
    - never before a combining mark, variation selector, ZWJ/ZWNJ, emoji modifier or tag;
    - never after a ZWJ (an emoji ZWJ sequence stays whole);
    - never between the two regional indicators of one flag (pairs counted from the run's
      start), nor inside a Hangul jamo syllable sequence.

    Prepend characters (GB9b) are not handled: a cut may separate one from what follows.
    """
    if i <= 0 or i >= len(text):
        return True
    a, b = text[i - 1], text[i]
    if a == "\r" and b == "\n":
        return False
    if _extends(b) or a == "\u200d":
        return False
    if 0xD800 <= ord(a) <= 0xDBFF and 0xDC00 <= ord(b) <= 0xDFFF:
        return False
    if _ri(a) and _ri(b):
        run = 0
        j = i - 1
        while j >= 0 and _ri(text[j]):
            run += 1
            j -= 1
        return run % 2 == 0
    ha = _hangul(a)
    return not (ha and (ha, _hangul(b)) in _HANGUL_JOIN)


def head_cut(text: str, head: int) -> int:
    """The largest safe cut position <= ``head`` (0 at worst)."""
    h = min(head, len(text))
    while h > 0 and not safe_cut(text, h):
        h -= 1
    return h


def tail_cut(text: str, tail: int) -> int:
    """The smallest safe cut position >= ``len(text) - tail`` (``len(text)`` at worst)."""
    n = len(text)
    t = max(n - tail, 0)
    while t < n and not safe_cut(text, t):
        t += 1
    return t


def is_folded(text: str, settings: FoldSettings) -> bool:
    """True when ``text`` already has the fold's shape for these settings: a marker that
    starts within the first ``head_chars`` characters and is followed by at most
    ``tail_chars`` characters. Folding such a text again leaves it as it is."""
    n = len(text)
    for m in MARKER_RE.finditer(text, 0, settings.head_chars + len(marker(n)) + 1):
        if m.start() <= settings.head_chars and n - m.end() <= settings.tail_chars:
            return True
    return False


def fold_cuts(text: str, settings: FoldSettings) -> tuple[int, int] | None:
    """``(h, t)``: the fold keeps ``text[:h]`` and ``text[t:]``; None when ``text`` stays as
    it is (``len(text) < floor_chars``: the floor is the minimum length that folds, or
    already folded)."""
    if len(text) < settings.floor_chars or is_folded(text, settings):
        return None
    return head_cut(text, settings.head_chars), tail_cut(text, settings.tail_chars)


def fold_text(text: str, settings: FoldSettings) -> str:
    """``text`` folded by ``settings`` (ignores ``enabled`` and ``providers``): unchanged
    when ``len(text) < floor_chars`` or it is already folded, else head + marker + tail."""
    cuts = fold_cuts(text, settings)
    if cuts is None:
        return text
    h, t = cuts
    return text[:h] + marker(t - h) + text[t:]


# -- a request body --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FoldedText:
    """One text carrier the fold changed: where, how long before, how much was removed."""

    kind: str
    path: str
    chars: int
    kept: int
    action: Action

    @property
    def folded(self) -> int:
        """Characters removed (the marker's own characters not counted)."""
        return self.chars - self.kept


@dataclass(frozen=True, slots=True)
class FoldReport:
    """What :func:`fold_request` did. ``action`` None: nothing applied (``reason`` says why);
    ``seen``: text carriers found; ``texts``: the ones changed."""

    dialect: str
    action: Action | None
    reason: str
    seen: int = 0
    texts: tuple[FoldedText, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.texts)

    @property
    def folded_chars(self) -> int:
        return sum(t.folded for t in self.texts)


_SEG = re.compile(r"([^.\[\]()]+)(?:\[([^\]]+)\])?(?:\(([^)]*)\))?(?:\.|$)")


@dataclass(frozen=True, slots=True)
class _Step:
    key: str
    each: bool  # the value is a list: every element
    index: int | None
    filters: tuple[tuple[str, Any, bool], ...]  # (key, value, negated "absent or null")


def _literal(raw: str) -> Any:
    return {"true": True, "false": False, "null": None}.get(raw, raw)


def parse_where(where: str) -> tuple[_Step, ...]:
    """A ``fold_where`` path (``a[i](k=v,!s).b.text``) as steps; ConfigError if malformed."""
    steps: list[_Step] = []
    pos = 0
    while pos < len(where):
        m = _SEG.match(where, pos)
        if m is None or m.end() == pos:
            raise ConfigError(f"fold_where: cannot read {where!r} at {pos}")
        key, idx, flt = m.groups()
        filters: list[tuple[str, Any, bool]] = []
        for part in (flt or "").split(","):
            part = part.strip()
            if not part:
                continue
            if part.startswith("!"):
                filters.append((part[1:], None, True))
            elif "=" in part:
                k, _, v = part.partition("=")
                filters.append((k.strip(), _literal(v.strip()), False))
            else:
                raise ConfigError(f"fold_where: bad filter {part!r} in {where!r}")
        each = idx is not None and not idx.isdigit()
        steps.append(_Step(key, each, int(idx) if idx and idx.isdigit() else None,
                           tuple(filters)))  # fmt: skip
        pos = m.end()
    if not steps:
        raise ConfigError("fold_where: empty path")
    return tuple(steps)


def _passes(node: Any, filters: tuple[tuple[str, Any, bool], ...]) -> bool:
    if not filters:
        return True
    if not isinstance(node, dict):
        return False
    for key, value, negated in filters:
        if negated:
            if node.get(key) is not None:
                return False
        elif key not in node or node[key] != value or type(node[key]) is not type(value):
            return False
    return True


Path_ = tuple[str | int, ...]


def _find(node: Any, steps: tuple[_Step, ...], path: Path_) -> Iterator[tuple[Path_, str]]:
    """Every string at ``steps`` under ``node``, with its path of keys and indexes."""
    step, rest = steps[0], steps[1:]
    if not isinstance(node, dict) or step.key not in node:
        return
    value = node[step.key]
    here: Path_ = (*path, step.key)
    targets: list[tuple[Path_, Any]]
    if step.each or step.index is not None:
        if not isinstance(value, list):
            return
        if step.each:
            targets = [((*here, i), v) for i, v in enumerate(value)]
        elif step.index is not None and step.index < len(value):
            targets = [((*here, step.index), value[step.index])]
        else:
            targets = []
    else:
        targets = [(here, value)]
    for p, v in targets:
        if not _passes(v, step.filters):
            continue
        if rest:
            yield from _find(v, rest, p)
        elif isinstance(v, str):
            yield p, v


def _apply(node: Any, edits: list[tuple[Path_, str]]) -> Any:
    """A copy of ``node`` with ``edits`` applied; only containers on an edited path are
    copied, everything else is shared with the input (which is never mutated)."""
    groups: dict[str | int, list[tuple[Path_, str]]] = {}
    for p, v in edits:
        groups.setdefault(p[0], []).append((p[1:], v))
    copy: Any = dict(node) if isinstance(node, dict) else list(node)
    for k, sub in groups.items():
        if len(sub) == 1 and not sub[0][0]:
            copy[k] = sub[0][1]
        else:
            copy[k] = _apply(node[k], sub)
    return copy


def _show(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


_WHERE_CACHE: dict[str, tuple[_Step, ...]] = {}


def text_sites(dialect: Dialect, body: Mapping[str, Any]) -> list[tuple[str, Path_, str]]:
    """(carrier kind, path, text) of every foldable text carrier in a request ``body``:
    the dialect's ``fold_where`` entries whose kind is a text (non-opaque) carrier."""
    text_kinds = {c.name for c in dialect.carriers if not c.opaque}
    out: list[tuple[str, Path_, str]] = []
    for kind, where in dialect.fold_where.items():
        if kind not in text_kinds:
            continue  # an opaque carrier is never folded, whatever the table says
        steps = _WHERE_CACHE.get(where)
        if steps is None:
            steps = _WHERE_CACHE[where] = parse_where(where)
        out.extend((kind, p, text) for p, text in _find(body, steps, ()))
    return out


def fold_request(
    dialect: str | Dialect,
    body: dict[str, Any],
    settings: FoldSettings,
    *,
    route: str | None = None,
    host: str | None = None,
    model: str | None = None,
) -> tuple[dict[str, Any], FoldReport]:
    """Fold the replayed reasoning text of one request ``body`` (the JSON put on the wire).

    ``route`` / ``host`` / ``model`` are matched against ``settings.providers`` and
    ``settings.drop`` (``model`` defaults to the body's ``model``); with a ``providers`` limit
    and none of them given, nothing is folded. Returns ``(new_body, report)``; ``new_body``
    is ``body`` itself (the same object) when nothing changed. Pure: ``body`` is not mutated.
    """
    d = get_dialect(dialect) if isinstance(dialect, str) else dialect
    if not isinstance(body, dict):
        return body, FoldReport(d.name, None, "body is not a JSON object")
    if model is None and isinstance(body.get("model"), str):
        model = body["model"]
    action = settings.action(route, host, model)
    if action is None:
        why = "fold disabled" if not settings.enabled else "route not in fold providers"
        return body, FoldReport(d.name, None, why)
    sites = text_sites(d, body)
    edits: list[tuple[Path_, str]] = []
    texts: list[FoldedText] = []
    for kind, path, text in sites:
        if action == "drop":
            if not text:
                continue
            new, kept = "", 0
        else:
            cuts = fold_cuts(text, settings)
            if cuts is None:
                continue
            h, t = cuts
            new, kept = text[:h] + marker(t - h) + text[t:], h + len(text) - t
        edits.append((path, new))
        texts.append(FoldedText(kind, _show(path), len(text), kept, action))
    if not edits:
        return body, FoldReport(d.name, action, "nothing to fold", len(sites))
    return _apply(body, edits), FoldReport(d.name, action, "", len(sites), tuple(texts))


__all__ = [
    "DEFAULT_FLOOR_CHARS",
    "DEFAULT_HEAD_CHARS",
    "DEFAULT_TAIL_CHARS",
    "MARKER_RE",
    "FoldReport",
    "FoldSettings",
    "FoldedText",
    "fold_cuts",
    "fold_request",
    "fold_text",
    "head_cut",
    "is_folded",
    "marker",
    "parse_where",
    "safe_cut",
    "tail_cut",
    "text_sites",
]
