"""Simulated models: each model id is one documented provider behaviour (data, not code).

Every :class:`Behaviour` cites the WIRE.md rule it imitates (``rule``) and carries its designed
``truth``: for each carrier kind the client can replay, whether the model consumes it in the
loop (``in_loop``) and across turns (``cross_turn``), or rejects the request (``rejected``).
The dialect handlers read these same fields to decide what goes into the prompt, so the truth
the consumption harness is graded against is exactly what the server does.

Carrier kinds in ``truth``: chat ``reasoning_content`` / ``reasoning`` / ``reasoning_details``;
responses ``encrypted_content`` / ``summary_text``; anthropic ``thinking`` /
``redacted_thinking``; gemini ``thoughtSignature`` / ``thought``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Verdict = Literal["consumed", "dropped", "rejected"]
SimDialect = Literal["chat", "responses", "anthropic", "gemini", "interactions"]


@dataclass(frozen=True)
class FieldTruth:
    """What the model does with one replayed carrier kind."""

    in_loop: Verdict
    cross_turn: Verdict


C: Verdict = "consumed"
D: Verdict = "dropped"
R: Verdict = "rejected"


def _t(**fields: tuple[Verdict, Verdict]) -> Mapping[str, FieldTruth]:
    return MappingProxyType({k: FieldTruth(*v) for k, v in fields.items()})


_CHAT_DROP: dict[str, tuple[Verdict, Verdict]] = {
    "reasoning_content": (D, D),
    "reasoning": (D, D),
    "reasoning_details": (D, D),
}


@dataclass(frozen=True)
class Behaviour:
    """One simulated model. Flags other than ``truth`` switch documented quirks on."""

    model: str
    dialect: SimDialect
    description: str
    rule: str  # the WIRE.md section and sentence this imitates
    truth: Mapping[str, FieldTruth]
    emits: tuple[str, ...] = ()  # carrier kinds the model returns
    reasons: bool = True
    lanes: Mapping[str, Behaviour] = field(default_factory=dict)  # id prefix -> lane
    id_prefix: str = ""
    reject_params: Mapping[str, str] = field(default_factory=dict)  # key path -> message
    require_after_tool: bool = False
    missing_message: str = ""  # the vendor's own 400 text when require_after_tool trips
    tool_turns_only: bool = False
    null_500: bool = False
    refuse_probe: bool = False
    filter_probe: bool = False
    all_turns_ok: bool = False
    skip_reasoning_at_low: bool = False
    cost: bool = False
    cache: bool = True
    provider: str | None = None


_CHAT = "WIRE.md > OpenAI-compatible Chat Completions"
_RESP = "WIRE.md > Responses API"
_ANTH = "WIRE.md > Anthropic Messages"
_GEM = "WIRE.md > Gemini"
_W26 = "WIRE.md > The 2026 wire"
_GW = "WIRE.md > Gateways and lanes"

_OPENROUTER_LANE = Behaviour(
    model="sim-portal",
    dialect="chat",
    description="portal lane via an OpenRouter-style gateway: reasoning + reasoning_details",
    rule=f"{_GW}: 'on the Nous Portal `gen-...` is the OpenRouter lane'",
    truth=_t(reasoning_content=(D, D), reasoning=(D, D), reasoning_details=(C, D)),
    emits=("reasoning", "reasoning_details"),
    id_prefix="gen-",
    cost=True,
    provider="SimUpstream",
)
_DIRECT_LANE = Behaviour(
    model="sim-portal",
    dialect="chat",
    description="portal lane straight to the upstream: reasoning_content, Qwen3-style template",
    rule=f"{_GW}: '`chatcmpl-`, a uuid or `msg_` a direct upstream'",
    truth=_t(reasoning_content=(C, D), reasoning=(D, D), reasoning_details=(D, D)),
    emits=("reasoning_content",),
    id_prefix="chatcmpl-",
)

_ALL: tuple[Behaviour, ...] = (
    # ---- chat completions -------------------------------------------------------------
    Behaviour(
        "sim-chat-all",
        "chat",
        "template renders every reasoning field of every assistant turn",
        f"{_CHAT}: 'Templates differ widely (some render every turn ...)'",
        _t(reasoning_content=(C, C), reasoning=(C, C), reasoning_details=(C, C)),
        emits=("reasoning_content",),
        id_prefix="chatcmpl-",
    ),
    Behaviour(
        "sim-qwen3",
        "chat",
        "Qwen3 template: reasoning_content rendered only after the last user query",
        f"{_CHAT}: 'Qwen3's template renders reasoning only for assistant messages after the "
        "last real user query: consumed in-loop, dropped cross-turn'",
        _t(reasoning_content=(C, D), reasoning=(D, D), reasoning_details=(D, D)),
        emits=("reasoning_content",),
        id_prefix="chatcmpl-",
    ),
    Behaviour(
        "sim-vllm",
        "chat",
        "vLLM >= 0.23: returns and reads only the `reasoning` field",
        f"{_CHAT}: '`reasoning: str` (... vLLM >= 0.23 renamed its output field to this)'; "
        "'vLLM reads `reasoning`'",
        _t(reasoning_content=(D, D), reasoning=(C, C), reasoning_details=(D, D)),
        emits=("reasoning",),
        id_prefix="chatcmpl-",
    ),
    Behaviour(
        "sim-chat-ignore",
        "chat",
        "accepts every reasoning field and reads none (llama-cpp-python style)",
        f"{_CHAT}: 'llama-cpp-python's own server drops `reasoning_content` silently'",
        _t(**_CHAT_DROP),
        emits=("reasoning_content",),
        id_prefix="chatcmpl-",
    ),
    Behaviour(
        "sim-r1",
        "chat",
        "old DeepSeek R1 API: any reasoning field in the input is a 400",
        f"{_CHAT}: 'The old R1 API answered 400 to any `reasoning_content` in input'",
        _t(reasoning_content=(R, R), reasoning=(R, R), reasoning_details=(R, R)),
        emits=("reasoning_content",),
    ),
    Behaviour(
        "sim-deepseek",
        "chat",
        "DeepSeek thinking mode: reasoning_content of tool-call turns must come back (400 "
        "naming the message index otherwise) and is read; other turns' reasoning is ignored",
        f"{_CHAT}: 'after a tool call it must be passed back in every later request or the "
        'API answers 400 ("Missing `reasoning_content` field ...")\'',
        _t(reasoning_content=(C, C), reasoning=(D, D), reasoning_details=(D, D)),
        emits=("reasoning_content",),
        require_after_tool=True,
        tool_turns_only=True,
    ),
    Behaviour(
        "sim-kimi",
        "chat",
        "Kimi K2 thinking: an assistant tool-call turn without reasoning_content is a 400; a "
        'turn padded with "" passes the check and carries nothing; reasoning_content is read',
        f"{_W26}: 'an assistant tool-call turn without reasoning_content is refused (\"thinking "
        'is enabled but reasoning_content is missing in assistant tool call message"); clients '
        'that pad it with "" or " " pass the check and carry nothing\'',
        _t(reasoning_content=(C, C), reasoning=(D, D), reasoning_details=(D, D)),
        emits=("reasoning_content",),
        require_after_tool=True,
        missing_message=(
            "thinking is enabled but reasoning_content is missing in assistant tool call "
            "message at index {i}"
        ),
    ),
    Behaviour(
        "sim-llamacpp",
        "chat",
        "llama.cpp --jinja: reads reasoning_content only; `reasoning_content: null` is a 500",
        f"{_CHAT}: 'llama.cpp `llama-server --jinja` reads `reasoning_content` only ...; "
        "`reasoning_content: null` is answered with HTTP 500'",
        _t(reasoning_content=(C, C), reasoning=(D, D), reasoning_details=(D, D)),
        emits=("reasoning_content",),
        null_500=True,
        id_prefix="chatcmpl-",
        cache=False,
    ),
    Behaviour(
        "sim-openrouter",
        "chat",
        "OpenRouter-style gateway: reasoning + reasoning_details with a reasoning.encrypted "
        "entry that must come back intact; read in the loop only; billed cost in usage.cost",
        f'{_CHAT}: \'`reasoning_details` ... `{{"type":"reasoning.encrypted","data":..` ... '
        "Return the array unchanged'",
        _t(reasoning_content=(D, D), reasoning=(D, D), reasoning_details=(C, D)),
        emits=("reasoning", "reasoning_details", "reasoning.encrypted"),
        id_prefix="gen-",
        cost=True,
        provider="SimUpstream",
    ),
    Behaviour(
        "sim-portal",
        "chat",
        "routing gateway: lane switches call by call (seeded); `gen-` ids = OpenRouter lane, "
        "`chatcmpl-` ids = direct upstream, each with its own reasoning behaviour",
        f"{_GW}: 'A routing gateway can send one public model id to different upstreams call "
        "by call. The response id tells the lane'",
        _t(),
        emits=("reasoning_content", "reasoning", "reasoning_details"),
        lanes=MappingProxyType({"gen-": _OPENROUTER_LANE, "chatcmpl-": _DIRECT_LANE}),
    ),
    Behaviour(
        "sim-grok-refuse",
        "chat",
        "safety layer: a probe about 'earlier reasoning' gets 403 \"I'm sorry, I can't help "
        'with that request."',
        f"{_GW}: 'xAI answers 403 \"I'm sorry, I can't help with that request.\"'",
        _t(reasoning_content=(D, D), reasoning=(C, C), reasoning_details=(D, D)),
        emits=("reasoning",),
        refuse_probe=True,
        id_prefix="chatcmpl-",
    ),
    Behaviour(
        "sim-chat-filter",
        "chat",
        "safety layer: a probe about 'earlier reasoning' ends in finish_reason content_filter "
        "with no usage",
        f"{_GW}: 'Anthropic may return a content_filter stop with no usage'",
        _t(reasoning_content=(C, C), reasoning=(D, D), reasoning_details=(D, D)),
        emits=("reasoning_content",),
        filter_probe=True,
        id_prefix="chatcmpl-",
    ),
    Behaviour(
        "sim-o-strict",
        "chat",
        "reasoning model that refuses `temperature` and wants `max_completion_tokens`",
        f"{_GW}: 'A baseline that fails with 400 often names a parameter (`temperature`, "
        "`max_tokens` vs `max_completion_tokens` ...)'",
        _t(**_CHAT_DROP),
        emits=("reasoning_content",),
        id_prefix="chatcmpl-",
        reject_params=MappingProxyType(
            {
                "temperature": "Unsupported parameter: 'temperature' is not supported with this "
                "model.",
                "max_tokens": "Unsupported parameter: 'max_tokens' is not supported with this "
                "model. Use 'max_completion_tokens' instead.",
            }
        ),
    ),
    Behaviour(
        "sim-plain",
        "chat",
        "non-reasoning model: emits no reasoning and refuses `reasoning_effort`",
        f"{_GW}: '... names a parameter (... `reasoning_effort` ...)'",
        _t(**_CHAT_DROP),
        reasons=False,
        id_prefix="chatcmpl-",
        reject_params=MappingProxyType(
            {
                "reasoning_effort": "Unrecognized request argument supplied: reasoning_effort",
            }
        ),
    ),
    # ---- responses --------------------------------------------------------------------
    Behaviour(
        "sim-gpt",
        "responses",
        "reasoning items sealed as encrypted_content; replayed items read in the loop only; "
        "store/previous_response_id; store=true keeps every output item for item_reference; "
        "pairing errors (for items sent whole or by reference); `reasoning.context` is a 400",
        f"{_RESP}: 'Continuation: either `previous_response_id` ... or store=false and replay "
        "every output item'; 'Pairing: a `msg_`/`fc_` item replayed without the reasoning item "
        "it followed fails'; '`reasoning.context: \"all_turns\"` is accepted only by some "
        "models; others answer 400'; OpenAI API reference `ItemReference` ('An internal "
        "identifier for an item to reference') and the conversation-state guide (store=true "
        "keeps the response's output items); 404 wording from public threads "
        "(anomalyco/opencode#7724)",
        _t(encrypted_content=(C, D), summary_text=(D, D)),
        emits=("encrypted_content",),
    ),
    Behaviour(
        "sim-gpt-allturns",
        "responses",
        "keeps replayed reasoning of every turn and accepts `reasoning.context: all_turns`",
        f"{_RESP}: '`reasoning.context: \"all_turns\"` is accepted only by some models'",
        _t(encrypted_content=(C, C), summary_text=(D, D)),
        emits=("encrypted_content",),
        all_turns_ok=True,
    ),
    Behaviour(
        "sim-gpt-lowskip",
        "responses",
        "at effort `low` emits no reasoning item at all",
        f"{_RESP}: 'Request: `reasoning: {{effort, ...}}`'; an answer with no reasoning item "
        "at all: recording cassettes-2026/pai__test_openai_responses__test_openai_responses_"
        "reasoning_context_default_wire_contract(default-supported).yaml (reasoning_tokens 0); "
        "tying it to effort `low` is the simulator's choice (the harness climbs the effort "
        "when turn 1 returns no carrier, and needs a model that does so)",
        _t(encrypted_content=(C, D), summary_text=(D, D)),
        emits=("encrypted_content",),
        skip_reasoning_at_low=True,
    ),
    # ---- anthropic --------------------------------------------------------------------
    Behaviour(
        "sim-claude",
        "anthropic",
        "signed thinking blocks (HMAC over block and model); any change is a 400; earlier-turn "
        "thinking is stripped from the prompt (older regime)",
        f"{_ANTH}: 'Any re-serialisation ... breaks the signature (\"Invalid signature in "
        "thinking block\")'; 'older models strip it from the context'",
        _t(thinking=(C, D), redacted_thinking=(C, D)),
        emits=("thinking",),
    ),
    Behaviour(
        "sim-claude-preserve",
        "anthropic",
        "preserved thinking: earlier-turn thinking blocks stay in context and are billed",
        f"{_ANTH}: 'newer ones can keep usable blocks in context and bill them (preserved "
        "thinking)'",
        _t(thinking=(C, C), redacted_thinking=(C, C)),
        emits=("thinking",),
    ),
    Behaviour(
        "claude-opus-4-7-sim",
        "anthropic",
        "Claude Opus 4.7 and later: `thinking.type: enabled` with budget_tokens is a 400; "
        "adaptive thinking with output_config.effort is the only form",
        f'{_W26}: \'thinking: {{"type": "adaptive"}} with output_config: {{"effort": ...}} is '
        "the effort control of the newest models; enabled + budget_tokens is deprecated there "
        "and refused with a 400 on some' (Opus 4.7: the Bedrock page cited at "
        "wire/anthropic/_facts.py ADAPTIVE_SINCE)",
        _t(thinking=(C, D), redacted_thinking=(C, D)),
        emits=("thinking",),
        reject_params=MappingProxyType(
            {
                "thinking.budget_tokens": "thinking.type.enabled is not supported for this "
                "model. Use thinking.type.adaptive and output_config.effort to control "
                "thinking behavior.",
            }
        ),
    ),
    Behaviour(
        "sim-claude-redacted",
        "anthropic",
        "answers with redacted_thinking blocks (opaque data, unsealed when replayed)",
        f'{_ANTH}: \'Blocks: ... `{{"type":"redacted_thinking","data":..}}`\'',
        _t(thinking=(C, D), redacted_thinking=(C, D)),
        emits=("redacted_thinking",),
    ),
    # ---- gemini -----------------------------------------------------------------------
    Behaviour(
        "sim-gemini",
        "gemini",
        "thoughtSignature on the first functionCall of each step; missing in the current turn "
        "is a 400; `skip_thought_signature_validator` accepted; {text, thought: true} parts",
        f"{_GEM}: 'The first `functionCall` of each step of the current turn must carry its "
        "signature or Gemini 3 answers 4xx'",
        _t(thoughtSignature=(C, D), thought=(D, D)),
        emits=("thoughtSignature", "thought"),
        cache=False,
    ),
    Behaviour(
        "sim-gemini-25",
        "gemini",
        "older thinking model: `thinkingLevel` is a 400 (wants thinkingBudget)",
        f"{_GW}: '... names a parameter (... `thinkingLevel`)'",
        _t(thoughtSignature=(C, D), thought=(D, D)),
        emits=("thoughtSignature", "thought"),
        cache=False,
        reject_params=MappingProxyType(
            {
                "generationConfig.thinkingConfig.thinkingLevel": "Thinking level is not supported "
                "for this model. Use thinkingBudget instead.",
            }
        ),
    ),
    # ---- gemini interactions -------------------------------------------------------------
    Behaviour(
        "sim-gemini-interactions",
        "interactions",
        "thought steps with a signature (and a summary with thinking_summaries: auto); a "
        "missing or altered signature in the current turn is a 400; previous_interaction_id "
        "continues a stored interaction",
        f"{_W26}: 'an interaction holds steps - thought (a required signature, an optional "
        "summary) ... a stateless turn resends the history (signatures included)'; recording "
        "cassettes-2026/vercel__google-interactions__tool-call-step1.json",
        _t(thought_signature=(C, D), thought_summary=(D, D)),
        emits=("thought_signature", "thought_summary"),
        cache=False,
    ),
)

#: every simulated model id -> its behaviour
BEHAVIOURS: Mapping[str, Behaviour] = MappingProxyType({b.model: b for b in _ALL})
