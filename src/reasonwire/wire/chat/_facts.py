"""Chat Completions facts as data: carriers, the controls inventory, the request shape, the
visible projection and the harness variants.

Sources are named per control: OpenAI's Chat Completions reference, OpenRouter's reasoning
and routing docs, DeepSeek's thinking-mode guide, Z.ai's GLM thinking docs, vLLM's and
SGLang's OpenAI-compatible server docs, Qwen (DashScope) compatible-mode docs, Ollama's API,
Gemini's OpenAI-compatibility page (all summarised in ``shared/WIRE.md``).

Allow-list notes (found by the hostile-client tests, ``tests/govern/test_hostile_client.py``):
reasoning carrier fields are accepted on assistant messages only (where the vault
re-attaches originals); on a system, developer, user or tool message they are dropped like
any unknown field, since there the gateway would have forwarded them as the client wrote them.
"""

from __future__ import annotations

from types import MappingProxyType

from reasonwire.wire import shape as sh
from reasonwire.wire.facts import CarrierKind, CarrierSpec, Control, EarlierTurns, Variants
from reasonwire.wire.model import JSON

CARRIER_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")
"""Carrier fields that sit on the assistant message itself, in replay order."""

TOOL_CALL_CARRIER = "extra_content"
"""The carrier field that rides on each tool call (Gemini's ``google.thought_signature``)."""

ALL_CARRIER_FIELDS: tuple[str, ...] = (*CARRIER_FIELDS, TOOL_CALL_CARRIER)

TEXT_KINDS = ("reasoning_content", "reasoning")
"""Readable text carriers a message built from neutral parts can express."""

CARRIERS = (
    CarrierKind("reasoning_content", False, "choices[0].message.reasoning_content"),
    CarrierKind("reasoning", False, "choices[0].message.reasoning"),
    CarrierKind("reasoning_details", False, "choices[0].message.reasoning_details"),
    CarrierKind("extra_content", True, "choices[0].message.tool_calls[i].extra_content"),
    # Mistral's Magistral: thinking parts of a content list (readable text, sent back in place)
    CarrierKind("thinking", False, "choices[0].message.content[i](type=thinking)"),
)

FOLD_WHERE = MappingProxyType(
    {
        "reasoning_content": "messages[i](role=assistant).reasoning_content",
        "reasoning": "messages[i](role=assistant).reasoning",
        # text entries only; an entry with a signature (Anthropic thinking relayed by a
        # gateway) is signed, and summary / encrypted entries are not reasoning text
        "reasoning_details": (
            "messages[i](role=assistant).reasoning_details[j](type=reasoning.text,!signature).text"
        ),
    }
)
"""Where the text carriers sit in a request (``Dialect.fold_where``)."""

_OAI = "OpenAI Chat Completions reference"
_OR = "OpenRouter docs (reasoning tokens; model routing; provider routing)"
_VLLM = "vLLM / SGLang OpenAI-compatible server docs"
_DEEPSEEK = "https://api-docs.deepseek.com/guides/thinking_mode"
_ZAI = "https://docs.z.ai/guides/capabilities/thinking-mode"
_MINIMAX = "https://platform.minimaxi.com/docs/api-reference/text-openai-api"
CONTROLS = (
    Control(
        ("reasoning_effort",),
        f"{_OAI}; DeepSeek V4 ({_DEEPSEEK}); Z.ai GLM-5.x ({_ZAI})",
        "effort level (none|minimal|low|medium|high|xhigh; max on DeepSeek V4 and GLM-5.x)",
    ),
    Control(("reasoning",), _OR, "effort, max_tokens budget, exclude, enabled"),
    Control(("include_reasoning",), _OR, "legacy switch for returning reasoning"),
    Control(("models",), _OR, "fallback model list: changes which model runs"),
    Control(("provider",), _OR, "provider routing preferences: changes which upstream runs"),
    Control(("route",), _OR, "legacy fallback routing switch"),
    Control(
        ("thinking",),
        f"DeepSeek thinking mode ({_DEEPSEEK}); Z.ai GLM thinking ({_ZAI}); Kimi K2.5",
        "thinking on/off ({type: enabled|disabled}); Z.ai also clear_thinking",
    ),
    Control(
        ("thinking", "clear_thinking"),
        f"Z.ai preserved thinking ({_ZAI})",
        "false: earlier turns' reasoning is kept and must come back complete",
    ),
    Control(
        ("reasoning_split",),
        f"MiniMax OpenAI-compatible API ({_MINIMAX})",
        "true: thinking in reasoning_details; else inline <think> in content",
    ),
    Control(("enable_thinking",), "Qwen (DashScope) compatible mode", "thinking switch"),
    Control(("thinking_budget",), "Qwen (DashScope) compatible mode", "thinking token budget"),
    Control(("chat_template_kwargs",), _VLLM, "template switches and budgets"),
    Control(("chat_template",), _VLLM, "a per-request chat template"),
    Control(("separate_reasoning",), "SGLang OpenAI-compatible server", "reasoning parser"),
    Control(("think",), "Ollama API", "thinking switch or level"),
    Control(("extra_body",), "Gemini OpenAI compatibility", "literal extra_body.google..."),
    Control(("google",), "Gemini OpenAI compatibility", "google.thinking_config"),
    Control(("output_config",), "Anthropic Messages (foreign field)", "effort"),
    Control(("generationConfig",), "Gemini API (foreign field)", "thinkingConfig"),
    Control(("generation_config",), "Gemini API (foreign field)", "thinking_config"),
)
"""Every request field that sets, raises, budgets or switches reasoning or the model on an
OpenAI-compatible route. Whole objects go (``chat_template_kwargs``: any key of it may be a
template's thinking switch or budget). Foreign dialects' fields are listed too: a compatible
server may honour them."""

NON_ESCALATING: dict[str, JSON] = {"reasoning_effort": "none"}
"""``reasoning_effort: "none"`` can only lower effort: kept when the route sets none."""

STREAM_USAGE: dict[str, JSON] = {"stream_options": {"include_usage": True}}

# -- request shape: what a client may send ---------------------------------------------------

_TEXT_PART = sh.Obj({"type": sh.Str(), "text": sh.Str()}, frozenset({"text"}))
_PARTS = sh.Tagged(
    {
        "text": _TEXT_PART,
        "image_url": sh.Obj({"type": sh.Str(), "image_url": sh.Anything()}),
        "input_audio": sh.Obj({"type": sh.Str(), "input_audio": sh.Anything()}),
        "file": sh.Obj({"type": sh.Str(), "file": sh.Anything()}),
        "refusal": sh.Obj({"type": sh.Str(), "refusal": sh.Str()}),
    }
)
_CONTENT = sh.Nullable(sh.OneOf((sh.Str(), sh.ListOf(_PARTS))))
_CALL = sh.Obj(
    {
        "id": sh.Str(),
        "type": sh.Str(),
        "index": sh.Int(),
        "function": sh.Obj({"name": sh.Str(), "arguments": sh.Str()}),
        TOOL_CALL_CARRIER: sh.Anything(),
    }
)
_MESSAGE_FIELDS: dict[str, sh.Shape] = {
    "role": sh.Str(),
    "content": _CONTENT,
    "name": sh.Str(),
    "tool_calls": sh.ListOf(_CALL),
    "tool_call_id": sh.Str(),
    "refusal": sh.Nullable(sh.Str()),
}
_PLAIN_MESSAGE = sh.Obj(_MESSAGE_FIELDS)
_MESSAGE = sh.Tagged(
    {
        **{role: _PLAIN_MESSAGE for role in ("system", "developer", "user", "tool")},
        # Reasoning a client replays: only looked up in the vault, never forwarded as sent;
        # only an assistant turn can carry it (the vault re-attaches it there).
        "assistant": sh.Obj({**_MESSAGE_FIELDS, **{f: sh.Anything() for f in CARRIER_FIELDS}}),
    },
    key="role",
    closed=True,
)
REQUEST = sh.Obj(
    {
        "model": sh.Str(),
        "messages": sh.ListOf(_MESSAGE),
        "tools": sh.ListOf(sh.Obj({"type": sh.Str(), "function": sh.Anything()})),
        "tool_choice": sh.OneOf((sh.Str(), sh.Obj({"type": sh.Str(), "function": sh.Anything()}))),
        "parallel_tool_calls": sh.Bool(),
        "stream": sh.Bool(),
        "stream_options": sh.Obj({"include_usage": sh.Bool()}),
        "max_tokens": sh.Int(lo=1),
        "max_completion_tokens": sh.Int(lo=1),
        "temperature": sh.Num(),
        "top_p": sh.Num(),
        "n": sh.Int(lo=1, hi=1),
        "stop": sh.OneOf((sh.Str(), sh.ListOf(sh.Str()))),
        "presence_penalty": sh.Num(),
        "frequency_penalty": sh.Num(),
        "seed": sh.Int(),
        "response_format": sh.Anything(),
        "logprobs": sh.Bool(),
        "top_logprobs": sh.Int(lo=0),
        "user": sh.Str(),
        "metadata": sh.Anything(),
        "service_tier": sh.Str(),
        "verbosity": sh.Str(),
        # Controls: removed after validation, but typed so that a wrong type is a 400 too.
        **{c.path[0]: sh.Anything() for c in CONTROLS},
    },
    frozenset({"model", "messages"}),
)
"""The Chat Completions request a governed client may send (the reference's documented
fields; ``n`` is 1 because the gateway keeps one answer)."""

# -- visible projection ---------------------------------------------------------------------

_VISIBLE_PART = sh.Tagged({"text": sh.Obj({"type": sh.Str(), "text": sh.Str(text=True)})})
_VISIBLE_CALL = sh.Obj(
    {
        "id": sh.Str(),
        "type": sh.Str(),
        "index": sh.Int(),
        "function": sh.Obj({"name": sh.Str(), "arguments": sh.Str()}),
        # Opaque thought signature (Gemini's compatibility layer): returned byte for byte.
        TOOL_CALL_CARRIER: sh.Obj({"google": sh.Obj({"thought_signature": sh.Str()})}),
    }
)
_VISIBLE_MESSAGE = sh.Obj(
    {
        "role": sh.Str(),
        "content": sh.Nullable(sh.OneOf((sh.Str(text=True), sh.ListOf(_VISIBLE_PART)))),
        "refusal": sh.Nullable(sh.Str()),
        "tool_calls": sh.ListOf(_VISIBLE_CALL),
    }
)
_USAGE = sh.Obj(
    {
        "prompt_tokens": sh.Int(),
        "completion_tokens": sh.Int(),
        "total_tokens": sh.Int(),
        "prompt_tokens_details": sh.Obj({"cached_tokens": sh.Int(), "audio_tokens": sh.Int()}),
        "completion_tokens_details": sh.Obj(
            {
                "reasoning_tokens": sh.Int(),
                "audio_tokens": sh.Int(),
                "accepted_prediction_tokens": sh.Int(),
                "rejected_prediction_tokens": sh.Int(),
            }
        ),
        "cost": sh.Num(),
    }
)
_CHOICE = sh.Obj(
    {
        "index": sh.Int(),
        "finish_reason": sh.Nullable(sh.Str()),
        "message": _VISIBLE_MESSAGE,
        "delta": _VISIBLE_MESSAGE,
    }
)
VISIBLE = sh.Obj(
    {
        "id": sh.Str(),
        "object": sh.Str(),
        "created": sh.Int(),
        "model": sh.Str(),
        "system_fingerprint": sh.Nullable(sh.Str()),
        "service_tier": sh.Nullable(sh.Str()),
        "choices": sh.ListOf(_CHOICE),
        "usage": sh.Nullable(_USAGE),
    }
)
"""What a governed client sees of an answer or a stream chunk: ids, text, tool calls (with
their opaque thought signatures), finish reasons, usage. No reasoning field of any name."""

ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "rate_limit_error",
        "server_error",
        "api_error",
        "insufficient_quota",
        "rate_limit_exceeded",
        "context_length_exceeded",
        "model_not_found",
        "invalid_api_key",
    }
)
"""Provider error types and codes a governed client may be shown (the OpenAI reference's)."""

STREAM_LITERALS = frozenset({"[DONE]"})

# -- the harness ----------------------------------------------------------------------------


def _text(trace: str) -> JSON:
    return trace


def _details(trace: str) -> JSON:
    return [{"type": "reasoning.text", "text": trace, "format": "unknown", "index": 0}]


_RC: CarrierSpec = ("reasoning_content", _text)
_R: CarrierSpec = ("reasoning", _text)
_RD: CarrierSpec = ("reasoning_details", _details)

VARIANTS = Variants(
    text=MappingProxyType(
        {
            "none": (),
            "reasoning_content": (_RC,),
            "reasoning": (_R,),
            "reasoning_details": (_RD,),
            "all": (_RC, _R, _RD),
        }
    ),
)

_DETECT_OBJECTS = frozenset({"chat.completion", "chat.completion.chunk"})


def detects(payload: JSON) -> bool:
    return isinstance(payload, dict) and (
        "choices" in payload or payload.get("object") in _DETECT_OBJECTS
    )


EARLIER_TURNS = EarlierTurns(
    "unknown",
    "WIRE.md > OpenAI-compatible Chat Completions: 'Chat templates decide the rest. Qwen3's "
    "template renders reasoning only for assistant messages after the last real user query: "
    "consumed in-loop, dropped cross-turn. Templates differ widely (some render every turn, "
    "some none ...)'; the simulator's chat models (reasonwire.sim.behaviours) name theirs",
    models=(("qwen3", "dropped"), ("sim-vllm", "kept"), ("sim-chat-all", "kept")),
)
"""Earlier-turn reasoning on Chat Completions: the server's chat template decides, so not
known in general; Qwen3's template (and the simulator's imitation of it) drops it."""


__all__ = [
    "CARRIERS",
    "CARRIER_FIELDS",
    "CONTROLS",
    "EARLIER_TURNS",
    "ERROR_TYPES",
    "FOLD_WHERE",
    "REQUEST",
    "TEXT_KINDS",
    "TOOL_CALL_CARRIER",
    "VARIANTS",
    "VISIBLE",
    "detects",
]
