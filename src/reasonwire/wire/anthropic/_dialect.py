"""Anthropic Messages dialect (``POST {base}/messages``).

Request building, replay and strip live here; response parsing in
:mod:`reasonwire.wire.anthropic._parse`, stream decoding in
:mod:`reasonwire.wire.anthropic._stream`.

Replay rules (why they are what they are):

- An Assistant whose native payload is Anthropic's goes back as
  ``{"role": "assistant", "content": [blocks]}`` with every block exactly as received, in its
  original order: the API verifies thinking signatures over the unmodified blocks and rejects
  re-serialised, merged or reordered ones.
- History from another dialect (a foreign native, or bare text carriers) never becomes a
  ``thinking`` block: thinking without a valid Anthropic signature cannot be sent. Only the
  visible text and the ``tool_use`` blocks are sent; foreign reasoning is dropped, not
  re-worded into text, so the request says nothing the model did not say.
- An Assistant without a native payload but with Anthropic carriers (e.g. rebuilt from a
  record) sends those blocks first, as the API itself orders them, then text, then tool_use.
- An assistant turn that would have no content block at all is omitted (the API rejects an
  empty ``content``).

Effort (``RequestOptions.effort``):

==================  ==========================================================================
``None``/``none``   no ``thinking`` field
``adaptive``        ``thinking: {"type": "adaptive"}``
``low``             ``thinking: {"type": "enabled", "budget_tokens": 1024}`` (API minimum)
``medium``          ``... "budget_tokens": 4096``
``high``            ``... "budget_tokens": 16000``
anything else       ``output_config: {"effort": value}`` with ``thinking: {"type": "adaptive"}``
==================  ==========================================================================

On models that take effort in the adaptive form (Claude 4.6 and later, see
:func:`~reasonwire.wire.anthropic._facts.uses_adaptive_effort`) ``low``, ``medium`` and
``high`` are sent as ``output_config: {"effort": level}`` with adaptive thinking too: the
budget form is deprecated there and refused with a 400 on the newest models.

``extra_body["tools"]`` is added after the function tools built from ``RequestOptions.tools``
instead of replacing them: server tools (``{"type": "code_execution_20260120", "name":
"code_execution"}``, web search, the advisor tool) are declared in the same list as functions
and have no neutral form.

``max_tokens`` is required by the API: :data:`DEFAULT_MAX_TOKENS` when unset. The API also
requires ``max_tokens > budget_tokens``; when a budget would not fit, ``max_tokens`` is raised
to ``budget + DEFAULT_MAX_TOKENS`` so the answer after the thinking still has room.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import orjson

from reasonwire.errors import ConfigError
from reasonwire.wire.anthropic import _facts, _hidden
from reasonwire.wire.anthropic._parse import REASONING_BLOCKS, parse_response
from reasonwire.wire.anthropic._stream import AnthropicStreamDecoder
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import Assistant, System, ToolResult, User, native_items
from reasonwire.wire.projection import encode_event

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, Message, RequestOptions, Turn

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when the caller gives none (the API has no default)."""

BUDGETS: Mapping[str, int] = {"low": 1024, "medium": 4096, "high": 16000}
"""Thinking budget (``budget_tokens``) for each neutral effort level."""


def thinking_fields(
    effort: str | None, max_tokens: int | None, model: str | None = None
) -> dict[str, JSON]:
    """``max_tokens`` and the thinking fields for a neutral effort level on ``model`` (see
    module doc; without a model, the budget form)."""
    limit = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if effort is None or effort == "none":
        return {"max_tokens": limit}
    if effort == "adaptive":
        return {"max_tokens": limit, "thinking": {"type": "adaptive"}}
    budget = None if model and _facts.uses_adaptive_effort(model) else BUDGETS.get(effort)
    if budget is None:
        return {
            "max_tokens": limit,
            "thinking": {"type": "adaptive"},
            "output_config": {"effort": effort},
        }
    if limit <= budget:
        limit = budget + DEFAULT_MAX_TOKENS
    return {"max_tokens": limit, "thinking": {"type": "enabled", "budget_tokens": budget}}


def _built_blocks(message: Assistant | Turn) -> list[JSON]:
    """Content blocks for a turn without an Anthropic native payload (see module doc)."""
    blocks: list[JSON] = [
        c.value
        for c in message.carriers
        if message.native is None and c.dialect == "anthropic" and c.kind in REASONING_BLOCKS
    ]
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        tool_input = call.parsed_arguments()
        if not isinstance(tool_input, dict):
            raise ConfigError(
                f"tool call {call.id!r}: arguments must be a JSON object for Anthropic, "
                f"got {type(tool_input).__name__}"
            )
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
    return blocks


def _assistant(blocks: Sequence[JSON]) -> list[JSON]:
    return [{"role": "assistant", "content": list(blocks)}] if blocks else []


class AnthropicDialect(Dialect, facts=_facts):
    """The Anthropic Messages wire API."""

    name = "anthropic"
    sent_carriers = _hidden
    decoder = AnthropicStreamDecoder
    vault = _hidden
    gateway_path = "/v1/messages"
    usage_total = None
    stream_shape = _facts.STREAM_EVENT

    def stream_error(self, reason: str) -> bytes:
        return _error_event(reason)

    def request_path(self, options: RequestOptions) -> str:
        return "/messages"

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        """The Messages body. ``profile`` is accepted for the protocol and unused: every
        Anthropic-compatible endpoint seen so far takes the same fields.

        System messages (wherever they sit) go to the top-level ``system``: a string for one,
        a list of text blocks for several. Consecutive tool results share one user message.
        """
        systems = [m.text for m in messages if isinstance(m, System)]
        out: list[JSON] = []
        tool_turn: list[JSON] | None = None  # content of the user message taking tool results
        for msg in messages:
            if isinstance(msg, ToolResult):
                block = {
                    "type": "tool_result",
                    "tool_use_id": msg.tool_call_id,
                    "content": msg.content,
                }
                if tool_turn is None:
                    tool_turn = []
                    out.append({"role": "user", "content": tool_turn})
                tool_turn.append(block)
                continue
            if isinstance(msg, System):
                continue  # collected above into the top-level ``system``
            tool_turn = None
            if isinstance(msg, User):
                out.append({"role": "user", "content": [{"type": "text", "text": msg.text}]})
            elif isinstance(msg, Assistant):
                out.extend(self.replay(msg) if options.keep_carriers else self.strip(msg))

        body: dict[str, JSON] = {"model": options.model}
        body.update(thinking_fields(options.effort, options.max_tokens, options.model))
        if len(systems) == 1:
            body["system"] = systems[0]
        elif systems:
            body["system"] = [{"type": "text", "text": s} for s in systems]
        body["messages"] = out
        tools: list[JSON] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in options.tools
        ]
        extra = dict(options.extra_body)
        declared = extra.pop("tools", None)
        if isinstance(declared, list):
            tools.extend(copy.deepcopy(declared))  # server tools, after the functions
        elif declared is not None:
            extra["tools"] = declared  # not a list: merged as written (the API will say)
        if tools:
            body["tools"] = tools
        body["stream"] = options.stream
        return deep_merge(body, extra)

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        return parse_response(body)

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        """``[{"role": "assistant", "content": [...]}]`` with the received block objects."""
        blocks = native_items(message, "anthropic")
        return _assistant(blocks if blocks is not None else _built_blocks(message))

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        """The replay without ``thinking`` and ``redacted_thinking`` blocks."""
        blocks = native_items(message, "anthropic")
        if blocks is None:
            built = _built_blocks(message)
            kept = [b for b in built if b.get("type") not in REASONING_BLOCKS]
        else:
            kept = [b for b in blocks if not _is_reasoning(b)]
        return _assistant(kept)


def _is_reasoning(block: JSON) -> bool:
    return isinstance(block, dict) and block.get("type") in REASONING_BLOCKS


def _error_event(reason: str) -> bytes:
    """A stream ``error`` event (the anthropic SDK raises on it)."""
    data = {"type": "error", "error": {"type": "api_error", "message": reason}}
    return encode_event("error", orjson.dumps(data))


DIALECT = AnthropicDialect()
"""The Anthropic Messages dialect object."""
