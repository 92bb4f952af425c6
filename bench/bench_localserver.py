"""Local real-server bar: what one measured request costs against a real llama.cpp server.

Measures, with a warm cache (binary built, model written):

* startup: ``LocalServer`` start to ``/health`` 200, median of three cold starts;
* request: one ``/v1/chat/completions`` (max_tokens 1) for the tool-loop conversation with a
  ~1600-character ``reasoning_content``, median over ``--requests``;
* peer (same run, same conversation): the offline count, jinja2 rendering plus the same
  vocabulary's tokenizer, which is what a test could do without any server;
* peer 2, when ``llama-cpp-python[server]`` is installed: the same request to its server.

Prints the ratios. ``.venv/bin/python bench/bench_localserver.py [--requests 30]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.localserver.model import model_path, resolve_template
from reasonwire.localserver.server import (
    LlamaCppPythonServer,
    LocalServer,
    ManagedServer,
    llama_cpp_python_available,
)
from reasonwire.templates.render import render_chat_template

TEMPLATE = "Qwen-Qwen3-0.6B"
PROBE = ("The user asks for the weather in Paris, so I should call the weather tool. " * 25)[:1600]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": PROBE,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18 C, clear"},
]


def _median_ms(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def _request(server: ManagedServer) -> Callable[[], int]:
    client = httpx.Client(timeout=60)
    body = {"messages": MESSAGES, "tools": TOOLS, "max_tokens": 1, "temperature": 0}

    def go() -> int:
        resp = client.post(server.base_url + "/chat/completions", json=body)
        resp.raise_for_status()
        return int(resp.json()["usage"]["prompt_tokens"])

    return go


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()

    model = model_path(TEMPLATE)
    template = resolve_template(TEMPLATE).read_text()
    tok = GGUFVocabTokenizer.from_file(model)

    def offline() -> int:
        return tok.count(render_chat_template(template, MESSAGES, TOOLS))

    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        with LocalServer(TEMPLATE):
            starts.append(time.perf_counter() - t0)
    with LocalServer(TEMPLATE) as server:
        go = _request(server)
        served = go()
        request_ms = _median_ms(go, args.requests)
    offline_ms = _median_ms(offline, args.requests)
    counted = offline()

    print(f"template {TEMPLATE}, model {Path(model).name}")
    print(f"llama-server startup (median of 3): {statistics.median(starts) * 1000:8.1f} ms")
    print(f"llama-server request  (median):     {request_ms:8.2f} ms  prompt_tokens={served}")
    print(f"offline render+count  (median):     {offline_ms:8.2f} ms  tokens={counted}")
    print(
        f"ratio server/offline: {request_ms / offline_ms:.2f}x; counts equal: {served == counted}"
    )
    if llama_cpp_python_available():
        with LlamaCppPythonServer(TEMPLATE) as py_server:
            py_go = _request(py_server)
            py_tokens = py_go()
            py_ms = _median_ms(py_go, args.requests)
        print(f"llama-cpp-python request (median): {py_ms:8.2f} ms  prompt_tokens={py_tokens}")
        print(f"ratio llama-cpp-python/llama-server: {py_ms / request_ms:.2f}x")
    else:
        print("llama-cpp-python[server] not installed: peer 2 skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
