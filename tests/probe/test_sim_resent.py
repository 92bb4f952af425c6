"""On the simulator, the probe's measured re-sent reasoning equals the server's own bill
(issue 26, "Done when": measured figures equal the server's ``prompt_tokens`` deltas).

For each carrier kind the simulator serves: turn 1 through the probe produces the carrier;
turn 2 re-sends it through the probe; the same turn 2 without the carrier (the carrier's
field or block removed, nothing else changed) goes to the simulator directly. The expected
figure is the simulator's billed input of the first minus that of the second, read from its
answers (chat ``prompt_tokens``; Responses ``input_tokens``; Anthropic the three input
fields; Gemini ``promptTokenCount``), never from the probe.

Where the baseline is accepted comes from the documented rules the simulator imitates:

- Responses: items replayed without ids (WIRE.md > Responses API: "Peers split on keeping or
  dropping ids; keep items whole or drop ids consistently"), so a reasoning item may lose its
  ``encrypted_content`` without a pairing error;
- Anthropic and Gemini: the carrier in an earlier turn (WIRE.md > Anthropic Messages:
  "Earlier-turn thinking: older models strip it ..."; > Gemini: a signature is required only
  in "the current turn"), as the current turn's tool-use block must come back whole;
- chat: the fields are free-form; any message may drop them.

Earlier-turn carriers follow the dialect's documented rule (``Dialect.earlier_turns``): where
it drops them the figure is 0 and the carriers are counted as *documented*; the cases below
check both the dropped regime (the simulator bills 0) and the kept one (it bills them).

The counters are the route's own: the simulator's tokenizer (``reasonwire.sim.tokens``) for
chat and Anthropic text, the dialect's count endpoint (:class:`CountEndpoint`) for Responses
and Gemini text; an opaque carrier counts its producer's reasoning tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.probe import ProbeTransport, PromptCounter, Tokenizer
from reasonwire.probe.carriers import CountEndpoint
from reasonwire.probe.cli import app
from reasonwire.sim import tokens

TASK = "Find the population of Lyon."
AUTH = {"authorization": "Bearer sk-sim", "x-api-key": "sk-sim", "anthropic-version": "2023-06-01"}
SIM_TOKENIZER = Tokenizer("sim", tokens.count)

Body = dict[str, Any]
Q = {"type": "object", "properties": {"q": {"type": "string"}}}


def _report(ledger: Path) -> list[dict[str, Any]]:
    res = CliRunner().invoke(app, ["report", "--dir", str(ledger), "--json"])
    assert res.exit_code == 0, res.output
    return list(json.loads(res.output)["calls"])


# -- per dialect: the path, the billed input of an answer, turn 1 and turn 2 ------------------


def _chat_billed(answer: Body) -> int:
    return int(answer["usage"]["prompt_tokens"])


def _responses_billed(answer: Body) -> int:
    return int(answer["usage"]["input_tokens"])


def _anthropic_billed(answer: Body) -> int:
    u = answer["usage"]
    return int(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"])


def _gemini_billed(answer: Body) -> int:
    return int(answer["usageMetadata"]["promptTokenCount"])


C_TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look up.",
            "parameters": Q}}]  # fmt: skip


def _chat_case(
    model: str, field: str, cross: bool, detail: str | None = None
) -> Callable[[httpx.Client], tuple[Body, Body]]:
    """A tool loop on ``model`` whose assistant turn re-sends ``field`` (kept when ``cross``
    is False: the loop goes on; True: a new user message follows); ``detail``: only the
    ``reasoning_details`` entry of that type is kept (each entry of the simulator's answer
    holds the whole reasoning, the text one in clear and the encrypted one sealed)."""

    def build(http: httpx.Client) -> tuple[Body, Body]:
        first = http.post("/v1/chat/completions", json={"model": model, "tools": C_TOOLS,
                          "messages": [{"role": "user", "content": TASK}]}).json()  # fmt: skip
        msg = first["choices"][0]["message"]
        assert msg.get(field), (model, field, msg)
        call = msg["tool_calls"][0]
        if detail is not None:
            msg = dict(msg, reasoning_details=[d for d in msg[field] if d["type"] == detail])
            assert msg[field], first
        turn = [{"role": "user", "content": TASK}, msg,
                {"role": "tool", "tool_call_id": call["id"], "content": "522000"}]  # fmt: skip
        if cross:
            turn += [{"role": "assistant", "content": "About 522000."},
                     {"role": "user", "content": "And Paris?"}]  # fmt: skip
        with_ = {"model": model, "tools": C_TOOLS, "messages": turn}
        without = json.loads(json.dumps(with_))
        del without["messages"][1][field]
        return with_, without

    return build


R_TOOLS = [{"type": "function", "name": "lookup", "description": "Look up.",
            "parameters": Q}]  # fmt: skip


def _no_ids(items: list[Body]) -> list[Body]:
    return [{k: v for k, v in it.items() if k != "id"} for it in items]


def _responses_case(
    model: str, carrier: str, cross: bool
) -> Callable[[httpx.Client], tuple[Body, Body]]:
    """store=false, items replayed without ids; the reasoning item re-sends ``carrier``
    (``encrypted_content``, or ``summary`` alone)."""

    def build(http: httpx.Client) -> tuple[Body, Body]:
        summary = "auto" if carrier == "summary" else None
        base = {"model": model, "tools": R_TOOLS, "store": False,
                "reasoning": {"effort": "medium", "summary": summary}}  # fmt: skip
        if carrier == "encrypted_content":
            base["include"] = ["reasoning.encrypted_content"]
        first = http.post("/v1/responses", json={**base, "input": TASK}).json()
        out = _no_ids(first["output"])
        assert out[0]["type"] == "reasoning" and out[0].get(carrier), out[0]
        call = next(o for o in out if o["type"] == "function_call")
        items = [{"role": "user", "content": TASK}, *out,
                 {"type": "function_call_output", "call_id": call["call_id"],
                  "output": "522000"}]  # fmt: skip
        if cross:
            items += [{"role": "assistant", "content": "About 522000."},
                      {"role": "user", "content": "And Paris?"}]  # fmt: skip
        with_ = {**base, "input": items}
        without = json.loads(json.dumps(with_))
        del without["input"][1][carrier]
        return with_, without

    return build


A_TOOLS = [{"name": "lookup", "description": "Look up.",
            "input_schema": Q}]  # fmt: skip


def _anthropic_case(model: str) -> Callable[[httpx.Client], tuple[Body, Body]]:
    """A finished tool loop, then a new user message: the thinking (or redacted_thinking)
    block of the loop's assistant turn is earlier-turn reasoning."""

    def build(http: httpx.Client) -> tuple[Body, Body]:
        base = {"model": model, "max_tokens": 1024, "tools": A_TOOLS,
                "thinking": {"type": "enabled", "budget_tokens": 1024}}  # fmt: skip
        first = http.post("/v1/messages", json={**base, "messages": [
            {"role": "user", "content": TASK}]}).json()  # fmt: skip
        blocks = first["content"]
        assert blocks[0]["type"] in ("thinking", "redacted_thinking"), blocks
        tool = next(b for b in blocks if b["type"] == "tool_use")
        turn = [{"role": "user", "content": TASK}, {"role": "assistant", "content": blocks},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool["id"],
                                              "content": "522000"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "About 522000."}]},
                {"role": "user", "content": "And Paris?"}]  # fmt: skip
        with_ = {**base, "messages": turn}
        without = json.loads(json.dumps(with_))
        without["messages"][1]["content"] = blocks[1:]
        return with_, without

    return build


G_TOOLS = [{"functionDeclarations": [{"name": "lookup", "description": "Look up.",
            "parameters": Q}]}]  # fmt: skip
G_CFG = {"thinkingConfig": {"includeThoughts": True}}
STAND_IN = "skip_thought_signature_validator"


def _gemini_case(
    model: str, carrier: str, cross: bool = True
) -> Callable[[httpx.Client], tuple[Body, Body]]:
    """A finished tool loop, then a new user message: the model content's ``thought`` part
    or the ``thoughtSignature`` of its function call is earlier-turn reasoning. In the loop
    (``cross`` False) the signature cannot be left out (a 4xx): the baseline carries the
    documented stand-in ``skip_thought_signature_validator`` instead (WIRE.md > Gemini)."""

    def build(http: httpx.Client) -> tuple[Body, Body]:
        first = http.post(f"/v1beta/models/{model}:generateContent", json={
            "contents": [{"role": "user", "parts": [{"text": TASK}]}], "tools": G_TOOLS,
            "generationConfig": G_CFG}).json()  # fmt: skip
        parts = first["candidates"][0]["content"]["parts"]
        assert parts[0].get("thought") is True and "thoughtSignature" in parts[1], parts
        contents = [{"role": "user", "parts": [{"text": TASK}]}, {"role": "model", "parts": parts},
                    {"role": "user", "parts": [{"functionResponse": {"name": "lookup",
                                                "response": {"result": "522000"}}}]}]  # fmt: skip
        if cross:
            contents += [{"role": "model", "parts": [{"text": "About 522000."}]},
                         {"role": "user", "parts": [{"text": "And Paris?"}]}]  # fmt: skip
        with_ = {"contents": contents, "tools": G_TOOLS, "generationConfig": G_CFG}
        without = json.loads(json.dumps(with_))
        if carrier == "thought":
            without["contents"][1]["parts"] = parts[1:]
        elif cross:
            del without["contents"][1]["parts"][1]["thoughtSignature"]
        else:
            without["contents"][1]["parts"][1]["thoughtSignature"] = STAND_IN
        return with_, without

    return build


# (case id, path, billed input, the two bodies, the route's counter)
CASES: list[tuple[str, str, Callable[[Body], int], Any, PromptCounter | Tokenizer | None]] = [
    ("chat reasoning_content in the loop (sim-qwen3)", "/v1/chat/completions", _chat_billed,
     _chat_case("sim-qwen3", "reasoning_content", cross=False), SIM_TOKENIZER),
    ("chat reasoning across turns (sim-vllm)", "/v1/chat/completions", _chat_billed,
     _chat_case("sim-vllm", "reasoning", cross=True), SIM_TOKENIZER),
    ("chat reasoning.encrypted in the loop (sim-openrouter)", "/v1/chat/completions",
     _chat_billed, _chat_case("sim-openrouter", "reasoning_details", False,
                              "reasoning.encrypted"), SIM_TOKENIZER),
    ("chat reasoning.text in the loop (sim-openrouter)", "/v1/chat/completions",
     _chat_billed, _chat_case("sim-openrouter", "reasoning_details", False,
                              "reasoning.text"), SIM_TOKENIZER),
    ("responses encrypted_content in the loop (sim-gpt)", "/v1/responses", _responses_billed,
     _responses_case("sim-gpt", "encrypted_content", cross=False), CountEndpoint()),
    ("responses encrypted_content across turns (sim-gpt-allturns)", "/v1/responses",
     _responses_billed, _responses_case("sim-gpt-allturns", "encrypted_content", cross=True),
     CountEndpoint()),
    ("responses summary_text in the loop (sim-gpt)", "/v1/responses", _responses_billed,
     _responses_case("sim-gpt", "summary", cross=False), CountEndpoint()),
    ("anthropic thinking across turns (sim-claude-preserve)", "/v1/messages", _anthropic_billed,
     _anthropic_case("sim-claude-preserve"), SIM_TOKENIZER),
    ("anthropic redacted_thinking across turns (sim-claude-redacted)", "/v1/messages",
     _anthropic_billed, _anthropic_case("sim-claude-redacted"), SIM_TOKENIZER),
    ("gemini thought across turns (sim-gemini)", "/v1beta/models/sim-gemini:generateContent",
     _gemini_billed, _gemini_case("sim-gemini", "thought"), CountEndpoint()),
    ("gemini thoughtSignature across turns (sim-gemini)",
     "/v1beta/models/sim-gemini:generateContent", _gemini_billed,
     _gemini_case("sim-gemini", "thoughtSignature"), CountEndpoint()),
]  # fmt: skip


CROSS = [
    ("gemini thoughtSignature in the loop (sim-gemini)",
     "/v1beta/models/sim-gemini:generateContent", _gemini_billed,
     _gemini_case("sim-gemini", "thoughtSignature", cross=False), CountEndpoint()),
    ("responses encrypted_content across turns (sim-gpt)", "/v1/responses", _responses_billed,
     _responses_case("sim-gpt", "encrypted_content", cross=True), CountEndpoint()),
    ("anthropic thinking across turns (sim-claude)", "/v1/messages", _anthropic_billed,
     _anthropic_case("sim-claude"), SIM_TOKENIZER),
    ("chat reasoning_content across turns (sim-qwen3)", "/v1/chat/completions", _chat_billed,
     _chat_case("sim-qwen3", "reasoning_content", cross=True), SIM_TOKENIZER),
]  # fmt: skip
"""The carrier's position decides (once strict xfails): an earlier-turn carrier the dialect's
documented rule drops counts 0 tokens (OpenAI reasoning guide: reasoning tokens of earlier
steps are discarded; Anthropic: earlier thinking is not carried forward as input; the Qwen3
template renders reasoning only after the last user query), and a Gemini signature in the
current turn's loop counts its producer's thoughts, as the recordings show (the prompt grows
by the producer's ``thoughtsTokenCount``: tests/probe/test_resent_recorded.py)."""


@pytest.mark.parametrize(
    ("path", "billed", "case", "counter"),
    [c[1:] for c in [*CASES, *CROSS]],
    ids=[c[0] for c in [*CASES, *CROSS]],
)  # fmt: skip
def test_measured_resent_equals_the_simulators_delta(
    sim_server: Any, tmp_path: Path, path: str, billed: Callable[[Body], int],
    case: Callable[[httpx.Client], tuple[Body, Body]], counter: Any,
) -> None:  # fmt: skip
    root = sim_server.base_url.removesuffix("/v1")
    transport = ProbeTransport("s", ledger_dir=tmp_path, tokenizer=counter)
    with httpx.Client(transport=transport, base_url=root, headers=AUTH, timeout=30) as probed, \
            httpx.Client(base_url=root, headers=AUTH, timeout=30) as plain:  # fmt: skip
        with_, without = case(probed)
        got = probed.post(path, json=with_)
        assert got.status_code == 200, got.text
        base = plain.post(path, json=without)
        assert base.status_code == 200, base.text
    delta = billed(got.json()) - billed(base.json())
    calls = _report(tmp_path)
    assert len(calls) == 2
    assert calls[1]["resent_measured"] == delta
    assert calls[1]["resent_estimated"] == 0


@pytest.mark.parametrize(
    ("path", "case", "counter"),
    [(c[1], c[3], c[4]) for c in CROSS[1:]],
    ids=[c[0] for c in CROSS[1:]],
)
def test_a_dropped_earlier_turn_carrier_is_labelled_documented(
    sim_server: Any, tmp_path: Path, path: str,
    case: Callable[[httpx.Client], tuple[Body, Body]], counter: Any,
) -> None:  # fmt: skip
    """The three documented drops: 0 tokens, and the carriers the request re-sent from the
    earlier turn are counted as documented (all of them: the one assistant turn is earlier)."""
    root = sim_server.base_url.removesuffix("/v1")
    transport = ProbeTransport("s", ledger_dir=tmp_path, tokenizer=counter)
    with httpx.Client(transport=transport, base_url=root, headers=AUTH, timeout=30) as probed:
        with_, _ = case(probed)
        assert probed.post(path, json=with_).status_code == 200
    call = _report(tmp_path)[1]
    assert call["resent_measured"] == call["resent_estimated"] == 0
    assert call["documented_carriers"] >= 1
    assert call["documented_bytes"] == call["sent_text_bytes"] + call["sent_opaque_bytes"]


def test_an_earlier_turn_carrier_without_a_documented_rule_is_estimated(
    sim_server: Any, tmp_path: Path
) -> None:
    """Chat Completions documents no earlier-turn rule (the template decides): the route's
    tokenizer count of the re-sent text is kept but labelled estimated, and the measured
    figure stays equal to the bill (sim-chat-ignore reads no reasoning field: delta 0)."""
    root = sim_server.base_url.removesuffix("/v1")
    path = "/v1/chat/completions"
    transport = ProbeTransport("s", ledger_dir=tmp_path, tokenizer=SIM_TOKENIZER)
    with httpx.Client(transport=transport, base_url=root, headers=AUTH, timeout=30) as probed, \
            httpx.Client(base_url=root, headers=AUTH, timeout=30) as plain:  # fmt: skip
        with_, without = _chat_case("sim-chat-ignore", "reasoning_content", cross=True)(probed)
        got = probed.post(path, json=with_)
        base = plain.post(path, json=without)
        assert got.status_code == base.status_code == 200
    call = _report(tmp_path)[1]
    assert call["resent_measured"] == _chat_billed(got.json()) - _chat_billed(base.json()) == 0
    assert call["resent_estimated"] == tokens.count(with_["messages"][1]["reasoning_content"])
    assert call["documented_carriers"] == 0
