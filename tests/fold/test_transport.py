"""FoldTransport: folds dialect request bodies before sending; forwards the very request (same
bytes, never re-serialized) when nothing was folded; leaves everything else alone."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.errors import ConfigError
from reasonwire.fold import (
    AsyncFoldTransport,
    FoldReport,
    FoldSettings,
    FoldTransport,
    load_fold_settings,
)
from reasonwire.wire.fold import marker

S = FoldSettings(enabled=True, floor_chars=100, head_chars=30, tail_chars=20)
LONG = "H" * 30 + "m" * 200 + "T" * 20


class Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.contents: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.contents.append(request.read())
        return httpx.Response(200, json={"ok": True})


def _client(rec: Recorder, settings: Any = S, **kw: Any) -> httpx.Client:
    return httpx.Client(transport=FoldTransport(settings, inner=httpx.MockTransport(rec), **kw))


# An opaque-only request as a client may format it: spaces, escaped slashes, \\u escapes.
OPAQUE_ONLY = (
    b'{ "model" : "claude",  "max_tokens": 5, "messages": [ {"role": "user", "content": "q"},'
    b' {"role": "assistant", "content": [ {"type": "thinking", "thinking": "' + b"t" * 500
    + b'", "signature": "EqQB\\/abc\\u002b=="}, {"type": "redacted_thinking", "data": "Zm9v\\/'
    + b"x" * 300 + b'"}]}], "x": 1.0e2 }'
)  # fmt: skip


def test_nothing_folded_forwards_the_original_bytes() -> None:
    rec = Recorder()
    with _client(rec) as c:
        c.post("http://up/v1/messages", content=OPAQUE_ONLY,
               headers={"content-type": "application/json"})  # fmt: skip
    assert rec.contents == [OPAQUE_ONLY]  # same bytes: not re-serialized
    chat_opaque = json.dumps({"model": "m", "messages": [{"role": "assistant", "content": "",
        "reasoning_details": [{"type": "reasoning.encrypted", "data": "e" * 900}]}]},
        indent=3).encode()  # fmt: skip
    with _client(rec) as c:
        c.post("http://up/v1/chat/completions", content=chat_opaque)
    assert rec.contents[1] == chat_opaque


def test_same_request_object_when_unfolded() -> None:
    seen: list[Any] = []

    class Inner(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, json={})

    t = FoldTransport(S, inner=Inner())
    body = {"model": "m", "messages": [{"role": "user", "content": LONG}]}
    req = httpx.Request("POST", "http://up/v1/chat/completions", json=body)
    t.handle_request(req)
    assert seen == [req] and seen[0] is req
    assert t.last_report is not None and not t.last_report.changed


def test_folds_and_fixes_content_length() -> None:
    rec = Recorder()
    reports: list[FoldReport] = []
    body = {"model": "m", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning_content": LONG, "tool_calls": []},
    ], "temperature": 0.5}  # fmt: skip
    with _client(rec, on_fold=reports.append) as c:
        r = c.post("http://up/v1/chat/completions", json=body, headers={"x-trace": "1"})
    assert r.status_code == 200
    (sent,) = rec.contents
    got = json.loads(sent)
    assert got["messages"][1]["reasoning_content"] == "H" * 30 + marker(200) + "T" * 20
    assert {k: v for k, v in got.items() if k != "messages"} == {"model": "m",
                                                                "temperature": 0.5}  # fmt: skip
    req = rec.requests[0]
    assert req.headers["content-length"] == str(len(sent)) and req.headers["x-trace"] == "1"
    assert reports and reports[0].changed and reports[0].texts[0].folded == 200


def test_passes_other_endpoints_off_settings_and_compressed_bodies() -> None:
    rec = Recorder()
    body = {"model": "m", "messages": [{"role": "assistant", "reasoning_content": LONG}]}
    raw = json.dumps(body).encode()
    packed = gzip.compress(raw)  # once: the gzip header holds the current second
    with _client(rec) as c:
        c.post("http://up/v1/embeddings", content=raw)
        c.post("http://up/v1/chat/completions", content=packed,
               headers={"content-encoding": "gzip"})  # fmt: skip
        c.post("http://up/v1/chat/completions", content=b"not json")
    with _client(rec, settings=None) as c:  # off by default
        c.post("http://up/v1/chat/completions", content=raw)
    assert rec.contents == [raw, packed, b"not json", raw]


def test_route_setting_and_providers(tmp_path: Path) -> None:
    cfg = tmp_path / "fold.toml"
    cfg.write_text('[fold]\nenabled = true\nfloor_chars = 100\nhead_chars = 30\n'
                   'tail_chars = 20\nproviders = ["mine/m"]\n')  # fmt: skip
    body = {"model": "m", "messages": [{"role": "assistant", "reasoning_content": LONG}]}
    rec = Recorder()
    with _client(rec, settings=cfg) as c:  # route is the host here: not listed
        c.post("http://up/v1/chat/completions", json=body)
    with _client(rec, settings=str(cfg), route="mine") as c:
        c.post("http://up/v1/chat/completions", json=body)
    assert json.loads(rec.contents[0]) == body
    assert json.loads(rec.contents[1])["messages"][0]["reasoning_content"] != LONG


async def test_async_transport() -> None:
    rec = Recorder()
    t = AsyncFoldTransport(S, inner=httpx.MockTransport(rec))
    summary = [{"type": "summary_text", "text": LONG}]
    body = {"input": [{"type": "reasoning", "encrypted_content": "e" * 50, "summary": summary}],
            "model": "m"}  # fmt: skip
    async with httpx.AsyncClient(transport=t) as c:
        await c.post("http://up/v1/responses", json=body)
        await c.post("http://up/v1/responses", content=OPAQUE_ONLY)
    got = json.loads(rec.contents[0])
    assert got["input"][0]["encrypted_content"] == "e" * 50
    assert got["input"][0]["summary"][0]["text"] == "H" * 30 + marker(200) + "T" * 20
    assert rec.contents[1] == OPAQUE_ONLY


def test_lone_surrogate_survives_reserialization() -> None:
    rec = Recorder()
    raw = (b'{"model":"m","messages":[{"role":"assistant","reasoning_content":"'
           + b"x" * 300 + b'","content":"\\ud800"}]}')  # fmt: skip
    with _client(rec) as c:
        c.post("http://up/v1/chat/completions", content=raw)
    got = json.loads(rec.contents[0])
    assert got["messages"][0]["content"] == "\ud800"
    assert got["messages"][0]["reasoning_content"].startswith("x" * 30 + "\n\n[... ")


def test_httpx2_fork_client() -> None:
    httpx2 = pytest.importorskip("httpx2")
    got: list[bytes] = []

    def handler(request: Any) -> Any:
        got.append(request.read())
        return httpx2.Response(200, json={})

    t = FoldTransport(S, inner=httpx2.MockTransport(handler))
    with httpx2.Client(transport=t) as c:
        body = {"model": "m", "messages": [{"role": "assistant", "reasoning": LONG}]}
        c.post("http://up/v1/chat/completions", json=body)
    assert json.loads(got[0])["messages"][0]["reasoning"].endswith("T" * 20)
    assert len(json.loads(got[0])["messages"][0]["reasoning"]) < len(LONG)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[fold]\nfloor_chars = 10\nhead_chars = 5\ntail_chars = 5\n", "greater than"),
        ("[fold]\nfloor = 10\n", "unknown key"),
        ('[fold]\nproviders = "x"\n', "list of strings"),
        ("[fold\n", "not valid TOML"),
        ("[fold]\nhead_chars = -1\n", "non-negative"),
    ],
)
def test_settings_file_errors(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "f.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as err:
        load_fold_settings(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="cannot read"):
        load_fold_settings(tmp_path / "missing.toml")


def test_settings_file_top_level_table(tmp_path: Path) -> None:
    p = tmp_path / "f.toml"
    p.write_text("enabled = true\nfloor_chars = 16\nhead_chars = 10\ntail_chars = 5\n"
                 "providers = []\ndrop = [\"a/b\"]\n")  # fmt: skip
    s = load_fold_settings(p)
    assert s == FoldSettings(True, 16, 10, 5, frozenset(), frozenset({"a/b"}))
