"""``wire/shape.py`` on its own: each node kind in both modes, with literal expected values
(validate raises naming the path; project drops), and every bound at its edge: integer ranges,
required fields, closed tags, the depth limit at MAX_DEPTH and MAX_DEPTH + 1."""

from __future__ import annotations

from typing import Any

import pytest

from reasonwire.wire.shape import (
    MAX_DEPTH,
    Anything,
    Blank,
    Bool,
    Const,
    Int,
    ListOf,
    Nullable,
    Num,
    Obj,
    OneOf,
    Scalar,
    Shape,
    ShapeError,
    Str,
    Tagged,
    project,
    validate,
)

CASES: list[tuple[str, Shape, Any, Any, str | None]] = [
    # name, shape, value, projected, validate error (None: validate returns the projection)
    ("str", Str(), "a", "a", None),
    ("str-wrong", Str(), 1, {}, "$: expected a string, got number"),
    ("blank", Blank(), "secret", "", None),
    ("int", Int(), 3, 3, None),
    ("int-bool", Int(), True, {}, "$: expected an integer, got boolean"),
    ("int-lo-edge", Int(lo=1, hi=5), 1, 1, None),
    ("int-hi-edge", Int(lo=1, hi=5), 5, 5, None),
    ("int-below", Int(lo=1, hi=5), 0, {}, "$: integer out of range [1, 5]"),
    ("int-above", Int(lo=1, hi=5), 6, {}, "$: integer out of range [1, 5]"),
    ("num", Num(), 1.5, 1.5, None),
    ("num-bool", Num(), False, {}, "$: expected a number, got boolean"),
    ("bool", Bool(), False, False, None),
    ("bool-wrong", Bool(), "true", {}, "$: expected true or false, got string"),
    ("const", Const(frozenset({"a", "b"})), "b", "b", None),
    ("const-wrong", Const(frozenset({"a", "b"})), "c", {}, "$: expected one of ['a', 'b']"),
    ("scalar", Scalar(), None, None, None),
    ("scalar-object", Scalar(), {"x": 1}, {}, "$: expected a plain value, got object"),
    ("nullable", Nullable(Int()), None, None, None),
    ("obj-drops-unknown", Obj({"a": Int()}), {"a": 1, "b": 2}, {"a": 1}, None),
    ("obj-nested-path", Obj({"a": Obj({"b": Int()})}), {"a": {"b": "x"}}, {"a": {}},
     "$.a.b: expected an integer, got string"),
    ("obj-required", Obj({"a": Int(), "b": Int()}, frozenset({"b"})), {"a": 1}, {},
     "$: missing required field 'b'"),
    ("list", ListOf(Int()), [1, "x", 3], [1, 3], "$[1]: expected an integer, got string"),
    ("tagged", Tagged({"t": Obj({"type": Str(), "v": Int()})}),
     {"type": "t", "v": 1, "w": 2}, {"type": "t", "v": 1}, None),
    ("tagged-unknown-dropped", ListOf(Tagged({"t": Obj({"type": Str()})})),
     [{"type": "u"}, {"type": "t"}], [{"type": "t"}], None),
    ("tagged-closed", Tagged({"t": Obj({"type": Str()})}, closed=True), {"type": "u"}, {},
     "$: type must be one of: t"),
    ("tagged-untagged", Tagged({}, key="thought", untagged=Obj({"text": Str()})),
     {"text": "a", "x": 1}, {"text": "a"}, None),
    ("oneof-str", OneOf((Str(), ListOf(Int()))), "a", "a", None),
    ("oneof-list", OneOf((Str(), ListOf(Int()))), [1], [1], None),
    ("oneof-none", OneOf((Str(), ListOf(Int()))), {"a": 1}, {}, "$: unexpected object"),
    ("anything", Anything(), {"k": [1, {"z": None}]}, {"k": [1, {"z": None}]}, None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "shape", "value", "projected", "error"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_each_node_in_both_modes(
    name: str, shape: Shape, value: Any, projected: Any, error: str | None
) -> None:
    assert project(shape, value) == projected
    if error is None:
        expected = value if name == "blank" else projected  # validate keeps a Blank's text
        assert validate(shape, value) == expected
    else:
        with pytest.raises(ShapeError) as err:
            validate(shape, value)
        assert str(err.value) == error


def test_text_filter_applies_to_text_strings_only() -> None:
    shape = Obj({"shown": Str(text=True), "id": Str()})
    got = project(shape, {"shown": "<think>x</think>hi", "id": "<think>"}, lambda p, t: t.upper())
    assert got == {"shown": "<THINK>X</THINK>HI", "id": "<think>"}


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_depth_limit_at_its_edge() -> None:
    """Anything walks values nested exactly MAX_DEPTH levels; one more is refused/dropped."""
    ok = _nested(MAX_DEPTH)
    assert validate(Anything(), ok) == ok
    too_deep = _nested(MAX_DEPTH + 1)
    with pytest.raises(ShapeError, match="nested deeper than 64 levels"):
        validate(Anything(), too_deep)
    assert project(Obj({"a": Anything()}), {"a": too_deep}) == {}
