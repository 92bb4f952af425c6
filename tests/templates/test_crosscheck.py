"""The offline scan against the real llama-server (Qwen3-0.6B template)."""

from __future__ import annotations

import pytest

from reasonwire.crosscheck import cross_check, findings_markdown
from reasonwire.llamacpp.sdist import templates_dir
from reasonwire.templates.scan import resolve_sources, scan

pytestmark = [pytest.mark.localserver, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def built() -> None:
    from reasonwire.localserver.build import build_server, cached_server_binary

    if cached_server_binary() is None:
        build_server(quiet=False)


def test_qwen3_server_agrees_with_offline_scan(built: None) -> None:
    result = scan(resolve_sources([str(templates_dir() / "Qwen-Qwen3-0.6B.jinja")]))
    findings = cross_check(result.rows, result.fixture, ["Qwen-Qwen3-0.6B"])
    by = {f.field: f for f in findings}
    # ground truth measured on the real server (issue 5): llama.cpp reads reasoning_content only
    assert by["reasoning_content"].server == "in-loop-only", by["reasoning_content"]
    assert by["reasoning"].server == "accepted-ignored"
    assert by["reasoning_details"].server == "accepted-ignored"
    assert by["all"].server == "in-loop-only"
    assert by["reasoning_content"].server_trace_tokens
    assert all(f.agree for f in findings), findings_markdown(findings)
