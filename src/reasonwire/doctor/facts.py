"""What the doctor knows per dialect, as data keyed by dialect name and carrier kind.

The carrier kinds are the dialect objects' own (:attr:`reasonwire.wire.Dialect.carriers`;
tests/doctor checks every kind named here is one of them); this module adds only where each
opaque carrier sits inside one *history item* of a request (the dialect's ``where`` paths
describe the answer) and which framing family its bytes belong to (:mod:`.framing`), plus
the structural rules each provider documents for a replayed history. Code in this package
looks a dialect up here and never compares against a provider name.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from reasonwire.doctor.framing import Envelope

Family = Literal["anthropic", "gemini", "fernet"]
"""A framing family of :mod:`.framing` (named after the bytes' producer, as data)."""

ENVELOPES: MappingProxyType[str, Envelope] = MappingProxyType(
    {
        # every intact Anthropic signature / redacted_thinking.data in the recordings:
        # fields (2,LD) once, (3,varint) once, (1,varint) once on Opus 4.7+ ("CAIS...")
        "anthropic": Envelope(frozenset({1, 2, 3}), frozenset(), frozenset({2})),
        # Gemini: (2,LD) once ("Ep...", generateContent) or (1,LD) repeated ("Ci...", streamed
        # parts and Interactions steps)
        "gemini": Envelope(frozenset({2}), frozenset({1}), frozenset({1, 2})),
    }
)

URLSAFE_OK: MappingProxyType[str, bool] = MappingProxyType({"anthropic": False, "gemini": True})
"""Whether the provider reads the value as bytes (either base64 alphabet), or compares the
string. Gemini: proto ``bytes`` field, JSON mapping accepts both alphabets, and pydantic-ai's
URL-safe replays got 200 (pai__test_google__test_google_instructions_only_with_tool_calls)."""

STAND_INS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "gemini": frozenset(
            {
                # Google's documented values that skip signature validation (Gemini 3 thought
                # signatures FAQ; reasonwire.wire.gemini STAND_IN_SIGNATURE); pydantic-ai sends
                # the base64 of the second (pai__test_google__test_thinking_with_tool_calls_
                # from_other_model.yaml)
                "skip_thought_signature_validator",
                "context_engineering_is_the_way_to_go",
                "Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv",
            }
        )
    }
)


@dataclass(frozen=True, slots=True)
class Opaque:
    """One opaque carrier inside a history item.

    ``match``: (key, value) the item must have (None: every item); ``path``: keys from the
    item to the value, ``"[]"`` stepping into every element of a list; ``required``: an item
    that matches and lacks the value is itself a finding (a thinking block without its
    signature is refused)."""

    kind: str
    match: tuple[str, str] | None
    path: tuple[str, ...]
    family: Family
    required: bool = False


@dataclass(frozen=True, slots=True)
class Rules:
    """One dialect's history rules (None / empty: the rule does not apply).

    ``tool_call``: (key, value or None) marking an item that calls a tool; ``tool_result``
    likewise for an item or block that returns one; ``first_in_loop``: item types one of which
    must open the last assistant message of an open tool loop when thinking is on;
    ``first_call_signed``: the key that must be on the first tool-call item of each step;
    ``store_items``: (item type, carrier key) that must carry its carrier when the server
    keeps nothing (store=false); ``reference``: (item type, id prefix) of a reference to a
    stored item; ``paired``: (item type, id prefix) of an item the server expects to be
    followed by the model item it produced, with that item's id. The Chat rule
    (``required_on_tool_calls``) comes from the route's wire Profile."""

    opaque: tuple[Opaque, ...]
    tool_call: tuple[str, str | None] | None = None
    tool_result: tuple[str, str | None] | None = None
    first_in_loop: tuple[str, ...] = ()
    first_call_signed: str | None = None
    store_items: tuple[tuple[str, str], ...] = ()
    reference: tuple[str, str] | None = None
    paired: tuple[str, str] | None = None
    text_carriers: tuple[str, ...] = ()
    source: str = ""


_ANTHROPIC_DOC = (
    "docs.anthropic.com extended thinking: preserving thinking blocks (tool use), "
    "thinking blocks from previous turns are stripped"
)

RULES: MappingProxyType[str, Rules] = MappingProxyType(
    {
        "anthropic": Rules(
            opaque=(
                Opaque("signature", ("type", "thinking"), ("signature",), "anthropic", True),
                Opaque(
                    "redacted_thinking",
                    ("type", "redacted_thinking"),
                    ("data",),
                    "anthropic",
                    True,
                ),
            ),
            tool_call=("type", "tool_use"),
            tool_result=("type", "tool_result"),
            first_in_loop=("thinking", "redacted_thinking"),
            source=_ANTHROPIC_DOC,
        ),
        "gemini": Rules(
            opaque=(Opaque("thoughtSignature", None, ("thoughtSignature",), "gemini"),),
            tool_call=("functionCall", None),
            tool_result=("functionResponse", None),
            first_call_signed="thoughtSignature",
            source="ai.google.dev Gemini 3 thought signatures (function calling: first "
            "functionCall of each step must carry its signature, 400 otherwise)",
        ),
        "responses": Rules(
            opaque=(
                Opaque(
                    "encrypted_content", ("type", "reasoning"), ("encrypted_content",), "fernet"
                ),
                # compaction items (Responses compact, Codex rollouts) seal the summary the same way
                Opaque(
                    "encrypted_content", ("type", "compaction"), ("encrypted_content",), "fernet"
                ),
                # Codex CLI agent messages keep sealed parts inside their content
                Opaque(
                    "encrypted_content",
                    ("type", "agent_message"),
                    ("content", "[]", "encrypted_content"),
                    "fernet",
                ),
                # a sealed input message kept in a compaction's replacement_history
                Opaque("encrypted_content", ("type", "message"), ("encrypted_content",), "fernet"),
            ),
            tool_call=("type", "function_call"),
            tool_result=("type", "function_call_output"),
            store_items=(("reasoning", "encrypted_content"),),
            reference=("item_reference", "rs_"),
            # OpenAI answers 400 "Item 'rs_...' of type 'reasoning' was provided without its
            # required following item" when the message after it lost its id
            # (pai__test_openai_responses__test_openai_responses_thinking_with_modified_
            # history.yaml, request 2); DeepSeek's ids ("rs-b", UUIDs) carry no such rule
            paired=("reasoning", "rs_"),
            source="platform.openai.com reasoning: with store=false, pass reasoning items "
            "with include=['reasoning.encrypted_content'] ('Item with id rs_... not found')",
        ),
        "chat": Rules(
            opaque=(
                # Anthropic signatures relayed by OpenRouter-style routes (recordings
                # pai__test_openrouter__*, pai__test_snowflake__*)
                Opaque(
                    "reasoning_details",
                    None,
                    ("reasoning_details", "[]", "signature"),
                    "anthropic",
                ),
                Opaque(
                    "extra_content",
                    None,
                    ("tool_calls", "[]", "extra_content", "google", "thought_signature"),
                    "gemini",
                ),
            ),
            tool_call=("tool_calls", None),
            tool_result=("role", "tool"),
            text_carriers=("reasoning_content",),
            source="api-docs.deepseek.com thinking mode tool calls; platform.moonshot.ai "
            "Kimi K2 thinking FAQ (reasoning_content on every tool-call turn)",
        ),
        "interactions": Rules(
            opaque=(Opaque("thought_signature", ("type", "thought"), ("signature",), "gemini"),),
            tool_call=("type", "function_call"),
            tool_result=("type", "function_result"),
        ),
    }
)

KIND_OF_FINDING: MappingProxyType[str, str] = MappingProxyType(
    {
        "truncated": "error",
        "undecodable": "error",
        "merged": "error",
        "reencoded": "error",
        "placeholder": "error",
        "empty": "error",
        "missing_signature": "error",
        "missing_thought_signature": "error",
        "missing_reasoning_content": "error",
        "padded_reasoning_content": "warning",
        "thinking_not_first": "error",
        "reasoning_item_absent": "error",
        "reasoning_unpaired": "error",
        "changed": "error",
        "reordered": "error",
    }
)
"""Severity of each finding kind: ``error`` is what the provider refuses (or, for a padded
carrier, ``warning``: accepted, but the reasoning it should carry is gone)."""
