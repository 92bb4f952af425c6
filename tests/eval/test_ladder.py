"""Turn 1's effort ladder is walked only where it can help: the model called the tool but
showed no reasoning, and the route takes an effort control."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import httpx
import pytest

from reasonwire.eval import EvalConfig, run_eval
from reasonwire.eval.embedded import sim_routes
from reasonwire.eval.records import read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.routes import Route
from reasonwire.sim import SimServer


def _turn1_efforts(out: Path) -> list[str]:
    return [
        str(r.get("effort"))
        for r in read_jsonl(out / "calls.jsonl")
        if r.get("type") == "call" and r.get("position") == "turn1"
    ]


def _answer(tool_call: bool) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        msg: dict[str, object] = {"role": "assistant", "content": "ok"}
        if (
            tool_call
            and "tools" in json.loads(request.content)
            and "tool" not in str([m.get("role") for m in json.loads(request.content)["messages"]])
        ):
            msg["tool_calls"] = [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'},
                }
            ]
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "m",
                "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            },
        )

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("profile", "tool_call", "efforts"),
    [
        (None, True, ["low", "medium", "high"]),  # a tool call, no carrier: more effort may help
        (None, False, ["low"]),  # no tool call at all: effort does not make one
        ("deepseek", True, ["low"]),  # the route has no effort levels: nothing to walk
    ],
)
def test_the_ladder_is_walked_only_where_it_helps(
    tmp_path: Path, profile: str | None, tool_call: bool, efforts: list[str]
) -> None:
    route = Route("mock", "chat", "http://mock.invalid/v1", profile=profile, local=True)
    cfg = EvalConfig(
        targets=[Target(route, "m")], out=tmp_path, transport=_answer(tool_call), workers=1
    )
    run_eval(cfg)
    assert _turn1_efforts(tmp_path) == efforts


def test_a_model_without_reasoning_at_low_still_climbs(sim: SimServer, tmp_path: Path) -> None:
    route = sim_routes(sim.base_url, sim.root_url)["responses"]
    run_eval(EvalConfig(targets=[Target(route, "sim-gpt-lowskip")], out=tmp_path))
    assert Counter(_turn1_efforts(tmp_path)) == Counter({"low": 1, "medium": 1})
