"""Ledger rows in the method's schema, key for key; rows of the schema before it stay
readable (test data written by the probe before the change: tests/probe/data/ledger_v0)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from reasonwire.probe import observe_bytes
from reasonwire.probe.call import ts_utc
from reasonwire.probe.cli import app
from reasonwire.probe.ledger import append_row, read_rows, row_usage
from tests.probe.streams import rows_now

V0 = Path(__file__).parent / "data" / "ledger_v0"

METHOD_EXAMPLE: dict[str, Any] = {
    "ts": "2026-09-10T12:00:00.000Z", "sessionId": "...", "provider": "...", "model": "...",
    "purpose": None, "reasoningBytes": 1234, "textBytes": 567,
    "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120, "cacheReadTokens": 80,
              "cacheWriteTokens": 0, "reasoningTokens": 50},
}  # fmt: skip
OUR_KEYS = ["dialect", "stream", "status", "httpStatus", "toolBytes", "wireBytes",
            "sentReasoningBytes", "sentReasoning", "sentCarriers", "producedCarriers",
            "requestModel", "responseModel", "durationMs"]  # fmt: skip
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _chat_body(usage: dict[str, Any] | None) -> bytes:
    body: dict[str, Any] = {
        "id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "héllo", "reasoning_content": "thinking"}}],
    }  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def _one(tmp: Path, body: bytes, dialect: str = "chat", path: str | None = None) -> Any:
    list(observe_bytes([body], dialect=dialect, session_id="s", ledger_dir=tmp, stream=False,
                       provider="p"))  # fmt: skip
    return rows_now(tmp).rows[-1]


def test_row_matches_the_method_key_for_key(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 180, "completion_tokens": 20, "total_tokens": 200,
             "prompt_tokens_details": {"cached_tokens": 80},
             "completion_tokens_details": {"reasoning_tokens": 50}}  # fmt: skip
    row = _one(tmp_path, _chat_body(usage))
    method_keys = list(METHOD_EXAMPLE)
    assert list(row)[: len(method_keys)] == method_keys
    assert list(row)[len(method_keys) :] == OUR_KEYS  # ours after the method's
    assert list(row["usage"]) == list(METHOD_EXAMPLE["usage"])
    assert row["usage"] == {"inputTokens": 100, "outputTokens": 20, "totalTokens": 200,
                            "cacheReadTokens": 80, "cacheWriteTokens": 0,
                            "reasoningTokens": 50}  # fmt: skip
    u = row_usage(row)
    assert u is not None and u.billed_input == 180  # inputTokens + cacheRead + cacheWrite
    assert TS.match(row["ts"]) and TS.match(METHOD_EXAMPLE["ts"])
    assert (row["reasoningBytes"], row["textBytes"]) == (8, 6)
    for key, value in METHOD_EXAMPLE.items():  # same JSON types as the method's example
        assert type(row[key]) is type(value) or value == "..." or value is None


def test_ts_is_utc_milliseconds_z() -> None:
    assert ts_utc(0) == "1970-01-01T00:00:00.000Z"
    assert ts_utc(1757505600.0009) == "2025-09-10T12:00:00.000Z"
    assert ts_utc(1757505600.999) == "2025-09-10T12:00:00.999Z"


def test_usage_omitted_without_usage(tmp_path: Path) -> None:
    row = _one(tmp_path, _chat_body(None))
    assert "usage" not in row and list(row)[:7] == list(METHOD_EXAMPLE)[:7]


def test_total_tokens_is_the_providers_figure_never_computed(tmp_path: Path) -> None:
    # the provider's figure even when it is not the sum of the parts
    row = _one(tmp_path, _chat_body({"prompt_tokens": 10, "completion_tokens": 5,
                                     "total_tokens": 999}))  # fmt: skip
    assert row["usage"]["totalTokens"] == 999
    row = _one(tmp_path, _chat_body({"prompt_tokens": 10, "completion_tokens": 5}))
    assert "totalTokens" not in row["usage"] and "reasoningTokens" not in row["usage"]
    assert row["usage"]["cacheReadTokens"] == 0 and row["usage"]["cacheWriteTokens"] == 0


def test_total_tokens_per_dialect(tmp_path: Path) -> None:
    gem = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
                           "finishReason": "STOP"}],
           "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3,
                             "totalTokenCount": 12, "thoughtsTokenCount": 2}}  # fmt: skip
    assert _one(tmp_path, json.dumps(gem).encode(), "gemini")["usage"]["totalTokens"] == 12
    resp = {"id": "r", "object": "response", "status": "completed", "model": "m",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "hi"}]}],
            "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}}  # fmt: skip
    assert _one(tmp_path, json.dumps(resp).encode(), "responses")["usage"]["totalTokens"] == 13
    ant = {"id": "msg", "type": "message", "role": "assistant", "model": "c",
           "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 5, "cache_creation_input_tokens": 2,
                     "cache_read_input_tokens": 3, "output_tokens": 1}}  # fmt: skip
    u = _one(tmp_path, json.dumps(ant).encode(), "anthropic")["usage"]
    assert u == {"inputTokens": 5, "outputTokens": 1, "cacheReadTokens": 3,
                 "cacheWriteTokens": 2}  # fmt: skip


def _report(d: Path) -> dict[str, Any]:
    res = CliRunner().invoke(app, ["report", "--dir", str(d), "--json"])
    assert res.exit_code == 0, res.output
    return {(g["session"], g["model"]): g for g in json.loads(res.output)["groups"]}


def test_old_rows_still_read(tmp_path: Path) -> None:
    """Rows written by the probe before the schema change: the report means the same."""
    old = read_rows(V0)
    assert old.skipped == 0 and len(old.rows) == 7
    assert all(r["ts"].endswith("+00:00") and "billedInput" in r.get("usage", {"billedInput": 0})
               for r in old.rows)  # fmt: skip
    for r in old.rows:  # the old reading: billedInput and usage.reasoning as written
        u = row_usage(r)
        if "usage" in r:
            assert u is not None and u.billed_input == r["usage"]["billedInput"]
            assert u.reasoning == r["usage"]["reasoning"]
        else:
            assert u is None
    groups = _report(V0)
    chat = groups[("old-chat", "m")]
    assert chat["calls"] == 2 and chat["billed_input"] == 100 and chat["reasoning_tokens"] == 7
    assert chat["calls_with_usage"] == 1 and chat["sent_text_bytes"] == 15
    ant = groups[("old-ant", "claude-x")]
    assert ant["billed_input"] == 15 and ant["sent_opaque_bytes"] == 4
    assert groups[("old-err", "m")]["failed"] == 1


def test_old_and_new_rows_in_one_ledger(tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    shutil.copytree(V0, d, ignore=shutil.ignore_patterns("*.md"))
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55,
             "prompt_tokens_details": {"cached_tokens": 20}}  # fmt: skip
    # provider "up" as the old rows have it: groups are per session, provider and model
    list(observe_bytes([_chat_body(usage)], dialect="chat", session_id="old-chat",
                       ledger_dir=d, stream=False, model="m", provider="up"))  # fmt: skip
    chat = _report(d)[("old-chat", "m")]
    assert chat["calls"] == 3 and chat["billed_input"] == 150 and chat["calls_with_usage"] == 2
    append_row(d, "x", {"sessionId": "x", "model": "m", "usage": {"billedInput": 9}}, 1 << 20)
    assert _report(d)[("x", "m")]["billed_input"] == 9  # an old row with billedInput only
