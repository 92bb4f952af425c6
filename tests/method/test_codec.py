"""The record codec: field order is key order, ABSENT keys, flat layouts, unknown keys kept."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from reasonwire.errors import ConfigError
from reasonwire.method.codec import FLAT, JSONRecord, from_json, json_maker, key, rest, to_json
from reasonwire.method.verdicts import Verdict
from reasonwire.wire.model import ABSENT


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent(JSONRecord):
    status: int
    elapsed: float
    note: str = ABSENT

    @classmethod
    def _claims(cls, data: Mapping[str, Any]) -> bool:
        return next(k for k in data if k in ("status", "ok")) == "status"


@dataclass(frozen=True, slots=True, kw_only=True)
class NotSent(JSONRecord):
    ok: bool
    status: int | None = ABSENT
    elapsed: float


@dataclass(frozen=True, slots=True)
class Pair(JSONRecord):
    name: str
    with_: int = key("with")


@dataclass(frozen=True, slots=True, kw_only=True)
class Call(JSONRecord):
    type: Literal["call"] = "call"
    pairs: tuple[Pair, ...] = ()
    result: Sent | NotSent = field(metadata=FLAT)
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    t: float
    unknown: Mapping[str, Any] = rest()


def _text(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def test_field_order_is_key_order_and_absent_keys_are_not_written() -> None:
    call = Call(
        pairs=(Pair("a", 1),),
        result=Sent(status=200, elapsed=0.5),
        verdicts={"x": Verdict.IN_LOOP_ONLY},
        t=1,
    )
    out = to_json(call)
    assert _text(out) == (
        '{"type":"call","pairs":[{"name":"a","with":1}],"status":200,"elapsed":0.5,'
        '"verdicts":{"x":"in-loop-only"},"t":1}'
    )
    assert type(out["verdicts"]["x"]) is str
    assert from_json(Call, out) == call


@pytest.mark.parametrize(
    "text",
    [
        '{"type":"call","pairs":[],"status":200,"elapsed":1,"note":"n","verdicts":{},"t":2.5}',
        '{"type":"call","pairs":[],"ok":false,"status":null,"elapsed":1,"verdicts":{},"t":2}',
        '{"type":"call","pairs":[],"ok":false,"elapsed":1,"verdicts":{},"t":2,"later":[1]}',
    ],
)
def test_every_layout_reads_and_writes_back_byte_for_byte(text: str) -> None:
    call = Call.from_json(json.loads(text))
    assert _text(call.to_json()) == text


def test_missing_keys_take_defaults_and_values_are_never_converted() -> None:
    call = from_json(Call, {"ok": True, "elapsed": 1, "t": 3})
    assert call.pairs == () and call.verdicts == {} and call.result == NotSent(ok=True, elapsed=1)
    assert type(call.result.elapsed) is int  # an int in a float field stays an int
    assert call.result.status is ABSENT


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ok": 1, "elapsed": 1, "t": 3}, "ok: expected a boolean, got a number"),
        ({"status": True, "elapsed": 1, "t": 3}, "status: expected an integer, got a boolean"),
        ({"type": "cal", "ok": True, "elapsed": 1, "t": 3}, r"type: expected one of \['call'\]"),
        (
            {"pairs": [{"name": "a", "with": 1}, {"name": "b"}], "ok": True, "elapsed": 1, "t": 3},
            r"pairs\[1\]: missing key 'with'",
        ),
        ({"verdicts": {"a": "no"}, "ok": True, "elapsed": 1, "t": 3}, r"verdicts\.a: expected"),
        ([], "Call: expected an object, got an array"),
    ],
)
def test_a_value_that_does_not_fit_names_its_path(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_json(Call, data)


@dataclass(frozen=True, slots=True)
class Inner(JSONRecord):
    word: Verdict
    n: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Outer(JSONRecord):
    name: str
    verdict: Verdict = ABSENT
    one: Inner | None
    many: tuple[Inner, ...]
    by: Mapping[str, Inner]
    tags: tuple[str, ...]
    note: str = ABSENT
    size: int = 3
    extra: Mapping[str, int] = field(default_factory=dict)


def test_a_maker_writes_what_the_encoder_writes_of_the_record_it_does_not_make() -> None:
    """``json_maker``: the class's arguments, nested records as their JSON, give the object
    ``to_json`` gives of the instance (enum words, tuples as lists, ABSENT keys left out,
    defaults taken), written as these literal texts."""
    inner = json_maker(Inner)
    assert inner(Verdict.REJECTED, None) == {"word": "rejected", "n": None}
    made = json_maker(Outer)(
        name="x", one=inner(Verdict.BASELINE, 1), many=(inner(word=Verdict.REJECTED, n=2),),
        by={"a": inner(Verdict.REJECTED, 3)}, tags=("t",), note="n",
    )  # fmt: skip
    typed = Outer(
        name="x", one=Inner(Verdict.BASELINE, 1), many=(Inner(Verdict.REJECTED, 2),),
        by={"a": Inner(Verdict.REJECTED, 3)}, tags=("t",), note="n",
    )  # fmt: skip
    want = (
        '{"name": "x", "one": {"word": "baseline", "n": 1}, "many": [{"word": "rejected", '
        '"n": 2}], "by": {"a": {"word": "rejected", "n": 3}}, "tags": ["t"], "note": "n", '
        '"size": 3, "extra": {}}'
    )
    assert json.dumps(made) == json.dumps(to_json(typed)) == want
    both = json_maker(Outer)(name="y", verdict=Verdict.REJECTED, one=None, many=(), by={},
                             tags=(), size=4, extra={"k": 1})  # fmt: skip
    assert json.dumps(both) == (
        '{"name": "y", "verdict": "rejected", "one": null, "many": [], "by": {}, "tags": [], '
        '"size": 4, "extra": {"k": 1}}'
    )
    with pytest.raises(TypeError):
        json_maker(Outer)("positional")


@dataclass(frozen=True, slots=True)
class Shadowing(JSONRecord):
    list: tuple[str, ...]


def test_no_maker_for_a_record_whose_keys_are_not_its_own_or_hide_a_name() -> None:
    with pytest.raises(TypeError, match="flat or rest"):
        json_maker(Call)
    with pytest.raises(TypeError, match=r"fields named \['list'\]"):
        json_maker(Shadowing)
