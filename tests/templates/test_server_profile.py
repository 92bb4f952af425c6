"""The llama-server render profile, rule by rule, against what the llama.cpp sources say.

Expected values are written here from the sources each test names (the tree of the pinned
llama-cpp-python sdist, ``vendor/llama.cpp``), never taken from the profile's own tables.
"""

# ruff: noqa: E501  (the test templates read best as one jinja line per rule)

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonwire.llamacpp.sdist import templates_dir
from reasonwire.templates.rows import Row, read_rows
from reasonwire.templates.scan import ScanOptions, TemplateSource, html_section, scan, write_outputs
from reasonwire.templates.server_profile import LLAMA_SERVER

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "f", "arguments": '{"a": 1}'},
            "extra": "x",
        }
    ],
    "reasoning_content": "RC",
    "reasoning": "R",
    "reasoning_details": [{"type": "reasoning.text", "text": "RD"}],
    "thinking": "T",
    "provider_specific_fields": {"k": 1},
}
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    CALL,
    {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "again"},
]
PLAIN = "generic template with no family markers"


def test_only_reasoning_content_reaches_the_template() -> None:
    # chat.cpp:373-468 parses role, content, tool_calls, reasoning_content, name,
    # tool_call_id into common_chat_msg; nothing else survives to_json_oaicompat.
    out = LLAMA_SERVER.prepare(PLAIN, MESSAGES)
    call = out[2]
    assert set(call) == {"role", "content", "reasoning_content", "tool_calls"}
    assert call["reasoning_content"] == "RC"
    assert call["content"] == ""  # chat.cpp:230-231: no content -> ""
    assert call["tool_calls"] == [
        {"type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}, "id": "c1"}
    ]
    assert out[3] == {"role": "tool", "content": '{"ok": true}', "tool_call_id": "c1"}
    assert MESSAGES[2]["thinking"] == "T"  # the input is untouched


def test_an_empty_reasoning_content_is_not_passed() -> None:
    # chat.cpp:233-235: written back only when non-empty; one character is enough.
    empty = LLAMA_SERVER.prepare(PLAIN, [{**CALL, "reasoning_content": ""}])[0]
    one = LLAMA_SERVER.prepare(PLAIN, [{**CALL, "reasoning_content": "x"}])[0]
    assert "reasoning_content" not in empty
    assert one["reasoning_content"] == "x"


GPT_OSS = "<|start|>{{ m }}<|channel|>analysis"
LFM2 = "<|tool_list_start|>[...]<|tool_list_end|>"
LFM25 = "List of tools: [ ... ]"
MINISTRAL = "[SYSTEM_PROMPT] [TOOL_CALLS] [ARGS]"
GEMMA4_OLD = "{{ '<|tool_call>call:' }}"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # parsers/gpt-oss.cpp:7-17: thinking = reasoning_content; content erased on tool calls
        (GPT_OSS, {"role": "assistant", "reasoning_content": "RC", "thinking": "RC"}),
        # parsers/lfm2.cpp:27-34 (LFM2 and LFM2.5): thinking = reasoning_content, content kept
        (LFM2, {"role": "assistant", "content": "", "reasoning_content": "RC", "thinking": "RC"}),
        (LFM25, {"role": "assistant", "content": "", "reasoning_content": "RC", "thinking": "RC"}),
        # parsers/ministral3.cpp:8-44: content blocks, thinking first; reasoning_content erased
        (
            MINISTRAL,
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "RC"}, {"type": "text", "text": ""}],
            },
        ),
    ],
)
def test_family_rewrites(template: str, expected: dict[str, Any]) -> None:
    [call] = LLAMA_SERVER.prepare(template, [CALL])
    call.pop("tool_calls")
    assert call == expected


def test_ministral_rewrites_system_messages_and_leaves_users_alone() -> None:
    out = LLAMA_SERVER.prepare(MINISTRAL, MESSAGES[:2])
    assert out[0]["content"] == [{"type": "text", "text": "sys"}]
    assert out[1] == {"role": "user", "content": "hi"}


def test_gpt_oss_keeps_content_of_an_answer_without_tool_calls() -> None:
    [msg] = LLAMA_SERVER.prepare(
        GPT_OSS, [{"role": "assistant", "content": "ok", "reasoning_content": "RC"}]
    )
    assert msg == {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "RC",
        "thinking": "RC",
    }


def test_older_gemma4_merges_the_tool_results_into_the_call() -> None:
    # parsers/gemma4.cpp:15-147: assistant(tool_calls) + tool + assistant(content) -> one
    # message with tool_responses (JSON-parsed), the answer's content and reasoning_content.
    out = LLAMA_SERVER.prepare(GEMMA4_OLD, MESSAGES)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    merged = out[2]
    assert merged["tool_responses"] == [{"name": "f", "response": {"ok": True}}]
    assert merged["content"] == "done"
    assert merged["reasoning_content"] == "RC"
    # chat.cpp:1195: a template carrying the "OpenAI Chat Completions" comment is left alone
    newer = LLAMA_SERVER.prepare(GEMMA4_OLD + "{#- OpenAI Chat Completions: x #}", MESSAGES)
    assert [m["role"] for m in newer] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]


@pytest.mark.parametrize(
    ("template", "family"),
    [
        (MINISTRAL, "Ministral-3"),
        (MINISTRAL + " [CALL_ID]", None),  # chat.cpp:1097: [CALL_ID] means Mistral Small 3.2
        ("[SYSTEM_PROMPT] [TOOL_CALLS]", None),  # every marker is needed
        (MINISTRAL + " <|channel|>", "Ministral-3"),  # first in the chain wins
        (GPT_OSS, "gpt-oss"),
        (LFM2, "LFM2"),
        ("<|tool_list_start|>", None),
        (LFM25, "LFM2.5"),
        (LFM25 + " <|tool_list_start|>", None),  # chat.cpp:1160
        (LFM25 + LFM2, "LFM2"),
        ("dsml_token DSML tool_calls", "DeepSeek V3.2/V4"),
        ("dsml_token DSML function_calls", "DeepSeek V3.2/V4"),
        ("dsml_token DSML", None),  # chat.cpp:1187-1188: one of the two block names
        (GEMMA4_OLD, "Gemma 4 (older template)"),
        (GEMMA4_OLD + "{#- OpenAI Chat Completions:", "Gemma 4"),
        ("<tool_call> <function= <parameter=", "Qwen3-Coder"),
        ("<tool_call> <function= <parameter= '<tool_call><function=' ~ tool_call.name ~ '>'", None),
        (PLAIN, None),
    ],
)
def test_handler_detection_follows_the_servers_chain(template: str, family: str | None) -> None:
    handler = LLAMA_SERVER.handler_for(template)
    assert (handler.name if handler else None) == family


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("openai-gpt-oss-120b", "gpt-oss"),
        ("LFM2-8B-A1B", "LFM2"),
        ("LFM2.5-8B-A1B", "LFM2.5"),
        ("mistralai-Ministral-3-14B-Reasoning-2512", "Ministral-3"),
        ("Mistral-Small-3.2-24B-Instruct-2506", None),
        ("google-gemma-4-31B-it-interleaved", "Gemma 4 (older template)"),
        ("google-gemma-4-31B-it", "Gemma 4"),
        ("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "Qwen3-Coder"),
        ("GLM-4.7-Flash", None),
    ],
)
def test_corpus_templates_get_the_handler_the_server_names(name: str, family: str | None) -> None:
    text = (templates_dir() / f"{name}.jinja").read_text(encoding="utf-8")
    handler = LLAMA_SERVER.handler_for(text)
    assert (handler.name if handler else None) == family


def test_stepfun_trims_content_and_reasoning() -> None:
    # chat.cpp:1235-1240 with :1066-1077: both trimmed, for that template family only.
    marker = "You have access to the following functions in JSONSchema format"
    msg = {"role": "assistant", "content": "  a \n", "reasoning_content": "\n r "}
    [trimmed] = LLAMA_SERVER.prepare(marker, [msg])
    [kept] = LLAMA_SERVER.prepare(PLAIN, [msg])
    assert (trimmed["content"], trimmed["reasoning_content"]) == ("a", "r")
    assert (kept["content"], kept["reasoning_content"]) == ("  a \n", "\n r ")


def test_switch_variables_follow_caps_cpp() -> None:
    # jinja/caps.cpp:22-27 and chat.cpp:1294-1296 (the kwarg itself); arg.cpp:961-964 (on).
    on = {
        "preserve_reasoning": True,
        "preserve_thinking": True,
        "clear_thinking": False,
        "truncate_history_thinking": False,
        "drop_thinking": False,
    }
    assert LLAMA_SERVER.switch.default_on is True
    assert LLAMA_SERVER.switch.values(True) == on
    assert LLAMA_SERVER.switch.values(False) == {k: not v for k, v in on.items()}
    assert LLAMA_SERVER.switch.off_flag == "--no-reasoning-preserve"


# Shows reasoning of earlier turns only when clear_thinking is defined and false (GLM-4.7's rule).
CLEAR_THINKING = """
{%- set ns = namespace(last_user=-1) -%}
{%- for m in messages %}{% if m.role == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}{% endfor -%}
{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.role == 'assistant' and m.reasoning_content and (loop.index0 > ns.last_user or (clear_thinking is defined and not clear_thinking)) %}<think>{{ m.reasoning_content }}</think>{% endif -%}
{{ m.content or '' }}
<|end|>
{% endfor -%}
"""
# Reads `reasoning` only (and looks at clear_thinking without changing what it renders).
REASONING_ONLY = """
{%- if clear_thinking is defined %}{% endif -%}
{%- for m in messages -%}
<|{{ m.role }}|>{% if m.reasoning %}<think>{{ m.reasoning }}</think>{% endif %}{{ m.content or '' }}<|end|>
{% endfor -%}
"""


def _rows(name: str, text: str) -> dict[str, Row]:
    result = scan([TemplateSource(name, text, "test")], ScanOptions(chars_only=True))
    return {r.field: r for r in result.rows}


def test_a_template_that_reads_a_switch_gets_both_verdicts_and_the_cause() -> None:
    rows = _rows("clear-thinking", CLEAR_THINKING)
    rc = rows["reasoning_content"]
    assert rc.verdict == "in-loop-only"  # undefined in a plain render
    assert rc.server.verdict == "consumes-all-turns"  # false on the server by default
    assert rc.server.switch_off_verdict == "in-loop-only"  # true with --no-reasoning-preserve
    assert rc.server.switches == ("clear_thinking",)
    [cause] = rc.server.causes
    assert "clear_thinking=false" in cause and "caps.cpp:22-27" in cause
    assert rows["reasoning"].server.causes == ()  # same verdict both ways: no cause
    # `all` differs for the same reason only: the fields dropped there change nothing
    assert rows["all"].server.causes == rc.server.causes


def test_a_field_the_server_drops_is_ignored_there_and_says_why() -> None:
    rows = _rows("reasoning-only", REASONING_ONLY)
    assert rows["reasoning"].verdict == "consumes-all-turns"
    assert rows["reasoning"].server.verdict == "accepted-ignored"
    assert rows["reasoning"].server.causes == (
        "reasoning not passed to the template (common/chat.cpp:453-455, :233-235)",
    )
    # it reads a switch, but flipping it changes nothing: not a cause
    assert rows["reasoning"].server.switches == ("clear_thinking",)
    assert rows["reasoning"].server.switch_off_verdict == "accepted-ignored"


# Hides earlier turns' reasoning only when clear_thinking is defined and true.
CLEAR_WHEN_TRUE = CLEAR_THINKING.replace(
    "(clear_thinking is defined and not clear_thinking)",
    "not (clear_thinking is defined and clear_thinking)",
)


def test_the_switch_off_verdict_has_its_own_cause() -> None:
    rc = _rows("clear-when-true", CLEAR_WHEN_TRUE)["reasoning_content"]
    assert (rc.verdict, rc.server.verdict) == ("consumes-all-turns", "consumes-all-turns")
    assert rc.server.causes == ()
    assert rc.server.switch_off_verdict == "in-loop-only"
    [cause] = rc.server.switch_off_causes
    assert cause.startswith("server sets clear_thinking=true (--no-reasoning-preserve; ")
    # and where the switch-off verdict is the plain one, no cause
    assert (
        _rows("clear-thinking", CLEAR_THINKING)["reasoning_content"].server.switch_off_causes == ()
    )


def test_a_template_reading_no_switch_has_no_switch_off_verdict() -> None:
    rows = _rows("every-turn", EVERY_TURN)
    assert rows["reasoning_content"].server.switches == ()
    assert rows["reasoning_content"].server.switch_off_verdict is None
    assert rows["reasoning_content"].server.verdict == "consumes-all-turns"


EVERY_TURN = """
{%- for m in messages -%}
<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content or '' }}<|end|>
{% endfor -%}
"""


def test_the_profile_can_be_skipped() -> None:
    result = scan(
        [TemplateSource("t", REASONING_ONLY, "test")], ScanOptions(chars_only=True, profile=None)
    )
    assert all("server" not in r.to_json() for r in result.rows)


def test_report_marks_the_server_verdict_only_where_it_differs(tmp_path: Path) -> None:
    result = scan(
        [TemplateSource("clear-thinking", CLEAR_THINKING, "test")], ScanOptions(chars_only=True)
    )
    _, mpath = write_outputs(result, tmp_path)
    md = mpath.read_text(encoding="utf-8")
    [line] = [ln for ln in md.splitlines() if ln.startswith("| clear-thinking |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    rc, reasoning = cells[3], cells[4]  # template, tokenizer, T, then the fields in order
    assert rc.startswith("in-loop-only (")
    assert rc.endswith("(llama-server: consumes-all-turns, clear_thinking)")
    assert reasoning.startswith("accepted-ignored (") and "llama-server" not in reasoning
    assert "- clear-thinking / reasoning_content: plain in-loop-only, llama-server: " in md
    assert "(with --no-reasoning-preserve: in-loop-only); cause: server sets clear_thinking" in md
    section = html_section(result.rows)
    assert section.count('data-server="consumes-all-turns"') == 2  # reasoning_content and all
    assert "llama-server: consumes-all-turns, clear_thinking" in section


def test_rows_with_a_server_verdict_read_back_byte_for_byte(tmp_path: Path) -> None:
    result = scan(
        [TemplateSource("clear-thinking", CLEAR_THINKING, "test")], ScanOptions(chars_only=True)
    )
    jpath, _ = write_outputs(result, tmp_path)
    text = jpath.read_text(encoding="utf-8")
    rows = read_rows(json.loads(text))
    assert rows == result.rows
    again = json.dumps([r.to_json() for r in rows], indent=2, ensure_ascii=False) + "\n"
    assert again == text
