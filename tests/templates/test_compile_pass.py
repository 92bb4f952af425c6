"""One parse and one code-generation pass per template give both what jinja2's own two calls
give: ``Environment.compile`` (the code) and ``jinja2.meta.find_undeclared_variables`` (the
variables read). Expected values come from those two jinja2 calls on a fresh parse."""

from __future__ import annotations

from pathlib import Path

import jinja2
import jinja2.meta
import pytest

from reasonwire.errors import TemplateRenderError
from reasonwire.llamacpp.sdist import templates_dir
from reasonwire.llamacpp.tokenize import CharsPerToken
from reasonwire.templates import render
from reasonwire.templates.fixture import FIELDS, Fixture
from reasonwire.templates.scan import Counter as ScanCounter
from reasonwire.templates.scan import TemplateSource, scan_template

LITERAL = [
    "{% set foo = 42 %}{{ bar + foo }}",  # jinja2.meta's own documented example
    "{% for m in messages %}{{ m.role }}{% if loop.last %}{{ eos_token }}{% endif %}{% endfor %}",
    "{% macro show(x, y=none) %}{{ x }}{{ y or z }}{% endmacro %}{{ show(messages[0]) }}",
    "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
    "{{ ns.n }}{{ raise_exception('x') if strict else '' }}",
    "{{ x if false and y else z }}{{ 'a' | safe }}{{ [1, 2] | selectattr('q') | list | tojson }}",
    "{% generation %}{{ messages | length }}{% endgeneration %}",
    "{% set items = [] %}{% for m in messages %}{% if items.append(m) %}{% endif %}{% endfor %}",
]


def _jinja2_says(template: str, compat: bool) -> object:
    """What jinja2's two public calls give for ``template`` (each on its own fresh parse)."""
    env = render._COMPAT_ENV if compat else render._HF_ENV
    try:
        code = env.compile(env.parse(template))
        variables = frozenset(jinja2.meta.find_undeclared_variables(env.parse(template)))
    except jinja2.TemplateSyntaxError as exc:
        return ("error", f"template syntax error (line {exc.lineno}): {exc}")
    return (code, variables)


def _one_pass(template: str, compat: bool) -> object:
    try:
        return render._compiled.__wrapped__(template, compat)
    except TemplateRenderError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("compat", [False, True])
@pytest.mark.parametrize("template", LITERAL)
def test_one_pass_gives_jinja2s_code_and_variables(template: str, compat: bool) -> None:
    assert _one_pass(template, compat) == _jinja2_says(template, compat)


def test_the_documented_example_reads_bar() -> None:
    assert render._compiled.__wrapped__("{% set foo = 42 %}{{ bar + foo }}", False)[1] == {"bar"}


@pytest.mark.parametrize("compat", [False, True])
def test_every_corpus_template_compiles_as_jinja2_does(compat: bool) -> None:
    paths = sorted(templates_dir().glob("*.jinja"))
    assert len(paths) >= 70
    differ = [
        p.name
        for p in paths
        if _one_pass(p.read_text(encoding="utf-8"), compat)
        != _jinja2_says(p.read_text(encoding="utf-8"), compat)
    ]
    assert differ == []


# parses, then fails while code is generated (jinja2 checks duplicate blocks there)
TWICE = "{% block a %}{% endblock %}{% block a %}{% endblock %}"


def test_an_error_found_while_generating_is_a_render_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONWIRE_CACHE", str(tmp_path))
    render.compile_template.cache_clear()
    render.variables_read.cache_clear()
    with pytest.raises(TemplateRenderError) as err:
        render.compile_template(TWICE)
    # jinja2's own message, as Environment.compile reports it (no "File ..." location line)
    assert str(err.value) == "template syntax error (line 1): block 'a' defined twice"
    assert _jinja2_says(TWICE, False) == ("error", str(err.value))
    assert render.variables_read(TWICE) == frozenset()
    rows = scan_template(
        TemplateSource("twice", TWICE, "test"),
        Fixture.from_seed(),
        ScanCounter("chars/4", False, CharsPerToken()),
    )
    assert [(r.field, r.verdict.value) for r in rows] == [(f, "error") for f in FIELDS]
    assert {r.error for r in rows} == {"template syntax error (line 1): block 'a' defined twice"}
