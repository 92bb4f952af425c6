"""Anthropic Messages facts as data: carriers, controls, count endpoint, the request shape,
the visible projection (answers and stream events) and the harness variants.

Source: Anthropic's Messages API reference (create, streaming, extended and adaptive
thinking, effort, token counting, errors) and ``shared/WIRE.md``.

Allow-list notes (found by the hostile-client tests, ``tests/govern/test_hostile_client.py``):
``thinking`` and ``redacted_thinking`` blocks are accepted in assistant messages only (where
the vault re-attaches originals by signature); in a user message, in ``system`` or inside a
``tool_result`` they are dropped like any unknown block, since there the gateway would have
forwarded them as the client wrote them. ``tool_result.content`` is typed for that reason
(text, image, document and search_result blocks).

Found by the hostile-upstream properties (``tests/govern/test_hostile_properties.py``):
``usage.cache_creation`` is typed (the two ephemeral token counts) instead of any value, so an
upstream cannot carry text to the client through it.

Server tools (issue 24): ``server_tool_use`` and the ``*_tool_result`` blocks of tools the
API runs itself are not reasoning; both shapes carry them as received, in assistant turns
only (see "server tools" below, and ``tests/govern/test_gateway_server_tools.py``).
"""

from __future__ import annotations

import re
from types import MappingProxyType

from reasonwire.wire import shape as sh
from reasonwire.wire.count_tokens import CountSpec
from reasonwire.wire.facts import CarrierKind, Control, EarlierTurns, Variants
from reasonwire.wire.model import JSON

CARRIERS = (
    CarrierKind("thinking", False, "content[i](type=thinking).thinking"),
    CarrierKind("signature", True, "content[i](type=thinking).signature"),
    CarrierKind("redacted_thinking", True, "content[i](type=redacted_thinking).data"),
)

FOLD_WHERE: MappingProxyType[str, str] = MappingProxyType({})
"""Nothing: ``thinking`` text is signed by its block's ``signature`` (any change to the text
breaks it: "Invalid signature in thinking block"), so no carrier here may be shortened."""

# -- effort regimes --------------------------------------------------------------------------

ADAPTIVE_SINCE = (4, 6)
"""Claude versions (major, minor) from which effort is ``thinking: {"type": "adaptive"}`` with
``output_config: {"effort": level}`` instead of ``thinking: {"type": "enabled",
"budget_tokens": n}``. Why: adaptive thinking arrived with Claude 4.6, where the budget form is
deprecated; Claude Opus 4.7 and later refuse it with a 400 ("thinking.type.enabled is not
supported for this model. Use thinking.type.adaptive and output_config.effort"). Claude 4.5
and earlier know only the budget form. Sources: Amazon Bedrock, "Adaptive thinking"
(https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html),
Vercel AI Gateway, "Anthropic Reasoning"
(https://vercel.com/docs/ai-gateway/models-and-providers/reasoning/anthropic); recorded:
``cassettes-2026/..._opus_46_adaptive_thinking_accepts_tool_output(unified).yaml`` sends
``effort: high`` to claude-opus-4-6 that way."""

ADAPTIVE_NAMES = ("mythos",)
"""Model name parts that take the adaptive form although their id holds no version number.
Why: Claude Mythos Preview supports adaptive thinking only (same Bedrock page)."""

_VERSION = re.compile(r"(?<![0-9])([0-9]{1,2})(?:[-.]([0-9]{1,2}))?(?![0-9])")


def claude_version(model: str) -> tuple[int, int] | None:
    """(major, minor) of a Claude model id, or None when it names no version.

    The numbers sit after the family (``claude-sonnet-4-6``, ``claude-opus-5``) or before it
    (``claude-3-7-sonnet-20250219``); an 8-digit date is not a version.
    """
    found = _VERSION.search(model.lower())
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


def uses_adaptive_effort(model: str) -> bool:
    """Whether ``model`` takes effort as adaptive thinking + ``output_config.effort``."""
    name = model.lower()
    if not name.startswith("claude"):
        return False  # another vendor's model behind an Anthropic-compatible endpoint
    if any(part in name for part in ADAPTIVE_NAMES):
        return True
    version = claude_version(name)
    return version is not None and version >= ADAPTIVE_SINCE


_REF = "Anthropic Messages API reference (extended thinking, effort)"
_DISPLAY = (
    "anthropic SDK 2.16.0 ThinkingConfigAdaptiveParam/EnabledParam.display (docs: "
    "platform.claude.com/docs/en/build-with-claude/thinking#controlling-thinking-display); "
    "omitted is the Opus 4.7 default (github.com/anthropics/claude-code/issues/49268)"
)
_BETA = (
    "Anthropic beta headers; redact-thinking-2026-02-12 sent by Claude Code (shared/WIRE.md, "
    "'The 2026 wire')"
)
CONTROLS = (
    # Listed before ``thinking`` so the evidence names it when a client sends it (the whole
    # ``thinking`` object goes next anyway).
    Control(("thinking", "display"), _DISPLAY, "thinking text shown: summarized | omitted"),
    Control(("thinking",), _REF, "thinking: enabled|adaptive|disabled, budget_tokens"),
    Control(("output_config", "effort"), _REF, "effort level"),
    Control(
        ("anthropic-beta",),
        _BETA,
        "enables features, redact-thinking-* among them (hides thinking text)",
        header=True,
    ),
)
"""Reasoning controls of Anthropic Messages. ``thinking.display`` decides what thinking text
comes back (``summarized`` | ``omitted``): a visibility control of the reasoning, so a
governed client's is stripped like the rest of ``thinking`` (the route's fragment may set
one). Beta headers are never forwarded (the gateway passes ``anthropic-version`` only; a
route's own ``headers`` may set one), so a client's ``redact-thinking-*`` beta never reaches
the upstream; every other top-level field outside the request shape is dropped."""

FORWARDED_HEADERS = ("anthropic-version",)

COUNT = CountSpec(
    "/messages/count_tokens",
    frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking"}),
    "input_tokens",
)

# -- request shape --------------------------------------------------------------------------

_CACHE = sh.Anything()
_TEXT_IN = sh.Obj(
    {"type": sh.Str(), "text": sh.Str(), "cache_control": _CACHE, "citations": sh.Anything()}
)
_IMAGE_IN = sh.Obj({"type": sh.Str(), "source": sh.Anything(), "cache_control": _CACHE})
_DOCUMENT_IN = sh.Obj(
    {
        "type": sh.Str(),
        "source": sh.Anything(),
        "title": sh.Str(),
        "context": sh.Str(),
        "citations": sh.Anything(),
        "cache_control": _CACHE,
    }
)
_TOOL_RESULT_PART = sh.Tagged(
    {
        "text": _TEXT_IN,
        "image": _IMAGE_IN,
        "document": _DOCUMENT_IN,
        "search_result": sh.Obj(
            {
                "type": sh.Str(),
                "source": sh.Str(),
                "title": sh.Str(),
                "content": sh.ListOf(sh.Tagged({"text": _TEXT_IN})),
                "citations": sh.Anything(),
                "cache_control": _CACHE,
            }
        ),
    }
)
_USER_BLOCKS: dict[str, sh.Obj] = {
    "text": _TEXT_IN,
    "image": _IMAGE_IN,
    "document": _DOCUMENT_IN,
    "tool_use": sh.Obj(
        {
            "type": sh.Str(),
            "id": sh.Str(),
            "name": sh.Str(),
            "input": sh.Anything(),
            "cache_control": _CACHE,
        },
        frozenset({"id", "name"}),
    ),
    "tool_result": sh.Obj(
        {
            "type": sh.Str(),
            "tool_use_id": sh.Str(),
            "content": sh.OneOf((sh.Str(), sh.ListOf(_TOOL_RESULT_PART))),
            "is_error": sh.Bool(),
            "cache_control": _CACHE,
        },
        frozenset({"tool_use_id"}),
    ),
}
_BLOCK_USER = sh.Tagged(_USER_BLOCKS)

# -- server tools ---------------------------------------------------------------------------
# Blocks of tools Anthropic runs itself: a ``server_tool_use`` (its input streams as
# ``input_json_delta``) and the tool's ``*_tool_result``. They are not reasoning: a governed
# client sees them as received and sends them back in the assistant turn (the API needs them
# there to continue). Recorded: ``cassettes-2026/pai__test_anthropic__test_anthropic_code_
# execution_tool_stream.yaml`` (server_tool_use ``bash_code_execution``, a
# ``bash_code_execution_tool_result`` holding a ``bash_code_execution_result``, a message
# ``container``, ``usage.server_tool_use``) and ``..._advisor_tool_message_replay.yaml``
# (server_tool_use ``advisor``, an ``advisor_tool_result`` holding an ``advisor_result``,
# replayed verbatim in turn 2). The error and redacted variants of those two results and the
# ``caller`` field are the anthropic SDK's (2.16.0) types ``BashCodeExecutionToolResultBlock``,
# ``BetaAdvisorToolResultBlock``, ``BetaAdvisorRedactedResultBlock`` (an opaque
# ``encrypted_content`` to round-trip verbatim, like ``redacted_thinking``),
# ``ServerToolUseBlock``. Typed field by field (only a tool's ``input`` is any JSON, as for
# ``tool_use``): a result is model or tool output that reaches the client, so nothing unnamed
# may ride in it.

SERVER_TOOL_BLOCKS = (
    "server_tool_use",
    "bash_code_execution_tool_result",
    "advisor_tool_result",
    "web_search_tool_result",
    "code_execution_tool_result",
)
"""Server-tool block types the request and visible shapes describe: the recorded ones, then
web search and the older code execution tool (not recorded here: the anthropic SDK 2.16.0
types ``WebSearchToolResultBlock``, ``CodeExecutionToolResultBlock``)."""

_CALLER = sh.Obj({"type": sh.Str(), "tool_id": sh.Str()})
_ERROR = sh.Obj({"type": sh.Str(), "error_code": sh.Str()})
_SERVER_TOOL_USE = sh.Obj(
    {"type": sh.Str(), "id": sh.Str(), "name": sh.Str(), "input": sh.Anything(), "caller": _CALLER},
    frozenset({"id", "name"}),
)
_BASH_RESULT = sh.Tagged(
    {
        "bash_code_execution_result": sh.Obj(
            {
                "type": sh.Str(),
                "stdout": sh.Str(),
                "stderr": sh.Str(),
                "return_code": sh.Int(),
                "content": sh.ListOf(
                    sh.Tagged(
                        {
                            "bash_code_execution_output": sh.Obj(
                                {"type": sh.Str(), "file_id": sh.Str()}
                            )
                        }
                    )
                ),
            }
        ),
        "bash_code_execution_tool_result_error": _ERROR,
    }
)
_ADVISOR_RESULT = sh.Tagged(
    {
        # The advisor model's answer to the executor: visible model text, not its reasoning.
        "advisor_result": sh.Obj(
            {"type": sh.Str(), "text": sh.Str(text=True), "stop_reason": sh.Nullable(sh.Str())}
        ),
        "advisor_redacted_result": sh.Obj(
            {"type": sh.Str(), "encrypted_content": sh.Str(), "stop_reason": sh.Nullable(sh.Str())}
        ),
        "advisor_tool_result_error": _ERROR,
    }
)


_WEB_SEARCH_RESULT = sh.OneOf(
    (
        sh.ListOf(
            sh.Tagged(
                {
                    "web_search_result": sh.Obj(
                        {
                            "type": sh.Str(),
                            "url": sh.Str(),
                            "title": sh.Str(),
                            # Opaque: the page text the model read, returned for replay.
                            "encrypted_content": sh.Str(),
                            "page_age": sh.Nullable(sh.Str()),
                        }
                    )
                }
            )
        ),
        sh.Tagged({"web_search_tool_result_error": _ERROR}),
    )
)
_OUTPUT = sh.ListOf(
    sh.Tagged({"code_execution_output": sh.Obj({"type": sh.Str(), "file_id": sh.Str()})})
)
_CODE_RESULT = sh.Tagged(
    {
        "code_execution_result": sh.Obj(
            {
                "type": sh.Str(),
                "stdout": sh.Str(),
                "stderr": sh.Str(),
                "return_code": sh.Int(),
                "content": _OUTPUT,
            }
        ),
        "encrypted_code_execution_result": sh.Obj(
            {
                "type": sh.Str(),
                "encrypted_stdout": sh.Str(),
                "stderr": sh.Str(),
                "return_code": sh.Int(),
                "content": _OUTPUT,
            }
        ),
        "code_execution_tool_result_error": _ERROR,
    }
)


def _result(content: sh.Tagged | sh.OneOf) -> sh.Obj:
    return sh.Obj(
        {"type": sh.Str(), "tool_use_id": sh.Str(), "content": content},
        frozenset({"tool_use_id", "content"}),
    )


_SERVER_BLOCKS: dict[str, sh.Obj] = {
    "server_tool_use": _SERVER_TOOL_USE,
    "bash_code_execution_tool_result": _result(_BASH_RESULT),
    "advisor_tool_result": _result(_ADVISOR_RESULT),
    "web_search_tool_result": sh.Obj(
        {
            "type": sh.Str(),
            "tool_use_id": sh.Str(),
            "content": _WEB_SEARCH_RESULT,
            "caller": _CALLER,
        },
        frozenset({"tool_use_id", "content"}),
    ),
    "code_execution_tool_result": _result(_CODE_RESULT),
}
assert tuple(_SERVER_BLOCKS) == SERVER_TOOL_BLOCKS
_CONTAINER = sh.Obj({"id": sh.Str(), "expires_at": sh.Str()})
"""The code-execution container of a message (recorded in the stream's ``message_delta``);
a client reuses it by id in its next request (the SDK's ``container`` parameter)."""

_BLOCK_ASSISTANT = sh.Tagged(
    {
        **_USER_BLOCKS,
        **_SERVER_BLOCKS,
        # Looked up in the vault by signature; never forwarded as the client sent it.
        "thinking": sh.Obj({"type": sh.Str(), "thinking": sh.Str(), "signature": sh.Str()}),
        "redacted_thinking": sh.Obj({"type": sh.Str(), "data": sh.Str()}),
    }
)
_MESSAGE = sh.Tagged(
    {
        "user": sh.Obj(
            {"role": sh.Str(), "content": sh.OneOf((sh.Str(), sh.ListOf(_BLOCK_USER)))},
            frozenset({"content"}),
        ),
        "assistant": sh.Obj(
            {"role": sh.Str(), "content": sh.OneOf((sh.Str(), sh.ListOf(_BLOCK_ASSISTANT)))},
            frozenset({"content"}),
        ),
    },
    key="role",
    closed=True,
)
REQUEST = sh.Obj(
    {
        "model": sh.Str(),
        "messages": sh.ListOf(_MESSAGE),
        "system": sh.OneOf((sh.Str(), sh.ListOf(_BLOCK_USER))),
        "max_tokens": sh.Int(lo=1),
        "tools": sh.ListOf(sh.Anything()),
        "tool_choice": sh.Anything(),
        "temperature": sh.Num(),
        "top_p": sh.Num(),
        "top_k": sh.Int(lo=0),
        "stop_sequences": sh.ListOf(sh.Str()),
        "stream": sh.Bool(),
        "metadata": sh.Anything(),
        "service_tier": sh.Str(),
        "thinking": sh.Anything(),
        "output_config": sh.Obj({"effort": sh.Anything(), "format": sh.Anything()}),
        # A container id to reuse (the SDK's ``MessageCreateParamsContainerParam``: a string,
        # or container params); not a reasoning control.
        "container": sh.OneOf((sh.Str(), sh.Obj({"id": sh.Str(), "skills": sh.Anything()}))),
    },
    frozenset({"model", "messages", "max_tokens"}),
)

# -- visible projection ---------------------------------------------------------------------

_BLOCK_OUT = sh.Tagged(
    {
        "text": sh.Obj({"type": sh.Str(), "text": sh.Str(text=True), "citations": sh.Anything()}),
        "tool_use": sh.Obj(
            {"type": sh.Str(), "id": sh.Str(), "name": sh.Str(), "input": sh.Anything()}
        ),
        # Opaque parts only: the signature stays, the text is never present.
        "thinking": sh.Obj({"type": sh.Str(), "thinking": sh.Blank(), "signature": sh.Str()}),
        "redacted_thinking": sh.Obj({"type": sh.Str(), "data": sh.Str()}),
        **_SERVER_BLOCKS,
    }
)
_USAGE = sh.Obj(
    {
        "input_tokens": sh.Nullable(sh.Int()),
        "output_tokens": sh.Int(),
        "cache_read_input_tokens": sh.Nullable(sh.Int()),
        "cache_creation_input_tokens": sh.Nullable(sh.Int()),
        "cache_creation": sh.Obj(
            {
                "ephemeral_5m_input_tokens": sh.Nullable(sh.Int()),
                "ephemeral_1h_input_tokens": sh.Nullable(sh.Int()),
            }
        ),
        "service_tier": sh.Nullable(sh.Str()),
        "server_tool_use": sh.Obj(
            {
                "web_search_requests": sh.Nullable(sh.Int()),
                "web_fetch_requests": sh.Nullable(sh.Int()),
            }
        ),
    }
)
VISIBLE = sh.Obj(
    {
        "id": sh.Str(),
        "type": sh.Str(),
        "role": sh.Str(),
        "model": sh.Str(),
        "content": sh.ListOf(_BLOCK_OUT),
        "stop_reason": sh.Nullable(sh.Str()),
        "stop_sequence": sh.Nullable(sh.Str()),
        "usage": _USAGE,
        "container": sh.Nullable(_CONTAINER),
    }
)
"""What a governed client sees of a message: text, tool_use, thinking blocks as signature
only (the SDK keeps the block so the client can return it), redacted thinking, server-tool
blocks as received, the container, usage."""

ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "rate_limit_error",
        "api_error",
        "overloaded_error",
    }
)

_DELTA = sh.Tagged(
    {
        "text_delta": sh.Obj({"type": sh.Str(), "text": sh.Str(text=True)}),
        "input_json_delta": sh.Obj({"type": sh.Str(), "partial_json": sh.Str()}),
        "signature_delta": sh.Obj({"type": sh.Str(), "signature": sh.Str()}),
        "citations_delta": sh.Obj({"type": sh.Str(), "citation": sh.Anything()}),
    }
)
STREAM_EVENT = sh.Tagged(
    {
        "message_start": sh.Obj({"type": sh.Str(), "message": VISIBLE}, frozenset({"message"})),
        "content_block_start": sh.Obj(
            {"type": sh.Str(), "index": sh.Int(), "content_block": _BLOCK_OUT},
            frozenset({"content_block"}),
        ),
        "content_block_delta": sh.Obj(
            {"type": sh.Str(), "index": sh.Int(), "delta": _DELTA}, frozenset({"delta"})
        ),
        "content_block_stop": sh.Obj({"type": sh.Str(), "index": sh.Int()}),
        "message_delta": sh.Obj(
            {
                "type": sh.Str(),
                "delta": sh.Obj(
                    {
                        "stop_reason": sh.Nullable(sh.Str()),
                        "stop_sequence": sh.Nullable(sh.Str()),
                        "container": sh.Nullable(_CONTAINER),
                    }
                ),
                "usage": _USAGE,
            }
        ),
        "message_stop": sh.Obj({"type": sh.Str()}),
        "ping": sh.Obj({"type": sh.Str()}),
        "error": sh.Obj({"type": sh.Str(), "error": sh.Obj({"type": sh.Const(ERROR_TYPES)})}),
    }
)
"""Every stream event a governed client may receive; ``thinking_delta`` (and any delta or
event kind not named here) is dropped whole."""

VARIANTS = Variants(
    none_reason="unsigned thinking cannot be sent: Anthropic is measured by the opaque step"
)

_TYPES = frozenset(
    {
        "message",
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


def detects(payload: JSON) -> bool:
    return isinstance(payload, dict) and payload.get("type") in _TYPES


PATH = re.compile(r"/messages$", re.IGNORECASE)


EARLIER_TURNS = EarlierTurns(
    "dropped",
    "Anthropic context windows, 'Stripping extended thinking': thinking blocks 'are not "
    "carried forward as input tokens for subsequent turns ... The Claude API automatically "
    "does this for you if you pass them back'; Anthropic extended thinking, thinking block "
    "preservation: 'Claude Opus 4.5 and later Opus models keep all prior thinking blocks', "
    "'Claude Sonnet 4.6 and later Sonnet models keep all', 'Claude Mythos Preview also keeps "
    "all prior thinking blocks'; sim-claude-preserve imitates the newer regime "
    "(reasonwire.sim.behaviours)",
    models=tuple(
        (m, "kept")
        for m in (
            "claude-opus-4-5",
            "claude-opus-4-6",
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-opus-5",
            "claude-sonnet-4-6",
            "claude-sonnet-5",
            "claude-mythos",
            "sim-claude-preserve",
        )
    ),
)
"""Earlier-turn thinking on Anthropic Messages: stripped from the context (not billed) by
older models, kept by the newer ones listed."""
