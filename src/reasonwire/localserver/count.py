"""llama-server's own prompt count, as a probe :class:`~reasonwire.probe.PromptCounter`.

Why: ``usage.prompt_tokens`` of a chat completion is the server's chat template rendered with
the request's messages and tools, then tokenized with the model's vocab. llama-server exposes
both halves: ``POST /apply-template`` renders the same request body to the prompt string
(the chat completion's own parsing: messages, tools, ``chat_template_kwargs``) and ``POST
/tokenize`` counts it with the model's tokenizer (``add_special`` as a completion does). So
the probe can ask, for a re-sent reasoning text, what the prompt costs with and without it -
the figure the server will bill, its ``<think>`` framing included - without a model call.
"""

from __future__ import annotations

from typing import Any

import httpx

from reasonwire.errors import ProviderError
from reasonwire.probe.carriers import PromptCounter

COUNT_TIMEOUT = 30.0
"""Seconds per count request (both are local: rendering and tokenizing, no decoding)."""


def llama_server_counter(
    root_url: str, *, client: httpx.Client | None = None, timeout: float = COUNT_TIMEOUT
) -> PromptCounter:
    """A :class:`PromptCounter` for the llama-server at ``root_url`` (``http://host:port``,
    without ``/v1``). Each count is two local requests; a failure raises (the probe then keeps
    the carrier's bytes estimate)."""
    http = client or httpx.Client(timeout=timeout)
    root = root_url.rstrip("/")

    def post(path: str, body: dict[str, Any]) -> Any:
        resp = http.post(root + path, json=body)
        if resp.status_code != 200:
            raise ProviderError(resp.status_code, resp.text, url=root + path)
        return resp.json()

    def count(body: Any) -> int:
        request = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        prompt = post("/apply-template", request)["prompt"]
        return len(post("/tokenize", {"content": prompt, "add_special": True})["tokens"])

    return PromptCounter("llama-server /apply-template + /tokenize", count)


__all__ = ["COUNT_TIMEOUT", "llama_server_counter"]
