"""Deliberate damage made here on intact recordings is each found at its location (issue
27: truncate by 1..16 characters, re-encode, swap two blocks, merge two blocks, replace
with "", drop the signature, drop reasoning_content on a tool-call turn), and the same
body undamaged stays clean (the control of every case)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from reasonwire.doctor import check_bytes
from reasonwire.doctor.model import Finding
from tests.doctor.corpus import PRESENT, load_cassette, session

pytestmark = pytest.mark.skipif(not PRESENT, reason="conformance corpus absent")

ANTH_LOOP = "pai__test_anthropic__test_anthropic_tool_with_thinking.yaml"
ANTH_TURNS = "pai__test_anthropic__test_anthropic_model_thinking_part.yaml"
ANTH_REDACTED = "pai__test_anthropic__test_anthropic_model_thinking_part_redacted.yaml"
GEMINI = "pai__test_google__test_google_instructions_only_with_tool_calls.yaml"
RESPONSES = "pai__test_openai_responses__test_openai_responses_phase_live.yaml"
DEEPSEEK = "pai__test_deepseek__test_deepseek_deferred_capability_with_thinking.yaml"

SIG = ("messages", 1, "content", 0, "signature")
CASES: dict[str, tuple[str, int, tuple[Any, ...]]] = {
    # name -> (recording, interaction, path of an intact opaque carrier in its request)
    "anthropic signature": (ANTH_LOOP, 1, SIG),
    "anthropic redacted_thinking": (ANTH_REDACTED, 1, ("messages", 1, "content", 0, "data")),
    "gemini thoughtSignature": (GEMINI, 4, ("contents", 7, "parts", 0, "thoughtSignature")),
    "responses encrypted_content": (RESPONSES, 1, ("input", 1, "encrypted_content")),
}


def request(name: str, i: int) -> dict[str, Any]:
    body = load_cassette(name)[i].request
    assert isinstance(body, dict)
    return copy.deepcopy(body)


def json_path(path: tuple[Any, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def holder(body: Any, path: tuple[Any, ...]) -> Any:
    for p in path[:-1]:
        body = body[p]
    return body


def check(body: dict[str, Any]) -> list[Finding]:
    return check_bytes(json.dumps(body).encode(), "damaged.json")


def at(found: list[Finding], path: tuple[Any, ...] | str) -> set[str]:
    where = path if isinstance(path, str) else json_path(path)
    return {f.kind for f in found if f.path == where}


@pytest.mark.parametrize("case", sorted(CASES))
def test_intact_bodies_are_clean(case: str) -> None:
    name, i, _ = CASES[case]
    assert check(request(name, i)) == []


@pytest.mark.parametrize("cut", range(1, 17))
@pytest.mark.parametrize("case", sorted(CASES))
def test_truncation_by_1_to_16_characters_is_found(case: str, cut: int) -> None:
    name, i, path = CASES[case]
    body = request(name, i)
    h = holder(body, path)
    h[path[-1]] = h[path[-1]][:-cut]
    found = check(body)
    assert at(found, path) == {"truncated"}, found
    assert len(found) == 1


@pytest.mark.parametrize("case", ["anthropic signature", "responses encrypted_content"])
def test_reencoding_is_found(case: str) -> None:
    """Anthropic compares the string (standard base64 as returned); a Responses token is
    URL-safe. Both recorded values use the characters that differ (+/ resp. -_)."""
    name, i, path = CASES[case]
    body = request(name, i)
    h = holder(body, path)
    value = h[path[-1]]
    swap = str.maketrans("+/", "-_") if "+" in value else str.maketrans("-_", "+/")
    h[path[-1]] = value.translate(swap)
    assert h[path[-1]] != value
    assert at(check(body), path) == {"reencoded"}


def test_gemini_accepts_either_alphabet() -> None:
    """The recorded request sends URL-safe base64 of the signature Gemini returned in
    standard base64 and gets 200: the same bytes, not damage."""
    body = request(GEMINI, 4)
    value = body["contents"][7]["parts"][0]["thoughtSignature"]
    assert "-" in value or "_" in value
    assert check(body) == []


def test_swapping_the_thinking_block_out_of_first_place_is_found() -> None:
    """Request 2 continues an open tool loop with thinking enabled (budget 3000)."""
    body = request(ANTH_LOOP, 1)
    content = body["messages"][1]["content"]
    content[0], content[1] = content[1], content[0]
    found = check(body)
    assert at(found, "$.messages[1].content[0]") == {"thinking_not_first"}
    assert len(found) == 1


def _signature_bytes(value: str) -> bytes:
    return base64.b64decode(value)


def test_merging_two_blocks_is_found() -> None:
    """Two thinking blocks joined into one: texts concatenated, signature bytes too."""
    body = request(ANTH_LOOP, 1)
    block = body["messages"][1]["content"][0]
    other = request(ANTH_TURNS, 1)["messages"][1]["content"][0]
    merged = _signature_bytes(block["signature"]) + _signature_bytes(other["signature"])
    block["thinking"] += other["thinking"]
    block["signature"] = base64.b64encode(merged).decode()
    assert at(check(body), SIG) == {"merged"}
    # joined as strings instead: the first one's "=" padding lands in the middle
    block["signature"] = body_sig = request(ANTH_LOOP, 1)["messages"][1]["content"][0]["signature"]
    block["signature"] = body_sig + other["signature"]
    assert at(check(body), SIG) & {"merged", "undecodable", "truncated"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_replacing_with_empty_is_found(case: str) -> None:
    name, i, path = CASES[case]
    body = request(name, i)
    holder(body, path)[path[-1]] = ""
    assert at(check(body), path) == {"empty"}


def test_dropping_the_signature_is_found() -> None:
    body = request(ANTH_LOOP, 1)
    del body["messages"][1]["content"][0]["signature"]
    assert at(check(body), SIG) == {"missing_signature"}


def test_dropping_the_first_function_calls_signature_is_found() -> None:
    body = request(GEMINI, 4)
    del body["contents"][7]["parts"][0]["thoughtSignature"]
    found = check(body)
    assert at(found, "$.contents[7].parts[0].thoughtSignature") == {"missing_thought_signature"}


def test_dropping_reasoning_content_on_a_tool_call_turn_is_found() -> None:
    """deepseek-reasoner: the deepseek Chat profile requires reasoning_content on every
    assistant tool-call message (wire Profile.required_on_tool_calls, DeepSeek docs)."""
    body = request(DEEPSEEK, 2)
    assert body["messages"][3]["tool_calls"] and body["messages"][3]["reasoning_content"]
    del body["messages"][3]["reasoning_content"]
    found = check(body)
    assert at(found, "$.messages[3].reasoning_content") == {"missing_reasoning_content"}
    body["messages"][3]["reasoning_content"] = " \n"
    assert at(check(body), "$.messages[3].reasoning_content") == {"padded_reasoning_content"}


def test_store_false_needs_the_sealed_reasoning() -> None:
    """With store=false the server keeps nothing: an item reference or a reasoning item
    without encrypted_content cannot be resolved ("Item with id 'rs_...' not found")."""
    body = request(RESPONSES, 1)
    body["store"] = False
    assert check(body) == []
    item = body["input"][1]
    ref = {"type": "item_reference", "id": item["id"]}
    del item["encrypted_content"]
    found = check(body)
    assert at(found, "$.input[1]") == {"reasoning_item_absent"}
    body["input"][1] = ref
    assert at(check(body), "$.input[1]") == {"reasoning_item_absent"}
    body["store"] = True  # the server has it: a reference is how stored items are sent
    assert check(body) == []


def test_damage_in_a_session_file_is_found_at_its_line(tmp_path: Any) -> None:
    """A Gemini CLI recording with one signature cut by 3 characters, and a Kimi Code log
    with the think part of a tool-calling step removed."""
    src = session("gemini-cli__browser-agent-persistent-session.responses")
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    rec = json.loads(lines[4])
    part = rec["response"][0]["candidates"][0]["content"]["parts"][0]
    part["thoughtSignature"] = part["thoughtSignature"][:-3]
    lines[4] = json.dumps(rec) + "\n"
    found = check_bytes("".join(lines).encode(), "g.responses")
    assert [(f.line, f.path, f.kind) for f in found] == [
        (5, "$.response[0].candidates[0].content.parts[0].thoughtSignature", "truncated")
    ]
    kimi = session("kimi-code__agent-sessions-assistant-tools.jsonl")
    kl = kimi.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"think"' in kl[25] and '"tool.call"' in kl[27]  # turn 3 step 1: think, then ls
    del kl[25]
    found = check_bytes("".join(kl).encode(), "k.jsonl")
    assert [(f.line, f.kind, f.provider) for f in found] == [
        (27, "missing_reasoning_content", "kimi")
    ]


def test_against_the_originals_names_the_changed_block(tmp_path: Any) -> None:
    """Two intact signatures swapped between two turns, and a signed thinking text edited:
    well-formed, so structure cannot tell; the recorded answers (the originals) can."""
    from reasonwire.doctor import against, read
    from reasonwire.doctor.report import findings

    turns = load_cassette(ANTH_TURNS)
    answers = tmp_path / "answers.jsonl"  # the two recorded answers, as a digest source
    answers.write_text(
        "".join(json.dumps({"messages": [dict(it.response_json)]}) + "\n" for it in turns)
    )
    known = against.load([answers], read)
    assert len(known) == 2 and all(v for v in known.texts.values())
    body = request(ANTH_TURNS, 1)
    block = body["messages"][1]["content"][0]
    session = tmp_path / "s.json"
    session.write_text(json.dumps(body))
    assert findings(read(session), "s", known) == []
    block["thinking"] += " (edited)"
    session.write_text(json.dumps(body))
    found = findings(read(session), "s", known)
    assert [(f.path, f.kind) for f in found] == [("$.messages[1].content[0].thinking", "changed")]
    block["thinking"] = block["thinking"].removesuffix(" (edited)")
    block["signature"] = turns[1].response_json["content"][0]["signature"]  # the later one
    session.write_text(json.dumps(body))
    found = findings(read(session), "s", known)
    assert [(f.path, f.kind) for f in found] == [("$.messages[1].content[0].thinking", "changed")]
    block["signature"] = request(ANTH_LOOP, 1)["messages"][1]["content"][0]["signature"]
    session.write_text(json.dumps(body))
    found = findings(read(session), "s", known)
    assert [(f.path, f.kind) for f in found] == [("$.messages[1].content[0].signature", "changed")]
    digest_file = tmp_path / "digests.jsonl"
    digest_file.write_text(against.digest_lines(known))
    assert against.load([digest_file], read) == known


def test_against_the_originals_tells_a_reordering(tmp_path: Any) -> None:
    """The recorded stream answers with two redacted_thinking blocks; a history that sends
    them back swapped is named at the one now out of place."""
    from reasonwire.doctor import against, read
    from reasonwire.doctor.report import findings

    name = "pai__test_anthropic__test_anthropic_model_thinking_part_redacted_stream.yaml"
    stream = load_cassette(name)[0].response_text
    assert stream is not None
    saved = tmp_path / "answer.sse"
    saved.write_text(stream)
    known = against.load([saved], read)
    assert len(known) == 2
    blocks = [i.value for i in read(saved).conversations[0].messages[0].items]
    redacted = [b for b in blocks if b.get("type") == "redacted_thinking"]
    assert len(redacted) == 2
    body = {
        "model": "claude-x",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [*redacted, {"type": "text", "text": "a"}]},
            {"role": "user", "content": "next"},
        ],
    }
    session = tmp_path / "s.json"
    session.write_text(json.dumps(body))
    assert findings(read(session), "s", known) == []
    content = body["messages"][1]["content"]
    content[0], content[1] = content[1], content[0]
    session.write_text(json.dumps(body))
    found = findings(read(session), "s", known)
    assert [(f.path, f.kind) for f in found] == [("$.messages[1].content[1].data", "reordered")]
    digest_file = tmp_path / "digests.jsonl"
    digest_file.write_text(against.digest_lines(known))
    again = against.load([digest_file], read)
    assert again.order == known.order and again.texts == known.texts
