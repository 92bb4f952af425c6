"""The fold on the real llama.cpp server with the real Qwen3 template (which reads
``reasoning_content`` in the tool loop): a long replayed trace, folded by the transport, cuts
``prompt_tokens`` by about the folded share, and the head and tail canaries are still in the
rendered prompt (the server's own ``/apply-template``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from reasonwire.fold import FoldSettings, FoldTransport
from reasonwire.localserver.pytest_plugin import local_servers, qwen3_server  # noqa: F401
from reasonwire.localserver.server import LocalServer
from reasonwire.wire.fold import MARKER_RE
from tests.fold.conftest import Sent
from tests.localserver.conversation import TOOLS, loop_messages

pytestmark = [pytest.mark.localserver, pytest.mark.slow]

HEAD = "Canary-head-word is AZURE. "
TAIL = " Canary-tail-word is OCHRE."
MIDDLE = "Canary-middle-word is UMBER. "
SENTENCES = (
    "The user asks for the weather in Paris, so I should call the weather tool first. ",
    "The tool takes a city name; Paris is unambiguous here, no country code is needed. ",
    "After the result arrives I will report the temperature in Celsius and the sky. ",
    "If the tool fails I should say so plainly instead of guessing a forecast. ",
)


def trace(chars: int = 30000) -> str:
    body = "".join(SENTENCES[i % 4] for i in range(chars // 60 + 8))
    half = (chars - len(HEAD) - len(TAIL) - len(MIDDLE)) // 2
    text = HEAD + body[:half] + MIDDLE + body[: chars - len(HEAD) - len(TAIL) - len(MIDDLE) - half]
    return text + TAIL


def _tokens(server: LocalServer, transport: Any) -> tuple[int, dict[str, Any]]:
    sent = Sent(httpx)
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0,
                           http_client=httpx.Client(transport=transport(sent)))  # fmt: skip
    messages: Any = loop_messages("reasoning_content", trace())
    tools: Any = TOOLS
    resp = client.chat.completions.create(
        model="local", messages=messages, tools=tools, max_tokens=1, temperature=0
    )
    assert resp.usage is not None
    return resp.usage.prompt_tokens, json.loads(sent.bodies[-1])


def test_fold_cuts_prompt_tokens_by_the_folded_share(
    qwen3_server: LocalServer,  # noqa: F811
) -> None:
    server = qwen3_server
    settings = FoldSettings(enabled=True)  # floor 12000, head 4000, tail 2000
    plain_req = {"messages": loop_messages(), "tools": TOOLS, "max_tokens": 1}
    base = server.post("/v1/chat/completions", plain_req).json()["usage"]["prompt_tokens"]
    before, plain_body = _tokens(server, lambda inner: inner)
    after, folded_body = _tokens(server, lambda inner: FoldTransport(settings, inner=inner))
    rc = folded_body["messages"][2]["reasoning_content"]
    original = plain_body["messages"][2]["reasoning_content"]
    assert len(original) == 30000 and MARKER_RE.search(rc)
    folded_share = 1 - (settings.head_chars + settings.tail_chars) / len(original)  # 0.8
    cut = (before - after) / (before - base)  # of the trace's own tokens
    saving = (before - after) / before  # of billed input (prompt tokens, no cache here)
    print(f"\nllama-server Qwen3: prompt_tokens base {base}, with trace {before}, folded "
          f"{after}; trace tokens cut {cut:.1%} (folded share of chars {folded_share:.1%}); "
          f"billed input saving {before - after} tokens = {saving:.1%}")  # fmt: skip
    assert abs(cut - folded_share) < 0.03, (cut, folded_share)
    # the rendered prompt: head and tail canaries kept, the middle one folded away
    for body, middle in ((folded_body, False), (plain_body, True)):
        resp = server.post("/apply-template", {"messages": body["messages"], "tools": TOOLS})
        assert resp.status_code == 200, resp.text
        prompt = resp.json()["prompt"]
        assert "AZURE" in prompt and "OCHRE" in prompt
        assert ("UMBER" in prompt) is middle
    assert (
        "characters folded"
        in server.post(
            "/apply-template", {"messages": folded_body["messages"], "tools": TOOLS}
        ).json()["prompt"]
    )


def test_probe_shows_billed_input_before_and_after_the_fold(
    qwen3_server: LocalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The same session replayed twice through the probe, without and with the fold (the
    fold transport outside, so the probe sees what really goes out): the ledger's billed
    input equals the server's own ``prompt_tokens`` per call, and ``probe report`` shows it
    cut by about the folded share of the trace; the re-sent reasoning bytes fall to head +
    tail + marker."""
    from typer.testing import CliRunner

    from reasonwire.probe import ProbeTransport, read_rows
    from reasonwire.probe.cli import app

    server = qwen3_server
    settings = FoldSettings(enabled=True)
    reported: dict[str, list[int]] = {"unfolded": [], "folded": []}
    messages: Any = loop_messages("reasoning_content", trace())
    for session, fold in (("unfolded", False), ("folded", True)):
        probe = ProbeTransport(session, ledger_dir=tmp_path, inner=httpx.HTTPTransport())
        transport: Any = FoldTransport(settings, inner=probe) if fold else probe
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0,
                               http_client=httpx.Client(transport=transport))  # fmt: skip
        for _ in range(2):  # the replay: the same tool-loop request, twice
            resp = client.chat.completions.create(
                model="local", messages=messages, tools=TOOLS, max_tokens=1, temperature=0
            )
            assert resp.usage is not None
            reported[session].append(resp.usage.prompt_tokens)
    rows = read_rows(tmp_path).rows
    by = {s: [r for r in rows if r["sessionId"] == s] for s in reported}
    for session, calls in reported.items():
        billed = [
            r["usage"]["inputTokens"] + r["usage"]["cacheReadTokens"]
            + r["usage"]["cacheWriteTokens"]
            for r in by[session]
        ]  # fmt: skip
        assert billed == calls  # the ledger's billed input is the server's own figure
    before, after = sum(reported["unfolded"]), sum(reported["folded"])
    resent = {s: sum(r["sentReasoningBytes"] for r in by[s]) for s in reported}
    assert resent["unfolded"] == 2 * len(trace().encode())
    marker_len = len("\n\n[... 24000 characters folded ...]\n\n")  # the documented marker
    assert resent["folded"] == 2 * (settings.head_chars + settings.tail_chars + marker_len)
    assert after < before * 0.4  # 30,000 chars cut to 6,000: most of the prompt is the trace
    out = CliRunner().invoke(app, ["report", "--dir", str(tmp_path), "--json"])
    assert out.exit_code == 0, out.output
    report = {g["session"]: g for g in json.loads(out.output)["groups"]}
    assert report["unfolded"]["billed_input"] == before
    assert report["folded"]["billed_input"] == after
    print(f"\nprobe ledger, same replay x2: billed input {before} -> {after} tokens "
          f"({1 - after / before:.1%} saved); re-sent reasoning {resent['unfolded']} -> "
          f"{resent['folded']} bytes")  # fmt: skip
