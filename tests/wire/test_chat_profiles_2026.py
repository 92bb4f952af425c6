"""Chat vendor profiles of 2026, each against the documented rule it encodes (the source is
named in each test) or a recording read directly; never against the profile table itself.

The gateway side: every new control field is known to the request allow-list (kept by
validation, so it can be named and stripped rather than dropped unseen) and removed by the
controls inventory on every chat route.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.wire import chat
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    RequestOptions,
    ToolCall,
    ToolResult,
    User,
)
from tests.conformance.corpus import PRESENT, load_cassette

D = chat.ChatDialect()


def _effort_fields(profile: str, level: str) -> dict[str, Any]:
    body = D.build_request([User("hi")], RequestOptions(model="m", effort=level), profile=profile)
    return {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}


def _tool_turn(reasoning: str | None) -> Assistant:
    carriers = (
        (Carrier("chat", "reasoning_content", "m.reasoning_content", reasoning, False),)
        if reasoning is not None
        else ()
    )
    return Assistant(tool_calls=(ToolCall("c1", "f", "{}"),), carriers=carriers)


# -- DeepSeek V4 ------------------------------------------------------------------------------
# https://api-docs.deepseek.com/guides/thinking_mode: toggle {"thinking": {"type":
# "enabled/disabled"}}, effort {"reasoning_effort": "low/high/max"}; "requested effort ->
# actual mapped effort": minimal->low, low->low, medium->high, high->high, xhigh->high,
# max->max, ultra->max.

DEEPSEEK_MAPPING = [
    ("minimal", "low"),
    ("low", "low"),
    ("medium", "high"),
    ("high", "high"),
    ("xhigh", "high"),
    ("max", "max"),
    ("ultra", "max"),
]


@pytest.mark.parametrize(("level", "_runs"), DEEPSEEK_MAPPING)
def test_deepseek_v4_sends_thinking_enabled_and_the_level_as_written(
    level: str, _runs: str
) -> None:
    assert _effort_fields("deepseek-v4", level) == {
        "thinking": {"type": "enabled"},
        "reasoning_effort": level,
    }


@pytest.mark.parametrize(("level", "runs"), DEEPSEEK_MAPPING)
def test_deepseek_v4_server_side_level_mapping(level: str, runs: str) -> None:
    assert chat.get_profile("deepseek-v4").effective_level(level) == runs


def test_deepseek_v4_levels_outside_the_table_run_as_written_and_none_sends_nothing() -> None:
    prof = chat.get_profile("deepseek-v4")
    assert prof.effective_level("bogus") == "bogus"
    assert chat.get_profile("default").effective_level("medium") == "medium"
    assert _effort_fields("deepseek-v4", "none") == {}


def test_deepseek_v4_returns_reasoning_content_and_keeps_it_across_turns() -> None:
    prof = chat.get_profile("deepseek-v4")
    assert prof.returns == ("reasoning_content",)
    assert prof.keeps_across_turns
    assert prof.required_on_tool_calls == ("reasoning_content",)
    assert "api-docs.deepseek.com" in prof.source


# -- Z.ai GLM ----------------------------------------------------------------------------------


@pytest.mark.skipif(not PRESENT, reason="conformance corpus not found")
def test_glm_5_effort_max_is_the_recorded_glm_5_3_request() -> None:
    """cassettes-2026 GLM-5.3 request 1: reasoning_effort max + thinking {type: enabled,
    clear_thinking: false} (read off the recording)."""
    recorded = load_cassette("pai__test_zai__test_zai_glm_5_3_reasoning_effort.yaml")[0].request
    ours = _effort_fields("glm-5", "max")
    assert ours == {k: recorded[k] for k in ("reasoning_effort", "thinking")}


@pytest.mark.parametrize("profile", ["zai", "glm-5"])
def test_preserved_thinking_keeps_reasoning_across_user_turns(profile: str) -> None:
    """https://docs.z.ai/guides/capabilities/thinking-mode (preserved thinking):
    clear_thinking false keeps earlier turns' reasoning, which must come back complete and
    unmodified; both profiles send clear_thinking false, so both keep reasoning past a turn."""
    prof = chat.get_profile(profile)
    assert _effort_fields(profile, "high")["thinking"]["clear_thinking"] is False
    assert prof.keeps_across_turns
    assert prof.returns == ("reasoning_content",)


@pytest.mark.skipif(not PRESENT, reason="conformance corpus not found")
def test_zai_recorded_follow_up_sent_the_previous_turns_reasoning_whole() -> None:
    """The 2025 preserved-thinking recording: request 2 is a NEW user turn and still carries
    response 1's reasoning_content, byte for byte; our replay of response 1 does the same."""
    first, second = load_cassette("pai__test_zai__test_zai_preserved_thinking_round_trip.yaml")
    msgs = second.request["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    received = first.response_json["choices"][0]["message"]["reasoning_content"]
    assert msgs[1]["reasoning_content"] == received
    [ours] = D.replay(D.parse_response(first.response_json), profile="glm-5")
    assert ours["reasoning_content"] is received


# -- Kimi K2 thinking ---------------------------------------------------------------------------
# https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model (FAQ): "thinking is
# enabled but reasoning_content is missing in assistant tool call message" is a 400.


def test_kimi_requires_reasoning_content_on_tool_call_turns_and_keeps_it_across_turns() -> None:
    prof = chat.get_profile("kimi")
    assert prof.required_on_tool_calls == ("reasoning_content",)
    assert prof.keeps_across_turns
    assert prof.returns == ("reasoning_content",)
    assert _effort_fields("kimi", "high") == {}  # no documented effort field: none sent


@pytest.mark.parametrize("profile", ["kimi", "deepseek", "deepseek-v4"])
def test_replay_never_pads_a_received_tool_call_turn(profile: str) -> None:
    """Received reasoning goes back as it came; a received tool-call message that came
    WITHOUT reasoning_content is not given "" (it would pass the check and carry nothing).
    A message built from neutral parts has nothing to carry and is sent with "" so that the
    route accepts it (the harness's arm without reasoning; foreign history); strip too."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with_rc = {"role": "assistant", "content": None, "reasoning_content": "R", "tool_calls": [call]}
    without = {"role": "assistant", "content": None, "tool_calls": [call]}
    for message in (with_rc, without):
        turn = D.parse_response({"choices": [{"index": 0, "message": message}]})
        [sent] = D.replay(turn, profile=profile)
        assert sent.get("reasoning_content") == message.get("reasoning_content")
        body = D.build_request(
            [User("q"), turn.as_message(), ToolResult("c1", "f", "x")],
            RequestOptions(model="m"),
            profile=profile,
        )
        assert body["messages"][1].get("reasoning_content") == message.get("reasoning_content")
    [kept] = D.replay(_tool_turn("R"), profile=profile)
    assert kept["reasoning_content"] == "R"
    [built] = D.replay(_tool_turn(None), profile=profile)
    assert built["reasoning_content"] == ""
    [stripped] = D.strip(_tool_turn("R"), profile=profile)
    assert stripped["reasoning_content"] == ""


# -- MiniMax ---------------------------------------------------------------------------------
# https://platform.minimaxi.com/docs/api-reference/text-openai-api: extra_body
# {"reasoning_split": True} puts the thinking into reasoning_details ("reasoning_details[0]
# ['text']"); in multi-turn function calling the complete assistant message goes back.


def test_minimax_asks_for_split_reasoning_and_replays_reasoning_details_whole() -> None:
    body = D.build_request([User("hi")], RequestOptions(model="MiniMax-M2.7"), profile="minimax")
    assert body["reasoning_split"] is True
    assert "reasoning_effort" not in _effort_fields("minimax", "high")
    details = [{"type": "reasoning.text", "id": "r1", "format": "MiniMax-response-v1", "text": "t"}]
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_details": details,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    turn = D.parse_response({"choices": [{"index": 0, "message": message}]})
    [msg] = D.replay(turn, profile="minimax")
    assert msg["reasoning_details"] is details
    # without the split the M-series writes <think> inline: the projection must cut it
    assert chat.get_profile("minimax").think_tags


def test_minimax_client_extra_body_wins_over_the_default() -> None:
    body = D.build_request(
        [User("hi")],
        RequestOptions(model="m", extra_body={"reasoning_split": False}),
        profile="minimax",
    )
    assert body["reasoning_split"] is False


# -- vLLM ------------------------------------------------------------------------------------
# https://docs.vllm.ai/en/v0.26.0/features/reasoning_outputs/: "reasoning used to be called
# reasoning_content. To migrate, directly replace reasoning_content with reasoning."


def test_vllm_returns_and_reads_reasoning_only() -> None:
    message = {"role": "assistant", "content": "a", "reasoning": "r", "reasoning_content": "r"}
    turn = D.parse_response({"choices": [{"index": 0, "message": message}]})
    [msg] = D.replay(turn, profile="vllm")
    assert msg["reasoning"] == "r" and "reasoning_content" not in msg
    older = D.profile("vllm", returns=["reasoning_content"])  # a route on an older server
    assert older.returns == ("reasoning_content",)


# -- Qwen3 (DashScope compatible mode) ---------------------------------------------------------
# https://www.alibabacloud.com/help/en/model-studio/deep-thinking: enable_thinking (extra_body)
# switches thinking; the thought comes back in reasoning_content.


def test_qwen_effort_is_enable_thinking_and_it_returns_reasoning_content() -> None:
    assert _effort_fields("qwen", "high") == {"enable_thinking": True}
    assert chat.get_profile("qwen").returns == ("reasoning_content",)


# -- every profile cites its source --------------------------------------------------------------


@pytest.mark.parametrize("name", ["deepseek-v4", "glm-5", "zai", "kimi", "minimax", "qwen", "vllm"])
def test_2026_profiles_cite_their_documentation(name: str) -> None:
    assert "https://" in chat.get_profile(name).source


# -- the gateway: allow-list and controls inventory ---------------------------------------------

NEW_CONTROLS: list[tuple[dict[str, Any], str]] = [
    ({"reasoning_effort": "max"}, "reasoning_effort"),  # DeepSeek V4, GLM-5.x
    ({"thinking": {"type": "disabled"}}, "thinking"),  # DeepSeek V4, Kimi K2.5
    ({"thinking": {"type": "enabled", "clear_thinking": False}}, "thinking"),  # Z.ai
    ({"reasoning_split": True}, "reasoning_split"),  # MiniMax
    ({"enable_thinking": True}, "enable_thinking"),  # Qwen3
]


@pytest.mark.parametrize(("extra", "name"), NEW_CONTROLS, ids=[n for _, n in NEW_CONTROLS])
@pytest.mark.parametrize("profile", [None, "deepseek-v4", "glm-5", "kimi", "minimax", "qwen"])
def test_gateway_knows_and_strips_every_2026_control(
    extra: dict[str, Any], name: str, profile: str | None
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **extra}
    shaped = D.validate_request(json.loads(json.dumps(body)))
    assert shaped[name] == extra[name]  # known to the allow-list, not silently dropped
    out, removed = D.strip_controls(shaped, D.profile(profile))
    assert name not in out
    assert removed[name] == extra[name]
    assert set(out) == {"model", "messages"}


def test_clear_thinking_alone_is_stripped_too() -> None:
    out, removed = D.strip_controls(
        {"model": "m", "messages": [], "thinking": {"clear_thinking": False}}
    )
    assert "thinking" not in out and removed == {"thinking": {"clear_thinking": False}}


# -- Magistral thinking parts (https://docs.mistral.ai/inference/conversations/reasoning) --------


def test_magistral_json_body_thinking_parts_and_the_probe_count() -> None:
    """A non-streamed Magistral message: ``content`` is [thinking part, text part]; the
    thinking part is a readable carrier, the text part the visible text, and a request that
    sends the message back is counted by the probe with the thinking text's UTF-8 size."""
    thinking = {
        "type": "thinking",
        "thinking": [{"type": "text", "text": "ab"}, {"type": "text", "text": "ç"}],
    }
    message = {"role": "assistant", "content": [thinking, {"type": "text", "text": "hi"}]}
    turn = D.parse_response({"choices": [{"index": 0, "message": message}]})
    assert turn.text == "hi"
    assert turn.reasoning_text == "abç"
    [c] = turn.carriers
    assert (c.kind, c.value, c.opaque) == ("thinking", thinking, False)
    [sent] = D.request_carriers({"messages": [{"role": "user", "content": "q"}, message]})
    assert (sent.kind, sent.size, sent.opaque) == ("thinking", len("abç".encode()), False)


def test_builtin_vendor_routes_use_their_2026_profiles() -> None:
    """A user who names the vendor's route gets the vendor's documented behaviour without
    naming a profile (each profile's source is tested above)."""
    from reasonwire.routes import BUILTIN_ROUTES

    assert {n: BUILTIN_ROUTES[n].profile for n in ("moonshot", "zai", "dashscope", "minimax")} == {
        "moonshot": "kimi", "zai": "zai", "dashscope": "qwen", "minimax": "minimax"
    }  # fmt: skip
