"""The transformers-compatible rendering environment and the fixture."""

from __future__ import annotations

import pytest

from reasonwire.llamacpp.sdist import vocab_dir
from reasonwire.llamacpp.tokenize import GGUFVocabTokenizer
from reasonwire.templates.fixture import FIELDS, Fixture
from reasonwire.templates.render import (
    TemplateRenderError,
    render_chat_template,
    render_llama_cpp_compat,
)

MSGS = [{"role": "user", "content": "héllo <b>"}]


def test_tojson_is_hf_style() -> None:
    out = render_chat_template("{{ messages | tojson }}", MSGS)
    assert out == '[{"role": "user", "content": "héllo <b>"}]'
    out = render_chat_template("{{ messages[0] | tojson(indent=2, sort_keys=True) }}", MSGS)
    assert out == '{\n  "content": "héllo <b>",\n  "role": "user"\n}'


def test_trim_lstrip_loopcontrols_generation() -> None:
    tpl = (
        "{% for m in messages %}\n"
        "    {% if m.role == 'user' %}{% continue %}{% endif %}\n"
        "{% generation %}{{ m.content }}{% endgeneration %}\n"
        "{% endfor %}"
    )
    msgs = [*MSGS, {"role": "assistant", "content": "ok"}]
    assert render_chat_template(tpl, msgs) == "ok"


def test_globals_and_kwargs() -> None:
    out = render_chat_template(
        "{{ bos_token }}{{ strftime_now('%Y') | length }}{{ enable_thinking }}"
        "{{ add_generation_prompt }}{{ tools | length }}",
        MSGS,
        tools=[{"type": "function"}],
        bos_token="<s>",
        enable_thinking=False,
    )
    assert out == "<s>4FalseTrue1"


def test_raise_exception_message_is_kept() -> None:
    with pytest.raises(TemplateRenderError, match=r"^only user and assistant roles$"):
        render_chat_template("{{ raise_exception('only user and assistant roles') }}", MSGS)


def test_sandbox_is_immutable_like_transformers_compat_is_not() -> None:
    tpl = "{% set xs = [] %}{% set _ = xs.append(1) %}{{ xs | tojson }}"
    with pytest.raises(TemplateRenderError, match="unsafe"):
        render_chat_template(tpl, MSGS)
    assert render_llama_cpp_compat(tpl, MSGS) == "[1]"
    assert render_llama_cpp_compat("{{ messages | map(attribute='role') | tojson }}", MSGS) == (
        '["user"]'
    )
    # nested too: a lazy value inside an object
    nested = "{{ {'roles': messages | map(attribute='role')} | tojson }}"
    assert render_llama_cpp_compat(nested, MSGS) == '{"roles": ["user"]}'


def test_fixture_is_deterministic_and_has_one_canary() -> None:
    a, b, c = Fixture.from_seed(7), Fixture.from_seed(7), Fixture.from_seed(8)
    assert a == b and a.trace != c.trace
    sentence = f"The verification word for this task is {a.canary}."
    assert a.trace.count(sentence) == 1
    assert a.trace.count("verification word") == 1
    tok = GGUFVocabTokenizer.from_file(vocab_dir() / "ggml-vocab-qwen2.gguf")
    assert 350 <= tok.count(a.trace) <= 700


def test_fixture_variants_differ_only_in_the_carrier() -> None:
    fx = Fixture.from_seed()
    for position in ("in_loop", "cross_turn"):
        base = fx.messages("none", position)
        for field in FIELDS:
            msgs = fx.messages(field, position)
            assert len(msgs) == len(base)
            for m, n in zip(msgs, base, strict=True):
                extra = {k: v for k, v in m.items() if k not in n}
                assert {k: m[k] for k in n} == n
                if m.get("tool_calls"):
                    assert extra
                else:
                    assert not extra
    assert fx.messages("none", "in_loop")[-1]["role"] == "tool"
    assert fx.probe in fx.messages("none", "in_loop")[-1]["content"]
    assert fx.messages("none", "cross_turn")[-1] == {"role": "user", "content": fx.probe}
