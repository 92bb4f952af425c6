"""Ground truth on a real llama.cpp server with the real Qwen3-0.6B chat template.

llama-server --jinja reads ``reasoning_content`` only and Qwen3's template renders it only
after the last user query: in the loop, not across turns. ``reasoning`` and
``reasoning_details`` are accepted and ignored. ``all`` holds ``reasoning_content``, so it is
consumed in the loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval.embedded import local_target
from reasonwire.localserver.pytest_plugin import local_servers, qwen3_server  # noqa: F401
from reasonwire.localserver.server import LocalServer

pytestmark = [pytest.mark.localserver, pytest.mark.slow]


def test_qwen3_template_verdicts(qwen3_server: LocalServer, tmp_path: Path) -> None:  # noqa: F811
    run_eval(EvalConfig(targets=[local_target(qwen3_server.base_url)], out=tmp_path, workers=1))
    matrix = build_matrix(tmp_path)
    (row,) = matrix["rows"]
    text = row["text"]
    assert text["reasoning_content"]["verdict"] == "in-loop-only"
    assert text["reasoning"]["verdict"] == "accepted-ignored"
    assert text["reasoning_details"]["verdict"] == "accepted-ignored"
    assert text["all"]["in_loop"]["outcome"] == "consumed"
    assert text["all"]["verdict"] == "in-loop-only"
    # the delta is the real tokenization of the trace through the template: near T
    delta = text["reasoning_content"]["in_loop"]["delta"]
    assert 0.5 * row["T"] <= delta <= 1.5 * row["T"]
    assert text["reasoning"]["in_loop"]["delta"] == 0
