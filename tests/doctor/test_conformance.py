"""Every recording of ../shared/conformance: every request and response body is checked,
and the findings are exactly the damage the recordings hold, each listed below with why
(read off the recording), nothing on the intact carriers (the issue's "0 false alarms")."""

from __future__ import annotations

import pytest

from reasonwire.doctor import check_bytes
from reasonwire.errors import Unreadable
from tests.conformance.corpus import manifest_entries
from tests.doctor.corpus import PRESENT, corpus_files, units

pytestmark = pytest.mark.skipif(not PRESENT, reason="conformance corpus absent")

DEEPSEEK = "pai__test_deepseek__test_deepseek_deferred_capability_with_thinking.yaml"
MODIFIED = "pai__test_openai_responses__test_openai_responses_thinking_with_modified_history.yaml"

EXPECTED: dict[str, set[tuple[str, str]]] = {
    # pydantic-ai inserts a synthetic search_tools call (id auto_load_...) with
    # reasoning_content "" into the DeepSeek history (messages[5]); DeepSeek accepts it (the
    # next answers are 200), but the turn carries no reasoning: a warning.
    f"{DEEPSEEK}#1.request": {("$.messages[5].reasoning_content", "padded_reasoning_content")},
    f"{DEEPSEEK}#2.request": {("$.messages[5].reasoning_content", "padded_reasoning_content")},
    # the test rewrote the assistant message after the reasoning item (no id any more);
    # OpenAI answered 400 "Item 'rs_68c4...' of type 'reasoning' was provided without its
    # required following item" (the recorded response #1).
    f"{MODIFIED}#1.request": {("$.input[1]", "reasoning_unpaired")},
    # vercel's fixture author shortened the signature to 96 characters: it declares a
    # 7978-byte payload (varint 0xaa 0x3e after tag 0x12) and holds 69 bytes.
    "vercel__google__google-tool-call-gemini3.json": {
        ("$.candidates[0].content.parts[0].thoughtSignature", "truncated")
    },
}
PROVIDER_ERRORS = {f"{MODIFIED}#1.response"}
"""Bodies that are a provider error, not a session or answer: unreadable (exit 2)."""


def _all_units() -> list[tuple[str, bytes]]:
    return [u for name in corpus_files() for u in units(name)]


def test_every_recording_is_checked_and_only_real_damage_is_found() -> None:
    seen = 0
    got: dict[str, set[tuple[str, str]]] = {}
    carriers = 0
    for label, data in _all_units():
        if label in PROVIDER_ERRORS:
            with pytest.raises(Unreadable):
                check_bytes(data, label)
            continue
        found = check_bytes(data, label)
        seen += 1
        carriers += data.count(b"ignature") + data.count(b"encrypted_content")
        if found:
            got[label] = {(f.path, f.kind) for f in found}
    assert got == EXPECTED
    # the whole corpus was read: every file the MANIFEST lists, 100+ bodies, many carriers
    assert set(corpus_files()) == set(manifest_entries()) and seen > 100 and carriers > 80


def test_padding_is_a_warning_everything_else_an_error() -> None:
    for label, data in _all_units():
        if label in EXPECTED:
            for f in check_bytes(data, label):
                want = "warning" if f.kind == "padded_reasoning_content" else "error"
                assert f.severity == want
