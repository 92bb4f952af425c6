"""``reasonwire inspect --json`` on every 2026 recording, against figures read off the files.

Issue 24: tests/test_inspect.py runs inspect over the whole corpus but counts carriers with the
parser itself. Here every expected value was read by hand from the recorded response (the
comment beside each figure names where it sits), so the CLI is checked against the wire, not
against its own code. The three ``vercel__google-interactions__*`` files are left to
tests/conformance/test_interactions.py, which checks them the same way.

Conventions the expectations follow (each read off the file and the provider's docs):

- billed input = every prompt token the provider bills, cache reads and writes included.
  Chat ``prompt_tokens``, Responses ``input_tokens`` and Gemini ``promptTokenCount`` already
  hold the cached tokens; Anthropic ``input_tokens`` does not, so billed input there is
  ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``. In an Anthropic
  stream the ``message_delta`` usage is cumulative and final (Anthropic SDK
  ``MessageDeltaUsage``: "The cumulative number of input tokens which were used").
- a figure the file does not report is None, a reported 0 stays 0.
- carriers are (kind, opaque) in answer order, one per unit a replay sends back: a whole
  Anthropic thinking block (``thinking``, opaque: its text is signed by its ``signature``), a
  whole Responses reasoning item (``reasoning_item``, opaque when it holds a non-empty
  ``encrypted_content``), a chat message field or thinking content part, a Gemini part's
  ``thoughtSignature`` (the kinds the ``Carrier`` docstring in wire/model.py names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from reasonwire.doctor.cli import inspect_command
from tests.conformance.corpus import (
    FOLDERS,
    PRESENT,
    corpus_path,
    load_cassette,
    load_chunks,
    manifest_entries,
)

NEW = FOLDERS[1]
pytestmark = pytest.mark.skipif(
    not (PRESENT and NEW.is_dir()), reason=f"2026 recordings not found at {NEW}"
)

runner = CliRunner()
app = typer.Typer(pretty_exceptions_enable=False)
app.command()(inspect_command)  # a one-command app: invoked without the "inspect" word

COVERED_ELSEWHERE = "vercel__google-interactions__"
"""Prefix of the recordings tests/conformance/test_interactions.py checks against the files."""


@dataclass(frozen=True)
class Expect:
    """What one recorded response holds, read by hand."""

    dialect: str
    carriers: tuple[tuple[str, bool], ...]
    billed_input: int | None
    cache_read: int | None
    reasoning: int | None


ADVISOR = "pai__test_anthropic__test_anthropic_advisor_tool_message_replay.yaml"
CODE_EXEC = "pai__test_anthropic__test_anthropic_code_execution_tool_stream.yaml"
OPUS46 = "pai__test_anthropic__test_anthropic_opus_46_adaptive_thinking_accepts_tool_output(unified).yaml"  # noqa: E501
OPUS47 = "pai__test_anthropic__test_anthropic_opus_47_features.yaml"
OPUS5 = "pai__test_anthropic__test_anthropic_opus_5_features.yaml"
DEEPSEEK = "pai__test_deepseek_responses__test_deepseek_responses(function_tool_stream).yaml"
GEMINI = "pai__test_google__test_google_instructions_only_with_tool_calls.yaml"
MISTRAL = "pai__test_mistral__test_mistral_model_thinking_part_iter.yaml"
PHASE = "pai__test_openai_responses__test_openai_responses_phase_live.yaml"
CONTEXT = "pai__test_openai_responses__test_openai_responses_reasoning_context_default_wire_contract(default-supported).yaml"  # noqa: E501
SUMMARY_STREAM = "pai__test_openai_responses__test_openai_responses_thinking_part_iter.yaml"
OPENROUTER = "pai__test_openrouter__test_openrouter_with_reasoning.yaml"
GLM53 = "pai__test_zai__test_zai_glm_5_3_reasoning_effort.yaml"
GLM_STREAM = "pai__test_zai__test_zai_thinking_stream.yaml"
QWEN_JSON = "vercel__alibaba__alibaba-reasoning.json"
QWEN_CHUNKS = "vercel__alibaba__alibaba-reasoning.chunks.txt"
PROGRAM = "vercel__openai__programmatic-tool-calling.1.chunks.txt"

THINKING = ("thinking", True)  # Anthropic content[i] {type: thinking, thinking, signature}
SIGNED_PART = ("thoughtSignature", True)  # Gemini parts[i].thoughtSignature
ENCRYPTED_ITEM = ("reasoning_item", True)  # Responses output[i](type=reasoning).encrypted_content
REASONING_CONTENT = ("reasoning_content", False)  # chat choices[0].message.reasoning_content

TABLE: dict[str, Expect] = {
    # content[0] = {type: thinking, thinking: '', signature: 'EooD...'}: the omitted-display
    # shape, a block with empty text that still goes back whole; no tool_use blocks.
    # usage.input_tokens 2417 (= iterations[type=message] 1128 + 1289; the advisor_message
    # iteration's 2529 are the advisor model's, billed at its rate, not in the top-level
    # figure), cache_read_input_tokens 0, cache_creation_input_tokens 0;
    # usage.output_tokens_details.thinking_tokens 55
    f"{ADVISOR}#0": Expect("anthropic", (THINKING,), 2417 + 0 + 0, 0, 55),
    # content = [text] only; usage.input_tokens 1311, cache read 0, cache creation 0;
    # output_tokens_details.thinking_tokens 0
    f"{ADVISOR}#1": Expect("anthropic", (), 1311 + 0 + 0, 0, 0),
    # content_block_start index 0 {type: thinking} + thinking_delta + signature_delta, then
    # text, server_tool_use, bash_code_execution_tool_result, text. message_delta usage
    # input_tokens 4714 (message_start said 2293), cache_read_input_tokens 0,
    # cache_creation_input_tokens 0; no output_tokens_details anywhere
    f"{CODE_EXEC}#0": Expect("anthropic", (THINKING,), 4714 + 0 + 0, 0, None),
    # content = [tool_use] only; usage.input_tokens 671, cache read 0, cache creation 0;
    # output_tokens_details.thinking_tokens 0
    f"{OPUS46}#0": Expect("anthropic", (), 671 + 0 + 0, 0, 0),
    # content = [text] only (adaptive chose not to think); usage.input_tokens 18, cache read
    # 0, cache creation 0; no output_tokens_details
    f"{OPUS47}#0": Expect("anthropic", (), 18 + 0 + 0, 0, None),
    # content = [thinking (text + signature 'CAIS...'), text]; usage.input_tokens 13, cache
    # read 0, cache creation 0; output_tokens_details.thinking_tokens 33
    f"{OPUS5}#0": Expect("anthropic", (THINKING,), 13 + 0 + 0, 0, 33),
    # response.completed output = [reasoning {content: [reasoning_text], summary: []} with no
    # encrypted_content key, function_call]: a readable item. usage.input_tokens 366,
    # input_tokens_details.cached_tokens 256, output_tokens_details.reasoning_tokens 14
    f"{DEEPSEEK}#0": Expect("responses", (("reasoning_item", False),), 366, 256, 14),
    # response.completed output = [message] only; usage.input_tokens 440,
    # input_tokens_details.cached_tokens 384, output_tokens_details.reasoning_tokens 0
    f"{DEEPSEEK}#1": Expect("responses", (), 440, 384, 0),
    # candidates[0].content.parts = three parallel functionCall parts, only parts[0] has a
    # thoughtSignature; usageMetadata.promptTokenCount 83, no cachedContentTokenCount,
    # thoughtsTokenCount 190
    f"{GEMINI}#0": Expect("gemini", (SIGNED_PART,), 83, None, 190),
    # parts = [functionCall + thoughtSignature]; promptTokenCount 348, thoughtsTokenCount 40
    f"{GEMINI}#1": Expect("gemini", (SIGNED_PART,), 348, None, 40),
    # parts = [functionCall + thoughtSignature]; promptTokenCount 415, thoughtsTokenCount 105
    f"{GEMINI}#2": Expect("gemini", (SIGNED_PART,), 415, None, 105),
    # parts = [functionCall + thoughtSignature]; promptTokenCount 546, thoughtsTokenCount 106
    f"{GEMINI}#3": Expect("gemini", (SIGNED_PART,), 546, None, 106),
    # parts = [functionCall final_result + thoughtSignature]; promptTokenCount 679,
    # thoughtsTokenCount 235
    f"{GEMINI}#4": Expect("gemini", (SIGNED_PART,), 679, None, 235),
    # delta.content is a list [{type: thinking, thinking: [{type: text, text}]}] in one
    # unbroken run of chunks before the plain-text ones: one thinking part once assembled.
    # Last chunk usage.prompt_tokens 10, no prompt_tokens_details, no
    # completion_tokens_details
    f"{MISTRAL}#0": Expect("chat", (("thinking", False),), 10, None, None),
    # output = [reasoning {encrypted_content 'gAAAA...', summary: []}, message
    # phase=commentary, function_call]; usage.input_tokens 63,
    # input_tokens_details.cached_tokens 0, output_tokens_details.reasoning_tokens 29
    f"{PHASE}#0": Expect("responses", (ENCRYPTED_ITEM,), 63, 0, 29),
    # output = [message phase=final_answer]; input_tokens 150, cached_tokens 0,
    # reasoning_tokens 0
    f"{PHASE}#1": Expect("responses", (), 150, 0, 0),
    # output = [message phase=final_answer], no reasoning item; input_tokens 18,
    # input_tokens_details {cached_tokens 0, cache_write_tokens 0}, reasoning_tokens 0
    f"{CONTEXT}#0": Expect("responses", (), 18, 0, 0),
    # response.completed output = [reasoning {encrypted_content, summary: [summary_text x4]},
    # message]; usage.input_tokens 13, cached_tokens 0, reasoning_tokens 1408
    f"{SUMMARY_STREAM}#0": Expect("responses", (ENCRYPTED_ITEM,), 13, 0, 1408),
    # choices[0].message.reasoning (text), then message.reasoning_details =
    # [{type: reasoning.text, text}] without a signature; usage.prompt_tokens 24,
    # prompt_tokens_details.cached_tokens 0, completion_tokens_details.reasoning_tokens 0
    # (the provider reports 0 despite the reasoning text: the figure is what the file says)
    f"{OPENROUTER}#0": Expect(
        "chat", (("reasoning", False), ("reasoning_details", False)), 24, 0, 0
    ),
    # message.reasoning_content; usage.prompt_tokens 20, prompt_tokens_details.cached_tokens
    # 0, completion_tokens_details.reasoning_tokens 116
    f"{GLM53}#0": Expect("chat", (REASONING_CONTENT,), 20, 0, 116),
    # message.reasoning_content; prompt_tokens 20, cached_tokens 0, reasoning_tokens 111
    f"{GLM53}#1": Expect("chat", (REASONING_CONTENT,), 20, 0, 111),
    # delta.reasoning_content chunks then delta.content; last chunk usage.prompt_tokens 13,
    # prompt_tokens_details.cached_tokens 0, completion_tokens_details.reasoning_tokens 561
    f"{GLM_STREAM}#0": Expect("chat", (REASONING_CONTENT,), 13, 0, 561),
    # choices[0].message.reasoning_content; usage.prompt_tokens 24,
    # prompt_tokens_details.cached_tokens 0, completion_tokens_details.reasoning_tokens 1353
    QWEN_JSON: Expect("chat", (REASONING_CONTENT,), 24, 0, 1353),
    # delta.reasoning_content chunks; the last line (choices: []) has usage.prompt_tokens 24,
    # prompt_tokens_details.cached_tokens 0, completion_tokens_details.reasoning_tokens 1084
    QWEN_CHUNKS: Expect("chat", (REASONING_CONTENT,), 24, 0, 1084),
    # response.completed output = [reasoning {encrypted_content}, program {code,
    # fingerprint}, function_call]. The program item's fingerprint is opaque too ("Opaque
    # program replay fingerprint that must be round-tripped", OpenAI API Program schema) but
    # is tool-execution state, not reasoning: no carrier; test_program_stream_replays_the_
    # done_values checks it goes back. usage.input_tokens 631, input_tokens_details
    # {cached_tokens 0, cache_write_tokens 0}, output_tokens_details.reasoning_tokens 37
    PROGRAM: Expect("responses", (ENCRYPTED_ITEM,), 631, 0, 37),
}


def body_of(case: str) -> tuple[bytes, str]:
    """The recorded response bytes of ``case`` and the form they are in.

    A cassette keeps a JSON body parsed (it is dumped back to JSON) and a stream as its raw
    SSE text; a vercel ``.json`` is one body, a ``.chunks.txt`` one payload per line.
    """
    name, _, n = case.partition("#")
    if n:
        it = load_cassette(name)[int(n)]
        if it.streamed:
            assert it.response_text is not None
            return it.response_text.encode("utf-8"), "sse"
        return json.dumps(it.response_json, ensure_ascii=False).encode("utf-8"), "json"
    form = "jsonl" if name.endswith(".chunks.txt") else "json"
    return corpus_path(name).read_bytes(), form


def _cli(tmp_path: Path, body: bytes, *args: str) -> Any:
    path = tmp_path / "response"
    path.write_bytes(body)
    result = runner.invoke(app, [str(path), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_table_covers_every_2026_response() -> None:
    """One entry per response of every 2026 recording the MANIFEST lists: a cassette's
    ``interactions: N`` gives N responses, a response-only fixture one."""
    want: set[str] = set()
    for name, fields in manifest_entries().items():
        if not (NEW / name).is_file() or name.startswith(COVERED_ELSEWHERE):
            continue
        count = fields["interactions"].split()[0]
        if count == "n/a":
            want.add(name)
            continue
        recorded = load_cassette(name)
        assert len(recorded) == int(count), name
        for n, it in enumerate(recorded):
            assert it.status == 200 and (it.response_json or it.response_text), f"{name}#{n}"
            want.add(f"{name}#{n}")
    assert want, "no 2026 recording found in the MANIFEST"
    assert set(TABLE) == want


@pytest.mark.parametrize("case", sorted(TABLE))
def test_inspect_json_matches_the_recording(case: str, tmp_path: Path) -> None:
    expect = TABLE[case]
    body, form = body_of(case)
    report = _cli(tmp_path, body, "--json")
    assert (report["dialect"], report["form"]) == (expect.dialect, form)
    assert [(c["kind"], c["opaque"]) for c in report["carriers"]] == list(expect.carriers)
    usage = report["usage"]
    assert usage is not None
    got = (usage["billed_input"], usage["cache_read"], usage["reasoning"])
    assert got == (expect.billed_input, expect.cache_read, expect.reasoning)


def test_program_stream_replays_the_done_values(tmp_path: Path) -> None:
    """The MANIFEST notes that this stream's reasoning ``encrypted_content`` (and the program
    item's ``fingerprint``) differ between ``output_item.added`` and ``output_item.done``: the
    done value is the one to send back, and ``--replay`` must hold it."""
    added: dict[str, dict[str, Any]] = {}
    done: dict[str, dict[str, Any]] = {}
    for ev in load_chunks(PROGRAM):
        if ev["type"] in ("response.output_item.added", "response.output_item.done"):
            side = added if ev["type"].endswith("added") else done
            side[ev["item"]["type"]] = ev["item"]
    pairs = [("reasoning", "encrypted_content"), ("program", "fingerprint")]
    for typ, key in pairs:
        assert added[typ][key] != done[typ][key]  # else this test proves nothing
    replay = _cli(tmp_path, corpus_path(PROGRAM).read_bytes(), "--replay")
    sent = {item["type"]: item for item in replay}
    for typ, key in pairs:
        assert sent[typ][key] == done[typ][key]
