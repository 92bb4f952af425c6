"""Repairs: into a new file of the same format, each change with its rule and source, never
a carrier that was not there, and the doctor finds the copy clean. Where the simulator
models the rule, the request built from the repaired history is accepted where the damaged
one got the provider's documented error."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.doctor import parse
from reasonwire.doctor.checks import findings
from reasonwire.doctor.repair import SOURCES, repair, serialise
from reasonwire.sim.pytest_plugin import sim_server  # noqa: F401  (the shared fixture)
from reasonwire.sim.server import SimServer
from tests.doctor.corpus import PRESENT, load_cassette, session

CARRIER = re.compile(rb'"(?:signature|thinkingSignature|thoughtSignature|encrypted_content|data)"'
                     rb':\s*"([^"]*)"')  # fmt: skip


def _carriers(data: bytes) -> set[bytes]:
    return set(CARRIER.findall(data))


def _repair(path: Path, data: bytes | None = None) -> tuple[bytes, bytes, Any]:
    raw = path.read_bytes() if data is None else data
    doc = parse(path, raw)
    plan = repair(doc)
    return raw, serialise(doc), plan


@pytest.mark.parametrize(
    "name",
    [
        "claude-code__agent-sessions-stage0-small-TRIMMED.jsonl",
        "codex-cli__agent-sessions-stage0-small-TRIMMED.jsonl",
    ],
)
def test_repaired_session_is_same_format_and_clean(name: str) -> None:
    path = session(name)
    before, after, plan = _repair(path)
    fmt = parse(path, before).format
    again = parse(path, after)
    assert again.format == fmt
    assert findings(again, name) == []
    assert len(plan.changes) == len(findings(parse(path, before), name)) and not plan.unrepaired
    for c in plan.changes:
        assert c.rule in SOURCES and c.source == SOURCES[c.rule]
    # never a carrier that was not there: every carrier value of the copy is in the input
    assert _carriers(after) <= _carriers(before)
    # line-oriented: every line still JSON; lines not touched are byte for byte the same
    out_lines = after.decode().splitlines()
    assert all(json.loads(ln) is not None for ln in out_lines if ln.strip())
    assert set(out_lines) & set(before.decode().splitlines())


def test_claude_code_chain_survives_a_dropped_record() -> None:
    """Line 65's message was only its (trimmed) thinking block: the record goes, and no
    record is left pointing at a parent that is no longer in the file."""
    path = session("claude-code__agent-sessions-stage0-small-TRIMMED.jsonl")
    before, after, _ = _repair(path)
    recs = [json.loads(ln) for ln in after.decode().splitlines() if ln.strip()]
    assert len(recs) < len(before.decode().splitlines())
    uuids = {r.get("uuid") for r in recs}
    dropped = {json.loads(ln).get("uuid") for ln in before.decode().splitlines()} - uuids
    assert not {r.get("parentUuid") for r in recs} & (dropped - {None})


@pytest.mark.skipif(not PRESENT, reason="conformance corpus absent")
def test_open_loop_with_a_broken_signature_is_closed(tmp_path: Path) -> None:
    body = copy.deepcopy(
        load_cassette("pai__test_anthropic__test_anthropic_tool_with_thinking.yaml")[1].request
    )
    block = body["messages"][1]["content"][0]
    block["signature"] = block["signature"][:-7]
    path = tmp_path / "req.json"
    _, after, plan = _repair(path, json.dumps(body).encode())
    fixed = json.loads(after)
    assert [m["role"] for m in fixed["messages"]] == ["user"]  # the loop's step is redone
    assert {c.rule for c in plan.changes} == {"close-open-loop"}
    assert findings(parse(path, after), "req.json") == []


def _post(sim: SimServer, messages: list[Any]) -> httpx.Response:
    body = {
        "model": "sim-claude",
        "max_tokens": 1024,
        "messages": messages,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "lookup", "description": "", "input_schema": {"type": "object"}}],
    }
    with httpx.Client(base_url=sim.root_url, timeout=10) as c:
        return c.post("/v1/messages", json=body)


def _body(messages: list[Any]) -> dict[str, Any]:
    return {"model": "sim-claude", "thinking": {"type": "enabled"}, "messages": messages}


def test_simulator_accepts_the_repaired_history(sim_server: SimServer, tmp_path: Path) -> None:  # noqa: F811
    """A two-turn sim-claude session: the first turn's signature is cut (an earlier turn),
    then the open loop's: the damaged request gets 400 "Invalid signature in thinking
    block", the repaired one 200."""
    task = "Find the population of Lyon."
    first = _post(sim_server, [{"role": "user", "content": task}]).json()
    tool = next(b for b in first["content"] if b["type"] == "tool_use")
    loop = [
        {"role": "user", "content": task},
        {"role": "assistant", "content": first["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool["id"], "content": "522000"}],
        },
    ]
    assert _post(sim_server, loop).status_code == 200
    path = tmp_path / "session.json"

    def cut(n: int) -> Any:
        return lambda blocks: blocks[0].update(signature=blocks[0]["signature"][:-n])

    damages: list[tuple[Any, str, str]] = [
        (cut(1), "truncated", "Invalid signature"),
        (cut(4), "truncated", "Invalid signature"),
        (cut(16), "truncated", "Invalid signature"),
        (lambda b: b[0].update(signature=""), "empty", "Invalid signature"),
        (lambda b: b[0].pop("signature"), "missing_signature", "Invalid signature"),
        (lambda b: b.insert(0, b.pop(1)), "thinking_not_first", "must start with a thinking"),
    ]
    for damage, kind, error in damages:
        damaged = copy.deepcopy(loop)
        damage(damaged[1]["content"])
        r = _post(sim_server, damaged)
        assert r.status_code == 400 and error in r.json()["error"]["message"], kind
        data = json.dumps(_body(damaged)).encode()
        assert [f.kind for f in findings(parse(path, data), "s")] == [kind]
        _, after, _ = _repair(path, data)
        assert findings(parse(path, after), "s") == []
        assert _post(sim_server, json.loads(after)["messages"]).status_code == 200, kind
    # earlier turn: the finished turn's block is dropped, the later loop keeps its own
    second = _post(sim_server, loop).json()
    history = [*loop, {"role": "assistant", "content": second["content"]}]
    history.append({"role": "user", "content": "And Paris?"})
    history[1]["content"][0]["signature"] = history[1]["content"][0]["signature"][:-5]
    data = json.dumps(_body(history)).encode()
    assert _post(sim_server, history).status_code == 400
    _, after, plan = _repair(path, data)
    assert [c.rule for c in plan.changes] == ["drop-earlier-thinking"]
    repaired = json.loads(after)["messages"]
    assert findings(parse(path, after), "s") == []
    assert _post(sim_server, repaired).status_code == 200
