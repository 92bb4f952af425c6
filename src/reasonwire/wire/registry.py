"""The dialect registry: one static table from name to the module that builds the object.

Modules are imported on first use by name (no import-time ``register()`` calls, so no import
cycle between the registry and the dialects). Adding a dialect is one line here; a test may
add a line for a dialect of its own (``TABLE["toy"] = "tests.wire.toy_dialect"``).
"""

from __future__ import annotations

import importlib

from reasonwire.errors import UnknownDialect
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.model import DialectName

TABLE: dict[DialectName, str] = {
    "chat": "reasonwire.wire.chat",
    "responses": "reasonwire.wire.responses",
    "anthropic": "reasonwire.wire.anthropic",
    "gemini": "reasonwire.wire.gemini",
    "interactions": "reasonwire.wire.interactions",
}
"""Dialect name -> module holding its ``DIALECT`` object. The order is detection order."""

_LOADED: dict[str, Dialect] = {}


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; :class:`~reasonwire.errors.UnknownDialect` otherwise."""
    found = _LOADED.get(name)
    if found is not None:
        return found
    module = TABLE.get(name)
    if module is None:
        raise UnknownDialect(
            f"unknown dialect {name!r}; expected one of: {', '.join(sorted(TABLE))}"
        )
    dialect = importlib.import_module(module).DIALECT
    if not isinstance(dialect, Dialect) or dialect.name != name:
        raise UnknownDialect(f"{module}.DIALECT is not the {name!r} dialect object")
    _LOADED[name] = dialect
    return dialect


def dialects() -> list[Dialect]:
    """Every registered dialect, in table order."""
    return [get_dialect(name) for name in TABLE]


def names() -> tuple[DialectName, ...]:
    return tuple(TABLE)


def dialect_for_path(path: str) -> Dialect | None:
    """The dialect a request to URL ``path`` speaks, or None for any other endpoint."""
    for d in dialects():
        if d.matches_path(path):
            return d
    return None


def dialect_for_gateway_path(path: str) -> Dialect | None:
    """The dialect the governance gateway serves on ``path``, or None."""
    for d in dialects():
        if d.serves_gateway_path(path):
            return d
    return None


def detect(payload: object) -> Dialect | None:
    """The dialect one JSON body, stream payload or list of them belongs to, or None."""
    items = payload[:64] if isinstance(payload, list) else [payload]
    for item in items:
        if isinstance(item, list):
            found = detect(item)
            if found is not None:
                return found
            continue
        for d in dialects():
            if d.detects(item):
                return d
    return None


__all__ = [
    "TABLE",
    "detect",
    "dialect_for_gateway_path",
    "dialect_for_path",
    "dialects",
    "get_dialect",
    "names",
]
