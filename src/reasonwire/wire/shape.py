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
    return _walker(shape)(value, "$", 0, True, None)


def project(shape: Shape, value: JSON, text_filter: TextFilter | None = None) -> JSON:
    """``value`` reduced to ``shape`` (``{}`` when nothing of it fits)."""
    out = _walker(shape)(value, "$", 0, False, text_filter)
    return {} if out is _DROP else out


# Where a value sits: the root's name, or (where its container sits, its key or index). The
# path text (``$.messages[0].content``) is written only when it is used (an error, a text
# filter): building it for every node cost more than the checks themselves (profiled).
_Where = str | tuple["_Where", str | int]

Walker = Callable[[JSON, _Where, int, bool, "TextFilter | None"], JSON]
"""A shape made into one function per node: (value, where, depth, strict, text filter) ->
the value kept, or ``_DROP``. Made once per shape (:func:`_walker`): the walk then calls
each node's own checks, with no dispatch on the node's kind at every value."""

_WALKERS: dict[int, tuple[Shape, Walker]] = {}
"""Walkers by ``id(shape)``, the shape kept beside its walker (so its id is never reused
while the entry lives)."""
_MAX_WALKERS = 4096
"""Walkers kept (shapes are module constants, a few hundred nodes in all; past it, for
shapes made on the fly, the cache starts again empty)."""


_PATHS: dict[_Where, str] = {}
"""Path texts already written, by ``where`` (a text filter asks for the same few paths on
every answer: ``$.choices[0].message.content``). Bounded."""


def _path(where: _Where) -> str:
    """The path text of ``where``: ``$``, then ``.key`` and ``[index]`` segments."""
    if isinstance(where, str):
        return where
    known = _PATHS.get(where)
    if known is not None:
        return known
    parts: list[str] = []
    at: _Where = where
    while isinstance(at, tuple):
        at, seg = at
        parts.append(f"[{seg}]" if isinstance(seg, int) else f".{seg}")
    text = at + "".join(reversed(parts))
    if len(_PATHS) >= 4096:
        _PATHS.clear()
    _PATHS[where] = text
    return text


def _bad(strict: bool, where: _Where, problem: str) -> JSON:
    if strict:
        raise ShapeError(_path(where), problem)
    return _DROP


def _kind(value: JSON) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "null" if value is None else "number"
    )


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
# Type tuples for the walkers' isinstance checks: a union written in the call (``int | float``)
# is built anew on every call, ~0.1 us each, and these run per value walked (measured).
_NUMBERS = (int, float)
_CONTAINERS = (dict, list)


def _walker(shape: Shape) -> Walker:
    """The walker of ``shape`` (made on first use). A shape that contains itself (through a
    mapping filled in later) gets a forwarder while its own walker is being made."""
    hit = _WALKERS.get(id(shape))
    if hit is not None and hit[0] is shape:
        return hit[1]
    if len(_WALKERS) >= _MAX_WALKERS:
        _WALKERS.clear()
    made: list[Walker] = []

    def forward(
        value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
    ) -> JSON:
        return made[0](value, where, depth, strict, tf)

    _WALKERS[id(shape)] = (shape, forward)
    try:
        walker = _make(shape)
    except BaseException:
        _WALKERS.pop(id(shape), None)
        raise
    made.append(walker)
    _WALKERS[id(shape)] = (shape, walker)
    return walker


def _make(shape: Shape) -> Walker:
    """One node's walker, its children's made first; the kinds are tried in the order of
    the node classes' checks (a subclass of a node kind walks as that kind)."""
    if isinstance(shape, Str):
        text = shape.text

        def walk_str(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, str):
                return _bad(strict, where, f"expected a string, got {_kind(value)}")
            return tf(_path(where), value) if tf is not None and text else value

        return walk_str
    if isinstance(shape, Blank):

        def walk_blank(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, str):
                return _bad(strict, where, f"expected a string, got {_kind(value)}")
            return value if strict else ""

        return walk_blank
    if isinstance(shape, Obj):
        subs = {key: _walker(sub) for key, sub in shape.fields.items()}
        plain = {k: t for k, sub in shape.fields.items() if (t := _kept(sub, False))}
        filtered = {k: t for k, sub in shape.fields.items() if (t := _kept(sub, True))}
        required = shape.required

        def walk_obj(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, dict):
                return _bad(strict, where, f"expected an object, got {_kind(value)}")
            out: JsonObject = {}
            below = depth + 1
            kept = _NO_KEPT if below > MAX_DEPTH else plain if tf is None else filtered
            for key, item in value.items():
                if type(item) in kept.get(key, ()):
                    out[key] = item  # what the field's own walker would keep as it is
                    continue
                sub = subs.get(key)
                if sub is None:
                    continue
                got = sub(item, (where, key), below, strict, tf)
                if got is not _DROP:
                    out[key] = got
            if required:
                missing = required - out.keys()
                if missing:
                    return _bad(strict, where, f"missing required field {sorted(missing)[0]!r}")
            return out

        return walk_obj
    if isinstance(shape, ListOf):
        each = _walker(shape.item)
        plain_items, filtered_items = _kept(shape.item, False), _kept(shape.item, True)

        def walk_list(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, list):
                return _bad(strict, where, f"expected an array, got {_kind(value)}")
            items = []
            below = depth + 1
            kept = (
                frozenset() if below > MAX_DEPTH else plain_items if tf is None else filtered_items
            )
            for i, item in enumerate(value):
                if type(item) in kept:
                    items.append(item)
                    continue
                got = each(item, (where, i), below, strict, tf)
                if got is not _DROP:
                    items.append(got)
            return items

        return walk_list
    if isinstance(shape, Tagged):
        variants = {tag: _walker(v) for tag, v in shape.variants.items()}
        key, closed = shape.key, shape.closed
        untagged = _walker(shape.untagged) if shape.untagged is not None else None
        expected = ", ".join(sorted(shape.variants))

        def walk_tagged(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, dict):
                return _bad(strict, where, f"expected an object, got {_kind(value)}")
            tag = value.get(key)
            variant = variants.get(tag) if isinstance(tag, str) else None
            if variant is None:
                if strict and closed:
                    return _bad(strict, where, f"{key} must be one of: {expected}")
                if key in value or untagged is None:
                    return _DROP
                variant = untagged
            return variant(value, where, depth, strict, tf)

        return walk_tagged
    if isinstance(shape, Nullable):
        inner = _walker(shape.inner)

        def walk_nullable(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            return None if value is None else inner(value, where, depth, strict, tf)

        return walk_nullable
    return _leaf(shape)


_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_NO_KEPT: dict[str, frozenset[type]] = {}


def _kept(shape: Shape, text_filter: bool) -> frozenset[type]:
    """The exact value types ``shape``'s walker keeps as they are, in either mode, at any
    depth it accepts (a container's walk keeps such a value without calling it: most of an
    answer's values are strings and numbers of plain fields). ``text_filter``: a text
    filter is in use (a text string is then not kept as it is). Exact node classes only;
    anything else (a bounded integer, an enum, a container) is left to the walker."""
    if type(shape) not in _PLAIN_KINDS:
        return frozenset()
    if isinstance(shape, Str):
        return frozenset() if text_filter and shape.text else frozenset({str})
    if isinstance(shape, Int):
        bounded = shape.lo is not None or shape.hi is not None
        return frozenset() if bounded else frozenset({int})
    if isinstance(shape, Num):
        return frozenset({int, float})
    if isinstance(shape, Bool):
        return frozenset({bool})
    if isinstance(shape, Nullable):
        return frozenset({type(None)}) | _kept(shape.inner, text_filter)
    return _SCALARS  # Scalar, Anything


_PLAIN_KINDS: frozenset[type[Shape]] = frozenset({Str, Int, Num, Bool, Scalar, Anything, Nullable})


def _leaf(shape: Shape) -> Walker:
    """The walker of a node with no children (or :class:`OneOf`, whose options are tried
    by the value's JSON type)."""
    if isinstance(shape, Int):
        lo, hi = shape.lo, shape.hi

        def walk_int(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, int) or isinstance(value, bool):
                return _bad(strict, where, f"expected an integer, got {_kind(value)}")
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                return _bad(strict, where, f"integer out of range [{lo}, {hi}]")
            return value

        return walk_int
    if isinstance(shape, Num):

        def walk_num(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, _NUMBERS) or isinstance(value, bool):
                return _bad(strict, where, f"expected a number, got {_kind(value)}")
            return value

        return walk_num
    if isinstance(shape, Bool):

        def walk_bool(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, bool):
                return _bad(strict, where, f"expected true or false, got {_kind(value)}")
            return value

        return walk_bool
    if isinstance(shape, Const):
        values = shape.values

        def walk_const(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if not isinstance(value, str) or value not in values:  # lists are unhashable
                return _bad(strict, where, f"expected one of {sorted(values)}")
            return value

        return walk_const
    if isinstance(shape, Scalar):

        def walk_scalar(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            if isinstance(value, _CONTAINERS):
                return _bad(strict, where, f"expected a plain value, got {_kind(value)}")
            return value

        return walk_scalar
    if isinstance(shape, Anything):

        def walk_anything(
            value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
        ) -> JSON:
            if depth > MAX_DEPTH or _depth(value, depth) > MAX_DEPTH:
                return _bad(strict, where, _TOO_DEEP)
            return value

        return walk_anything
    if isinstance(shape, OneOf):
        return _one_of(shape)
    name = type(shape).__name__

    def walk_unknown(
        value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
    ) -> JSON:
        if depth > MAX_DEPTH:
            return _bad(strict, where, _TOO_DEEP)
        raise TypeError(f"unknown shape node {name}")

    return walk_unknown


def _one_of(shape: OneOf) -> Walker:
    options = [(option, _walker(option)) for option in shape.options]

    def walk_one_of(
        value: JSON, where: _Where, depth: int, strict: bool, tf: TextFilter | None
    ) -> JSON:
        if depth > MAX_DEPTH:
            return _bad(strict, where, _TOO_DEEP)
        for option, walker in options:
            if _fits(option, value):
                return walker(value, where, depth, strict, tf)
        return _bad(strict, where, f"unexpected {_kind(value)}")

    return walk_one_of


_TEXT_SHAPES = (Str, Const, Blank)
_OBJECT_SHAPES = (Obj, Tagged)
_NUMBER_SHAPES = (Int, Num)


def _fits(shape: Shape, value: JSON) -> bool:
    """Whether ``value``'s JSON type is the one ``shape`` describes (for :class:`OneOf`)."""
    if isinstance(shape, _TEXT_SHAPES):
        return isinstance(value, str)
    if isinstance(shape, _OBJECT_SHAPES):
        return isinstance(value, dict)
    if isinstance(shape, ListOf):
        return isinstance(value, list)
    if isinstance(shape, Nullable):
        return value is None or _fits(shape.inner, value)
    if isinstance(shape, Bool):
        return isinstance(value, bool)
    if isinstance(shape, _NUMBER_SHAPES):
        return isinstance(value, _NUMBERS) and not isinstance(value, bool)
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
