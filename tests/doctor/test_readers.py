"""Readers on small sessions built here in each program's record layout (the layouts of
the real files in ../shared/sessions): what a reader must join or know for the rules."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from reasonwire import doctor
from reasonwire.doctor import check_bytes, parse
from reasonwire.doctor.checks import findings
from reasonwire.doctor.readers import request_dialect
from reasonwire.doctor.repair import repair, serialise

SIG = base64.b64encode(b"\x12\x20" + bytes(32)).decode()  # Anthropic's framing: field 2, 32 B


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


def claude(uuid: str, parent: str | None, role: str, content: Any, mid: str | None = None) -> Any:
    message: dict[str, Any] = {"role": role, "content": content}
    if mid:
        message["id"] = mid
    return {
        "type": role,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s",
        "message": message,
    }


def test_claude_code_joins_one_message_split_over_records() -> None:
    """Claude Code writes one record per content block of an answer (same message.id): the
    open loop's message starts with its thinking block, in the first record."""
    think = {"type": "thinking", "thinking": "t", "signature": SIG}
    call = {"type": "tool_use", "id": "t1", "name": "x", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "r"}
    recs = [
        claude("u1", None, "user", "hi"),
        claude("a1", "u1", "assistant", [think], "m1"),
        claude("a2", "a1", "assistant", [call], "m1"),
        claude("u2", "a2", "user", [result]),
    ]
    assert check_bytes(jsonl(recs), "c.jsonl") == []
    recs[1]["message"]["id"] = "m0"  # two answers: the last one opens without thinking
    found = check_bytes(jsonl(recs), "c.jsonl")
    assert [(f.line, f.kind) for f in found] == [(3, "thinking_not_first")]


def pi(level: str) -> list[dict[str, Any]]:
    return [
        {"type": "session", "id": "s", "cwd": "/", "thinkingLevel": level},
        {"type": "message", "message": {"role": "user", "content": []}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "api": "anthropic-messages",
                "content": [{"type": "toolCall", "id": "t1", "name": "x", "arguments": {}}],
            },
        },
        {"type": "message", "message": {"role": "toolResult", "toolCallId": "t1", "content": []}},
    ]  # fmt: skip


def test_pi_thinking_level_decides_the_open_loop_rule() -> None:
    """pi records ``thinkingLevel``; "off" sends no thinking, so a loop without a thinking
    block is fine; any other level turns thinking on."""
    assert check_bytes(jsonl(pi("off")), "p.jsonl") == []
    found = check_bytes(jsonl(pi("high")), "p.jsonl")
    assert [(f.line, f.kind, f.path) for f in found] == [
        (3, "thinking_not_first", "$.message.content[0]")
    ]


def test_pi_thinking_signature_is_checked_under_its_own_name() -> None:
    recs = pi("off")
    recs[2]["message"]["content"].insert(
        0, {"type": "thinking", "thinking": "t", "thinkingSignature": SIG[:-4]}
    )
    found = check_bytes(jsonl(recs), "p.jsonl")
    assert [(f.line, f.kind, f.path) for f in found] == [
        (3, "truncated", "$.message.content[0].thinkingSignature")
    ]


def test_request_dialect_by_shape() -> None:
    assert request_dialect({"contents": []}) == "gemini"
    assert request_dialect({"input": [{"role": "user", "content": "q"}]}) == "responses"
    assert request_dialect({"input": [{"type": "user_input", "content": []}]}) == "interactions"
    assert request_dialect({"messages": [{"role": "user", "content": "q"}]}) == "chat"
    anth = {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}
    assert request_dialect(anth) == "anthropic"
    assert request_dialect({"messages": [], "thinking": {"type": "enabled"}}) == "anthropic"
    assert request_dialect({"prompt": "x"}) is None


def test_a_list_of_bodies_gives_paths_per_body() -> None:
    def one(sig: str) -> dict[str, Any]:
        block = {"type": "thinking", "thinking": "t", "signature": sig}
        return {"messages": [{"role": "assistant", "content": [block]}]}

    bodies = [one(SIG), one("")]
    found = check_bytes(json.dumps(bodies).encode(), "l.json")
    assert [(f.line, f.path, f.kind) for f in found] == [
        (None, "$[1].messages[0].content[0].signature", "empty")
    ]
    assert parse  # (the reader API is public)


def pai(provider: str, sig: str, second: dict[str, Any] | None = None) -> list[Any]:
    """A pydantic-ai history dump (ModelMessagesTypeAdapter layout: kind/parts/part_kind)."""
    thinking = {"part_kind": "thinking", "content": "t", "signature": sig}
    call = {"part_kind": "tool-call", "tool_name": "x", "args": {}, "tool_call_id": "c1"}
    ret = {"part_kind": "tool-return", "tool_name": "x", "content": "r", "tool_call_id": "c1"}
    return [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "q"}]},
        {"kind": "response", "provider_name": provider, "parts": [thinking, second or call]},
        {"kind": "request", "parts": [ret]},
    ]


def test_pydantic_ai_signatures_are_checked_per_provider() -> None:
    data = json.dumps(pai("anthropic", SIG)).encode()
    assert parse(Path("h.json"), data).format == "pydantic-ai"
    assert check_bytes(data, "h.json") == []
    found = check_bytes(json.dumps(pai("anthropic", SIG[:-4])).encode(), "h.json")
    assert [(f.path, f.kind) for f in found] == [("$[1].parts[0].signature", "truncated")]
    # Gemini: the ThinkingPart's signature is the function call's; cut, it is found there
    gem = base64.b64encode(b"\x12\x03abc").decode()
    assert check_bytes(json.dumps(pai("google-gla", gem)).encode(), "h.json") == []
    found = check_bytes(json.dumps(pai("google-gla", gem[:-1])).encode(), "h.json")
    assert [(f.path, f.kind) for f in found] == [("$[1].parts[0].signature", "truncated")]


def test_pydantic_ai_open_loop_with_a_cut_signature_is_closed(tmp_path: Path) -> None:
    src = tmp_path / "h.json"
    src.write_text(json.dumps(pai("anthropic", SIG[:-4])))
    doc = parse(src, src.read_bytes())
    plan = repair(doc)
    assert {c.rule for c in plan.changes} == {"close-open-loop"}
    assert findings(parse(src, serialise(doc)), "h") == []


def test_agents_sdk_items_list_and_sqlite(tmp_path: Path, monkeypatch: Any) -> None:
    """Responses input items as session.get_items() returns them, and a SQLiteSession
    database (agent_messages rows of message_data JSON)."""
    fernet = base64.urlsafe_b64encode(b"\x80" + bytes(8 + 16 + 16 + 32)).decode()
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": fernet[:-8]},
        {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
    ]
    found = check_bytes(json.dumps(items).encode(), "items.json")
    assert [(f.path, f.kind) for f in found] == [("$[1].encrypted_content", "truncated")]
    db = tmp_path / "session.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT, "
                "message_data TEXT, created_at TIMESTAMP)")  # fmt: skip
    for it in items:
        con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            (json.dumps(it),),
        )
    con.commit()
    con.close()
    found = check_bytes(db.read_bytes(), str(db))
    assert [(f.line, f.path, f.kind) for f in found] == [
        (None, "agent_messages[id=2].encrypted_content", "truncated")
    ]
    doc = parse(db, db.read_bytes())
    assert doc.format == "agents-sdk"
    repair(doc)
    out = tmp_path / "fixed.db"
    out.write_bytes(serialise(doc))
    assert findings(parse(out, out.read_bytes()), "fixed") == []
    assert len(check_bytes(db.read_bytes(), str(db))) == 1  # the input is untouched


def test_gemini_cli_saved_chat_is_read_checked_and_repaired(tmp_path: Path) -> None:
    """A Gemini CLI ``/chat save`` checkpoint is the API history as ``Content[]`` (gemini-cli
    logger.ts ``saveCheckpoint``). Built here from a real recorded request's ``contents``:
    intact it is clean; with one signature cut by 4 characters the finding names that part.
    That signature is in the current turn, which Gemini validates and only the original answer
    could restore: the repair leaves it, reported, and invents nothing."""
    from tests.conformance.corpus import PRESENT, load_cassette

    if not PRESENT:
        pytest.skip("conformance corpus not present")
    name = "pai__test_google__test_google_instructions_only_with_tool_calls.yaml"
    history = load_cassette(name)[1].request["contents"]
    signed = [
        (i, j)
        for i, c in enumerate(history)
        for j, p in enumerate(c.get("parts", []))
        if c.get("role") == "model" and p.get("thoughtSignature")
    ]
    assert signed, "the recording's second request replays a signed model turn"
    saved = tmp_path / "checkpoint-work.json"
    saved.write_text(json.dumps(history, indent=2))
    assert doctor.check_file(saved) == []
    i, j = signed[-1]
    history[i]["parts"][j]["thoughtSignature"] = history[i]["parts"][j]["thoughtSignature"][:-4]
    saved.write_text(json.dumps(history, indent=2))
    (found,) = doctor.check_file(saved)
    assert (found.path, found.kind) == (f"$[{i}].parts[{j}].thoughtSignature", "truncated")
    doc = doctor.read(saved)
    plan = repair(doc)
    assert [h.kind for h in plan.unrepaired] == ["truncated"] and not plan.changes
    assert json.loads(serialise(doc)) == history  # the same list, nothing invented
    # The first call of the current turn without its signature: the required-carrier rule.
    call_at = next(
        (k, n)
        for k, c in enumerate(history)
        if c.get("role") == "model"
        for n, p in enumerate(c["parts"])
        if "functionCall" in p
    )
    bare = json.loads(json.dumps(history))
    bare[call_at[0]]["parts"][call_at[1]].pop("thoughtSignature", None)
    (missing,) = [
        f for f in check_bytes(json.dumps(bare).encode(), "c.json") if f.kind != "truncated"
    ]
    assert missing.path.startswith(f"$[{call_at[0]}].parts[{call_at[1]}]"), missing
    # A new user question later, the turn is earlier: Gemini validates only the current turn,
    # so the repair drops that signature and the copy, still a list, is clean.
    history.append({"role": "user", "parts": [{"text": "and tomorrow?"}]})
    saved.write_text(json.dumps(history, indent=2))
    doc = doctor.read(saved)
    plan = repair(doc)
    assert [c.rule for c in plan.changes] == ["drop-earlier-signature"]
    out = tmp_path / "repaired.json"
    out.write_bytes(serialise(doc))
    repaired = json.loads(out.read_text())
    assert isinstance(repaired, list) and "thoughtSignature" not in repaired[i]["parts"][j]
    assert doctor.check_file(out) == []
