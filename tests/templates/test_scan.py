"""The offline scan against templates written for the test and the real corpus."""

# ruff: noqa: E501  (the test templates read best as one jinja line per rule)

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonwire.llamacpp.sdist import templates_dir
from reasonwire.templates.fixture import FIELDS
from reasonwire.templates.scan import (
    VERDICTS,
    ScanOptions,
    TemplateSource,
    html_section,
    resolve_sources,
    scan,
    write_outputs,
)

# Renders reasoning_content on every assistant turn.
EVERY_TURN = """
{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.role == 'assistant' and m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif -%}
{{ m.content or '' }}
{%- for tc in m.tool_calls or [] %}<call>{{ tc.function.name }} {{ tc.function.arguments | tojson }}</call>{% endfor %}
<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif -%}
"""

# Renders reasoning_content only on assistant turns after the last user message.
AFTER_LAST_USER = """
{%- set ns = namespace(last_user=-1) -%}
{%- for m in messages %}{% if m.role == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}{% endfor -%}
{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.role == 'assistant' and loop.index0 > ns.last_user and m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif -%}
{{ m.content or '' }}
{%- for tc in m.tool_calls or [] %}<call>{{ tc.function.name }}</call>{% endfor %}
<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif -%}
"""

# Reads only `thinking`, on every assistant turn.
THINKING_ONLY = """
{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.role == 'assistant' and m.thinking is defined %}<analysis>{{ m.thinking }}</analysis>{% endif -%}
{{ m.content or '' }}
<|end|>
{% endfor -%}
"""

BROKEN = """{%- for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('Tool messages are not welcome in this test template') }}{% endif %}{{ m.content }}{% endfor %}"""

# Accepts only string arguments and 9-character ids (a Mistral-style rule).
STRICT_SHAPES = """
{%- for m in messages -%}
{%- for tc in m.tool_calls or [] -%}
{%- if tc.function.arguments is not string %}{{ raise_exception('arguments must be a JSON string') }}{% endif -%}
{%- if tc.id | length != 9 %}{{ raise_exception('Tool call IDs should be alphanumeric strings with length 9!') }}{% endif -%}
{%- endfor -%}
[{{ m.role }}]{% if m.reasoning_content %}{{ m.reasoning_content }}{% endif %}{{ m.content or '' }}
{% endfor -%}
"""


def _rows(name: str, text: str) -> dict[str, dict[str, object]]:
    result = scan([TemplateSource(name, text, "test")], ScanOptions(chars_only=True))
    return {r.field: r.to_json() for r in result.rows}


def test_every_turn_template_consumes_all_turns() -> None:
    rows = _rows("every-turn", EVERY_TURN)
    assert rows["reasoning_content"]["verdict"] == "consumes-all-turns"
    assert rows["all"]["verdict"] == "consumes-all-turns"
    for field in ("reasoning", "reasoning_details", "thinking"):
        assert rows[field]["verdict"] == "accepted-ignored"
        assert rows[field]["in_loop_delta"] == 0
    rc = rows["reasoning_content"]
    assert rc["in_loop_canary"] is True and rc["cross_turn_canary"] is True


def test_after_last_user_template_is_in_loop_only() -> None:
    rows = _rows("after-last-user", AFTER_LAST_USER)
    rc = rows["reasoning_content"]
    assert rc["verdict"] == "in-loop-only"
    assert rc["cross_turn_delta"] == 0
    assert rc["in_loop_delta"] >= rc["threshold"]
    assert rows["reasoning"]["verdict"] == "accepted-ignored"


def test_thinking_only_template() -> None:
    rows = _rows("thinking-only", THINKING_ONLY)
    assert rows["thinking"]["verdict"] == "consumes-all-turns"
    assert rows["all"]["verdict"] == "consumes-all-turns"
    for field in ("reasoning_content", "reasoning", "reasoning_details"):
        assert rows[field]["verdict"] == "accepted-ignored"


def test_broken_template_reports_its_own_message() -> None:
    rows = _rows("broken", BROKEN)
    for field in FIELDS:
        assert rows[field]["verdict"] == "error"
        assert "Tool messages are not welcome in this test template" in str(rows[field]["error"])
        assert rows[field]["in_loop_delta"] is None


def test_syntax_error_is_an_error_row_not_a_crash() -> None:
    rows = _rows("syntax", "{% for m in messages %}{{ m.content }")
    assert rows["reasoning_content"]["verdict"] == "error"
    assert "syntax" in str(rows["reasoning_content"]["error"])


def test_documented_shapes_are_tried_before_an_error() -> None:
    rows = _rows("strict", STRICT_SHAPES)
    rc = rows["reasoning_content"]
    assert rc["verdict"] == "consumes-all-turns", rc
    assert "args=string" in str(rc["shape"]) and "ids=9-alnum" in str(rc["shape"])


def test_real_qwen3_template_reasoning_content_in_loop_only() -> None:
    [src] = resolve_sources([str(templates_dir() / "Qwen-Qwen3-0.6B.jinja")])
    result = scan([src])
    rows = {r.field: r for r in result.rows}
    assert rows["reasoning_content"].verdict == "in-loop-only"
    assert rows["reasoning_content"].tokenizer == "ggml-vocab-qwen2"
    assert rows["reasoning"].verdict == "accepted-ignored"
    assert rows["reasoning_details"].verdict == "accepted-ignored"
    assert rows["all"].verdict == "in-loop-only"


def test_corpus_bars(tmp_path: Path) -> None:
    result = scan()
    files = sorted(templates_dir().glob("*.jinja"))
    names = {r.template for r in result.rows}
    assert names == {p.stem for p in files}
    assert len(result.rows) == len(files) * len(FIELDS)
    assert len(result.errors()) <= 5
    for r in result.rows:
        assert r.verdict in VERDICTS
        if r.verdict == "error":
            assert r.error
    by = {(r.template, r.field): r.verdict for r in result.rows}
    assert by[("openai-gpt-oss-120b", "thinking")] == "in-loop-only"
    assert by[("meta-llama-Llama-3.1-8B-Instruct", "reasoning_content")] == "accepted-ignored"
    # Measured on the real llama-server over the whole corpus (WIRE.md, "Server-side switches
    # that change what a template consumes"): exactly these five consume reasoning_content
    # differently there than in a plain render; GLM-4.7-Flash consumes it in every turn
    # (issue 14: 617/617), since the server sets clear_thinking false.
    server = {(r.template, r.field): r.server for r in result.rows}
    differ = {
        t for (t, f), s in server.items() if f == "reasoning_content" and s.verdict != by[(t, f)]
    }
    assert differ == {
        "GLM-4.7-Flash",
        "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "LFM2.5-8B-A1B",
        "mistralai-Ministral-3-14B-Reasoning-2512",
        "openai-gpt-oss-120b",
    }
    glm = server[("GLM-4.7-Flash", "reasoning_content")]
    assert glm.verdict == "consumes-all-turns" and glm.switches == ("clear_thinking",)
    # the server never hands `reasoning`, `reasoning_details` or `thinking` to a template
    for (t, f), s in server.items():
        if f in ("reasoning", "reasoning_details", "thinking") and s.verdict != "error":
            assert s.verdict == "accepted-ignored", (t, f, s)
    _, mpath = write_outputs(result, tmp_path)
    assert "Qwen-Qwen3-0.6B" in mpath.read_text()


SCHEMA = {
    "template": str,
    "field": str,
    "verdict": str,
    "in_loop_delta": (int, type(None)),
    "cross_turn_delta": (int, type(None)),
    "tokenizer": str,
    "error": (str, type(None)),
}


def test_templates_json_schema(tmp_path: Path) -> None:
    result = scan(
        [TemplateSource("every-turn", EVERY_TURN, "t"), TemplateSource("broken", BROKEN, "t")],
        ScanOptions(chars_only=True),
    )
    jpath, _ = write_outputs(result, tmp_path)
    data = json.loads(jpath.read_text())
    assert isinstance(data, list) and len(data) == 2 * len(FIELDS)
    for obj in data:
        for key, typ in SCHEMA.items():
            assert isinstance(obj[key], typ), (key, obj)
        assert obj["field"] in FIELDS
        assert obj["verdict"] in VERDICTS
        assert (obj["verdict"] == "error") == (obj["error"] is not None)
        assert obj["tokenizer"] == "chars/4"
    assert [o["field"] for o in data[: len(FIELDS)]] == list(FIELDS)


def test_html_section_escapes_and_lists_every_template() -> None:
    result = scan(
        [TemplateSource("<b>every</b>", EVERY_TURN, "t"), TemplateSource("broken", BROKEN, "t")],
        ScanOptions(chars_only=True),
    )
    out = html_section(result.rows)
    assert out.startswith('<section id="templates">') and out.endswith("</section>")
    assert "&lt;b&gt;every&lt;/b&gt;" in out and "<b>every" not in out
    assert out.count('data-verdict="error"') == len(FIELDS)
    assert out.count('data-verdict="consumes-all-turns"') == 2


def test_sources_tokenizer_config_and_dir(tmp_path: Path) -> None:
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "bos_token": "<s>",
                "chat_template": [
                    {"name": "default", "template": EVERY_TURN},
                    {"name": "tool_use", "template": THINKING_ONLY},
                ],
            }
        )
    )
    srcs = resolve_sources([str(model)])
    assert [s.name for s in srcs] == ["my-model", "my-model-tool_use"]
    assert srcs[0].bos_token == "<s>"
    with pytest.raises(Exception, match=r"not a \.jinja file"):
        resolve_sources([str(tmp_path / "missing.jinja")])


def test_cli_scan_writes_outputs(tmp_path: Path) -> None:
    from reasonwire.crosscheck.cli import app

    tpl = tmp_path / "every-turn.jinja"
    tpl.write_text(EVERY_TURN)
    runner = CliRunner()
    res = runner.invoke(app, ["scan", str(tpl), "--out", str(tmp_path / "out"), "--chars"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "out" / "templates.json").read_text())
    assert {d["template"] for d in data} == {"every-turn"}
    bad = runner.invoke(app, ["scan", "no/such/thing/here", "--out", str(tmp_path / "o2")])
    assert bad.exit_code == 2
    assert "error:" in bad.output and "Traceback" not in bad.output
