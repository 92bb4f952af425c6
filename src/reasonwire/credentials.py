"""Key sources, read at call time, and the one redaction step every writer goes through.

A key lives in exactly one of three places: an environment variable, a dotenv file, or a JSON
auth file (a dotted key path with fallbacks, e.g. ``providers.nous.agent_key`` then
``access_token``). :func:`read_key` reads it when a request is about to be made and returns it;
nothing caches it on disk or keeps it beyond the call, so a rotated key is picked up at once.

Every value read is remembered (as a secret, not as a cache) in a process-wide registry so that
:func:`redact` can remove it from any text, in addition to anything *shaped* like a key
(``sk-...``, ``AIza...``, ``hf_...``, ``AKIA...``, ``Bearer ...``, JWS tokens, PEM private keys:
the one detector in :mod:`reasonwire.secrets_scan`). :func:`redact_obj` does the same for a
record and also blanks the values of header-like fields (``authorization``, ``x-api-key``...).
Errors name the source (variable, file, key path), never the key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from reasonwire.errors import CredentialError

# Re-exported (``x as x``): redaction and the secret-field names are part of this API.
from reasonwire.redaction import REDACTED as REDACTED
from reasonwire.redaction import redact as redact
from reasonwire.redaction import redact_obj as redact_obj
from reasonwire.redaction import register_secret as register_secret
from reasonwire.secrets_scan import SECRET_FIELDS as SECRET_FIELDS

# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnvKey:
    """The key is the value of environment variable ``name``."""

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

DEFAULT_DOTENV = os.environ.get("REASONWIRE_DOTENV", "~/.hermes/.env")
"""The dotenv file a route's key is read from when its variable is not set (the Hermes agent's
file by default; ``REASONWIRE_DOTENV`` names another). The one place this default lives."""

DEFAULT_AUTH_FILE = os.environ.get("REASONWIRE_AUTH_FILE", "~/.hermes/auth.json")
"""The auth file of routes whose key sits in one (the Nous Portal's agent key);
``REASONWIRE_AUTH_FILE`` names another."""


def _name(name: str) -> str:
    """A variable name as shown in a message: a key mistaken for a name (``AKIA...``,
    ``hf_...``) is shown by length only, never as written."""
    shown = redact(name)
    return name if shown == name else f"(a key-shaped name of {len(name)} characters)"


def parse_source(spec: str) -> KeySource:
    """A key source from its one-line form, as route records and CLI options write it.

    ``env:NAME`` (or a bare ``NAME``), ``dotenv:PATH#NAME``,
    ``authfile:PATH#dotted.path|fallback.path`` (a fallback without dots is taken relative to
    the first path's parent: ``providers.nous.agent_key|access_token``).
    """
    kind, sep, rest = spec.partition(":")
    if not sep:
        if not spec or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", spec):
            raise CredentialError(
                f"bad key source ({_describe(spec)}); expected env:NAME, dotenv:PATH#NAME "
                "or authfile:PATH#key.path"
            )
        return EnvKey(spec)
    if kind == "env" and rest:
        return EnvKey(rest)
    path, hash_, name = rest.rpartition("#")
    if kind in ("dotenv", "authfile") and hash_ and path and name:
        if kind == "dotenv":
            return DotenvKey(path, name)
        paths = [p for p in name.split("|") if p]
        first = paths[0]
        parent = first.rpartition(".")[0]
        full = [first] + [p if "." in p or not parent else f"{parent}.{p}" for p in paths[1:]]
        return AuthFileKey(path, tuple(full))
    raise CredentialError(
        f"bad key source ({_describe(spec)}); expected env:NAME, dotenv:PATH#NAME "
        "or authfile:PATH#key.path"
    )


def _describe(spec: str) -> str:
    """A spec by kind and length only: a bad spec may be a key pasted in the wrong place."""
    kind = "a key-shaped string" if redact(spec) != spec else "a string"
    return f"{kind} of {len(spec)} character{'' if len(spec) == 1 else 's'}"


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


def _read_text(path: str, what: str) -> str:
    p = Path(path).expanduser()
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CredentialError(f"{what} not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialError(f"{what} {p} is unreadable ({type(exc).__name__})") from None


def _dig(data: Any, dotted: str) -> Any:
    node = data
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _read(source: KeySource) -> str:
    if isinstance(source, EnvKey):
        value = os.environ.get(source.name)
        if value is None or not value.strip():
            raise CredentialError(f"{source.describe()} is not set")
        return value.strip()
    if isinstance(source, DotenvKey):
        values = parse_dotenv(_read_text(source.path, "dotenv file"))
        value = values.get(source.name)
        if value is None or not value.strip():
            raise CredentialError(f"{_name(source.name)} is not set in dotenv file {source.path}")
        return value.strip()
    text = _read_text(source.path, "auth file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The message names the position only: the decoder's own message could quote the file.
        raise CredentialError(
            f"auth file {source.path} is not valid JSON (line {exc.lineno})"
        ) from None
    for dotted in source.key_paths:
        value = _dig(data, dotted)
        if isinstance(value, str) and value.strip():
            return value.strip()
    raise CredentialError(f"no key at {source.describe()}")


def read_key(source: KeySource | str) -> str:
    """Read the key from ``source`` now (a :data:`KeySource` or its one-line form).

    The value is registered for redaction and returned; nothing else keeps it.
    Raises :class:`~reasonwire.errors.CredentialError` naming the source when it is missing.
    """
    src = parse_source(source) if isinstance(source, str) else source
    value = _read(src)
    register_secret(value)
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
    "parse_dotenv",
    "parse_source",
    "read_key",
    "redact",
    "redact_obj",
    "register_secret",
]
