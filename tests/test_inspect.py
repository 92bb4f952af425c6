"""``reasonwire inspect`` on every recorded response of the corpus, and on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from reasonwire.doctor.cli import inspect_command
from reasonwire.doctor.inspect import inspect_bytes
from reasonwire.wire.model import canonical_bytes
from tests.conformance.corpus import (
    corpus_dir,
    corpus_files,
    corpus_path,
    load_cassette,
    manifest_dialect,
    manifest_entries,
)

runner = CliRunner()
app = typer.Typer(pretty_exceptions_enable=False)
app.command()(inspect_command)  # a one-command app: invoked without the "inspect" word

# keys whose string values are opaque state a client must send back byte for byte
OPAQUE_KEYS = frozenset({"signature", "encrypted_content", "thoughtSignature", "thought_signature"})


def dialect_of_uri(uri: str) -> str:
    if "/chat/completions" in uri:
        return "chat"
    if uri.split("?")[0].endswith("/responses"):
        return "responses"
    if "/messages" in uri:
        return "anthropic"
    if "generateContent" in uri or "GenerateContent" in uri:
        return "gemini"
    raise AssertionError(f"no dialect for {uri}")


def corpus_bodies() -> Iterator[tuple[str, str, bytes]]:
    """(case id, expected dialect, response bytes) for every 200 response in the corpus."""
    for name in corpus_files("pai__*.yaml"):
        for n, it in enumerate(load_cassette(name)):
            if it.status != 200:
                continue
            if it.streamed:
                assert it.response_text is not None
                body = it.response_text.encode("utf-8")
            else:
                body = json.dumps(it.response_json, ensure_ascii=False).encode("utf-8")
            yield f"{name}#{n}", dialect_of_uri(it.uri), body
    for name in corpus_files("vercel__*"):
        yield name, manifest_dialect(name), corpus_path(name).read_bytes()


CASES = list(corpus_bodies()) if corpus_files() else []


def opaque_leaves(value: Any) -> Iterator[str]:
    """Opaque strings in a JSON value, found independently of the dialect code."""
    if isinstance(value, dict):
        for k, v in value.items():
            opaque_key = k in OPAQUE_KEYS or (
                k == "data" and value.get("type") == "redacted_thinking"
            )
            if opaque_key and isinstance(v, str) and v:
                yield v
            else:
                yield from opaque_leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from opaque_leaves(v)


def all_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from all_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from all_strings(v)


@pytest.fixture(scope="module")
def corpus_present() -> None:
    corpus_dir()


def test_corpus_has_cases(corpus_present: None) -> None:
    assert {c[0].split("#")[0] for c in CASES} == set(manifest_entries())


@pytest.mark.parametrize(
    ("case", "expected", "body"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_inspect_every_corpus_response(
    case: str, expected: str, body: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "body"
    path.write_bytes(body)

    result = runner.invoke(app, [str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dialect"] == expected

    ins = inspect_bytes(body)
    assert ins.dialect == expected
    assert len(report["carriers"]) == len(ins.turn.carriers)

    # Independent check: every opaque value in a non-streamed body is inside some carrier,
    # byte for byte; every opaque carrier in a stream was really on the wire.
    text = body.decode("utf-8")
    carrier_strings = {s for c in ins.turn.carriers for s in all_strings(c.value)}
    if ins.form == "json":
        for leaf in opaque_leaves(json.loads(text)):
            assert leaf in carrier_strings, f"{case}: opaque value not found as a carrier"
    else:
        wire_strings: set[str] = set()
        for line in text.splitlines():
            payload = line.partition(":")[2].strip() if line.startswith("data:") else line
            try:
                wire_strings.update(all_strings(json.loads(payload)))
            except json.JSONDecodeError:
                continue
        for c in ins.turn.carriers:
            for leaf in opaque_leaves(c.value if isinstance(c.value, dict | list) else {}):
                assert leaf in wire_strings, f"{case}: opaque carrier value not on the wire"
    has_opaque = any(True for _ in opaque_leaves(json.loads(text))) if ins.form == "json" else None
    if has_opaque:
        assert any(c["opaque"] for c in report["carriers"])
        for c in report["carriers"]:
            if c["opaque"]:
                assert c["preview"].startswith("sha256:")
                # the printed report never holds an opaque value itself
                for leaf in opaque_leaves(json.loads(text)):
                    if len(leaf) > 16:
                        assert leaf not in result.stdout

    # --replay prints exactly the dialect's replay payload
    rep = runner.invoke(app, [str(path), "--replay"])
    assert rep.exit_code == 0, rep.output
    from reasonwire.wire import get_dialect

    assert json.loads(rep.stdout) == get_dialect(expected).replay(ins.turn)
    for c in ins.turn.carriers:
        assert canonical_bytes(c.value).decode() in canonical_bytes(json.loads(rep.stdout)).decode()

    # the human report names every carrier's kind and path
    human = runner.invoke(app, [str(path)])
    assert human.exit_code == 0
    for c in ins.turn.carriers:
        assert c.kind in human.stdout and c.path in human.stdout


def test_carrier_report_fields(corpus_present: None, tmp_path: Path) -> None:
    name = "pai__test_anthropic__test_anthropic_tool_with_thinking.yaml"
    body = json.dumps(load_cassette(name)[0].response_json).encode()
    path = tmp_path / "a.json"
    path.write_bytes(body)
    report = json.loads(runner.invoke(app, [str(path), "--json"]).stdout)
    ins = inspect_bytes(body)
    [c] = [c for c in ins.turn.carriers if c.kind == "thinking"]
    [r] = [r for r in report["carriers"] if r["kind"] == "thinking"]
    assert r["path"] == c.path and r["size"] == c.size and r["digest"] == c.digest
    assert report["usage"]["input_uncached"] == 398


def _run(tmp_path: Path, content: bytes, *args: str) -> Any:
    path = tmp_path / "input"
    path.write_bytes(content)
    return runner.invoke(app, [str(path), *args])


def _assert_clean_failure(result: Any, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b'{"choices": [', "not valid JSON"),
        (b'{"hello": "world"}', "cannot tell the dialect"),
        (b'{"error": {"message": "Invalid signature in thinking block"}}', "provider error"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"just some text", "not a JSON body"),
        (b"data: {not json\n\n", "does not hold JSON"),
        (b"event: ping\n\n", "no data events"),
        (b'[{"candidates": [], "x": tru', "undecodable"),
        (b'{"a": 1}\n{"b": 2}\n', "cannot tell the dialect"),
        (b'{"type": "message_start"}\nnot json\n', "line 2 is not JSON"),
    ],
)
def test_bad_input_one_line_nonzero(tmp_path: Path, content: bytes, needle: str) -> None:
    line = _assert_clean_failure(_run(tmp_path, content))
    assert needle in line


def test_truncated_stream(tmp_path: Path, corpus_present: None) -> None:
    name = "pai__test_anthropic__test_anthropic_model_thinking_part_stream.yaml"
    text = load_cassette(name)[0].response_text
    assert text is not None
    cut = text[: len(text) // 2].rsplit("\n\n", 1)[0] + "\n\n"
    line = _assert_clean_failure(_run(tmp_path, cut.encode()))
    assert "truncated" in line
    chunks = corpus_path("vercel__deepseek__deepseek-tool-call.chunks.txt").read_text()
    half = "\n".join(chunks.splitlines()[:10]) + "\n"
    assert "truncated" in _assert_clean_failure(_run(tmp_path, half.encode()))


def test_unreadable_file_and_bad_dialect(tmp_path: Path) -> None:
    missing = runner.invoke(app, [str(tmp_path / "nope.json")])
    assert "cannot read" in _assert_clean_failure(missing, 2)
    directory = runner.invoke(app, [str(tmp_path)])
    _assert_clean_failure(directory, 2)
    bad = _run(tmp_path, b'{"choices": []}', "--dialect", "klingon")
    assert "unknown dialect" in _assert_clean_failure(bad)


def test_dialect_option_overrides_detection(tmp_path: Path, corpus_present: None) -> None:
    body = corpus_path("vercel__deepseek__deepseek-tool-call.json").read_bytes()
    ok = _run(tmp_path, body, "--dialect", "chat", "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["dialect"] == "chat"
    wrong = _run(tmp_path, body, "--dialect", "anthropic")
    _assert_clean_failure(wrong)


def test_sse_with_crlf_and_bom(tmp_path: Path, corpus_present: None) -> None:
    name = "pai__test_anthropic__test_anthropic_model_thinking_part_stream.yaml"
    text = load_cassette(name)[0].response_text
    assert text is not None
    plain = inspect_bytes(text.encode())
    crlf = inspect_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert crlf.turn.carriers == plain.turn.carriers
    assert crlf.form == "sse" and crlf.dialect == "anthropic"


def test_registered_in_the_reasonwire_command(tmp_path: Path, corpus_present: None) -> None:
    """The real console entry point runs it, and a failure is one line without a traceback."""
    exe = Path(sys.executable).with_name("reasonwire")
    good = corpus_path("vercel__google__google-tool-call-gemini3.json")
    ok = subprocess.run([exe, "inspect", str(good)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "dialect   gemini (json" in ok.stdout and "thoughtSignature" in ok.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"candidates": [')
    fail = subprocess.run([exe, "inspect", str(bad)], capture_output=True, text=True, timeout=60)
    assert fail.returncode == 1
    assert "Traceback" not in fail.stderr and len(fail.stderr.strip().splitlines()) == 1
