"""Message rewrites a server applies before it renders a chat template, one function each.

Why: a server does not hand a client's messages to the template as sent. llama.cpp's server
parses them into its own message type and back (keeping only the keys that type has), and some
of its template handlers rewrite them again for the template family they serve. A scan that
predicts what such a server renders must apply the same rewrites; these are written from the
llama.cpp sources named on each function (the tree of the pinned llama-cpp-python sdist,
``vendor/llama.cpp``), and :mod:`reasonwire.templates.server_profile` says which one applies
when. Every function returns new dicts and leaves its input untouched.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from enum import StrEnum
from typing import Final

from reasonwire.wire.model import JSON, JsonObject

Messages = list[JsonObject]


def round_trip(messages: Messages, passes: tuple[str, ...]) -> Messages:
    """The messages after llama-server's parse into ``common_chat_msg`` and back to JSON.

    ``common/chat.cpp:373-468`` (``common_chat_msgs_parse_oaicompat``) keeps role, content,
    tool calls (function name and arguments, id), ``reasoning_content``, ``name`` and
    ``tool_call_id``; ``common_chat_msg::to_json_oaicompat`` (``:187-266``) writes them back
    with ``content: ""`` where the message had none (``:230-231``), and without an empty
    ``reasoning_content``, ``name``, ``tool_call_id`` or id (``:233-256``). ``passes`` is the
    carrier fields the server keeps (the profile's): any other key a client sent never
    reaches the template.
    """
    out: Messages = []
    for msg in messages:
        content = msg.get("content")
        new: JsonObject = {
            "role": msg["role"],
            "content": "" if content is None else copy.deepcopy(content),
        }
        for key in (*passes, "name", "tool_call_id"):
            if msg.get(key):  # empty strings are not written back
                new[key] = copy.deepcopy(msg[key])
        if msg.get("tool_calls"):
            new["tool_calls"] = [_call(call) for call in msg["tool_calls"]]
        out.append(new)
    return out


def _call(call: JsonObject) -> JsonObject:
    fn = call["function"]
    out: JsonObject = {
        "type": "function",
        "function": {"name": fn["name"], "arguments": copy.deepcopy(fn["arguments"])},
    }
    if call.get("id"):
        out["id"] = call["id"]
    return out


def copy_to_thinking(messages: Messages) -> Messages:
    """``reasoning_content`` also as ``thinking`` (``common/parsers/lfm2.cpp:27-34``: "Copy
    reasoning to the "thinking" field the template expects")."""
    out = copy.deepcopy(messages)
    for msg in out:
        if isinstance(msg.get("reasoning_content"), str):
            msg["thinking"] = msg["reasoning_content"]
    return out


def copy_to_thinking_drop_call_content(messages: Messages) -> Messages:
    """As :func:`copy_to_thinking`, and a tool-call message so rewritten loses its
    ``content`` (``common/parsers/gpt-oss.cpp:7-17``)."""
    out = copy_to_thinking(messages)
    for msg in out:
        if isinstance(msg.get("reasoning_content"), str) and msg.get("tool_calls"):
            msg.pop("content", None)
    return out


def thinking_blocks(messages: Messages) -> Messages:
    """System and assistant messages get list content: a ``{"type": "thinking"}`` block from
    ``reasoning_content`` (then removed), then the text as a ``{"type": "text"}`` block
    (``common/parsers/ministral3.cpp:8-44``)."""
    out: Messages = []
    for msg in messages:
        if msg.get("role") not in ("system", "assistant"):
            out.append(copy.deepcopy(msg))
            continue
        blocks: list[JSON] = []
        if isinstance(msg.get("reasoning_content"), str):
            blocks.append({"type": "thinking", "thinking": msg["reasoning_content"]})
        content = msg.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks.extend(copy.deepcopy(content))
        new = copy.deepcopy(msg)
        new["content"] = blocks
        new.pop("reasoning_content", None)
        out.append(new)
    return out


def gemma4_tool_responses(messages: Messages) -> Messages:
    """An assistant tool-call message, the tool results after it and a following plain
    assistant answer become one assistant message with ``tool_responses`` (name and the
    result, parsed as JSON where it is JSON), ``content`` from the answer and the call's
    ``reasoning_content`` (``common/parsers/gemma4.cpp:15-147``, applied to Gemma 4 templates
    older than the one that reads ``role: tool`` itself, ``common/chat.cpp:1194-1200``)."""
    out: Messages = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        if msg.get("role") != "assistant" or not msg.get("tool_calls"):
            out.append(copy.deepcopy(msg))
            i += 1
            continue
        calls = copy.deepcopy(msg["tool_calls"])
        responses: list[JsonObject] = []
        i += 1
        while i < len(messages) and messages[i].get("role") == "tool":
            responses.append(_gemma4_response(messages[i], calls, len(responses)))
            i += 1
        merged: JsonObject = {"role": "assistant", "tool_calls": calls}
        if responses:
            merged["tool_responses"] = responses
        if i < len(messages) and _is_plain_answer(messages[i]):
            merged["content"] = copy.deepcopy(messages[i]["content"])
            i += 1
        if isinstance(msg.get("reasoning_content"), str):
            merged["reasoning_content"] = msg["reasoning_content"]
        out.append(merged)
    return out


def _gemma4_response(tool: JsonObject, calls: list[JSON], index: int) -> JsonObject:
    content = tool.get("content")
    response: JSON = content
    if isinstance(content, str):
        try:
            response = json.loads(content)
        except ValueError:
            response = content
    name = calls[index]["function"].get("name", "") if index < len(calls) else ""
    return {"name": name or tool.get("tool_call_id", ""), "response": response}


def _is_plain_answer(msg: JsonObject) -> bool:
    content = msg.get("content")
    return msg.get("role") == "assistant" and not msg.get("tool_calls") and bool(content)


def trim_content(messages: Messages) -> Messages:
    """``content`` and ``reasoning_content`` without leading and trailing whitespace
    (``common/chat.cpp:1066-1077``, applied to StepFun templates at ``:1235-1240``)."""
    out = copy.deepcopy(messages)
    for msg in out:
        for key in ("content", "reasoning_content"):
            if isinstance(msg.get(key), str):
                msg[key] = msg[key].strip(" \t\n\r")
    return out


def keep(messages: Messages) -> Messages:
    """No rewrite: the handler renders the messages as the round trip left them."""
    return copy.deepcopy(messages)


class Rewrite(StrEnum):
    """A rewrite by name, as profiles and rows spell it."""

    KEEP = "keep"
    COPY_TO_THINKING = "reasoning_content->thinking"
    COPY_TO_THINKING_DROP_CALL_CONTENT = "reasoning_content->thinking, tool-call content dropped"
    THINKING_BLOCKS = "reasoning_content->{type: thinking} content block"
    GEMMA4_TOOL_RESPONSES = "tool results merged into the call (tool_responses)"
    TRIM = "content and reasoning_content trimmed"

    def apply(self, messages: Messages) -> Messages:
        return _FUNCTIONS[self](messages)


_FUNCTIONS: Final[dict[Rewrite, Callable[[Messages], Messages]]] = {
    Rewrite.KEEP: keep,
    Rewrite.COPY_TO_THINKING: copy_to_thinking,
    Rewrite.COPY_TO_THINKING_DROP_CALL_CONTENT: copy_to_thinking_drop_call_content,
    Rewrite.THINKING_BLOCKS: thinking_blocks,
    Rewrite.GEMMA4_TOOL_RESPONSES: gemma4_tool_responses,
    Rewrite.TRIM: trim_content,
}
