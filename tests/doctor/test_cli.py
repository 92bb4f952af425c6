"""``reasonwire doctor``: the --json object exactly as issue 27 gives it, exit codes 0 clean /
1 findings / 2 unreadable (one line on stderr, no traceback), text grouped by turn, --out
never in place. Synthetic inputs built here, so these run without ../shared."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from reasonwire import cli

GOOD_SIG = base64.b64encode(b"\x12\x20" + bytes(range(32))).decode()


def run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["reasonwire", "doctor", *args])
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.raises(SystemExit) as done,
    ):
        cli.main()
    code = done.value.code
    return (0 if code is None else int(code)), out.getvalue(), err.getvalue()


def body(signature: str | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "thinking", "thinking": "t"}
    if signature is not None:
        block["signature"] = signature
    return {
        "model": "claude-x",
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [block, {"type": "text", "text": "a"}]},
            {"role": "user", "content": "next"},
        ],
    }


def write(tmp: Path, name: str, data: Any) -> Path:
    p = tmp / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return p


def test_clean_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run([str(write(tmp_path, "a.json", body(GOOD_SIG)))], monkeypatch)
    assert code == 0 and "clean" in out


def test_json_shape_and_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path, "a.json", body(GOOD_SIG[:-2]))
    code, out, _ = run([str(p), "--json"], monkeypatch)
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"findings", "repaired"} and data["repaired"] is None
    (f,) = data["findings"]
    assert list(f) == ["file", "line", "path", "kind", "severity", "provider", "detail", "fix"]
    assert f["file"] == str(p) and f["line"] is None  # one JSON body: not line-oriented
    assert f["path"] == "$.messages[1].content[0].signature" and f["kind"] == "truncated"
    assert f["provider"] == "anthropic" and f["severity"] == "error" and f["fix"]


def test_json_lines_give_1_based_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [json.dumps(body(GOOD_SIG)), json.dumps(body(None))]
    p = write(tmp_path, "a.jsonl", "\n".join(lines) + "\n")
    code, out, _ = run([str(p), "--json"], monkeypatch)
    assert code == 1
    assert [(f["line"], f["kind"]) for f in json.loads(out)["findings"]] == [
        (2, "missing_signature")
    ]


@pytest.mark.parametrize(
    "content", ["", "not json at all\n", "\xff", "[1, 2]", '{"a": 1}', "{broken"]
)
def test_unreadable_exits_2_with_one_line(
    content: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes(content.encode("latin-1") if content == "\xff" else content.encode())
    code, out, err = run([str(p)], monkeypatch)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_file_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run([str(tmp_path / "nope.jsonl")], monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_text_groups_by_turn_and_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = body("[trimmed]")
    b["messages"] += [
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "u"}]},
        {"role": "user", "content": "z"},
    ]
    code, out, _ = run([str(write(tmp_path, "a.json", b))], monkeypatch)
    assert code == 1
    assert out.index("turn 1:") < out.index("placeholder") < out.index("turn 2:")
    assert out.index("turn 2:") < out.index("missing_signature")
    assert out.count("fix: ") == 2


def test_out_repairs_and_never_writes_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write(tmp_path, "a.json", body("[trimmed]"))
    original = p.read_bytes()
    code, _, err = run([str(p), "--out", str(p)], monkeypatch)
    assert code == 2 and "in place" in err and p.read_bytes() == original
    out = tmp_path / "fixed.json"
    code, text, _ = run([str(p), "--out", str(out), "--json"], monkeypatch)
    assert code == 1 and p.read_bytes() == original
    rep = json.loads(text)["repaired"]
    assert rep[0]["out"] == str(out) and rep[0]["remaining"] == []
    assert [c["rule"] for c in rep[0]["changes"]] == ["drop-earlier-thinking"]
    assert run([str(out)], monkeypatch)[0] == 0
    fixed = json.loads(out.read_text())
    assert fixed["messages"][1]["content"] == [{"type": "text", "text": "a"}]


def test_format_names_a_dialect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Chat body read as Chat with --format, and its route named with --profile."""
    chat = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ],
    }
    p = write(tmp_path, "c.json", chat)
    assert run([str(p), "--format", "chat"], monkeypatch)[0] == 0  # default route: no rule
    code, out, _ = run([str(p), "--format", "chat", "--profile", "kimi", "--json"], monkeypatch)
    assert code == 1
    assert [f["kind"] for f in json.loads(out)["findings"]] == ["missing_reasoning_content"]
    assert run([str(p), "--format", "nonsense"], monkeypatch)[0] == 2


def test_against_names_the_changed_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The originals as a saved body; the session's thinking text was edited."""
    original = write(tmp_path, "orig.json", body(GOOD_SIG))
    edited = body(GOOD_SIG)
    edited["messages"][1]["content"][0]["thinking"] = "t, edited"
    p = write(tmp_path, "s.json", edited)
    assert run([str(p)], monkeypatch)[0] == 0  # well-formed: structure cannot tell
    code, out, _ = run([str(p), "--against", str(original), "--json"], monkeypatch)
    assert code == 1
    assert [(f["path"], f["kind"]) for f in json.loads(out)["findings"]] == [
        ("$.messages[1].content[0].thinking", "changed")
    ]
    fixed = tmp_path / "fixed.json"
    code, out, _ = run([str(p), "--against", str(original), "--out", str(fixed)], monkeypatch)
    assert code == 1 and run([str(fixed), "--against", str(original)], monkeypatch)[0] == 0
