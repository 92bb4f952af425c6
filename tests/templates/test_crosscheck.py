"""The offline scan against the real llama-server: the fast subset of ``make crosscheck``.

Expected server verdicts are the real server's, as measured and written down before this
code (issue 5 for Qwen3; issue 14 and WIRE.md, "Server-side switches that change what a
template consumes", for GLM-4.7-Flash, LFM2.5 and gpt-oss); the profile's prediction is then
checked against the same server.
"""

from __future__ import annotations

import pytest

from reasonwire.crosscheck import SAMPLE, Finding, cross_check, findings_markdown, unserved
from reasonwire.llamacpp.sdist import templates_dir
from reasonwire.method.verdicts import Verdict
from reasonwire.templates.rows import Row, ServerRow
from reasonwire.templates.scan import resolve_sources, scan
from reasonwire.wire.model import ABSENT


@pytest.fixture(scope="module")
def built() -> None:
    from reasonwire.localserver.build import build_server, cached_server_binary

    if cached_server_binary() is None:
        build_server(quiet=False)


@pytest.fixture(scope="module")
def sample(built: None) -> dict[tuple[str, str, str], Finding]:
    result = scan(resolve_sources([str(templates_dir() / f"{n}.jinja") for n in SAMPLE]))
    findings = cross_check(result.rows, result.fixture)
    return {(f.template, f.field, f.setting): f for f in findings}


@pytest.mark.localserver
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_qwen3_server_agrees_with_offline_scan(sample: dict[tuple[str, str, str], Finding]) -> None:
    by = {fld: f for (t, fld, s), f in sample.items() if t == "Qwen-Qwen3-0.6B"}
    # ground truth measured on the real server (issue 5): llama.cpp reads reasoning_content only
    assert by["reasoning_content"].server == "in-loop-only", by["reasoning_content"]
    assert by["reasoning"].server == "accepted-ignored"
    assert by["reasoning_details"].server == "accepted-ignored"
    assert by["all"].server == "in-loop-only"
    assert by["reasoning_content"].server_trace_tokens
    assert all(f.agree and f.explained for f in by.values()), findings_markdown(list(by.values()))
    assert {s for (t, _, s) in sample if t == "Qwen-Qwen3-0.6B"} == {"default"}  # reads no switch


@pytest.mark.localserver
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_glm_follows_the_preserve_switch(sample: dict[tuple[str, str, str], Finding]) -> None:
    on = sample[("GLM-4.7-Flash", "reasoning_content", "default")]
    off = sample[("GLM-4.7-Flash", "reasoning_content", "--no-reasoning-preserve")]
    # issue 14: consumes-all-turns on the real server (617/617) where the plain render says
    # in-loop-only; WIRE.md: earlier turns only when clear_thinking is defined and false.
    assert (on.offline, on.server) == ("in-loop-only", "consumes-all-turns"), on
    assert on.explained is True and on.predicted == "consumes-all-turns"
    assert any("clear_thinking=false" in c for c in on.causes), on.causes
    assert off.server == "in-loop-only" and off.explained is True, off


@pytest.mark.localserver
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_rewriting_families_are_predicted(sample: dict[tuple[str, str, str], Finding]) -> None:
    # WIRE.md: the server rewrites reasoning_content into `thinking` for LFM2 and gpt-oss, so
    # a field the plain render ignores is consumed there, and `thinking` sent by a client is
    # dropped.
    for name in ("LFM2.5-8B-A1B", "openai-gpt-oss-120b"):
        rc = sample[(name, "reasoning_content", "default")]
        assert rc.offline == "accepted-ignored" and rc.server != "accepted-ignored", rc
        assert rc.explained is True, rc
        assert any("handler: reasoning_content->thinking" in c for c in rc.causes), rc.causes
        thinking = sample[(name, "thinking", "default")]
        assert thinking.server == "accepted-ignored" and thinking.explained is True, thinking


@pytest.mark.localserver
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_no_comparison_of_the_subset_is_unexplained(
    sample: dict[tuple[str, str, str], Finding],
) -> None:
    findings = list(sample.values())
    assert {f.template for f in findings} == set(SAMPLE)
    assert [f for f in findings if f.explained is False] == [], findings_markdown(findings)
    md = findings_markdown(findings, 1.0)
    assert "0 not predicted by the llama-server profile; 1 template(s)" in md


@pytest.mark.localserver
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_template_the_real_server_refuses_is_listed_with_its_reason(
    sample: dict[tuple[str, str, str], Finding],
) -> None:
    # Measured: llama-server answers 400 to every request with tools for Mistral Nemo; its
    # parser generation renders its own tool calls, whose ids the template refuses.
    nemo = [f for (t, _, _), f in sample.items() if t == "mistralai-Mistral-Nemo-Instruct-2407"]
    assert nemo and all(f.server == "baseline-failed" for f in nemo)
    assert all(f.explained is ABSENT for f in nemo)  # no verdict: nothing to compare
    [(key, reason)] = unserved(list(sample.values())).items()
    assert key == ("mistralai-Mistral-Nemo-Instruct-2407", "default")
    assert "Unable to generate parser for this template" in reason
    assert "Tool call IDs should be alphanumeric strings with length 9!" in reason
    # the server names the template's line 62; the reason quotes it from the template file
    assert "at line 62," in reason
    assert '[template line 62: {{- raise_exception("Tool call IDs should be' in reason
    md = findings_markdown(list(sample.values()))
    assert "- mistralai-Mistral-Nemo-Instruct-2407 (default): baseline in_loop: HTTP 400" in md


def _row(name: str, verdict: Verdict, server: Verdict, off: Verdict | None) -> Row:
    srv = ServerRow(
        "llama-server", server, 1, 1, None, ("clear_thinking",) if off else (), off, ("why",), None
    )
    return Row(
        name, "reasoning_content", verdict, 1, 1, "chars/4", None, False, 10, 5,
        True, True, "args=object", "/nonexistent/t.jinja", srv,
    )  # fmt: skip


def test_a_template_the_server_cannot_load_is_listed_with_its_reason() -> None:
    from reasonwire.templates.fixture import FIELDS, Fixture

    rows = [
        _row(
            "no-such-template",
            Verdict.IN_LOOP_ONLY,
            Verdict.CONSUMES_ALL_TURNS,
            Verdict.IN_LOOP_ONLY,
        )
    ]
    findings = cross_check(rows, Fixture.from_seed(), ["no-such-template"])
    # a template that reads a switch is tried at both settings; each field gets the reason
    assert len(findings) == 2 * len(FIELDS)
    assert all(f.server == "error" and f.note for f in findings)
    assert all(f.explained is not True for f in findings)
    assert "not predicted" in findings_markdown(findings)


def test_timed_cross_check_passes_its_options_on() -> None:
    from reasonwire.crosscheck.check import timed_cross_check
    from reasonwire.templates.fixture import Fixture

    rows = [
        _row(
            "no-such-template",
            Verdict.IN_LOOP_ONLY,
            Verdict.CONSUMES_ALL_TURNS,
            Verdict.IN_LOOP_ONLY,
        )
    ]
    told: list[str] = []
    findings, seconds = timed_cross_check(
        rows, Fixture.from_seed(), ["no-such-template"], progress=told.append
    )
    # one progress line per setting tried: the default, then the switch flipped (WIRE.md:
    # llama-server's --no-reasoning-preserve)
    assert told == ["no-such-template", "no-such-template (--no-reasoning-preserve)"]
    assert findings and seconds >= 0
