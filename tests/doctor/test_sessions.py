"""On every real saved session in ../shared/sessions the doctor finds exactly the damage
that is there. The expected lists were written by reading the files (line numbers from
``grep -n``, paths from the records' structure) with the reason each entry is damage; the
MANIFEST's own counts ("5 thinking signatures are the literal '[trimmed for fixture]' and 1
thinking block has no signature", "all 20 encrypted_content values") are checked apart, by
scanning the raw text, so a miscounted list fails too."""

from __future__ import annotations

import re

import pytest

from reasonwire.doctor import check_file, read
from tests.doctor.corpus import SESSIONS, session, session_names

CLAUDE = "claude-code__agent-sessions-stage0-small-TRIMMED.jsonl"
CODEX = "codex-cli__agent-sessions-stage0-small-TRIMMED.jsonl"
GEMINI_BROWSER = "gemini-cli__browser-agent-persistent-session.responses"
GEMINI_DENIED = "gemini-cli__policy-headless-shell-denied.responses"
KIMI = "kimi-code__agent-sessions-assistant-tools.jsonl"
PI = "pi-coding-agent__large-session.jsonl"

SIG = "$.message.content[0].signature"
ENC = "encrypted_content"

EXPECTED: dict[str, set[tuple[int, str, str]]] = {
    # line 8: {"type":"thinking","thinking":"Reasoning goes here."} has no signature key at all
    # (Claude Code 2.1.80 record, a tool_use follows): refused as it stands.
    # lines 29, 55, 65, 77, 78: "signature":"[trimmed for fixture]" (the fixture pipeline's
    # note in place of the signature; each thinking block is content[0] of its record).
    CLAUDE: {
        (8, SIG, "missing_signature"),
        (29, SIG, "placeholder"),
        (55, SIG, "placeholder"),
        (65, SIG, "placeholder"),
        (77, SIG, "placeholder"),
        (78, SIG, "placeholder"),
    },
    # every encrypted_content is "[trimmed for fixture]": reasoning items (lines 7, 39), an
    # agent_message part (33), a sealed user message in a replacement_history (26),
    # compaction items (47, 69, 81, 89, 111) and agent_message parts kept in line 89's
    # replacement_history.
    CODEX: {
        (7, f"$.payload.{ENC}", "placeholder"),
        (26, f"$.payload.replacement_history[0].{ENC}", "placeholder"),
        (33, f"$.payload.content[1].{ENC}", "placeholder"),
        (39, f"$.payload.{ENC}", "placeholder"),
        (47, f"$.payload.replacement_history[7].{ENC}", "placeholder"),
        (69, f"$.payload.replacement_history[20].{ENC}", "placeholder"),
        (81, f"$.payload.replacement_history[26].{ENC}", "placeholder"),
        *(
            (89, f"$.payload.replacement_history[{i}].content[1].{ENC}", "placeholder")
            for i in (41, 47, 48, 49, 52, 53, 54, 55, 56, 58, 63)
        ),
        (89, f"$.payload.replacement_history[64].{ENC}", "placeholder"),
        (111, f"$.payload.replacement_history[12].{ENC}", "placeholder"),
    },
    # real Gemini streams: every functionCall part carries its thoughtSignature ("Ep..."),
    # the signatures decode to their end: nothing broken (MANIFEST: "Nothing visibly broken").
    GEMINI_BROWSER: set(),
    GEMINI_DENIED: set(),
    # every tool-calling step (turnId/step with tool.call events) has a non-empty think part,
    # the reasoning_content Kimi K2 thinking requires; the text is not trimmed.
    KIMI: set(),
    # one signed thinking block (line 492, "ErMC...", intact), the openai-responses turn is
    # an aborted empty message; the session ends on a closed loop.
    PI: set(),
}


def test_every_session_file_has_an_expected_list() -> None:
    names = session_names()
    if not names:
        pytest.skip(f"no sessions at {SESSIONS}")
    assert set(names) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_findings_are_exactly_the_damage(name: str) -> None:
    found = check_file(session(name))
    got = {(f.line, f.path, f.kind) for f in found}
    assert got == EXPECTED[name]
    assert len(found) == len(got)  # nothing reported twice
    assert all(f.severity == "error" for f in found)


def test_expected_lists_match_the_raw_text() -> None:
    """The MANIFEST's counts, from the bytes: Claude Code has 5 placeholder signatures and
    one thinking block without one; every one of Codex's 20 encrypted_content is trimmed."""
    claude = session(CLAUDE).read_text(encoding="utf-8").splitlines()
    trimmed = [n for n, ln in enumerate(claude, 1) if '"signature":"[trimmed for fixture]"' in ln]
    unsigned = [
        n for n, ln in enumerate(claude, 1) if '"type":"thinking"' in ln and '"signature"' not in ln
    ]
    assert trimmed == [29, 55, 65, 77, 78] and unsigned == [8]
    codex = session(CODEX).read_text(encoding="utf-8")
    values = re.findall(r'"encrypted_content":\s*"([^"]*)"', codex)
    assert len(values) == 20 == len(EXPECTED[CODEX])
    assert set(values) == {"[trimmed for fixture]"}


def test_formats_are_detected() -> None:
    want = {
        CLAUDE: "claude-code",
        CODEX: "codex",
        GEMINI_BROWSER: "gemini-cli",
        GEMINI_DENIED: "gemini-cli",
        KIMI: "kimi-code",
        PI: "pi",
    }
    for name, fmt in want.items():
        assert read(session(name)).format == fmt, name


def test_readers_see_the_carriers_the_manifest_counts() -> None:
    """The readers found what is there (a check that finds nothing because a reader saw
    nothing would pass the lists above): MANIFEST counts of signatures and steps."""
    gem = read(session(GEMINI_BROWSER))
    parts = [i.value for m in gem.conversations[0].messages for i in m.items]
    assert len(gem.conversations[0].messages) == 26  # "26 recorded model calls"
    assert sum("thoughtSignature" in p for p in parts) == 26
    assert sum("functionCall" in p and "thoughtSignature" in p for p in parts) == 25
    kimi = read(session(KIMI))
    conv = kimi.conversations[0]
    assert conv.profile == "kimi"
    steps = [m for m in conv.messages if m.role == "assistant"]
    calls = [m for m in steps if m.items[0].value.get("tool_calls")]
    assert len(calls) == 16 and all(m.items[0].value["reasoning_content"] for m in calls)
    pi = read(session(PI))
    sigs = [
        i.value
        for m in pi.conversations[0].messages
        for i in m.items
        if isinstance(i.value, dict) and i.value.get("type") == "thinking"
    ]
    assert len(sigs) == 1 and len(sigs[0]["signature"]) == 416
