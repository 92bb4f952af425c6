"""A Gemini signature re-sent in the current turn's tool loop, on recorded real sessions.

The recordings show the prompt of the next call in the loop growing by the producing call's
``thoughtsTokenCount`` (the signature brings its thoughts back as input), so the probe counts
the producer's thoughts for it, measured. Expected figures are read from the recordings
(plain YAML/JSON/SSE reading), never from the probe:

- ``pai__test_google__test_google_streaming_tool_call_thought_signature.yaml``: call 1 prompt
  29, thoughts 202; call 2 (the signed function call and its response) prompt 257 in the final
  chunk = 55 (the earlier chunks' figure) + 202.
- ``cassettes-2026/pai__test_google__test_google_instructions_only_with_tool_calls.yaml``:
  five calls in one loop, each re-sending every earlier signature; each step's prompt grows
  by the new step's call and response plus the previous call's ``thoughtsTokenCount``
  (348 - 83 = 190 + 75, 415 - 348 = 40 + 27, 546 - 415 = 105 + 26, 679 - 546 = 106 + 27).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from reasonwire.probe import observe_bytes
from reasonwire.probe.cli import app
from tests.conformance.corpus import Interaction, load_cassette

STREAMED = "pai__test_google__test_google_streaming_tool_call_thought_signature.yaml"
LOOP = "pai__test_google__test_google_instructions_only_with_tool_calls.yaml"


def _report(ledger: Path) -> list[dict[str, Any]]:
    res = CliRunner().invoke(app, ["report", "--dir", str(ledger), "--json"])
    assert res.exit_code == 0, res.output
    return list(json.loads(res.output)["calls"])


def _last_usage(it: Interaction) -> dict[str, Any]:
    """The answer's final ``usageMetadata`` (the last SSE event's for a stream)."""
    if it.response_text is None:
        return dict(it.response_json["usageMetadata"])
    usage: dict[str, Any] = {}
    for line in it.response_text.replace("\r\n", "\n").split("\n"):
        if line.startswith("data:"):
            usage = json.loads(line[5:]).get("usageMetadata") or usage
    return usage


def _observe(its: list[Interaction], ledger: Path) -> None:
    for it in its:
        stream = it.response_text is not None
        raw = (it.response_text or "").encode() if stream else json.dumps(it.response_json).encode()
        body = json.dumps(it.request).encode()
        list(observe_bytes([raw], dialect="gemini", session_id="g", stream=stream,
                           ledger_dir=ledger, request_body=body))  # fmt: skip


def _signatures_in_loop(it: Interaction) -> int:
    """Signed parts of the request's model contents after its last user text."""
    contents = it.request["contents"]
    last_user = max(i for i, c in enumerate(contents) if c.get("role") == "user"
                    and any("text" in p for p in c["parts"]))  # fmt: skip
    return sum("thoughtSignature" in p for c in contents[last_user + 1 :]
               if c.get("role") == "model" for p in c["parts"])  # fmt: skip


def test_streamed_loop_signature_counts_its_producers_thoughts(tmp_path: Path) -> None:
    first, second = load_cassette(STREAMED)
    u1, u2 = _last_usage(first), _last_usage(second)
    assert (u1["promptTokenCount"], u1["thoughtsTokenCount"], u2["promptTokenCount"]) == (
        29, 202, 257)  # fmt: skip
    assert _signatures_in_loop(second) == 1
    _observe([first, second], tmp_path)
    call = _report(tmp_path)[1]
    assert call["billed_input"] == 257
    assert call["resent_measured"] == u1["thoughtsTokenCount"]
    assert call["resent_estimated"] == 0
    assert call["documented_carriers"] == 0 and call["unattributed_opaque_bytes"] == 0


def test_each_loop_signature_counts_its_own_producers_thoughts(tmp_path: Path) -> None:
    its = load_cassette(LOOP)
    usage = [_last_usage(it) for it in its]
    prompts = [u["promptTokenCount"] for u in usage]
    thoughts = [u["thoughtsTokenCount"] for u in usage]
    assert prompts == [83, 348, 415, 546, 679] and thoughts[:4] == [190, 40, 105, 106]
    assert [_signatures_in_loop(it) for it in its] == [0, 1, 2, 3, 4]
    _observe(its, tmp_path)
    calls = _report(tmp_path)
    # call n re-sends the signatures of calls 1..n-1: each counts its producer's thoughts
    assert [c["resent_measured"] for c in calls] == [0, 190, 230, 335, 441]
    assert all(c["resent_estimated"] == 0 for c in calls)
    assert all(c["documented_carriers"] == 0 for c in calls)
