"""Render profiles: what a serving stack hands a chat template, as data.

Why: the plain scan renders a template the way transformers does, with the client's messages
as sent. A server decides first which message keys reach the template, may rewrite them for
the template family it recognises, and sets template variables of its own. So one template
has a verdict per server and server setting (GLM-4.7-Flash is in-loop-only in a plain render
and consumes-all-turns on llama-server, which sets ``clear_thinking`` false). A
:class:`RenderProfile` describes one server's hand-off; the scan renders every template under
:data:`LLAMA_SERVER` too and reports both verdicts, and ``reasonwire templates scan
--cross-check`` compares that prediction with the real server.

Every entry cites the llama.cpp source it is read from: the tree of the pinned
llama-cpp-python 0.3.36 sdist (``vendor/llama.cpp``, cached by :mod:`reasonwire.llamacpp`).
What this profile does not model (the server's jinja engine itself, capability probes that
decide argument and system-message shapes) the scan's shape search covers; a difference left
over is a disagreement the cross-check lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from reasonwire.templates._rewrites import Messages, Rewrite, round_trip
from reasonwire.wire.model import JSON, JsonObject


@dataclass(frozen=True, slots=True)
class Handler:
    """A template family the server recognises by its source text, and what it rewrites.

    Why a source test and not a model name: llama-server picks its handler by substrings of
    the template (``common/chat.cpp:1090-1222``), so the same rule decides here."""

    name: str
    requires: tuple[str, ...]
    """Substrings that must all be in the template source."""
    rewrite: Rewrite
    source: str
    """Where the detection and the rewrite are in the llama.cpp tree."""
    excludes: tuple[str, ...] = ()
    """Substrings that must all be absent."""
    requires_any: tuple[str, ...] = ()
    """At least one of these must be present (empty: no such condition)."""

    def matches(self, template: str) -> bool:
        return (
            all(s in template for s in self.requires)
            and not any(s in template for s in self.excludes)
            and (not self.requires_any or any(s in template for s in self.requires_any))
        )


@dataclass(frozen=True, slots=True)
class Switch:
    """A server setting that reaches templates as variables.

    Why: a template that reads one of these renders differently with the setting on and off,
    so its verdict names the setting (``clear_thinking``) and is given for both values."""

    on_flag: str
    off_flag: str
    default_on: bool
    variables: Mapping[str, bool]
    """Each variable and its value while the switch is on (off: the negation)."""
    source: str

    def values(self, on: bool) -> dict[str, bool]:
        return {name: value if on else not value for name, value in self.variables.items()}


@dataclass(frozen=True, slots=True)
class RenderProfile:
    """How one server turns a chat request's messages into a template's input."""

    name: str
    passes: tuple[str, ...]
    """Carrier fields of a message that reach the template; every other one is dropped."""
    passes_source: str
    variables: Mapping[str, JSON]
    """Template variables the server always sets (besides the switch's)."""
    variables_source: str
    switch: Switch
    workarounds: tuple[Handler, ...]
    """Rewrites applied whenever they match, before the handler's."""
    handlers: tuple[Handler, ...]
    """The handler chain, in the server's order: the first match is the one."""

    def handler_for(self, template: str) -> Handler | None:
        """The first handler of the chain that recognises ``template`` (None: generic)."""
        return next((h for h in self.handlers if h.matches(template)), None)

    def rewrites_for(self, template: str) -> tuple[Handler, ...]:
        """Every rewrite that applies to ``template``, in the order the server applies them."""
        handler = self.handler_for(template)
        chain = (handler,) if handler is not None else ()
        return tuple(h for h in self.workarounds if h.matches(template)) + chain

    def prepare(self, template: str, messages: Messages) -> Messages:
        """``messages`` as this server hands them to ``template``."""
        out = round_trip(messages, self.passes)
        for handler in self.rewrites_for(template):
            out = handler.rewrite.apply(out)
        return out

    def template_variables(self, switch_on: bool) -> JsonObject:
        return {**self.variables, **self.switch.values(switch_on)}


_CHAT_CPP: Final = "common/chat.cpp"

LLAMA_SERVER: Final = RenderProfile(
    name="llama-server",
    passes=("reasoning_content",),
    passes_source=f"{_CHAT_CPP}:453-455, :233-235",
    variables=MappingProxyType(
        # common_chat_extra_context: the date as "%b %d %Y" and "%d %b %Y"; a fixed date here,
        # the same in every render of a scan, so no delta depends on it.
        {"datetime": "Nov 09 2026", "date_string": "09 Nov 2026"}
    ),
    variables_source=f"{_CHAT_CPP}:1080-1088, :1293-1296",
    switch=Switch(
        on_flag="--reasoning-preserve",
        off_flag="--no-reasoning-preserve",
        default_on=True,
        variables=MappingProxyType(
            {
                "preserve_reasoning": True,
                "preserve_thinking": True,
                "clear_thinking": False,
                "truncate_history_thinking": False,
                "drop_thinking": False,
            }
        ),
        # arg.cpp: on unless --no-reasoning-preserve; chat.cpp:1294-1296 passes the kwarg
        # preserve_reasoning itself as a variable, :940-943 and caps.cpp the four others.
        source=(
            "common/jinja/caps.cpp:22-27, common/chat.cpp:940-943, :1294-1296, "
            "common/arg.cpp:961-964, :3734-3747"
        ),
    ),
    workarounds=(
        Handler(
            "StepFun",
            ("You have access to the following functions in JSONSchema format",),
            Rewrite.TRIM,
            f"{_CHAT_CPP}:1235-1240, :1066-1077",
        ),
    ),
    handlers=(
        Handler(
            "Ministral-3",
            ("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]"),
            Rewrite.THINKING_BLOCKS,
            f"{_CHAT_CPP}:1096-1100, common/parsers/ministral3.cpp:8-44",
            excludes=("[CALL_ID]",),
        ),
        Handler(
            "gpt-oss",
            ("<|channel|>",),
            Rewrite.COPY_TO_THINKING_DROP_CALL_CONTENT,
            f"{_CHAT_CPP}:1103-1106, common/parsers/gpt-oss.cpp:7-17",
        ),
        Handler(
            "Muse Glimmer",
            ("<atem:function_calls>", "<|eom|>"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1109-1112",
        ),
        Handler(
            "Functionary v3.2",
            (">>>all", ">>>${recipient}"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1116-1119",
        ),
        Handler(
            "Kimi K2",
            ("<|tool_calls_section_begin|>", "<|tool_call_begin|>"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1123-1127",
        ),
        Handler(
            "Kimi K3",
            ("<|open|>", "<|close|>", "<|end_of_msg|>"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1130-1134",
        ),
        Handler(
            "Ling 3.0",
            ("<role>ASSISTANT</role>", "<arg_key>"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1138-1142",
        ),
        Handler(
            "Cohere2 MoE",
            ("<|START_TEXT|>", "<|START_ACTION|>"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1147-1151",
        ),
        Handler(
            "LFM2",
            ("<|tool_list_start|>", "<|tool_list_end|>"),
            Rewrite.COPY_TO_THINKING,
            f"{_CHAT_CPP}:1153-1156, common/parsers/lfm2.cpp:5-8, :27-34",
        ),
        Handler(
            "LFM2.5",
            ("List of tools: [",),
            Rewrite.COPY_TO_THINKING,
            f"{_CHAT_CPP}:1159-1163, common/parsers/lfm2.cpp:27-34",
            excludes=("<|tool_list_start|>",),
        ),
        Handler(
            "GigaChat V3",
            ("<|role_sep|>", "<|message_sep|>"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1166-1171",
            excludes=("<|function_call|>",),
        ),
        Handler(
            "MiniMax-M3",
            ("]<]minimax[>[", "<tool_call>", "<invoke name="),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1175-1180",
        ),
        Handler(
            # V4's reordering of several tool results (deepseek.cpp:6-67) leaves one result as is.
            "DeepSeek V3.2/V4",
            ("dsml_token", "DSML"),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1185-1191",
            requires_any=("function_calls", "tool_calls"),
        ),
        Handler(
            "Gemma 4 (older template)",
            ("'<|tool_call>call:'",),
            Rewrite.GEMMA4_TOOL_RESPONSES,
            f"{_CHAT_CPP}:1194-1200, common/parsers/gemma4.cpp:15-147",
            excludes=("{#- OpenAI Chat Completions:",),
        ),
        Handler(
            "Gemma 4",
            ("'<|tool_call>call:'",),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1194-1202",
        ),
        Handler(
            "MiniCPM5",
            ("Tool usage guidelines:", '<function name="', '<param name="'),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1205-1210",
        ),
        Handler(
            "Qwen3-Coder",
            ("<tool_call>", "<function=", "<parameter="),
            Rewrite.KEEP,
            f"{_CHAT_CPP}:1213-1220",
            excludes=("'<tool_call><function=' ~ tool_call.name ~ '>'",),
        ),
    ),
)
"""llama.cpp's ``llama-server --jinja`` (the version of the pinned llama-cpp-python sdist)."""

PROFILES: Final[Mapping[str, RenderProfile]] = MappingProxyType({LLAMA_SERVER.name: LLAMA_SERVER})
"""Every render profile by name."""


def causes(
    profile: RenderProfile,
    template: str,
    carried: tuple[str, ...],
    *,
    dropped_matters: bool,
    switch_matters: bool,
    switches: tuple[str, ...],
    switch_on: bool | None = None,
) -> list[str]:
    """Why a field's verdict under ``profile`` differs from the plain render, each reason
    with its llama.cpp source: fields the server does not pass (``dropped_matters``: the
    plain verdict of the passed fields alone differs), the rewrites that reach a passed field,
    the switch variables the template reads (``switch_matters``: flipping the switch changes
    the verdict; ``switch_on``: the setting rendered, default the server's). ``carried`` is the
    keys the variant puts on the message. A difference none
    of these explain is put on the round trip itself (``content: ""`` for a null content)."""
    out: list[str] = []
    dropped = [f for f in carried if f not in profile.passes]
    if dropped and dropped_matters:
        out.append(f"{', '.join(dropped)} not passed to the template ({profile.passes_source})")
    if any(f in profile.passes for f in carried):
        out.extend(
            f"{h.name} handler: {h.rewrite} ({h.source})"
            for h in profile.rewrites_for(template)
            if h.rewrite is not Rewrite.KEEP
        )
    if switches and switch_matters:
        on = profile.switch.default_on if switch_on is None else switch_on
        values = profile.switch.values(on)
        flag = profile.switch.on_flag if on else profile.switch.off_flag
        default = ", the default" if on == profile.switch.default_on else ""
        out.append(
            "server sets "
            + ", ".join(f"{v}={str(values[v]).lower()}" for v in switches)
            + f" ({flag}{default}; {profile.switch.source})"
        )
    if not out:
        out.append("the server's message round trip (common/chat.cpp:187-266, :373-468)")
    return out
