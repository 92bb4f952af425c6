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
    # an option is taken when the value's JSON type is the one it describes (the first that
    # fits): each kind claims its own type and leaves the others to the next option
    ("oneof-blank", OneOf((ListOf(Int()), Blank())), "secret", "", None),
    ("oneof-not-blank", OneOf((Blank(), ListOf(Int()))), [1], [1], None),
    ("oneof-const", OneOf((Int(), Const(frozenset({"a"})))), "a", "a", None),
    ("oneof-not-const", OneOf((Const(frozenset({"a"})), Int())), 2, 2, None),
    ("oneof-obj", OneOf((Str(), Obj({"a": Int()}))), {"a": 1, "b": 2}, {"a": 1}, None),
    ("oneof-not-obj", OneOf((Obj({"a": Int()}), Str())), "s", "s", None),
    ("oneof-tagged", OneOf((Str(), Tagged({"t": Obj({"type": Str()})}))), {"type": "t"},
     {"type": "t"}, None),
    ("oneof-not-tagged", OneOf((Tagged({"t": Obj({"type": Str()})}), Str())), "s", "s", None),
    ("oneof-num", OneOf((Str(), Num())), 0.5, 0.5, None),
    ("oneof-not-num", OneOf((Num(), Str())), "s", "s", None),
    ("oneof-int", OneOf((Str(), Int())), 2, 2, None),
    ("oneof-not-int", OneOf((Int(), Str())), "s", "s", None),
    ("oneof-bool-not-int", OneOf((Int(), Bool())), True, True, None),
    ("anything", Anything(), {"k": [1, {"z": None}]}, {"k": [1, {"z": None}]}, None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "shape", "value", "projected", "error"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_each_node_in_both_modes(
    name: str, shape: Shape, value: Any, projected: Any, error: str | None
) -> None:
    assert project(shape, value) == projected
    if error is None:
        expected = value if name.endswith("blank") else projected  # validate keeps a Blank's
        # text
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


# Values inside containers: a container keeps a plain field's string or number without
# calling the field's own walk, so each kind of field is checked there too (its value of the
# right type, of the wrong type, out of its bounds), with the paths errors name.
FIELDS: list[tuple[str, Shape, Any, Any, str | None]] = [
    # name, field shape, value, projected (None: dropped), validate error
    ("int", Int(), 3, 3, None),
    ("int-bool", Int(), True, None, "$.f: expected an integer, got boolean"),
    ("int-float", Int(), 3.0, None, "$.f: expected an integer, got number"),
    ("int-bounded-out", Int(lo=1, hi=5), 9, None, "$.f: integer out of range [1, 5]"),
    ("int-bounded-in", Int(lo=1, hi=5), 5, 5, None),
    ("num-bool", Num(), False, None, "$.f: expected a number, got boolean"),
    ("num-float", Num(), 0.5, 0.5, None),
    ("bool-int", Bool(), 1, None, "$.f: expected true or false, got number"),
    ("str-int", Str(), 1, None, "$.f: expected a string, got number"),
    ("const-other", Const(frozenset({"a"})), "b", None, "$.f: expected one of ['a']"),
    ("blank", Blank(), "secret", "", None),
    ("scalar-list", Scalar(), [1], None, "$.f: expected a plain value, got array"),
    ("scalar-null", Scalar(), None, None, None),
    ("nullable-null", Nullable(Int()), None, None, None),
    ("nullable-str", Nullable(Int()), "x", None, "$.f: expected an integer, got string"),
    ("anything-str", Anything(), "x", "x", None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "field", "value", "projected", "error"), FIELDS,
                         ids=[c[0] for c in FIELDS])  # fmt: skip
def test_each_field_kind_inside_an_object_and_a_list(
    name: str, field: Shape, value: Any, projected: Any, error: str | None
) -> None:
    kept = error is None
    assert project(Obj({"f": field}), {"f": value}) == ({"f": projected} if kept else {})
    assert project(ListOf(field), [value]) == ([projected] if kept else [])
    if error is None:
        expected = {"f": value}  # validate keeps a Blank's text
        assert validate(Obj({"f": field}), {"f": value}) == expected
        assert validate(ListOf(field), [value]) == [value]
    else:
        with pytest.raises(ShapeError) as err:
            validate(Obj({"f": field}), {"f": value})
        assert str(err.value) == error
        with pytest.raises(ShapeError) as err:
            validate(ListOf(field), [value])
        assert str(err.value) == error.replace("$.f", "$[0]")


def test_a_text_filter_sees_each_text_string_with_its_path() -> None:
    """The filter gets the JSON path of every text string (a stream's think-tag cutter keeps
    one cutter per path), also through lists, nullable fields and repeated walks."""
    seen: list[tuple[str, str]] = []

    def upper(path: str, text: str) -> str:
        seen.append((path, text))
        return text.upper()

    shape = Obj(
        {
            "choices": ListOf(Obj({"text": Str(text=True), "maybe": Nullable(Str(text=True))})),
            "id": Str(),
        }
    )
    value = {"id": "i", "choices": [{"text": "a", "maybe": None}, {"text": "b", "maybe": "c"}]}
    want = {"id": "i", "choices": [{"text": "A", "maybe": None}, {"text": "B", "maybe": "C"}]}
    assert project(shape, value, upper) == want
    assert project(shape, value, upper) == want
    paths = ["$.choices[0].text", "$.choices[1].text", "$.choices[1].maybe"]
    texts = ["a", "b", "c"]
    assert seen == list(zip(paths + paths, texts + texts, strict=True))
    assert project(shape, value) == value  # no filter: the text as it is


def _objects(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def _object_shape(levels: int, leaf: Shape) -> Shape:
    shape = leaf
    for _ in range(levels):
        shape = Obj({"a": shape})
    return shape


@pytest.mark.parametrize("leaf", [Str(), Int(), Scalar()], ids=["str", "int", "scalar"])
def test_depth_limit_of_a_plain_field(leaf: Shape) -> None:
    """A string or number at depth MAX_DEPTH is kept; one level deeper it is refused (validate)
    or dropped (project), as any value that deep."""
    value = "x" if isinstance(leaf, Str | Scalar) else 1
    ok_shape, ok = _object_shape(MAX_DEPTH, leaf), _objects(MAX_DEPTH, value)
    assert validate(ok_shape, ok) == ok
    deep_shape, deep = _object_shape(MAX_DEPTH + 1, leaf), _objects(MAX_DEPTH + 1, value)
    with pytest.raises(ShapeError, match="nested deeper than 64 levels"):
        validate(deep_shape, deep)
    assert project(deep_shape, deep) == _objects(MAX_DEPTH, {})


def test_a_text_filter_sees_each_text_string_of_a_list() -> None:
    seen: list[str] = []

    def mark(path: str, text: str) -> str:
        seen.append(path)
        return f"<{text}>"

    shape = Obj({"parts": ListOf(Str(text=True)), "ids": ListOf(Str())})
    value = {"parts": ["a", "b"], "ids": ["x"]}
    assert project(shape, value, mark) == {"parts": ["<a>", "<b>"], "ids": ["x"]}
    assert seen == ["$.parts[0]", "$.parts[1]"]


def _lists(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _list_shape(levels: int, leaf: Shape) -> Shape:
    shape = leaf
    for _ in range(levels):
        shape = ListOf(shape)
    return shape


def test_depth_limit_of_a_plain_list_item() -> None:
    ok_shape, ok = _list_shape(MAX_DEPTH, Str()), _lists(MAX_DEPTH, "x")
    assert validate(ok_shape, ok) == ok
    deep_shape, deep = _list_shape(MAX_DEPTH + 1, Str()), _lists(MAX_DEPTH + 1, "x")
    with pytest.raises(ShapeError, match="nested deeper than 64 levels"):
        validate(deep_shape, deep)
    assert project(deep_shape, deep) == _lists(MAX_DEPTH, [])
