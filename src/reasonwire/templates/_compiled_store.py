"""Compiled chat templates and the variables they read, kept on disk between scans.

Why: with token counts stored (:mod:`._count_cache`), parsing and compiling the 70 corpus
templates is most of a repeated scan (the renders themselves are a fraction of it); the
templates are the same from one run to the next. jinja2's own bytecode cache does the same
for templates loaded from files (``marshal`` of the compiled module code); a scan compiles
from strings, which that cache does not cover.

Never stale: an entry's name is the SHA-256 of the template text, the environment flavour,
the source of :mod:`reasonwire.templates.render` (which configures the environment), the
jinja2 version and the interpreter's bytecode magic number; an entry that cannot be read is a
miss (compiled afresh). Only successes are stored: a template that fails keeps failing with
its own message.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
from functools import cached_property
from pathlib import Path
from types import CodeType

_FORMAT = b"reasonwire-compiled-template-1"


def _store_dir() -> Path:
    from reasonwire.llamacpp.sdist import cache_root

    return cache_root() / "compiled-templates"


def _read(path: Path) -> object:
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def _write(path: Path, value: CodeType | tuple[str, ...]) -> None:
    """Atomic (a concurrent scan reads the old entry or the new one); a store that cannot be
    written only costs the next scan a compile."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps(value))
        tmp.replace(path)
    except (OSError, ValueError):
        tmp.unlink(missing_ok=True)


class CompiledStore:
    """Entries for templates compiled by the environments configured in ``env_source`` (the
    module that builds them: its bytes are part of every entry's name)."""

    def __init__(self, env_source: Path) -> None:
        self._env_source = env_source

    @cached_property
    def _identity(self) -> bytes:
        import jinja2

        return b"\0".join(
            (
                _FORMAT,
                hashlib.sha256(self._env_source.read_bytes()).digest(),
                jinja2.__version__.encode(),
                importlib.util.MAGIC_NUMBER,
            )
        )

    def _path(self, kind: str, template: str, compat: bool) -> Path:
        h = hashlib.sha256(self._identity)
        h.update(b"\0compat" if compat else b"\0hf")
        h.update(b"\0" + template.encode("utf-8", "surrogatepass"))
        return _store_dir() / f"{h.hexdigest()}.{kind}"

    def load_code(self, template: str, compat: bool) -> CodeType | None:
        got = _read(self._path("code", template, compat))
        return got if isinstance(got, CodeType) else None

    def save_code(self, template: str, compat: bool, code: CodeType) -> None:
        _write(self._path("code", template, compat), code)

    def load_variables(self, template: str, compat: bool) -> frozenset[str] | None:
        got = _read(self._path("vars", template, compat))
        if isinstance(got, tuple) and all(isinstance(v, str) for v in got):
            return frozenset(got)
        return None

    def save_variables(self, template: str, compat: bool, variables: frozenset[str]) -> None:
        _write(self._path("vars", template, compat), tuple(sorted(variables)))
