"""The one JSON codec of every record: a frozen dataclass is its own schema.

A record class declares its JSON object once, as dataclass fields; :func:`to_json` and
:func:`from_json` (or the :class:`JSONRecord` methods) read that declaration, so no second,
dict-shaped description of a record exists anywhere. The rules:

- keys are the field names, written in field order (:func:`key` renames one that is not an
  identifier, e.g. ``with``);
- a field whose default is :data:`~reasonwire.wire.ABSENT` is an optional key: not written
  while it holds ``ABSENT``, ``ABSENT`` when a file does not have it (``ABSENT`` is not
  ``None``: ``null`` is a value);
- a ``field(metadata=FLAT)`` holds a record (or a union of records) whose keys stand in its
  place in the same object: a record whose key order depends on its state (a call that
  answered, a call that failed) declares each state as a class;
- a :func:`rest` field keeps the keys a class does not know (a newer writer's): kept on read,
  written after the known keys;
- reading accepts any key order, takes a missing key's field default (older files), checks
  every value against the field's type and names the path of the first wrong one in a
  :class:`~reasonwire.errors.ConfigError`. Values are never converted (an ``int`` in a
  ``float`` field stays an ``int``), so what is read writes back byte for byte;
- a union of records is decided by each member's ``_claims(data)`` class method when it has
  one, else by the first member whose required keys are all present.

Enum members are written as their values; tuples and lists as JSON arrays (read back as the
annotated container). Encoders and decoders are built once per class, on first use.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import (
    Any,
    Final,
    Literal,
    TypeGuard,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from reasonwire.errors import ConfigError
from reasonwire.errors import _CodecMismatch as _Mismatch
from reasonwire.wire.model import ABSENT, JSON, JsonObject

R = TypeVar("R")

_FLAT = "reasonwire.flat"
_REST = "reasonwire.rest"
_KEY = "reasonwire.key"

Encode = Callable[[object], JSON]
"""A record (or a value of a field) as JSON."""
Decode = Callable[[JSON], object]
"""JSON as a record (or a field's value); raises :class:`_Mismatch`."""
F = TypeVar("F", Encode, Decode)


FLAT: Final[Mapping[str, JSON]] = types.MappingProxyType({_FLAT: True})
"""``field(metadata=FLAT)``: a field whose record's keys are written in its place."""


def rest() -> JsonObject:
    """The field that keeps keys the class does not know (read, then written last)."""
    return dataclasses.field(default_factory=dict, metadata={_REST: True}, compare=False)


def key(name: str, **kwargs: Any) -> Any:
    """A field written under ``name`` instead of the field's own name (typed as
    :func:`dataclasses.field`, whose keywords it takes)."""
    return dataclasses.field(metadata={_KEY: name}, **kwargs)


class JSONRecord:
    """Mixin of a record dataclass: ``to_json`` / ``from_json`` through this codec."""

    __slots__ = ()

    def to_json(self) -> dict[str, JSON]:
        return to_json(self)

    @classmethod
    def from_json(cls: type[R], data: JSON) -> R:
        return from_json(cls, data)


def to_json(record: object) -> dict[str, JSON]:
    """The JSON object of a record (a dataclass instance), keys in field order."""
    out: dict[str, JSON] = _encoder(type(record))(record)
    return out


def from_json(cls: type[R], data: JSON, what: str | None = None) -> R:
    """The ``cls`` record of a decoded JSON object; a :class:`ConfigError` naming the path
    (prefixed ``what``, default the class name) when the object does not fit."""
    try:
        out = typing.cast(R, _decoder(cls)(data))
    except _Mismatch as exc:
        path = "".join(reversed(exc.path)).lstrip(".")
        where = f"{what or cls.__name__}: {path}" if path else what or cls.__name__
        raise ConfigError(f"{where}: {exc.reason}") from None
    return out


# -- plans -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Field:
    attr: str
    key: str
    hint: object
    flat: bool
    rest: bool
    optional: bool  # default ABSENT: the key may be missing, and is not written while ABSENT
    default: object  # dataclasses.MISSING when the key is required
    factory: object


_ENCODERS: dict[type, Encode] = {}
_DECODERS: dict[type, Decode] = {}


@functools.cache
def _plan(cls: type) -> tuple[_Field, ...]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a record dataclass")
    hints = get_type_hints(cls)
    return tuple(
        _Field(
            attr=f.name,
            key=f.metadata.get(_KEY, f.name),
            hint=hints[f.name],
            flat=bool(f.metadata.get(_FLAT)),
            rest=bool(f.metadata.get(_REST)),
            optional=f.default is ABSENT,
            default=f.default,
            factory=f.default_factory,
        )
        for f in dataclasses.fields(cls)
    )


def _compiled(table: dict[type, F], cls: type, build: Callable[[type], F]) -> F:
    """``table[cls]``, built on first use (a stand-in while it builds: a record may hold
    itself)."""
    got = table.get(cls)
    if got is None:
        table[cls] = lambda value: table[cls](value)
        got = table[cls] = build(cls)
    return got


def _members(hint: object) -> tuple[object, ...]:
    if get_origin(hint) in (Union, types.UnionType):
        return get_args(hint)
    return (hint,)


def _is_record(hint: object) -> TypeGuard[type]:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


@functools.cache
def _required_keys(cls: type) -> frozenset[str]:
    out: set[str] = set()
    for f in _plan(cls):
        if f.flat:
            records = [m for m in _members(f.hint) if _is_record(m)]
            if len(records) == 1:
                out |= _required_keys(records[0])
        elif not f.rest and f.default is dataclasses.MISSING and f.factory is dataclasses.MISSING:
            out.add(f.key)
    return frozenset(out)


@functools.cache
def _known_keys(cls: type) -> frozenset[str]:
    out: set[str] = set()
    for f in _plan(cls):
        if f.flat:
            for m in _members(f.hint):
                if _is_record(m):
                    out |= _known_keys(m)
        elif not f.rest:
            out.add(f.key)
    return frozenset(out)


# -- encoding ----------------------------------------------------------------------------------
#
# A class's encoder is Python source generated from its fields (a dict display where every key
# is always written), compiled once: the report encodes ~1.7M records for a 70,000-row matrix,
# where a loop over the fields costs seconds.


def _encoder(cls: type) -> Encode:
    return _compiled(_ENCODERS, cls, _build_encoder)


class _Source:
    """Names bound into generated code, and fresh local names."""

    def __init__(self) -> None:
        self.env: JsonObject = {"ABSENT": ABSENT, "_Mismatch": _Mismatch, "_bad": _bad}
        self.n = 0

    def bind(self, value: object) -> str:
        self.n += 1
        name = f"_b{self.n}"
        self.env[name] = value
        return name

    def local(self) -> str:
        self.n += 1
        return f"_v{self.n}"


def _enc_expr(hint: object, expr: str, src: _Source, made: bool = False) -> str:
    """A Python expression writing the value ``expr`` of type ``hint`` as JSON; ``made``: its
    nested records are JSON already (a maker's arguments)."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(hint) if m is not type(None)]
        if all(_enc_expr(m, "x", src, made) == "x" for m in members):
            return expr
        if len(members) == 1:
            inner = _enc_expr(members[0], expr, src, made)
            return f"(None if {expr} is None else {inner})"
        table = {m: _encoder(m) for m in members if _is_record(m)}
        if len(table) == len(members) and not made:
            return f"({src.bind(table)}[{expr}.__class__]({expr}) if {expr} is not None else None)"
        return f"{src.bind(_encode_any)}({expr})"
    if _is_record(hint):
        return expr if made else f"{src.bind(_encoder(hint))}({expr})"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return f"str({expr})"
    if origin in (tuple, list, Sequence, typing.Sequence):
        args = [a for a in get_args(hint) if a is not Ellipsis]
        x = src.local()
        item = _enc_expr(args[0], x, src, made) if args else f"{src.bind(_encode_any)}({x})"
        return f"list({expr})" if item == x else f"[{item} for {x} in {expr}]"
    if origin in (dict, Mapping, typing.Mapping):
        kv = get_args(hint)
        k, x = src.local(), src.local()
        val = _enc_expr(kv[1], x, src, made) if len(kv) == 2 else f"{src.bind(_encode_any)}({x})"
        return f"dict({expr})" if val == x else f"{{{k}: {val} for {k}, {x} in {expr}.items()}}"
    return expr  # str, int, float, bool, None, Literal, JSON


def _encode_any(value: object) -> JSON:
    """A value of an untyped container or a mixed union: dispatched on its runtime type."""
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, str | int | float):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder(type(value))(value)
    if isinstance(value, Mapping):
        return {k: _encode_any(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode_any(v) for v in value]
    return value


def _build_encoder(cls: type) -> Encode:
    src = _Source()
    plan = _plan(cls)
    simple = not any(f.optional or f.flat or f.rest for f in plan)
    lines = ["def encode(o):"]
    if simple:
        items = ", ".join(f"{f.key!r}: {_enc_expr(f.hint, 'o.' + f.attr, src)}" for f in plan)
        lines.append(f"    return {{{items}}}")
    else:
        lines.append("    out = {}")
        for f in plan:
            value = f"o.{f.attr}"
            if f.flat:
                lines.append(f"    out.update({src.bind(_record_value)}({value}))")
            elif f.rest:
                lines.append(f"    for k, x in {value}.items():")
                lines.append("        out.setdefault(k, x)")
            elif f.optional:
                lines.append(f"    v = {value}")
                lines.append("    if v is not ABSENT:")
                lines.append(f"        out[{f.key!r}] = {_enc_expr(f.hint, 'v', src)}")
            else:
                lines.append(f"    out[{f.key!r}] = {_enc_expr(f.hint, value, src)}")
        lines.append("    return out")
    encode: Encode = _compile(lines, src, "encode", f"<encoder of {cls.__qualname__}>")
    return encode


def _record_value(value: object) -> JSON:
    return _encoder(type(value))(value)


def _compile(lines: list[str], src: _Source, name: str, filename: str) -> Callable[[JSON], JSON]:
    code = compile("\n".join(lines) + "\n", filename, "exec")
    exec(code, src.env)  # generated from field names and types only, never from data
    compiled: Callable[[JSON], JSON] = src.env[name]
    return compiled


# -- makers ------------------------------------------------------------------------------------
#
# Where a record is built only to be written (the report's rows: ~20 records a row, 70,000 rows),
# constructing the frozen instance and then encoding it costs more than the row's logic. A maker
# is the encoder's twin generated from the same fields: called as the class is, it returns the
# JSON object ``to_json`` would give of that instance, nested records given as their JSON.


def json_maker(cls: type) -> Callable[..., JsonObject]:
    """A function taking ``cls``'s constructor arguments (nested records as their JSON, e.g.
    from their own makers) and returning the JSON object :func:`to_json` writes of the
    instance they would make, without making it. For records without flat or rest fields."""
    made = _MAKERS.get(cls)
    if made is None:
        made = _MAKERS[cls] = _build_maker(cls)
    return made


_MAKERS: dict[type, Callable[..., JsonObject]] = {}
_FACTORY = object()
"""A maker's default for a field with a default factory: the factory is called."""
_MAKER_NAMES = frozenset({"ABSENT", "None", "dict", "list", "str", "_out", "_encode_any"})
"""Names a maker's body reads besides its parameters."""


def _build_maker(cls: type) -> Callable[..., JsonObject]:
    src = _Source()
    plan = _plan(cls)
    if any(f.flat or f.rest for f in plan):
        raise TypeError(f"{cls.__qualname__}: no maker for a record with flat or rest fields")
    taken = [f.attr for f in plan if f.attr in _MAKER_NAMES or f.attr.startswith(("_b", "_v"))]
    if taken:  # its parameters would hide a name the generated body uses
        raise TypeError(f"{cls.__qualname__}: no maker for fields named {taken}")
    params: list[str] = []
    starred = False
    factories = {f.attr: f.factory for f in plan if f.factory is not dataclasses.MISSING}
    for p in inspect.signature(cls).parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not starred:
            params.append("*")
            starred = True
        default = "" if p.default is inspect.Parameter.empty else f"={src.bind(p.default)}"
        if p.name in factories:
            default = f"={src.bind(_FACTORY)}"
        params.append(f"{p.name}{default}")
    lines = [f"def make({', '.join(params)}):"]
    for attr, factory in factories.items():
        lines.append(f"    if {attr} is {src.bind(_FACTORY)}:")
        lines.append(f"        {attr} = {src.bind(factory)}()")
    if not any(f.optional for f in plan):
        items = ", ".join(f"{f.key!r}: {_enc_expr(f.hint, f.attr, src, made=True)}" for f in plan)
        lines.append(f"    return {{{items}}}")
    else:
        lines.append("    _out = {}")
        for f in plan:
            value = _enc_expr(f.hint, f.attr, src, made=True)
            if f.optional:
                lines.append(f"    if {f.attr} is not ABSENT:")
                lines.append(f"        _out[{f.key!r}] = {value}")
            else:
                lines.append(f"    _out[{f.key!r}] = {value}")
        lines.append("    return _out")
    make = _compile(lines, src, "make", f"<maker of {cls.__qualname__}>")
    return typing.cast(Callable[..., JsonObject], make)


# -- decoding ----------------------------------------------------------------------------------
#
# Generated like the encoders: a primitive field is checked inline, a nested record, union or
# container goes through its own decoder, and a failure names its path.


def _decoder(cls: type) -> Decode:
    return _compiled(_DECODERS, cls, _build_decoder)


def _name(hint: object) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def _json_type(value: JSON) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _bad(path: str, expected: str, value: JSON) -> _Mismatch:
    exc = _Mismatch(f"expected {expected}, got {_json_type(value)}")
    exc.path.append(path)
    return exc


_PRIMITIVE: dict[object, tuple[str, str, tuple[type, ...]]] = {
    str: ("{v}.__class__ is not str", "a string", (str,)),
    int: ("{v}.__class__ is not int", "an integer", (int,)),
    bool: ("{v}.__class__ is not bool", "a boolean", (bool,)),
    float: ("({v}.__class__ is not float and {v}.__class__ is not int)", "a number", (float, int)),
    type(None): ("{v} is not None", "null", (type(None),)),
}
"""JSON scalars by exact class (``bool`` is not an ``int`` here): (condition true when ``{v}``
does not fit, what fits, the classes that fit)."""


def _inline_check(hint: object) -> tuple[str, str, tuple[type, ...]] | None:
    """How a scalar hint (or a union of them) is checked; None for any other hint."""
    if hint is None:
        hint = type(None)
    if hint in _PRIMITIVE:
        return _PRIMITIVE[hint]
    if get_origin(hint) in (Union, types.UnionType):
        parts = [_inline_check(m) for m in get_args(hint)]
        checks = [p for p in parts if p is not None]
        if len(checks) == len(parts):
            return (
                "(" + " and ".join(c for c, _, _ in checks) + ")",
                " or ".join(label for _, label, _ in checks),
                tuple(k for _, _, kinds in checks for k in kinds),
            )
    return None


def _value_decoder(hint: object) -> Decode:
    """A function reading a value of ``hint`` (raises :class:`_Mismatch`)."""
    if hint is Any:
        return lambda v: v
    check = _inline_check(hint)
    if check is not None:
        _, label, kinds = check

        def scalar(value: JSON) -> JSON:
            if value.__class__ not in kinds:
                raise _Mismatch(f"expected {label}, got {_json_type(value)}")
            return value

        return scalar
    origin = get_origin(hint)
    if origin is Literal:
        allowed = get_args(hint)

        def literal(value: JSON) -> JSON:
            if value in allowed and type(value) in {type(a) for a in allowed}:
                return value
            raise _Mismatch(f"expected one of {list(allowed)}, got {value!r}")

        return literal
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = hint

        def member(value: JSON) -> enum.Enum:
            try:
                return members(value)
            except ValueError:
                raise _Mismatch(f"expected a {members.__name__}, got {value!r}") from None

        return member
    if _is_record(hint):
        return _decoder(hint)
    if origin in (Union, types.UnionType):
        return _union_decoder(get_args(hint))
    if origin in (tuple, list, Sequence, typing.Sequence):
        args = [a for a in get_args(hint) if a is not Ellipsis]
        return _sequence_decoder(
            _value_decoder(args[0]) if args else _value_decoder(Any),
            list if origin is list else tuple,
        )
    if origin in (dict, Mapping, typing.Mapping):
        kv = get_args(hint)
        return _mapping_decoder(_value_decoder(kv[1]) if len(kv) == 2 else _value_decoder(Any))
    raise TypeError(f"the record codec has no rule for {hint!r}")


def _sequence_decoder(item: Decode, make: Callable[[list[object]], object]) -> Decode:
    def sequence(value: JSON) -> object:
        if value.__class__ is not list and not isinstance(value, list | tuple):
            raise _Mismatch(f"expected an array, got {_json_type(value)}")
        try:
            return make([item(x) for x in value])
        except _Mismatch:
            for i, x in enumerate(value):  # the slow path names the element
                try:
                    item(x)
                except _Mismatch as exc:
                    exc.path.append(f"[{i}]")
                    raise exc from None
            raise

    return sequence


def _mapping_decoder(val: Decode) -> Decode:
    def mapping(value: JSON) -> dict[str, object]:
        if value.__class__ is not dict and not isinstance(value, Mapping):
            raise _Mismatch(f"expected an object, got {_json_type(value)}")
        out = {}
        for k, x in value.items():
            try:
                out[k] = val(x)
            except _Mismatch as exc:
                exc.path.append(f".{k}")
                raise
        return out

    return mapping


def _union_decoder(members: tuple[object, ...]) -> Decode:
    records = [m for m in members if _is_record(m)]
    others = [_value_decoder(m) for m in members if not _is_record(m)]
    pick = _record_picker(records) if records else None
    names = " or ".join(_name(m) for m in members)

    def union(value: JSON) -> object:
        if pick is not None and isinstance(value, Mapping):
            return _decoder(pick(value))(value)
        for dec in others:
            try:
                return dec(value)
            except _Mismatch:
                continue
        raise _Mismatch(f"expected {names}, got {_json_type(value)}")

    return union


def _record_picker(records: list[type]) -> Callable[[Mapping[str, JSON]], type]:
    """Which record of a union an object is: its ``_claims``, else its required keys."""

    def pick(data: Mapping[str, JSON]) -> type:
        for cls in records:
            claims = getattr(cls, "_claims", None)
            if claims is not None:
                if claims(data):
                    return cls
            elif _required_keys(cls) <= data.keys():
                return cls
        raise _Mismatch(f"fits none of {', '.join(c.__name__ for c in records)}")

    return pick


def _build_decoder(cls: type) -> Decode:
    src = _Source()
    src.env["_MISSING"] = _MISSING_KEY
    src.env["_Mapping"] = Mapping
    src.env["_json_type"] = _json_type
    plan = _plan(cls)
    lines = [
        "def decode(d):",
        "    if d.__class__ is not dict and not isinstance(d, _Mapping):",
        "        raise _Mismatch('expected an object, got ' + _json_type(d))",
    ]
    args: list[str] = []
    rest: str | None = None
    known = [src.bind(frozenset(f.key for f in plan if not f.flat and not f.rest))]
    for i, f in enumerate(plan):
        a = f"a{i}"
        args.append(f"{f.attr}={a}")
        if f.flat:
            pick = src.bind(_record_picker([m for m in _members(f.hint) if _is_record(m)]))
            lines.append(f"    p{i} = {pick}(d)")
            lines.append(f"    {a} = {src.bind(_decoder)}(p{i})(d)")
            known.append(f"{src.bind(_known_keys)}(p{i})")
            continue
        if f.rest:
            rest = a
            continue
        lines.append(f"    {a} = d.get({f.key!r}, _MISSING)")
        lines.append(f"    if {a} is _MISSING:")
        if f.default is not dataclasses.MISSING:
            lines.append(f"        {a} = {src.bind(f.default)}")
        elif f.factory is not dataclasses.MISSING:
            lines.append(f"        {a} = {src.bind(f.factory)}()")
        else:
            lines.append(f"        raise _Mismatch({f'missing key {f.key!r}'!r})")
        check = _inline_check(f.hint)
        if f.hint is Any:
            continue
        if check is not None:
            cond, label, _ = check
            lines.append(f"    elif {cond.format(v=a)}:")
            lines.append(f"        raise _bad({'.' + f.key!r}, {label!r}, {a})")
            continue
        lines.append("    else:")
        lines.append("        try:")
        lines.append(f"            {a} = {src.bind(_value_decoder(f.hint))}({a})")
        lines.append("        except _Mismatch as exc:")
        lines.append(f"            exc.path.append({'.' + f.key!r})")
        lines.append("            raise")
    if rest is not None:
        lines.append(f"    known = {' | '.join(known)}")
        lines.append(f"    {rest} = {{k: x for k, x in d.items() if k not in known}}")
    lines.append(f"    return {src.bind(cls)}({', '.join(args)})")
    decode: Decode = _compile(lines, src, "decode", f"<decoder of {cls.__qualname__}>")
    return decode


_MISSING_KEY = object()


__all__ = ["FLAT", "JSONRecord", "from_json", "json_maker", "key", "rest", "to_json"]
