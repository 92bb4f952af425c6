"""Turn 1's effort ladder: the method raises the effort when turn 1 returns no carrier or no
tool call, up to the top level, where the run records why it stopped; a route without an
effort control has one level only."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import httpx
import pytest

from reasonwire.eval import EvalConfig, run_eval
from reasonwire.eval._embedded import sim_routes
from reasonwire.eval._records import read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.routes import Route
from reasonwire.sim import SimServer


def _turn1_efforts(out: Path) -> list[str]:
    return [
        str(r.get("effort"))
        for r in read_jsonl(out / "calls.jsonl")
        if r.get("type") == "call" and r.get("position") == "turn1"
    ]


def _notes(out: Path) -> list[str]:
    return [
        str(r.get("reason"))
        for r in read_jsonl(out / "runs.jsonl")
        if r.get("type") == "note" and r.get("step") == "opaque"
    ]


def _answer(tool_call: bool, call_from: str | None = None) -> httpx.MockTransport:
    """A chat model that never reasons; it calls the tool when ``tool_call`` (and, with
    ``call_from``, only at that ``reasoning_effort``)."""

    def handler(request: httpx.Request) -> httpx.Response:
        msg: dict[str, object] = {"role": "assistant", "content": "ok"}
        body = json.loads(request.content)
        if (
            tool_call
            and (call_from is None or body.get("reasoning_effort") == call_from)
            and "tools" in body
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
        (None, False, ["low", "medium", "high"]),  # no tool call: more effort may make one
        ("deepseek", True, ["low"]),  # the route has no effort levels: nothing to walk
        ("deepseek", False, ["low"]),
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


@pytest.mark.parametrize(
    ("tool_call", "why"),
    [
        (False, "no tool call at effort high, the top of the effort ladder (low > medium > high)"),
        (True, "no reasoning carrier at effort high, the top of the effort ladder"),
    ],
)
def test_the_walk_stops_at_the_top_level_and_says_so(
    tmp_path: Path, tool_call: bool, why: str
) -> None:
    route = Route("mock", "chat", "http://mock.invalid/v1", local=True)
    cfg = EvalConfig(
        targets=[Target(route, "m")], out=tmp_path, transport=_answer(tool_call), workers=1
    )
    run_eval(cfg)
    notes = _notes(tmp_path)
    assert len(notes) == 1
    assert notes[0].startswith(why)


def test_a_route_without_effort_levels_says_it_had_one_level(tmp_path: Path) -> None:
    route = Route("mock", "chat", "http://mock.invalid/v1", profile="deepseek", local=True)
    cfg = EvalConfig(
        targets=[Target(route, "m")], out=tmp_path, transport=_answer(False), workers=1
    )
    run_eval(cfg)
    assert _notes(tmp_path) == [
        "no tool call at effort low (the route takes no effort control: one level only)"
    ]


def test_a_model_that_calls_the_tool_only_at_high_effort_is_reached(tmp_path: Path) -> None:
    """No tool call at low and medium: the walk goes on, and the high turn 1 is the capture
    (it has a tool call; this model never reasons, so the note names the carrier)."""
    route = Route("mock", "chat", "http://mock.invalid/v1", local=True)
    cfg = EvalConfig(
        targets=[Target(route, "m")],
        out=tmp_path,
        transport=_answer(True, call_from="high"),
        workers=1,
    )
    run_eval(cfg)
    assert _turn1_efforts(tmp_path) == ["low", "medium", "high"]
    assert _notes(tmp_path)[0].startswith("no reasoning carrier at effort high")
