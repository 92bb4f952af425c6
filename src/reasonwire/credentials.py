"""Keys: where one lives, how it is read, how a string that may be one is recognised.

The one key model of reasonwire; routes (:mod:`reasonwire.routes`), the agent's constructors,
the eval runner and the gateway all describe a key's place with a :data:`KeySource` and read it
with :func:`read_key` or :func:`read_first`.

- **Sources.** A key lives in an environment variable (:class:`EnvKey`), a dotenv file
  (:class:`DotenvKey`) or a JSON auth file at a dotted key path with fallbacks
  (:class:`AuthFileKey`, e.g. ``providers.nous.agent_key`` then ``access_token``). A reader
  may name a dotenv file where a variable that is not set is looked up under the same name
  (``~/.hermes/.env`` for routes and the agent). Keys are read when a request is about to be
  made, never cached and never written, so a rotated key is picked up at once; only a source
  that can change while a process runs (:func:`can_change`: a file) is worth reading again
  after a ``401``.
- **Heuristics.** A string may be a key when it has a known key prefix or a shape the
  redaction step knows, or is a long mix of cases and digits (:func:`looks_like_key`). Such a
  string is never shown: messages describe it by kind and length (:func:`describe`), a name
  argument that looks like one is refused (:func:`check_name`), and every key read or handed
  over is checked for use in a header and registered for redaction (:func:`check_key`).
- **Redaction.** Every value read is remembered (as a secret, not as a cache) so that
  :func:`redact` removes it from any text, in addition to anything *shaped* like a key (the
  one detector in :mod:`reasonwire.secrets_scan`); :func:`redact_obj` does the same for a
  record and blanks header-like fields (``authorization``, ``x-api-key``...).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from reasonwire.errors import ConfigError, CredentialError

# Re-exported (``x as x``): redaction and the secret-field names are part of this API.
from reasonwire.redaction import REDACTED as REDACTED
from reasonwire.redaction import redact as redact
from reasonwire.redaction import redact_obj as redact_obj
from reasonwire.redaction import register_secret as register_secret
from reasonwire.secrets_scan import SECRET_FIELDS as SECRET_FIELDS

if TYPE_CHECKING:  # the wire package is not loaded to read a key
    from reasonwire.wire.model import JSON

# --------------------------------------------------------------------------------------------
# Recognising a key without showing it
# --------------------------------------------------------------------------------------------

# Prefixes of well-known key formats (OpenAI/Anthropic/OpenRouter/DeepSeek sk-, xAI, Google
# API keys, Hugging Face, GitHub, GitLab, Slack, AWS access key ids, JWTs): short forms the
# detector needs more characters to call a key.
_KEY_PREFIXES = (
    "sk-", "sk_", "xai-", "AIza", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "glpat-", "xox", "AKIA", "ASIA", "eyJ",
)  # fmt: skip
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
_MIXED_MIN = 20
"""From this length a mix of lower case, upper case and digits may be a key (variable names
are words: upper case and underscores)."""


def _has_key_shape(text: str) -> bool:
    """A known key prefix, or a shape the redaction step removes: judged on prefixes and shapes
    only, so a file path (which mixes cases and digits) is not taken for a key."""
    return text.startswith(_KEY_PREFIXES) or redact(text) != text


def looks_like_key(text: str) -> bool:
    """True for a string that may be a secret: a known key prefix, a shape the redaction
    step knows, or a long mix of lower case, upper case and digits."""
    if _has_key_shape(text):
        return True
    mixed = (
        any(c.islower() for c in text)
        and any(c.isupper() for c in text)
        and any(c.isdigit() for c in text)
    )
    return len(text) >= _MIXED_MIN and mixed


def describe(text: str) -> str:
    """``text`` by kind and length only (``a key-shaped string of 51 characters``)."""
    kind = "a key-shaped string" if looks_like_key(text) else "a string"
    return f"{kind} of {len(text)} character{'' if len(text) == 1 else 's'}"


def refusal(what: str, text: str) -> ConfigError:
    """A refusal naming ``text`` by kind and length; a string that may be a key (or is no
    variable name at all) is registered so that no later redaction step lets it through."""
    if looks_like_key(text) or not _ENV_NAME.fullmatch(text):
        register_secret(text)
    return ConfigError(f"{what} (got {describe(text)})")


def check_name(text: str, what: str, *, path: bool = False) -> None:
    """Refuse a variable name, file path or key path that may be a key pasted in the wrong
    place (it would otherwise be named in a 'not set' message). A path is judged by key
    prefixes and shapes only."""
    if _has_key_shape(text) if path else looks_like_key(text):
        raise refusal(f"{what} looks like a key, not a name; pass the key itself as api_key=", text)


def check_env_name(text: object, what: str) -> str:
    """``text`` as the name of an environment variable: refused, by kind and length, when it
    is not a name or looks like a key (a key pasted where its variable's name belongs)."""
    if not isinstance(text, str) or not _ENV_NAME.fullmatch(text):
        shown = text if isinstance(text, str) else type(text).__name__
        raise refusal(
            f"{what} takes the name of an environment variable; pass a key as api_key=", shown
        )
    check_name(text, what)
    return text


def check_key(value: str, where: str) -> str:
    """A key as it will go in a header: registered for redaction, stripped, and refused
    (naming ``where``, never the value) when empty or not visible ASCII."""
    return _check_key(value, lambda: where)


_CHECKED: dict[str, str] = {}
"""Keys that passed :func:`_check_key`, as read -> as sent: the gateway reads its upstream
key on every call (so a changed key takes effect on the next one) and the same value needs
checking and registering once (registered secrets are never forgotten). Bounded."""
_MAX_CHECKED = 256


def _check_key(value: str, where: Callable[[], str]) -> str:
    """:func:`check_key` with the place named only when the key is refused (naming a
    source scans its name for key shapes: a cost on every gateway call otherwise)."""
    known = _CHECKED.get(value)
    if known is not None:
        return known
    register_secret(value)
    stripped = value.strip()
    if not stripped or not _HEADER_SAFE.fullmatch(stripped):
        raise CredentialError(
            f"the key from {where()} cannot be sent in a header ({describe(value)}, empty or "
            "with spaces, control or non-ASCII characters)"
        )
    register_secret(stripped)
    if len(_CHECKED) >= _MAX_CHECKED:
        _CHECKED.clear()
    _CHECKED[value] = stripped
    return stripped


def _name(name: str) -> str:
    """A variable name as shown in a message: a key mistaken for a name (``AKIA...``,
    ``hf_...``) is shown by length only, never as written."""
    return f"(a key-shaped name of {len(name)} characters)" if _has_key_shape(name) else name


# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnvKey:
    """The key is the value of environment variable ``name`` (then, for a reader that names
    a dotenv file, ``name`` in that file)."""

    name: str

    def describe(self) -> str:
        return f"environment variable {_name(self.name)}"


@dataclass(frozen=True, slots=True)
class DotenvKey:
    """The key is ``name`` in the dotenv file at ``path``."""

    path: str
    name: str

    def describe(self) -> str:
        return f"{_name(self.name)} in dotenv file {self.path}"


@dataclass(frozen=True, slots=True)
class AuthFileKey:
    """The key sits in a JSON file at the first dotted path of ``key_paths`` that holds a
    non-empty string (``providers.nous.agent_key``, then ``providers.nous.access_token``)."""

    path: str
    key_paths: tuple[str, ...]

    def describe(self) -> str:
        return f"{' or '.join(self.key_paths)} in auth file {self.path}"


KeySource: TypeAlias = EnvKey | DotenvKey | AuthFileKey
"""Where a key lives. A route, a model handle or a gateway registration holds one of these
(or None: no key is sent), never a key value."""

DEFAULT_DOTENV = os.environ.get("REASONWIRE_DOTENV", "~/.hermes/.env")
"""The dotenv file a route's key is read from when its variable is not set (the Hermes agent's
file by default; ``REASONWIRE_DOTENV`` names another). The one place this default lives."""

DEFAULT_AUTH_FILE = os.environ.get("REASONWIRE_AUTH_FILE", "~/.hermes/auth.json")
"""The auth file of routes whose key sits in one (the Nous Portal's agent key);
``REASONWIRE_AUTH_FILE`` names another."""


def parse_source(spec: str) -> KeySource:
    """A key source from its one-line form, as route records and CLI options write it.

    ``env:NAME`` (or a bare ``NAME``), ``dotenv:PATH#NAME``,
    ``authfile:PATH#dotted.path|fallback.path`` (a fallback without dots is taken relative to
    the first path's parent: ``providers.nous.agent_key|access_token``).
    """
    kind, sep, rest = spec.partition(":")
    if not sep and _ENV_NAME.fullmatch(spec):
        return EnvKey(spec)
    if kind == "env" and rest:
        return EnvKey(rest)
    path, hash_, name = rest.rpartition("#")
    if kind == "dotenv" and hash_ and path and name:
        return DotenvKey(path, name)
    if kind == "authfile" and hash_ and path and name:
        paths = [p for p in name.split("|") if p]
        first = paths[0]
        parent = first.rpartition(".")[0]
        full = [first] + [p if "." in p or not parent else f"{parent}.{p}" for p in paths[1:]]
        return AuthFileKey(path, tuple(full))
    raise CredentialError(
        f"bad key source ({describe(spec)}); expected env:NAME, dotenv:PATH#NAME "
        "or authfile:PATH#key.path"
    )


def check_source(source: KeySource) -> KeySource:
    """``source`` when none of its names looks like a key (a key pasted as a variable name,
    file path or key path would be named in a 'not set' message); refused otherwise."""
    if isinstance(source, EnvKey):
        check_name(source.name, "the EnvKey variable")
    elif isinstance(source, DotenvKey):
        check_name(source.name, "the DotenvKey name")
        check_name(source.path, "the DotenvKey path", path=True)
    else:
        check_name(source.path, "the AuthFileKey path", path=True)
        for dotted in source.key_paths:
            check_name(dotted, "an AuthFileKey key path")
    return source


def can_change(source: KeySource | None, *, dotenv: str | None = None) -> bool:
    """Whether reading ``source`` again may give another key while this process runs: a file
    (an auth file its owner refreshes, e.g. an agent login's ``auth.json``; a dotenv file,
    also when it is where a variable that is not set is read from). A variable of the
    process environment cannot change under it: waiting to read it again only delays the
    same refusal."""
    if isinstance(source, EnvKey):
        return dotenv is not None and source.name not in os.environ
    return source is not None


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def parse_dotenv(text: str) -> dict[str, str]:
    """Parse dotenv text: ``KEY=VALUE`` lines, optional ``export``, ``#`` comments, single or
    double quotes (double quotes understand ``\\n``, ``\\"`` and ``\\\\``)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export ") or line.startswith("export\t"):
            line = line[7:].lstrip()
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", key):
            continue
        value = value.strip()
        if value[:1] in ("'", '"'):
            quote = value[0]
            end = value.find(quote, 1)
            while quote == '"' and end > 0 and value[end - 1] == "\\":
                end = value.find(quote, end + 1)
            inner = value[1:end] if end > 0 else value[1:]
            if quote == '"':
                inner = (
                    inner.replace("\\\\", "\0")
                    .replace("\\n", "\n")
                    .replace('\\"', '"')
                    .replace("\0", "\\")
                )
            value = inner
        else:
            hash_at = value.find(" #")
            if hash_at >= 0:
                value = value[:hash_at].rstrip()
        out[key] = value
    return out


def _read_text(path: str, what: str, *, missing_ok: bool = False) -> str | None:
    p = Path(path).expanduser()
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return None
        raise CredentialError(f"{what} not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialError(f"{what} {p} is unreadable ({type(exc).__name__})") from None


def _dig(data: JSON, dotted: str) -> JSON:
    node = data
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _present(value: JSON) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _dotenv_value(path: str, name: str, *, missing_ok: bool = False) -> str | None:
    text = _read_text(path, "dotenv file", missing_ok=missing_ok)
    return None if text is None else _present(parse_dotenv(text).get(name))


def _lookup(source: KeySource) -> str | None:
    """The value at ``source`` now; None when the source holds none (a variable not set, a
    name or key path absent). A file that is missing or unreadable raises, naming it."""
    if isinstance(source, EnvKey):
        return _present(os.environ.get(source.name))
    if isinstance(source, DotenvKey):
        return _dotenv_value(source.path, source.name)
    text = _read_text(source.path, "auth file")
    assert text is not None
    try:
        data: JSON = json.loads(text)
    except json.JSONDecodeError as exc:
        # The message names the position only: the decoder's own message could quote the file.
        raise CredentialError(
            f"auth file {source.path} is not valid JSON (line {exc.lineno})"
        ) from None
    for dotted in source.key_paths:
        value = _present(_dig(data, dotted))
        if value is not None:
            return value
    return None


def read_first(sources: Sequence[KeySource], *, dotenv: str | None = None) -> str | None:
    """The key of the first of ``sources`` that holds one, read now; None when none does.

    Each source is tried as it is, in order; then, when ``dotenv`` names a file (a missing
    one holds nothing), the name of each :class:`EnvKey` in that file, in the same order: a
    variable set in the environment wins over every dotenv entry. The key is checked and
    registered (:func:`check_key`); nothing else keeps it.
    """
    for source in sources:
        value = _lookup(source)
        if value is not None:
            return _check_key(value, source.describe)
    if dotenv is not None:
        for source in sources:
            if isinstance(source, EnvKey):
                value = _dotenv_value(dotenv, source.name, missing_ok=True)
                if value is not None:
                    return check_key(value, DotenvKey(dotenv, source.name).describe())
    return None


def _missing(source: KeySource, dotenv: str | None) -> str:
    if isinstance(source, EnvKey):
        nor = f" (nor in dotenv file {dotenv})" if dotenv is not None else ""
        return f"{source.describe()} is not set{nor}"
    if isinstance(source, DotenvKey):
        return f"{_name(source.name)} is not set in dotenv file {source.path}"
    return f"no key at {source.describe()}"


def read_key(source: KeySource | str, *, dotenv: str | None = None) -> str:
    """Read the key from ``source`` now (a :data:`KeySource` or its one-line form); an
    :class:`EnvKey` whose variable is not set is looked up in ``dotenv`` when given.

    The value is checked for a header and registered for redaction (:func:`check_key`) and
    returned; nothing else keeps it. Raises :class:`~reasonwire.errors.CredentialError`
    naming the source, never the key, when there is none or it cannot be used.
    """
    src = parse_source(source) if isinstance(source, str) else source
    value = read_first((src,), dotenv=dotenv)
    if value is None:
        raise CredentialError(_missing(src, dotenv))
    return value


__all__ = [
    "DEFAULT_AUTH_FILE",
    "DEFAULT_DOTENV",
    "REDACTED",
    "SECRET_FIELDS",
    "AuthFileKey",
    "DotenvKey",
    "EnvKey",
    "KeySource",
    "can_change",
    "check_env_name",
    "check_key",
    "check_name",
    "check_source",
    "describe",
    "looks_like_key",
    "parse_dotenv",
    "parse_source",
    "read_first",
    "read_key",
    "redact",
    "redact_obj",
    "refusal",
    "register_secret",
]
