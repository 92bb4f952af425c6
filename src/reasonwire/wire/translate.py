"""Chat Completions in, Responses on the wire: the request, the answer and the stream.

Why: some OpenAI reasoning models refuse function tools together with a reasoning effort on
Chat Completions, but take both on the Responses API. A gateway route can then accept a
client's Chat Completions request, send it upstream as a Responses request (stateless:
``store: false`` with the encrypted reasoning included), and give the client a Chat
Completions answer. The reasoning items never reach the client: the Responses output items of
an assistant turn are kept in the vault under the turn's first tool call id (or its text) and
put back, whole and in order, in place of that assistant message on the next request, so the
tool loop stays continuous (pairing and encrypted content intact).

Mappings follow the two references: messages to input items (assistant tool calls to
``function_call``, tool results to ``function_call_output``), tools ``{type, function: {..}}``
to ``{type, name, description, parameters}``, ``max_tokens`` / ``max_completion_tokens`` to
``max_output_tokens``; the answer's text parts and function calls back to a message with
``tool_calls``, usage ``input_tokens``/``output_tokens`` to ``prompt_tokens``/
``completion_tokens`` with the cached and reasoning details.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from reasonwire.wire.model import JSON, JsonObject
from reasonwire.wire.projection import encode_event
from reasonwire.wire.sse import SSEDecoder
from reasonwire.wire.vault import Lookup, text_key

INCLUDE = "reasoning.encrypted_content"

_PASS = ("temperature", "top_p", "parallel_tool_calls", "user", "metadata", "stream")
"""Chat request fields with the same name and meaning on Responses."""


def _key(call_ids: list[str], text: str) -> str:
    return "tr:" + call_ids[0] if call_ids else "tr" + text_key(text)


def _text_of(content: JSON) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _user_content(content: JSON) -> JSON:
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    parts: list[JSON] = []
    for p in content:
        if not isinstance(p, dict):
            continue
        if p.get("type") == "text":
            parts.append({"type": "input_text", "text": p.get("text", "")})
        elif p.get("type") == "image_url":
            url = p.get("image_url")
            link = url.get("url") if isinstance(url, dict) else url
            parts.append({"type": "input_image", "image_url": link})
    return parts


def _assistant_items(msg: Mapping[str, JSON]) -> list[JSON]:
    """An assistant message built as Responses items (history the vault does not know)."""
    items: list[JSON] = []
    text = _text_of(msg.get("content"))
    if text:
        items.append(
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": text}]}
        )  # fmt: skip
    for call in msg.get("tool_calls") or ():
        if isinstance(call, dict):
            fn = call.get("function") or {}
            items.append(
                {"type": "function_call", "call_id": call.get("id"),
                 "name": fn.get("name"), "arguments": fn.get("arguments", "")}
            )  # fmt: skip
    return items


def _tool(tool: JSON) -> JSON:
    fn = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(fn, dict):
        return tool
    out: dict[str, JSON] = {"type": "function", "name": fn.get("name")}
    for key in ("description", "parameters", "strict"):
        if key in fn:
            out[key] = fn[key]
    return out


def _tool_choice(choice: JSON) -> JSON:
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def chat_to_responses(body: Mapping[str, JSON], lookup: Lookup) -> tuple[JsonObject, int]:
    """The Responses request for a (validated) Chat Completions ``body``, and how many
    assistant turns were replaced by their vaulted output items."""
    items: list[JSON] = []
    reattached = 0
    for msg in body.get("messages") or ():
        role = msg.get("role")
        if role in ("system", "developer"):
            items.append({"role": role, "content": _text_of(msg.get("content"))})
        elif role == "user":
            items.append({"role": "user", "content": _user_content(msg.get("content"))})
        elif role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": msg.get("tool_call_id"),
                 "output": _text_of(msg.get("content"))}
            )  # fmt: skip
        elif role == "assistant":
            ids = [str(c["id"]) for c in msg.get("tool_calls") or () if c.get("id")]
            found = lookup(_key(ids, _text_of(msg.get("content"))))
            if isinstance(found, list):
                items.extend(found)
                reattached += 1
            else:
                items.extend(_assistant_items(msg))
    out: JsonObject = {"model": body.get("model"), "input": items}
    if body.get("tools"):
        out["tools"] = [_tool(t) for t in body["tools"]]
    if "tool_choice" in body:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None:
        out["max_output_tokens"] = limit
    for key in _PASS:
        if key in body:
            out[key] = body[key]
    out["store"] = False
    out["include"] = [INCLUDE]
    return out, reattached


def _usage(usage: JSON) -> JSON:
    if not isinstance(usage, dict):
        return None
    out: dict[str, JSON] = {
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
        "total_tokens": usage.get("total_tokens"),
    }
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    if cached is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    if reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


def _finish(response: Mapping[str, JSON], has_calls: bool) -> str:
    if has_calls:
        return "tool_calls"
    details = response.get("incomplete_details")
    if isinstance(details, dict) and details.get("reason") == "max_output_tokens":
        return "length"
    return "stop"


def responses_to_chat(response: Mapping[str, JSON]) -> tuple[JsonObject, tuple[str, JSON]]:
    """A Chat Completions answer for a Responses ``response``, and the vault entry (key, the
    turn's output items) that lets the next request put the reasoning back."""
    output = [i for i in response.get("output") or () if isinstance(i, dict)]
    text = "".join(
        str(p.get("text", ""))
        for i in output
        if i.get("type") == "message"
        for p in i.get("content") or ()
        if isinstance(p, dict) and p.get("type") == "output_text"
    )
    calls = [
        {"id": i.get("call_id"), "type": "function",
         "function": {"name": i.get("name"), "arguments": i.get("arguments", "")}}
        for i in output
        if i.get("type") == "function_call"
    ]  # fmt: skip
    message: dict[str, JSON] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = calls
    answer: JsonObject = {
        "id": response.get("id"),
        "object": "chat.completion",
        "created": int(response.get("created_at") or 0),
        "model": response.get("model"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish(response, bool(calls))}
        ],
        "usage": _usage(response.get("usage")),
    }
    key = _key([str(c["id"]) for c in calls if c["id"]], text)
    return answer, (key, output)


class ResponsesToChatStream:
    """A Responses SSE stream in, a Chat Completions chunk stream out (``StreamProjector``).

    Text deltas become ``delta.content``, function calls ``delta.tool_calls`` (an index per
    call in output order), ``response.completed`` the finish chunk, a usage chunk when the
    client asked for it, and ``[DONE]``. Reasoning events produce nothing. The completed
    response is kept for the vault (:attr:`completed`).
    """

    def __init__(self, include_usage: bool) -> None:
        self._sse = SSEDecoder()
        self._usage = include_usage
        self._calls: dict[int, int] = {}
        self._id = ""
        self._model = ""
        self._created = 0
        self.completed: JsonObject | None = None

    def feed(self, chunk: bytes) -> bytes:
        return b"".join(self._on(ev.data) for ev in self._sse.feed(chunk))

    def close(self) -> bytes:
        return b"".join(self._on(ev.data) for ev in self._sse.close())

    def fail(self, reason: str) -> bytes:
        body = {"error": {"type": "api_error", "code": "upstream_stream", "message": reason}}
        return encode_event("message", orjson.dumps(body))

    def _chunk(self, delta: JSON, finish: str | None = None, usage: JSON = None) -> bytes:
        body: dict[str, JSON] = {
            "id": self._id, "object": "chat.completion.chunk", "created": self._created,
            "model": self._model,
            "choices": [] if delta is None else [
                {"index": 0, "delta": delta, "finish_reason": finish}
            ],
        }  # fmt: skip
        if usage is not None:
            body["usage"] = usage
        return encode_event("message", orjson.dumps(body))

    def _on(self, data: str) -> bytes:
        try:
            ev = orjson.loads(data)
        except orjson.JSONDecodeError:
            return b""
        if not isinstance(ev, dict):
            return b""
        typ = ev.get("type")
        if typ == "response.created" and isinstance(ev.get("response"), dict):
            r = ev["response"]
            self._id, self._model = str(r.get("id", "")), str(r.get("model", ""))
            self._created = int(r.get("created_at") or 0)
            return self._chunk({"role": "assistant", "content": ""})
        if typ == "response.output_text.delta" and isinstance(ev.get("delta"), str):
            return self._chunk({"content": ev["delta"]})
        if typ == "response.output_item.added":
            item = ev.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                n = self._calls.setdefault(int(ev.get("output_index", 0)), len(self._calls))
                return self._chunk(
                    {"tool_calls": [{"index": n, "id": item.get("call_id"), "type": "function",
                                     "function": {"name": item.get("name"), "arguments": ""}}]}
                )  # fmt: skip
        if typ == "response.function_call_arguments.delta":
            at = self._calls.get(int(ev.get("output_index", 0)))
            if at is not None and isinstance(ev.get("delta"), str):
                return self._chunk(
                    {"tool_calls": [{"index": at, "function": {"arguments": ev["delta"]}}]}
                )
        if typ in ("response.completed", "response.incomplete") and isinstance(
            ev.get("response"), dict
        ):
            self.completed = ev["response"]
            finish = _finish(self.completed, bool(self._calls))
            out = self._chunk({}, finish)
            if self._usage:
                out += self._chunk(None, usage=_usage(self.completed.get("usage")))
            return out + encode_event("message", "[DONE]")
        if typ in ("response.failed", "error"):
            return self.fail("the upstream reported a failure")
        return b""


class ChatToResponses:
    """The translation as one object the gateway asks (no dialect names compared above
    ``wire/``): a Chat Completions client, a Responses upstream."""

    client = "chat"
    upstream = "responses"

    def request(self, body: Mapping[str, JSON], lookup: Lookup) -> tuple[JsonObject, int]:
        return chat_to_responses(body, lookup)

    def answer(self, response: Mapping[str, JSON]) -> tuple[JsonObject, tuple[str, JSON]]:
        return responses_to_chat(response)

    def stream(self, client_body: Mapping[str, JSON]) -> ResponsesToChatStream:
        opts = client_body.get("stream_options")
        return ResponsesToChatStream(isinstance(opts, dict) and opts.get("include_usage") is True)

    def vault_entry(self, stream: ResponsesToChatStream) -> tuple[str, JSON] | None:
        """The vault entry of a finished translated stream (None when it did not complete)."""
        if stream.completed is None:
            return None
        return responses_to_chat(stream.completed)[1]


TRANSLATIONS: dict[tuple[str, str], ChatToResponses] = {("chat", "responses"): ChatToResponses()}
"""(client dialect, upstream dialect) -> the translation between them."""


def translation(client: str, upstream: str) -> ChatToResponses | None:
    """The translation a route needs, or None when client and upstream speak the same."""
    return None if client == upstream else TRANSLATIONS.get((client, upstream))


__all__ = [
    "INCLUDE",
    "TRANSLATIONS",
    "ChatToResponses",
    "ResponsesToChatStream",
    "chat_to_responses",
    "responses_to_chat",
    "translation",
]
