"""Ledger: concurrent writers, rotation into archives (nothing lost), torn lines, report."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import threading
from pathlib import Path

from typer.testing import CliRunner

import reasonwire.probe as probe
from reasonwire.probe.cli import app
from reasonwire.probe.ledger import ARCHIVE, append_row, read_rows
from reasonwire.wire.registry import dialect_for_path, get_dialect


def _row(i: int, writer: int) -> dict[str, object]:
    return {"sessionId": "s", "writer": writer, "i": i, "pad": "x" * (i % 300)}


def test_threads_one_file_no_loss(tmp_path: Path) -> None:
    def work(w: int) -> None:
        for i in range(300):
            append_row(tmp_path, "s", _row(i, w), cap_bytes=1 << 30)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    read = read_rows(tmp_path)
    assert read.skipped == 0
    assert sorted((r["writer"], r["i"]) for r in read.rows) == [
        (w, i) for w in range(8) for i in range(300)
    ]


def _proc(d: str, w: int) -> None:
    for i in range(200):
        append_row(Path(d), f"sess{i % 3}", _row(i, w), cap_bytes=20_000)


def test_processes_with_rotation_keep_every_row(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_proc, args=(str(tmp_path), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    archives = list((tmp_path / ARCHIVE).glob("*.jsonl.gz"))
    assert archives, "the cap was passed: old sessions must be archived"
    assert not list((tmp_path / ARCHIVE).glob(".*rotating"))
    read = read_rows(tmp_path)
    assert read.skipped == 0
    assert sorted((r["writer"], r["i"]) for r in read.rows) == [
        (w, i) for w in range(4) for i in range(200)
    ]
    for a in archives:  # archives are plain gzip JSONL
        with gzip.open(a, "rt") as f:
            assert all(json.loads(line) for line in f)


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    append_row(tmp_path, "t", {"a": 1}, cap_bytes=1 << 20)
    with open(tmp_path / "t.jsonl", "ab") as f:
        f.write(b'{"a": 2, "tor')
    read = read_rows(tmp_path)
    assert read.rows == [{"a": 1}] and read.skipped == 1


def test_session_id_cannot_escape(tmp_path: Path) -> None:
    path = append_row(tmp_path / "d", "../../etc/x", {"a": 1}, cap_bytes=1 << 20)
    assert path.parent == tmp_path / "d"


def test_report_json_and_table(tmp_path: Path) -> None:
    rows = [
        {"sessionId": "s1", "model": "m", "status": "ok", "reasoningBytes": 400, "textBytes": 100,
         "toolBytes": 0, "usage": {"uncached": 600, "cacheRead": 300, "cacheWrite": 100,
                                   "billedInput": 1000, "output": 50, "reasoning": 30},
         "sentReasoning": {"thinking": {"bytes": 800, "count": 1, "opaque": False},
                           "signature": {"bytes": 90, "count": 1, "opaque": True}}},
        {"sessionId": "s1", "model": "m", "status": "aborted", "reasoningBytes": 4,
         "textBytes": 0, "toolBytes": 0},
    ]  # fmt: skip
    for r in rows:
        append_row(tmp_path, "s1", r, cap_bytes=1 << 20)
    res = CliRunner().invoke(app, ["report", "--dir", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    (g,) = json.loads(res.output)["groups"]
    assert g["calls"] == 2 and g["failed"] == 1 and g["reasoning_bytes"] == 404
    assert g["billed_input"] == 1000 and g["reasoning_tokens"] == 30
    assert g["sent_text_bytes"] == 800 and g["sent_opaque_bytes"] == 90
    assert g["est_resent_reasoning_tokens"] == 200.0
    assert g["resent_share_of_billed_input"] == 0.2  # over billed input, not uncached (600)
    table = CliRunner().invoke(app, ["report", "--dir", str(tmp_path)])
    assert table.exit_code == 0 and "20.0%" in table.output and "estimate" in table.output
    missing = CliRunner().invoke(app, ["report", "--dir", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "Traceback" not in missing.output


def test_public_api() -> None:
    # PromptCounter added in wave 3 (issue 26: a server's count endpoint for re-sent text)
    assert sorted(probe.__all__) == [
        "AsyncProbeTransport", "ProbeSettings", "ProbeTransport", "PromptCounter", "Tokenizer",
        "flush",
        "ledger_dir", "load_settings", "observe_bytes", "read_rows",
    ]  # fmt: skip


def _name(path: str) -> str | None:
    found = dialect_for_path(path)
    return found.name if found is not None else None


def test_dialect_for_path() -> None:
    assert _name("/v1/chat/completions") == "chat"
    assert _name("/v1/responses") == "responses"
    assert _name("/v1/messages") == "anthropic"
    assert _name("/v1beta/models/gemini-3:streamGenerateContent?alt=sse") == "gemini"
    assert _name("/v1beta/models/g:generateContent") == "gemini"
    assert dialect_for_path("/v1/models") is None
    assert dialect_for_path("/v1/messages/count_tokens") is None


def test_request_carriers_gemini_and_chat_details() -> None:
    gem = {"contents": [{"role": "user", "parts": [{"text": "q"}]},
                        {"role": "model", "parts": [{"text": "th", "thought": True},
                                                    {"functionCall": {"name": "f"},
                                                     "thoughtSignature": "c2ln"}]}]}  # fmt: skip
    assert [(c.kind, c.size, c.opaque) for c in get_dialect("gemini").request_carriers(gem)] == [
        ("thought", 2, False), ("thoughtSignature", 4, True)]  # fmt: skip
    chat = {"messages": [{"role": "assistant", "content": "", "reasoning_details": [
        {"type": "reasoning.text", "text": "é", "signature": "s", "index": 0},
        {"type": "reasoning.encrypted", "data": "abc", "index": 1}]}]}  # fmt: skip
    assert [(c.kind, c.size, c.opaque) for c in get_dialect("chat").request_carriers(chat)] == [
        ("reasoning.text", 2, False), ("reasoning.text.signature", 1, True),
        ("reasoning.encrypted", 3, True)]  # fmt: skip
