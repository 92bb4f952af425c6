"""Count endpoints as data: every spec reaches the simulator's real endpoint, the body it
builds is accepted, and the count answers how much a carrier adds."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from reasonwire.errors import MalformedBody
from reasonwire.sim import SimServer
from reasonwire.wire.count_tokens import CountSpec, count_body, count_path, parse_count
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    Message,
    RequestOptions,
    System,
    ToolCall,
    ToolResult,
    User,
)
from reasonwire.wire.registry import dialects, get_dialect

TRACE = "Weighing the lighthouse keeper's ledger against the tide tables. " * 20
# (dialect, model, base path, carrier kind the sim's model reads in the loop)
CASES = [
    ("responses", "sim-gpt", "/v1", "reasoning_text"),
    ("gemini", "sim-gemini", "/v1beta", None),
    ("anthropic", "sim-claude", "/v1", None),
]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(seed=0) as server:
        yield server


def _body(dialect: str, model: str, kind: str | None) -> dict[str, object]:
    carriers = () if kind is None else (Carrier(dialect, kind, "t", TRACE, False),)  # type: ignore[arg-type]
    msgs: list[Message] = [
        System("Be brief."),
        User("Weather in Paris?"),
        Assistant(
            text="",
            tool_calls=(ToolCall("c1", "get_weather", '{"city":"Paris"}'),),
            carriers=carriers,
        ),
    ]
    msgs.append(ToolResult("c1", "get_weather", "sunny"))
    opts = RequestOptions(model=model, extra_body={"max_output_tokens": 64, "stream": False})
    return get_dialect(dialect).build_request(msgs, opts, None)  # type: ignore[arg-type]


def count_spec(dialect: str) -> CountSpec | None:
    return get_dialect(dialect).count


def test_chat_has_no_count_endpoint() -> None:
    assert count_spec("chat") is None
    assert {d.name for d in dialects() if d.count is not None} == {
        "responses",
        "anthropic",
        "gemini",
    }


@pytest.mark.parametrize(("dialect", "model", "base", "kind"), CASES)
def test_count_endpoint_on_the_sim(
    sim: SimServer, dialect: str, model: str, base: str, kind: str | None
) -> None:
    spec = count_spec(dialect)
    assert spec is not None
    body = count_body(spec, _body(dialect, model, None))
    assert set(body) <= spec.keep
    assert "stream" not in body and "max_output_tokens" not in body
    url = sim.root_url + base + count_path(spec, model)
    resp = httpx.post(url, json=body)
    assert resp.status_code == 200, resp.text
    without = parse_count(spec, resp.content)
    assert without > 0
    if kind is not None:
        with_ = parse_count(
            spec, httpx.post(url, json=count_body(spec, _body(dialect, model, kind))).content
        )
        # the trace is ~1,300 chars: the counted difference is of that order, not framing
        assert with_ - without > len(TRACE) // 8


def test_gemini_path_takes_the_model_without_prefix() -> None:
    spec = count_spec("gemini")
    assert spec is not None
    assert count_path(spec, "models/gemini-3-pro") == "/models/gemini-3-pro:countTokens"


def test_parse_count_refuses_answers_without_a_count() -> None:
    spec = count_spec("anthropic")
    assert spec is not None
    assert parse_count(spec, b'{"input_tokens": 12}') == 12
    for bad in (b"{}", b'{"input_tokens": "12"}', b'{"input_tokens": true}', b"[1]", b"{no"):
        with pytest.raises(MalformedBody):
            parse_count(spec, bad)
