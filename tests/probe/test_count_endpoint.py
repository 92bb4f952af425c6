"""A re-sent text carrier counted through the route's count endpoint (issue 26 point 4, "the
provider's count endpoint where the route has one"): :class:`CountEndpoint`.

Against the simulator's count endpoints (``/v1/responses/input_tokens``,
``/v1/messages/count_tokens``, ``:countTokens``): the probe's figure equals the endpoint's own
count of the request with the carrier minus its count without it, asked here directly. A count
call that fails (4xx, 5xx, timeout) leaves the estimate, labelled so; no count call is sent
when none can change the figure; the count call carries the observed call's key, and the key
is written nowhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.probe import ProbeTransport
from reasonwire.probe.carriers import CountEndpoint
from reasonwire.probe.cli import app

KEY = "sk-count-endpoint-secret-0123456789"
TRACE = "First the key, then the value: the lookup needs both before it can answer."
TASK = "Find the population of Lyon."


def _report(ledger: Path) -> list[dict[str, Any]]:
    res = CliRunner().invoke(app, ["report", "--dir", str(ledger), "--json"])
    assert res.exit_code == 0, res.output
    return list(json.loads(res.output)["calls"])


def _loop(reasoning: dict[str, Any] | None) -> dict[str, Any]:
    """A Responses tool loop (store=false, items without ids) whose reasoning item is
    ``reasoning`` (none when None)."""
    call = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    if reasoning is not None:
        items.append({"type": "reasoning", **reasoning})
    items += [call, {"type": "function_call_output", "call_id": "call_1", "output": "522000"}]
    return {"model": "sim-gpt", "store": False, "input": items}


RAW = {"summary": [], "content": [{"type": "reasoning_text", "text": TRACE}]}
"""A reasoning item holding its text in clear (``content`` of ``reasoning_text``, as
open-weight Responses servers return it): the simulator reads it in the loop."""


class Spy:
    """A count client that records each count request, then answers as ``answer`` says."""

    def __init__(self, answer: Any) -> None:
        self.seen: list[httpx.Request] = []
        self.answer = answer
        self.client = httpx.Client(transport=httpx.MockTransport(self._handle))

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        result = self.answer(request)
        if isinstance(result, Exception):
            raise result
        assert isinstance(result, httpx.Response)
        return result


def _probe(sim: Any, ledger: Path, counter: Any, body: dict[str, Any], path: str) -> Any:
    transport = ProbeTransport("c", ledger_dir=ledger, tokenizer=counter)
    with httpx.Client(transport=transport, base_url=sim.base_url, timeout=30,
                      headers={"authorization": f"Bearer {KEY}"}) as http:  # fmt: skip
        resp = http.post(path, json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_the_figure_is_the_endpoints_own_delta(sim_server: Any, tmp_path: Path) -> None:
    with_, without = _loop(RAW), _loop({"summary": [], "content": [
        {"type": "reasoning_text", "text": ""}]})  # fmt: skip
    counts = []
    for body in (with_, without):
        resp = httpx.post(sim_server.base_url + "/responses/input_tokens", json=body)
        assert resp.status_code == 200, resp.text
        counts.append(resp.json()["input_tokens"])
    delta = counts[0] - counts[1]
    assert delta > 0
    answer = _probe(sim_server, tmp_path, CountEndpoint(), with_, "/responses")
    (call,) = _report(tmp_path)
    assert call["billed_input"] == answer["usage"]["input_tokens"] == counts[0]
    assert call["resent_measured"] == delta and call["resent_estimated"] == 0


def test_the_count_call_goes_to_the_routes_endpoint_with_the_calls_key(
    sim_server: Any, tmp_path: Path
) -> None:
    spy = Spy(lambda r: httpx.Response(200, json={"input_tokens": 40 if b"First" in r.content
                                                  else 30}))  # fmt: skip
    _probe(sim_server, tmp_path, CountEndpoint(client=spy.client), _loop(RAW), "/responses")
    assert [r.url.path for r in spy.seen] == ["/v1/responses/input_tokens"] * 2
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in spy.seen)
    sent = json.loads(spy.seen[0].content)
    assert sorted(sent) == ["input", "model"]  # store: a generation field, left out
    (call,) = _report(tmp_path)
    assert call["resent_measured"] == 10 and call["resent_estimated"] == 0
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert KEY not in f.read_text(errors="replace")


@pytest.mark.parametrize(
    "answer",
    [lambda r: httpx.Response(400, json={"error": {"message": "bad"}}),
     lambda r: httpx.Response(503, text="down"),
     lambda r: httpx.ReadTimeout("count timed out", request=r),
     lambda r: httpx.Response(200, json={"input_tokens": "many"})],
    ids=["4xx", "5xx", "timeout", "no-count"],
)  # fmt: skip
def test_a_failing_count_leaves_the_estimate(
    sim_server: Any, tmp_path: Path, answer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    spy = Spy(answer)
    _probe(sim_server, tmp_path, CountEndpoint(client=spy.client), _loop(RAW), "/responses")
    assert len(spy.seen) == 1  # the whole request's count failed: nothing more is asked
    (call,) = _report(tmp_path)
    assert call["resent_measured"] == 0
    assert call["resent_estimated"] == len(TRACE.encode()) / 4
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err


def test_a_later_failure_stops_the_counts(sim_server: Any, tmp_path: Path) -> None:
    body = _loop(RAW)
    again = [{"type": "reasoning_text", "text": TRACE + " again"}]
    body["input"].insert(1, {"type": "reasoning", "summary": [], "content": again})
    answers = iter([httpx.Response(200, json={"input_tokens": 50}), httpx.Response(500)])
    spy = Spy(lambda r: next(answers))
    _probe(sim_server, tmp_path, CountEndpoint(client=spy.client), body, "/responses")
    assert len(spy.seen) == 2
    (call,) = _report(tmp_path)
    assert call["resent_measured"] == 0
    assert call["resent_estimated"] == (len(TRACE.encode()) * 2 + len(b" again")) / 4


def _never(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"no count call expected, got {request.url}")


def test_no_count_call_that_cannot_change_the_figure(sim_server: Any, tmp_path: Path) -> None:
    """No carrier; a reasoning item's encrypted_content with its summary text (the item's
    figure is its producer's reasoning tokens, the summary is counted with it); a thinking
    text signed by the block's signature (emptying it is refused); a route whose dialect has
    no count endpoint (chat)."""
    spy = Spy(_never)
    counter = CountEndpoint(client=spy.client)
    _probe(sim_server, tmp_path, counter, _loop(None), "/responses")
    opaque = _probe(sim_server, tmp_path, counter, {
        "model": "sim-gpt", "store": False, "input": TASK, "tools": [{"type": "function",
        "name": "lookup", "parameters": {"type": "object"}}],
        "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}},
        "/responses")  # fmt: skip
    items = [{k: v for k, v in o.items() if k != "id"} for o in opaque["output"]]
    assert items[0]["summary"][0]["text"] and items[0]["encrypted_content"]
    _probe(sim_server, tmp_path, counter, {"model": "sim-gpt", "store": False, "input": [
        {"role": "user", "content": TASK}, *items,
        {"type": "function_call_output", "call_id": items[-1]["call_id"], "output": "1"}]},
        "/responses")  # fmt: skip
    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    thinking = {"type": "enabled", "budget_tokens": 1024}
    first = _probe(sim_server, tmp_path, counter, {"model": "sim-claude", "max_tokens": 64,
                   "tools": tools, "thinking": thinking,
                   "messages": [{"role": "user", "content": TASK}]}, "/messages")  # fmt: skip
    tool = next(b for b in first["content"] if b["type"] == "tool_use")
    _probe(sim_server, tmp_path, counter, {"model": "sim-claude", "max_tokens": 64,
           "tools": tools, "thinking": thinking, "messages": [
               {"role": "user", "content": TASK},
               {"role": "assistant", "content": first["content"]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool["id"],
                                             "content": "1"}]}]}, "/messages")  # fmt: skip
    _probe(sim_server, tmp_path, counter, {"model": "sim-chat-all", "messages": [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "ok", "reasoning_content": TRACE},
        {"role": "user", "content": "more"}]}, "/chat/completions")  # fmt: skip
    assert spy.seen == []
    calls = _report(tmp_path)
    reasoning = opaque["usage"]["output_tokens_details"]["reasoning_tokens"]
    assert reasoning > 0
    assert (calls[2]["resent_measured"], calls[2]["resent_estimated"]) == (reasoning, 0)
    assert calls[-1]["resent_estimated"] == len(TRACE.encode()) / 4  # chat: estimated


def test_a_route_without_a_count_endpoint_uses_the_fallback_tokenizer(
    sim_server: Any, tmp_path: Path
) -> None:
    """Chat Completions has no count endpoint: the route's tokenizer given as ``fallback``
    counts the text (the simulator's own: its prompt grows by that much, as
    test_sim_resent shows)."""
    from reasonwire.probe import Tokenizer
    from reasonwire.sim import tokens

    spy = Spy(_never)
    counter = CountEndpoint(client=spy.client, fallback=Tokenizer("sim", tokens.count))
    _probe(sim_server, tmp_path, counter, {"model": "sim-chat-all", "messages": [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "ok", "reasoning_content": TRACE},
        {"role": "user", "content": "more"}]}, "/chat/completions")  # fmt: skip
    (call,) = _report(tmp_path)
    assert spy.seen == []
    assert call["resent_measured"] == 17 and call["resent_estimated"] == 0  # TRACE: 17 pieces


def test_a_request_that_cannot_be_read_is_left_to_the_estimate() -> None:
    from reasonwire.probe.carriers import bind_counter
    from reasonwire.wire.registry import get_dialect

    class Unreadable:
        @property
        def url(self) -> object:
            raise RuntimeError("no url")

        @property
        def headers(self) -> dict[str, str]:
            return {}

    assert bind_counter(CountEndpoint(), Unreadable(), get_dialect("responses")) is None
