"""The record codec: field order is key order, ABSENT keys, flat layouts, unknown keys kept."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from reasonwire.errors import ConfigError
from reasonwire.method.codec import FLAT, JSONRecord, from_json, key, rest, to_json
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
