"""The second lane: the ``llama-cpp-python[server]`` package's own server (optional extra).

Install with ``.venv/bin/pip install 'llama-cpp-python[server]==0.3.36'``, or in a separate venv
named by ``REASONWIRE_LLAMA_CPP_PYTHON``. It renders the same real template from the same model
file but builds the template's messages itself and drops ``reasoning_content``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reasonwire.errors import ConfigError
from reasonwire.localserver.server import LlamaCppPythonServer, llama_cpp_python_available

from .conversation import PROBE, across_messages, loop_messages, prompt_tokens

pytestmark = pytest.mark.localserver

needs_package = pytest.mark.skipif(
    not llama_cpp_python_available(),
    reason="optional: pip install 'llama-cpp-python[server]==0.3.36' "
    "(or set REASONWIRE_LLAMA_CPP_PYTHON to a Python that has it)",
)


@pytest.fixture(scope="module")
def py_server() -> Iterator[LlamaCppPythonServer]:
    with LlamaCppPythonServer("Qwen-Qwen3-0.6B") as server:
        yield server


@pytest.mark.skipif(llama_cpp_python_available(), reason="package installed")
def test_missing_package_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"pip install 'llama-cpp-python\[server\]==0.3.36'"):
        LlamaCppPythonServer().start()


@needs_package
def test_reasoning_content_is_dropped_in_the_loop(py_server: LlamaCppPythonServer) -> None:
    base = prompt_tokens(py_server, loop_messages())
    assert base > 50
    assert prompt_tokens(py_server, loop_messages("reasoning_content", PROBE)) == base


@needs_package
def test_reasoning_content_is_dropped_across_turns(py_server: LlamaCppPythonServer) -> None:
    base = prompt_tokens(py_server, across_messages())
    assert prompt_tokens(py_server, across_messages("reasoning_content", PROBE)) == base
