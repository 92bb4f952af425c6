"""The one credential detector: :func:`reasonwire.credentials.redact` and the qualification
evidence validator both ask it, so what one removes the other refuses.

It finds key-shaped strings (OpenAI/Anthropic/OpenRouter ``sk-``, xAI ``xai-``, Google
``AIza``, GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``/``github_pat_``, Hugging Face
``hf_``, AWS access key ids ``AKIA``/``ASIA``, Groq ``gsk_``, Cerebras ``csk-``, NVIDIA
``nvapi-``, Replicate ``r8_`` (sources in ``govern/validator.py`` ``PROVIDER_KEYS``),
``Bearer`` tokens, JWS/JWT-shaped ``eyJ..``
tokens, PEM private-key blocks) in a text as written *and* as JSON would read it: a key
spelled with ``\\u0073k-`` escapes, or a token cut by ``\\/``, is found in the unescaped view
and reported at its span in the original text. :func:`scan_json` walks a parsed document and
reports the JSON path (keys and values; a credential-shaped key name is reported at its
parent, flagged ``in_key``).

A finding is a kind and a place (a span or a path), never the matched value: nothing this
module returns can print a credential.

Linear time. Every pattern is a literal prefix followed by one run of one character class
(or a fixed count), guarded by a look-behind that rejects a start inside such a run; a failed
attempt at a run's start therefore costs that run once and the starts inside it cost O(1)
each, and a successful one resumes after its end. The JWS shape has three dot-separated runs,
so each run is read at most three times. PEM blocks pair a ``BEGIN`` marker with the next
``END`` marker through one remembered forward search, not a lazy ``.*?``; what lies inside a
block is part of it, and a block without ``END`` runs to the end of the text. Each unescaped
view is built in one pass (at most three, for JSON nested in JSON strings).
``tests/test_credentials.py`` and ``tests/govern/test_validator_secrets.py`` time it on
0.5-2 MB of base64-like text and of repeated near-miss prefixes.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate

__all__ = [
    "KINDS",
    "SECRET_FIELDS",
    "SECRET_FIELD_KIND",
    "Match",
    "PathMatch",
    "format_path",
    "is_secret_field",
    "load_pairs",
    "scan_json",
    "scan_text",
]

# Record fields whose values are credentials whatever they look like (compared lower-case,
# with ``-`` read as ``_``).
SECRET_FIELDS = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "api_key",
        "apikey",
        "x_api_key",
        "x_goog_api_key",
        "access_token",
        "refresh_token",
        "agent_key",
        "client_secret",
        "cookie",
        "set_cookie",
    }
)
SECRET_FIELD_KIND = "value of a secret-named field"

# group name -> the kind a message names
_KIND = {
    "sk": "sk- key",
    "xai": "xai- key",
    "google": "Google API key",
    "github": "GitHub token",
    "github_pat": "GitHub token",
    "hf": "Hugging Face token",
    "aws": "AWS access key id",
    "groq": "Groq API key",
    "cerebras": "Cerebras API key",
    "nvidia": "NVIDIA API key",
    "replicate": "Replicate API token",
    "jws": "JWS-shaped token",
    "bearer": "bearer token",
    "pem": "PEM private key",
}
KINDS: tuple[str, ...] = tuple(dict.fromkeys(_KIND.values()))

# Boundaries keep base64 carrier values intact: a real key is not glued to further key
# characters. Prefixes with ``-``/``_`` cannot occur inside standard base64, and a JWS needs
# two dots, which base64 lacks, so their look-behind is the base64url alphabet only (a key
# after ``/`` in a URL is still found); ``AIza`` and ``AKIA`` also refuse ``+`` and ``/``.
_URL = r"[A-Za-z0-9_\-]"
_B64 = r"[A-Za-z0-9+/_\-]"
_TOKENS = re.compile(
    # Each alternative opens with its literal prefix (so the engine skips to candidate
    # characters at C speed) and then looks behind the prefix for a glued key character.
    r"sk-(?<!" + _URL + r"sk-)(?P<sk>[A-Za-z0-9_\-]{12,})"
    r"|xai-(?<!" + _URL + r"xai-)(?P<xai>[A-Za-z0-9_\-]{20,})"
    r"|AIza(?<!" + _B64 + r"AIza)(?P<google>[0-9A-Za-z_\-]{35})(?![A-Za-z0-9+/_\-=])"
    r"|gh(?<!" + _URL + r"gh)(?P<github>[pousr]_[A-Za-z0-9]{30,})"
    r"|github_pat_(?<!" + _URL + r"github_pat_)(?P<github_pat>[A-Za-z0-9_]{30,})"
    r"|hf_(?<!" + _URL + r"hf_)(?P<hf>[A-Za-z0-9]{30,})"
    r"|A(?<!" + _B64 + r"A)(?P<aws>[KS]IA[A-Z0-9]{16})(?![A-Za-z0-9+/_\-=])"
    r"|gsk_(?<!" + _URL + r"gsk_)(?P<groq>[A-Za-z0-9]{20,})"
    r"|csk[-_](?<!" + _URL + r"csk[-_])(?P<cerebras>[A-Za-z0-9_\-]{20,})"
    r"|nvapi-(?<!" + _URL + r"nvapi-)(?P<nvidia>[A-Za-z0-9_\-]{20,})"
    r"|r8_(?<!" + _URL + r"r8_)(?P<replicate>[A-Za-z0-9]{20,})"
    r"|eyJ(?<!" + _URL + r"eyJ)(?P<jws>[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*)"
    r"|[Bb](?<![A-Za-z0-9][Bb])[Ee][Aa][Rr][Ee][Rr][ \t]+(?P<bearer>[A-Za-z0-9._~+/\-]{8,}=*)"
    r"|-----BEGIN (?P<pem>[A-Z0-9 ]{1,60})-----"
)
# Spans of the groups above start after the prefix; the prefix belongs to the credential
# (except "Bearer ", which is kept so a redacted header still says what it was).
_PREFIX = {
    "sk": 3,
    "xai": 4,
    "google": 4,
    "github": 2,
    "github_pat": 11,
    "hf": 3,
    "aws": 1,
    "groq": 4,
    "cerebras": 4,
    "nvidia": 6,
    "replicate": 3,
    "jws": 3,
    "bearer": 0,
}
_PEM_END = "-----END "
_PEM_END_LINE = re.compile(r"-----END [A-Z0-9 ]{1,60}-----")

# JSON string escapes, as a decoder reads them (``\\u`` with four hex digits, or one char).
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\"\\/bfnrt]))")
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_MAX_UNESCAPE = 3  # JSON in a JSON string in a JSON string


@dataclass(frozen=True, slots=True)
class Match:
    """A credential-shaped string of ``kind`` at ``text[start:end]`` (never the value)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class PathMatch:
    """A credential of ``kind`` in a JSON document: the value at ``path``, or (``in_key``)
    the name of one of the keys of the object at ``path``."""

    kind: str
    path: tuple[str | int, ...]
    in_key: bool = False


def is_secret_field(name: str) -> bool:
    """A field whose value is a credential whatever it looks like (``Authorization``...)."""
    return name.lower().replace("-", "_") in SECRET_FIELDS


def _bearer_ok(token: str) -> bool:
    # "Bearer authentication" is prose; a token has a digit or a symbol, or is long.
    return len(token) >= 16 or not token.isalpha()


def _scan_plain(text: str, extra: Iterable[tuple[str, re.Pattern[str]]]) -> list[Match]:
    out: list[Match] = []
    # The first "-----END " after the last searched BEGIN (-1: none left). A new search starts
    # only past the previous hit, so all searches together read the text once.
    end_at = 0
    pem_until = -1  # the end of the last PEM block: anything inside it is part of it
    for m in _TOKENS.finditer(text):
        name = m.lastgroup
        if name is None:  # pragma: no cover - every alternative is a named group
            continue
        start, end = m.span(name)
        if start < pem_until:
            continue
        if name == "bearer" and not _bearer_ok(m.group(name)):
            continue
        if name == "pem":
            if "PRIVATE" not in m.group(name):
                continue
            start, end = m.span()
            if end_at != -1 and end_at < end:
                end_at = text.find(_PEM_END, end)
            if end_at == -1:
                out.append(Match(_KIND[name], start, len(text)))
                break  # no END marker: the rest may be key material, all of it
            line = _PEM_END_LINE.match(text, end_at)
            end = pem_until = line.end() if line else end_at + len(_PEM_END)
        else:
            start -= _PREFIX[name]
        out.append(Match(_KIND[name], start, end))
    for kind, pattern in extra:
        out.extend(Match(kind, *m.span()) for m in pattern.finditer(text))
    return out


def _unescape(m: re.Match[str]) -> str:
    hexa, simple = m.groups()
    return chr(int(hexa, 16)) if hexa is not None else _SIMPLE[simple]


class _View:
    """``source`` with its JSON escapes decoded, and the way back to the source's offsets.

    Escape ``k`` spans ``source[starts[k]:ends[k]]`` and reads as the one character at
    ``at[k]`` of the view; every other character maps one to one.
    """

    def __init__(self, source: str) -> None:
        self.text = _ESCAPE.sub(_unescape, source)
        spans = [m.span() for m in _ESCAPE.finditer(source)]
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]
        shrink = accumulate((e - s - 1 for s, e in spans), initial=0)
        self.at = [s - d for s, d in zip(self.starts, shrink, strict=False)]

    def _char(self, i: int) -> tuple[int, int]:
        """The source span of view character ``i``."""
        k = bisect_right(self.at, i) - 1
        if k < 0:
            return i, i + 1
        if self.at[k] == i:
            return self.starts[k], self.ends[k]
        src = self.ends[k] + (i - self.at[k] - 1)
        return src, src + 1

    def back(self, start: int, end: int) -> tuple[int, int]:
        return self._char(start)[0], self._char(end - 1)[1]


def scan_text(text: str, extra: Iterable[tuple[str, re.Pattern[str]]] = ()) -> list[Match]:
    """Every credential-shaped string in ``text``, as written and as JSON unescapes it,
    sorted by position; spans are in ``text``. ``extra`` adds ``(kind, pattern)`` rules
    (e.g. the exact keys this process has loaded); each pattern must itself be linear."""
    rules = tuple(extra)
    plain = _scan_plain(text, rules)
    if "\\" not in text:
        return plain if not rules else sorted(plain, key=lambda m: (m.start, m.end, m.kind))
    found = set(plain)
    views: list[_View] = []
    layer = text
    while "\\" in layer and len(views) < _MAX_UNESCAPE:
        view = _View(layer)
        if view.text == layer:
            break
        views.append(view)
        layer = view.text
        for m in _scan_plain(layer, rules):
            s, e = m.start, m.end
            for v in reversed(views):
                s, e = v.back(s, e)
            found.add(Match(m.kind, s, e))
    return sorted(found, key=lambda m: (m.start, m.end, m.kind))


class _Pairs(list[tuple[str, object]]):
    """A JSON object as its list of (key, value) pairs: repeated keys are all kept."""


def load_pairs(text: str) -> object:
    """Parse JSON keeping every member of every object, repeated keys included (the walk
    must see the value a later duplicate would hide). Raises ``ValueError``."""
    return json.loads(text, object_pairs_hook=_Pairs)


def scan_json(doc: object, extra: Iterable[tuple[str, re.Pattern[str]]] = ()) -> list[PathMatch]:
    """Every credential in a parsed JSON document (from ``json.loads`` or
    :func:`load_pairs`): string values and key names through :func:`scan_text`, and any
    non-empty value of a secret-named field. In document order, each (kind, place) once.

    The strings are scanned as one text joined by NULs (no pattern crosses a NUL), so a
    document of many short strings costs one scan, not one per string.
    """
    places: list[tuple[tuple[str | int, ...], bool]] = []
    strings: list[str] = []
    named: list[PathMatch] = []
    stack: list[tuple[tuple[str | int, ...], object]] = [((), doc)]
    while stack:
        path, node = stack.pop()
        items: list[tuple[str | int, object]]
        if isinstance(node, str):
            places.append((path, False))
            strings.append(node)
            continue
        if isinstance(node, _Pairs):
            items = list(node)
        elif isinstance(node, Mapping):
            items = list(node.items())
        elif isinstance(node, list | tuple):
            items = list(enumerate(node))
        else:
            continue
        for key, value in items:
            if isinstance(key, str):
                places.append((path, True))
                strings.append(key)
                if is_secret_field(key) and value not in (None, ""):
                    named.append(PathMatch(SECRET_FIELD_KIND, (*path, key)))
        stack.extend(((*path, k), v) for k, v in reversed(items))
    starts: list[int] = []
    pos = 0
    for text in strings:
        starts.append(pos)
        pos += len(text) + 1
    out: dict[PathMatch, None] = {}
    for m in scan_text("\0".join(strings), extra):
        path, in_key = places[bisect_right(starts, m.start) - 1]
        out[PathMatch(m.kind, path, in_key)] = None
    for pm in named:
        out[pm] = None
    return list(out)


_PLAIN_PART = re.compile(r"[A-Za-z0-9_\-]{1,64}")


def format_path(path: Iterable[str | int]) -> str:
    """A dotted path (``observations.0.usage``) safe to print: a credential-shaped key name
    shows as ``[redacted]``, an odd one JSON-quoted and cut at 40 characters."""
    parts = []
    for p in path:
        if isinstance(p, int):
            parts.append(str(p))
        elif scan_text(p):
            parts.append("[redacted]")
        elif _PLAIN_PART.fullmatch(p):
            parts.append(p)
        else:
            parts.append(json.dumps(p[:40] + ("..." if len(p) > 40 else "")))
    return ".".join(parts) or "(root)"
