"""Declarative JSON shapes: one description used two ways.

- :func:`validate` checks a client's request body: a value of the wrong type is a
  :class:`ShapeError` naming its path; a field the shape does not name is dropped (an
  allow-list: only what is described reaches an upstream).
- :func:`project` reduces an upstream answer to what a governed client may see: anything the
  shape does not name, or of another type, is dropped. Hidden reasoning is absent by
  construction, whatever field name or nesting a provider invents for it.

Both walk the value once, bounded in depth (:data:`MAX_DEPTH`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from reasonwire.errors import ShapeError
from reasonwire.wire.model import JSON, JsonObject

MAX_DEPTH = 64
"""Deepest nesting a shape walk follows; deeper values are a :class:`ShapeError` (validate)
or dropped (project). Real request bodies nest about 8 levels."""


class Shape:
    """Base of every shape node."""


@dataclass(frozen=True, slots=True)
class Str(Shape):
    """A string. ``text`` marks visible model text (think-tag cutting applies there)."""

    text: bool = False


@dataclass(frozen=True, slots=True)
class Blank(Shape):
    """A string whose key stays but whose value is never shown: projected to ``""`` (SDKs
    expect a thinking block's ``thinking`` field; its text is hidden reasoning)."""


@dataclass(frozen=True, slots=True)
class Int(Shape):
    """An integer (not a bool); ``lo``/``hi`` bound it when set."""

    lo: int | None = None
    hi: int | None = None


@dataclass(frozen=True, slots=True)
class Num(Shape):
    """A JSON number of any value (not a bool)."""


@dataclass(frozen=True, slots=True)
class Bool(Shape):
    """``true`` or ``false``."""


@dataclass(frozen=True, slots=True)
class Const(Shape):
    """Exactly one of ``values`` (a string enum)."""

    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class Scalar(Shape):
    """A string, number, bool or null: ids, stop reasons, free-form small values."""


@dataclass(frozen=True, slots=True)
class Anything(Shape):
    """A JSON value of bounded depth: tool parameters, schemas, tool inputs, metadata."""


@dataclass(frozen=True, slots=True)
class Nullable(Shape):
    """``null`` or ``inner``."""

    inner: Shape


@dataclass(frozen=True, slots=True)
class ListOf(Shape):
    """A JSON array of ``item``; items of another shape are dropped (project) or an error."""

    item: Shape


@dataclass(frozen=True, slots=True)
class Obj(Shape):
    """A JSON object with the named fields; other keys are dropped. Without all ``required``
    fields it is an error (validate) or dropped whole (project)."""

    fields: Mapping[str, Shape]
    required: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Tagged(Shape):
    """An object told apart by its ``key`` field (``type``): each tag has its own shape.

    An unknown tag is dropped whole (both modes): a part or event kind nobody described is
    never forwarded. ``untagged`` is used when the key is absent (``None``: dropped).
    ``closed``: in validate mode an unknown or absent tag is an error instead (a message
    whose ``role`` picks its fields must not vanish from a history unnoticed).
    """

    variants: Mapping[str, Obj]
    key: str = "type"
    untagged: Obj | None = None
    closed: bool = False


@dataclass(frozen=True, slots=True)
class OneOf(Shape):
    """The first of ``options`` the value fits (by JSON type: str, list, object...)."""

    options: tuple[Shape, ...] = field(default_factory=tuple)


TextFilter = Callable[[str, str], str]
"""(path, text) -> visible text; applied to :class:`Str` nodes with ``text=True``."""

_DROP: Final = object()


def validate(shape: Shape, value: JSON) -> JSON:
    """``value`` checked against ``shape``; unknown object keys and unknown tags dropped."""
    return _walk(shape, value, "$", 0, True, None)


def project(shape: Shape, value: JSON, text_filter: TextFilter | None = None) -> JSON:
    """``value`` reduced to ``shape`` (``{}`` when nothing of it fits)."""
    out = _walk(shape, value, "$", 0, False, text_filter)
    return {} if out is _DROP else out


def _bad(strict: bool, path: str, problem: str) -> JSON:
    if strict:
        raise ShapeError(path, problem)
    return _DROP


def _kind(value: JSON) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "null" if value is None else "number"
    )


def _walk(
    shape: Shape, value: JSON, path: str, depth: int, strict: bool, tf: TextFilter | None
) -> JSON:
    if depth > MAX_DEPTH:
        return _bad(strict, path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(shape, Str):
        if not isinstance(value, str):
            return _bad(strict, path, f"expected a string, got {_kind(value)}")
        return tf(path, value) if tf is not None and shape.text else value
    if isinstance(shape, Blank):
        if not isinstance(value, str):
            return _bad(strict, path, f"expected a string, got {_kind(value)}")
        return value if strict else ""
    if isinstance(shape, Obj):
        if not isinstance(value, dict):
            return _bad(strict, path, f"expected an object, got {_kind(value)}")
        out: JsonObject = {}
        for key, item in value.items():
            sub = shape.fields.get(key)
            if sub is None:
                continue
            got = _walk(sub, item, f"{path}.{key}", depth + 1, strict, tf)
            if got is not _DROP:
                out[key] = got
        missing = shape.required - out.keys()
        if missing:
            return _bad(strict, path, f"missing required field {sorted(missing)[0]!r}")
        return out
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return _bad(strict, path, f"expected an array, got {_kind(value)}")
        items = []
        for i, item in enumerate(value):
            got = _walk(shape.item, item, f"{path}[{i}]", depth + 1, strict, tf)
            if got is not _DROP:
                items.append(got)
        return items
    if isinstance(shape, Tagged):
        if not isinstance(value, dict):
            return _bad(strict, path, f"expected an object, got {_kind(value)}")
        tag = value.get(shape.key)
        variant = shape.variants.get(tag) if isinstance(tag, str) else None
        if variant is None:
            if strict and shape.closed:
                expected = ", ".join(sorted(shape.variants))
                return _bad(strict, path, f"{shape.key} must be one of: {expected}")
            if shape.key in value or shape.untagged is None:
                return _DROP
            variant = shape.untagged
        return _walk(variant, value, path, depth, strict, tf)
    if isinstance(shape, Nullable):
        return None if value is None else _walk(shape.inner, value, path, depth, strict, tf)
    if isinstance(shape, Int):
        if not isinstance(value, int) or isinstance(value, bool):
            return _bad(strict, path, f"expected an integer, got {_kind(value)}")
        if (shape.lo is not None and value < shape.lo) or (
            shape.hi is not None and value > shape.hi
        ):
            return _bad(strict, path, f"integer out of range [{shape.lo}, {shape.hi}]")
        return value
    if isinstance(shape, Num):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return _bad(strict, path, f"expected a number, got {_kind(value)}")
        return value
    if isinstance(shape, Bool):
        if not isinstance(value, bool):
            return _bad(strict, path, f"expected true or false, got {_kind(value)}")
        return value
    if isinstance(shape, Const):
        if not isinstance(value, str) or value not in shape.values:  # lists are unhashable
            return _bad(strict, path, f"expected one of {sorted(shape.values)}")
        return value
    if isinstance(shape, Scalar):
        if isinstance(value, dict | list):
            return _bad(strict, path, f"expected a plain value, got {_kind(value)}")
        return value
    if isinstance(shape, Anything):
        if _depth(value, depth) > MAX_DEPTH:
            return _bad(strict, path, f"nested deeper than {MAX_DEPTH} levels")
        return value
    if isinstance(shape, OneOf):
        for option in shape.options:
            if _fits(option, value):
                return _walk(option, value, path, depth, strict, tf)
        return _bad(strict, path, f"unexpected {_kind(value)}")
    raise TypeError(f"unknown shape node {type(shape).__name__}")


def _fits(shape: Shape, value: JSON) -> bool:
    """Whether ``value``'s JSON type is the one ``shape`` describes (for :class:`OneOf`)."""
    if isinstance(shape, Str | Const | Blank):
        return isinstance(value, str)
    if isinstance(shape, Obj | Tagged):
        return isinstance(value, dict)
    if isinstance(shape, ListOf):
        return isinstance(value, list)
    if isinstance(shape, Nullable):
        return value is None or _fits(shape.inner, value)
    if isinstance(shape, Bool):
        return isinstance(value, bool)
    if isinstance(shape, Int | Num):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _depth(value: JSON, start: int) -> int:
    """Nesting depth of ``value`` (iterative: a hostile body cannot exhaust the stack)."""
    deepest = start
    stack: list[tuple[JSON, int]] = [(value, start)]
    while stack:
        node, d = stack.pop()
        if d > deepest:
            deepest = d
            if deepest > MAX_DEPTH:
                return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


__all__ = [
    "MAX_DEPTH",
    "Anything",
    "Blank",
    "Bool",
    "Const",
    "Int",
    "ListOf",
    "Nullable",
    "Num",
    "Obj",
    "OneOf",
    "Scalar",
    "Shape",
    "ShapeError",
    "Str",
    "Tagged",
    "TextFilter",
    "project",
    "validate",
]
